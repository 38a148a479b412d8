-- Past one machine (DESIGN §9): the agents that run jobs, the hosts each one
-- brings, and on each placed job the agent and the epoch of its placement.

-- A registration's epoch: every (re)join takes a new one, so a placement
-- made for an earlier life of an agent never matches its current epoch.
CREATE SEQUENCE agent_epochs;

CREATE TABLE agents (
  name           text PRIMARY KEY,
  state          text NOT NULL CHECK (state IN ('alive', 'lost')),
  epoch          bigint NOT NULL,
  workers        integer NOT NULL DEFAULT 1,
  started_at     timestamptz NOT NULL DEFAULT now(),
  last_heartbeat timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agent_hosts (
  name       text PRIMARY KEY,
  agent      text NOT NULL REFERENCES agents (name) ON DELETE CASCADE,
  generation text NOT NULL,
  position   integer NOT NULL  -- the host's place in its agent's pool
);
CREATE INDEX agent_hosts_agent ON agent_hosts (agent, position);

-- Set with STARTING by the scheduler leader; every write the agent makes
-- about the job is conditional on placement_epoch (fencing).
ALTER TABLE jobs ADD COLUMN agent text;
ALTER TABLE jobs ADD COLUMN placement_epoch bigint;
CREATE INDEX jobs_placed ON jobs (agent, placement_epoch) WHERE state IN ('STARTING', 'RUNNING');
