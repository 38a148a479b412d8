-- A checkpoint's bytes are stored as rows of at most 1 MiB, streamed in by
-- COPY, rather than as one bytea value. As one value, a 252 MiB checkpoint
-- (the 1024-4096-4096-10 MLP with Adam) cost the PostgreSQL backend 2.6-3.6
-- CPU-seconds and the client 0.3-1.2, each holding the whole value in fresh
-- memory; as 1 MiB rows, 1.4-1.6 and under 0.1
-- (bench/db/checkpoint_storage_bench, bench/RESULTS.md). Rows also lift the
-- 1 GB limit of one value (and of its hex text when read back).
-- Checkpoints stored before this migration keep their bytes in
-- job_checkpoints.bytes; newer rows leave it NULL.
ALTER TABLE job_checkpoints ALTER COLUMN bytes DROP NOT NULL;

CREATE TABLE job_checkpoint_chunks (
  job_id bigint NOT NULL,
  step   bigint NOT NULL,
  seq    integer NOT NULL,
  bytes  bytea NOT NULL,
  PRIMARY KEY (job_id, step, seq),
  -- Deferred: the chunks are copied in before the fenced statement that
  -- adds their checkpoint row, in the same transaction.
  FOREIGN KEY (job_id, step) REFERENCES job_checkpoints (job_id, step)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
ALTER TABLE job_checkpoint_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
