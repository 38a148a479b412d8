-- Why a queued job waits moves out of the jobs row into a narrow table of
-- its own (issue 29: a scheduling pass in a burst of submits is to take at
-- most 50 ms, and writing the reasons of the jobs queued since the last pass
-- took most of it). A reason written into jobs made a new version of the
-- whole row (its spec and results) and, the page being full of new rows,
-- an entry in each of its indexes; and a NOTIFY per row. Written here, it is
-- a row of an id and a small JSON value, in one index; the replicas are told
-- by one NOTIFY per some fifty reasons.
--
-- A job's transition out of the queue deletes its row (a job requeued later
-- waits for a new reason), and a read of a job shows it only while the job
-- is QUEUED (db/job_rows.h): a reason written as its job left the queue may
-- stay behind, unread. The scheduler leader is its only writer
-- (JobRepository::set_pending).
CREATE TABLE job_pending (
  job_id  bigint PRIMARY KEY,
  pending jsonb
);

INSERT INTO job_pending (job_id, pending)
  SELECT id, pending FROM jobs WHERE state = 'QUEUED' AND pending IS NOT NULL;

DROP TRIGGER jobs_notify_pending_written ON jobs;
DROP FUNCTION jobs_notify_pending_written();
ALTER TABLE jobs DROP COLUMN pending;

-- Tells every replica that listens which reasons a statement wrote, once it
-- commits (the payloads of db/migrations/038: "id<TAB>pending", or the id
-- alone for none), gathering lines of under 1000 bytes into payloads of
-- under 7000: a NOTIFY per reason made most of the cost of writing them. A
-- longer line goes alone; one of 7900 bytes or more, too long to send, is
-- sent as a change of the job (its view is dropped), as under 038.
CREATE FUNCTION job_pending_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(min(channel), string_agg(line, E'\n' ORDER BY job_id))
  FROM (
    SELECT job_id,
           CASE WHEN size >= 7900 THEN job_id::text ELSE whole END AS line,
           CASE WHEN size >= 7900 THEN 'tpujobs_jobs_changed'
                ELSE 'tpujobs_pending_written' END AS channel,
           CASE WHEN size >= 1000 THEN -job_id  -- alone
                ELSE sum(CASE WHEN size >= 1000 THEN 0 ELSE size + 1 END)
                       OVER (ORDER BY job_id) / 6000 END AS payload
    FROM (
      SELECT job_id, whole, octet_length(whole) AS size
      FROM (SELECT job_id, job_id::text || COALESCE(E'\t' || pending::text, '') AS whole
            FROM written) AS w
    ) AS sized
  ) AS lines
  GROUP BY payload;
  RETURN NULL;
END
$$;

CREATE TRIGGER job_pending_inserted AFTER INSERT ON job_pending
  REFERENCING NEW TABLE AS written
  FOR EACH STATEMENT EXECUTE FUNCTION job_pending_notify();
CREATE TRIGGER job_pending_updated AFTER UPDATE ON job_pending
  REFERENCING NEW TABLE AS written
  FOR EACH STATEMENT EXECUTE FUNCTION job_pending_notify();
