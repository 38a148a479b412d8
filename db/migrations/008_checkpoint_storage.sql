-- Checkpoints are parameters and optimizer state: float32 arrays that
-- pglz barely shrinks, yet compressing them cost PostgreSQL about a sixth
-- as much CPU as the training that made them (perf, 16 blobs jobs of 1024
-- hidden units checkpointing every 500 steps). Stored out of line,
-- uncompressed.
ALTER TABLE job_checkpoints ALTER COLUMN bytes SET STORAGE EXTERNAL;
