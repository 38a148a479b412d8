-- Jobs no longer carry an owner and a lease: since standalone became a
-- one-member cluster (issue 29), a job's cores are held by its placement
-- (agent and placement_epoch) and taken back when its agent is judged lost.
-- The change trigger of 036 named both columns, so it is made again
-- without them.
DROP TRIGGER jobs_note_change ON jobs;

ALTER TABLE jobs DROP COLUMN owner, DROP COLUMN lease_expires_at;

CREATE TRIGGER jobs_note_change BEFORE UPDATE ON jobs
  FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.allocation IS DISTINCT FROM NEW.allocation
        OR OLD.attempt IS DISTINCT FROM NEW.attempt
        OR OLD.cancel_requested IS DISTINCT FROM NEW.cancel_requested
        OR OLD.started_at IS DISTINCT FROM NEW.started_at
        OR OLD.finished_at IS DISTINCT FROM NEW.finished_at
        OR OLD.agent IS DISTINCT FROM NEW.agent
        OR OLD.placement_epoch IS DISTINCT FROM NEW.placement_epoch
        OR OLD.preempted_by IS DISTINCT FROM NEW.preempted_by
        OR OLD.requeued_at IS DISTINCT FROM NEW.requeued_at
        OR OLD.unstarted_requeues IS DISTINCT FROM NEW.unstarted_requeues)
  EXECUTE FUNCTION jobs_note_change();
