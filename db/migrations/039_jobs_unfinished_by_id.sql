-- The scheduler leader reads every unfinished job back a slice at a time,
-- in id order (issue 29: a read of a queue of 100,000 in one pass took
-- 400-600 ms, where a pass is to take at most 50). Nothing orders the
-- unfinished jobs by priority in SQL (the leader orders them in memory), so
-- the partial index keeps its rows and is keyed by id alone: no index more
-- for a submit to write, and a change of priority alone needs no new entry
-- in it.
DROP INDEX jobs_unfinished;
CREATE INDEX jobs_unfinished ON jobs (id)
  WHERE state IN ('QUEUED', 'STARTING', 'RUNNING');
