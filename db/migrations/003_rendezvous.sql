-- A pod slice spanning agents (DESIGN §9): the processes of one placement
-- meet through these rows (a Gloo rendezvous store), so an agent needs no
-- address besides the database's. The placement's parts (agent, epoch,
-- hosts) are in jobs.allocation -> 'slice'.

-- One number per placement of a spanning slice: a re-placement of the same
-- job never reads the addresses of an earlier one.
CREATE SEQUENCE slice_placements;

CREATE TABLE rendezvous_keys (
  placement  bigint NOT NULL,
  key        text NOT NULL,
  value      bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (placement, key)
);
