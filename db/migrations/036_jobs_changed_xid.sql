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

CREATE TRIGGER jobs_note_change BEFORE UPDATE ON jobs
  FOR EACH ROW EXECUTE FUNCTION jobs_note_change();

CREATE INDEX jobs_changed_xid ON jobs (changed_xid);
