-- A job placed on an agent that was lost before the job started there
-- (still STARTING: the agent died, or was cut off, in the seconds between
-- its last heartbeat and the placement) is requeued without spending one of
-- its retries: it never ran, so nothing of it failed. This counts such
-- requeues, so that a job whose start itself brings agents down cannot
-- loop forever: past a few, a loss before the start spends a retry again.
ALTER TABLE jobs ADD COLUMN unstarted_requeues integer NOT NULL DEFAULT 0;
