-- An upload sent with an Idempotency-Key stores one dataset: a retry of it
-- (its answer lost to a timeout or a dropped connection) finds the dataset
-- the first attempt stored instead of storing a second copy under a new id.
-- content_hash identifies the file, so that the same key sent with another
-- file is refused rather than answered with the wrong dataset.
ALTER TABLE datasets ADD COLUMN idempotency_key text;
ALTER TABLE datasets ADD COLUMN content_hash text;
CREATE UNIQUE INDEX datasets_idempotency ON datasets (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
