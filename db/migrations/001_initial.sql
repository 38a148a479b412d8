-- The tables of DESIGN.md §7. JSON travels as text and is checked here as jsonb.

CREATE SEQUENCE jobs_id_seq;

CREATE TABLE jobs (
  id               bigint PRIMARY KEY DEFAULT nextval('jobs_id_seq'),
  tenant           text NOT NULL,
  name             text NOT NULL DEFAULT '',
  labels           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
  priority         integer NOT NULL DEFAULT 0,
  state            text NOT NULL DEFAULT 'QUEUED'
                   CHECK (state IN ('QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  spec             jsonb NOT NULL,
  resolved         jsonb NOT NULL DEFAULT '{}',
  warnings         jsonb NOT NULL DEFAULT '[]',
  idempotency_key  text,
  spec_hash        text NOT NULL DEFAULT '',
  allocation       jsonb,
  pending          jsonb,
  progress         jsonb,
  latest_metrics   jsonb,
  error            jsonb,
  result           jsonb,
  attempt          integer NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  finished_at      timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  owner            text,
  lease_expires_at timestamptz
);
ALTER SEQUENCE jobs_id_seq OWNED BY jobs.id;

CREATE UNIQUE INDEX jobs_idempotency ON jobs (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- Listing is newest first, optionally by state or tenant, paged by (created_at, id).
CREATE INDEX jobs_newest ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_state_newest ON jobs (state, created_at DESC, id DESC);
CREATE INDEX jobs_tenant_newest ON jobs (tenant, created_at DESC, id DESC);
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops);
-- Restart and scheduling read only the unfinished jobs.
CREATE INDEX jobs_unfinished ON jobs (priority DESC, id)
  WHERE state IN ('QUEUED', 'STARTING', 'RUNNING');

CREATE TABLE job_events (
  id         bigserial PRIMARY KEY,
  job_id     bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  at         timestamptz NOT NULL DEFAULT now(),
  from_state text,
  to_state   text NOT NULL,
  reason     text NOT NULL DEFAULT '',
  detail     jsonb
);
CREATE INDEX job_events_job ON job_events (job_id, id);

CREATE TABLE job_logs (
  job_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq    bigint NOT NULL,
  at     timestamptz NOT NULL DEFAULT now(),
  line   text NOT NULL,
  PRIMARY KEY (job_id, seq)
);

-- One row per reported point; a validation point may share its step with a
-- training point, so points are numbered by seq.
CREATE TABLE job_metrics (
  job_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq    bigint NOT NULL,
  step   bigint NOT NULL,
  epoch  integer NOT NULL,
  at     timestamptz NOT NULL DEFAULT now(),
  metrics jsonb NOT NULL,
  PRIMARY KEY (job_id, seq)
);

CREATE TABLE job_checkpoints (
  job_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  step   bigint NOT NULL,
  epoch  integer NOT NULL,
  at     timestamptz NOT NULL DEFAULT now(),
  bytes  bytea NOT NULL,
  PRIMARY KEY (job_id, step)
);

CREATE TABLE datasets (
  id         text PRIMARY KEY CHECK (id LIKE 'ds\_%'),
  tenant     text NOT NULL,
  name       text NOT NULL DEFAULT '',
  row_count    bigint NOT NULL,
  column_count integer NOT NULL,
  class_count  integer NOT NULL,
  csv        text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  tenant     text NOT NULL,
  role       text NOT NULL CHECK (role IN ('user', 'admin')),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

CREATE TABLE pool_hosts (
  name       text PRIMARY KEY,
  generation text NOT NULL,
  health     text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant_quotas (
  tenant    text PRIMARY KEY,
  max_cores integer NOT NULL CHECK (max_cores >= 0)
);
