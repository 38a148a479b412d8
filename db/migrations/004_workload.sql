-- Workload management (issue 17). Sweeps: the children of one job array
-- carry the array's id (the id of its first child), their place in the
-- cartesian product, and the values the sweep set in their spec.
ALTER TABLE jobs ADD COLUMN array_id bigint;
ALTER TABLE jobs ADD COLUMN array_index integer;
ALTER TABLE jobs ADD COLUMN array_values jsonb;
CREATE INDEX jobs_array ON jobs (array_id, array_index) WHERE array_id IS NOT NULL;

-- Retention: when a finished job's log lines and metric points were purged
-- (the job row stays).
ALTER TABLE jobs ADD COLUMN outputs_purged_at timestamptz;
CREATE INDEX jobs_purgeable ON jobs (finished_at)
  WHERE finished_at IS NOT NULL AND outputs_purged_at IS NULL;
