-- A number for each placement of a job (issue 29, the deeper fence). Every
-- write an agent makes about a job it runs (its transitions, log lines,
-- metric points, checkpoints, progress) was fenced by placement_epoch, the
-- registration epoch of the agent it was placed on. A job placed twice on
-- the same registration, the first placement undone by a database crash (a
-- placement commits without waiting for the disk) or requeued while a copy
-- was still stopping, got the same fence both times: the stale copy's late
-- writes landed under the new placement (its lines took the sequence
-- numbers the new copy's were to have, which were then dropped as
-- duplicates). jobs.placement tells the two apart: placement_epoch still
-- says which registration of its agent runs the job; placement says which
-- placement the copy's writes belong to.
--
-- The numbers come from one sequence, in blocks the scheduler leader
-- reserves each with a synchronous commit of its own, before it hands any
-- out (ClusterRepository::reserve_placements): a crash that undoes a
-- placement never gives its number to another. The slices spanning agents
-- drew their rendezvous numbers from slice_placements; they now take their
-- placement's number, so that sequence becomes this one and keeps counting
-- from where it is.
ALTER SEQUENCE slice_placements RENAME TO placements;
ALTER SEQUENCE placements INCREMENT BY 1000;

ALTER TABLE jobs ADD COLUMN placement bigint;
-- The jobs placed when this runs keep a fence of their own: the sequence
-- never hands out a number below 1. (A finished job's row is left as it
-- is: nothing about it is fenced any more.)
UPDATE jobs SET placement = -placement_epoch
  WHERE placement_epoch IS NOT NULL AND state IN ('STARTING', 'RUNNING');
