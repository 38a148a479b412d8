-- Every replica keeps the views of queued jobs in memory (issue 29: status
-- reads of a queue of 100,000 served without a read per poll;
-- service/view_cache.h). A queued job's view changes when its pending reason
-- is written, and when it leaves the queue or its priority changes. Whoever
-- writes the row (the scheduler leader, a cancel on any replica), the
-- database says so to every replica that listens, once the change commits:
--   tpujobs_pending_written  "id<TAB>pending"  the reason written (its view
--                                               takes it without a read)
--   tpujobs_jobs_changed     "id"              any other change (its view
--                                               is dropped)
-- A payload may not reach 8000 bytes: a reason that long is sent as a
-- change. A replica that loses its LISTEN connection drops every queued view
-- it keeps until it listens again.
CREATE FUNCTION jobs_notify_pending_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  payload text := NEW.id::text || E'\t' || NEW.pending::text;
BEGIN
  IF NEW.pending IS NULL THEN
    payload := NEW.id::text;  -- no reason: an id alone
  END IF;
  IF octet_length(payload) < 7900 THEN
    PERFORM pg_notify('tpujobs_pending_written', payload);
  ELSE
    PERFORM pg_notify('tpujobs_jobs_changed', NEW.id::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION jobs_notify_queued_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tpujobs_jobs_changed', NEW.id::text);
  RETURN NULL;
END
$$;

-- A job that never started and waits on: only its reason changed. The
-- leader's statement sets nothing else (JobRepository::set_pending).
CREATE TRIGGER jobs_notify_pending_written AFTER UPDATE OF pending ON jobs
  FOR EACH ROW
  WHEN (OLD.state = 'QUEUED' AND NEW.state = 'QUEUED'
        AND OLD.started_at IS NULL AND NEW.started_at IS NULL
        AND OLD.priority = NEW.priority
        AND OLD.pending IS DISTINCT FROM NEW.pending)
  EXECUTE FUNCTION jobs_notify_pending_written();

-- A job that never started and leaves the queue (placed, cancelled, ended
-- by the leader) or changes what its view shows besides the reason. (Its
-- name, labels and spec are never written after the submit.)
CREATE TRIGGER jobs_notify_queued_changed AFTER UPDATE ON jobs
  FOR EACH ROW
  WHEN (OLD.state = 'QUEUED' AND OLD.started_at IS NULL
        AND (NEW.state IS DISTINCT FROM OLD.state
             OR NEW.started_at IS NOT NULL
             OR NEW.priority IS DISTINCT FROM OLD.priority
             OR NEW.attempt IS DISTINCT FROM OLD.attempt
             OR NEW.allocation IS DISTINCT FROM OLD.allocation
             OR NEW.error IS DISTINCT FROM OLD.error
             OR NEW.result IS DISTINCT FROM OLD.result
             OR NEW.progress IS DISTINCT FROM OLD.progress))
  EXECUTE FUNCTION jobs_notify_queued_changed();

