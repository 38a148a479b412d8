-- Per-tenant limits (issue 34), read by every replica: jobs queued at once,
-- submits and requests per second (a token bucket: rate and burst), and the
-- size of a job array. NULL: the service's default (serve's flags).
CREATE TABLE tenant_limits (
  tenant text PRIMARY KEY,
  max_queued integer CHECK (max_queued >= 0),
  submits_per_second double precision CHECK (submits_per_second >= 0),
  submit_burst integer CHECK (submit_burst >= 0),
  requests_per_second double precision CHECK (requests_per_second >= 0),
  request_burst integer CHECK (request_burst >= 0),
  max_array_size integer CHECK (max_array_size >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The queued-jobs limit counts a tenant's QUEUED jobs at each submit.
CREATE INDEX jobs_tenant_queued ON jobs (tenant) WHERE state = 'QUEUED';
