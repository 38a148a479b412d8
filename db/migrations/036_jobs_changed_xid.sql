-- A scheduler leader keeps the unfinished jobs in memory between passes and
-- reads only the rows written since its last read (issue 29: a leader that
-- does not re-read the world). Each row records the transaction that last
-- wrote it. A reader that notes, before it reads, the oldest transaction
-- still running (pg_snapshot_xmin) misses no change when it next reads the
-- rows written by that transaction or a later one: every earlier one had
-- ended, and its writes were in the read.
ALTER TABLE jobs ADD COLUMN changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE FUNCTION jobs_note_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.changed_xid := pg_current_xact_id();
  RETURN NEW;
END
$$;

-- Only a change of what the scheduler reads marks the row: a running job's
-- progress, its pending reason or its purge mark does not. Those updates
-- then stay HOT (no index holds a column they change); marking them would
-- make every progress update of a running job write every index of jobs.
CREATE TRIGGER jobs_note_change BEFORE UPDATE ON jobs
  FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.allocation IS DISTINCT FROM NEW.allocation
        OR OLD.attempt IS DISTINCT FROM NEW.attempt
        OR OLD.cancel_requested IS DISTINCT FROM NEW.cancel_requested
        OR OLD.started_at IS DISTINCT FROM NEW.started_at
        OR OLD.finished_at IS DISTINCT FROM NEW.finished_at
        OR OLD.owner IS DISTINCT FROM NEW.owner
        OR OLD.lease_expires_at IS DISTINCT FROM NEW.lease_expires_at
        OR OLD.agent IS DISTINCT FROM NEW.agent
        OR OLD.placement_epoch IS DISTINCT FROM NEW.placement_epoch
        OR OLD.preempted_by IS DISTINCT FROM NEW.preempted_by
        OR OLD.requeued_at IS DISTINCT FROM NEW.requeued_at
        OR OLD.unstarted_requeues IS DISTINCT FROM NEW.unstarted_requeues)
  EXECUTE FUNCTION jobs_note_change();

CREATE INDEX jobs_changed_xid ON jobs (changed_xid);
