-- /readyz probes a write as well as a read (db/database_probe.h): each
-- service process upserts its own row here. A database that answers
-- SELECT 1 but refuses writes (read-only, a full disk) turns it unready.
CREATE TABLE readiness_probe (
  instance text PRIMARY KEY,
  probed_at timestamptz NOT NULL
);
