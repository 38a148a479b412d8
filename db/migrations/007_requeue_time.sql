-- When a failure last requeued a job (an unreachable peer of its slice, its
-- agent stopping or lost; issue 12). The scheduler leader places such a job
-- only on agents that heartbeated after it, so a retry does not go to an
-- agent killed a moment before, which still reads alive until declared lost.
ALTER TABLE jobs ADD COLUMN requeued_at timestamptz;
