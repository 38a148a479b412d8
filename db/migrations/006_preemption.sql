-- Preemption (issue 17). The scheduler leader marks a running job with the
-- waiting job that preempts it; the agent running it stops it at a
-- checkpoint and requeues it (fenced by the placement epoch). The mark stays
-- while the job waits (its pending reason is Preempted) and is cleared when
-- it is placed again.
ALTER TABLE jobs ADD COLUMN preempted_by bigint;
