-- Checkpoints (parameters and optimizer state, float32 arrays) are stored
-- out of line and uncompressed. Compressing them with pglz on every store
-- took 2.0% of the machine's CPU samples against 14.9% for the training
-- that made them (perf record -a of the scale-out benchmark: 16 blobs jobs
-- of 1024 hidden units, checkpointing every 500 steps; bench/RESULTS.md).
ALTER TABLE job_checkpoints ALTER COLUMN bytes SET STORAGE EXTERNAL;
