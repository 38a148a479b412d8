-- Notifications (issue 17): a job whose spec has "notify": {"url", "events"}
-- is POSTed to that URL when it starts or ends. The deliveries are an outbox
-- that a trigger on job_events fills in the same transaction as the state
-- change, whichever process makes it (a serve replica, an agent); the serve
-- replicas' notifiers claim due deliveries (FOR UPDATE SKIP LOCKED), send
-- them and record every attempt.

-- The per-tenant secret the deliveries are signed with (HMAC-SHA256).
CREATE TABLE notification_secrets (
  tenant     text PRIMARY KEY,
  secret     text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Where notifications may go, set by the admin: "host", "host:port" or a URL
-- prefix "http://host[:port]/path".
CREATE TABLE notification_allowlist (
  entry      text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One delivery per job and event; `body` is the job's view, fixed at the
-- first attempt so every retry sends (and signs) the same bytes.
CREATE TABLE job_notifications (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id          bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  tenant          text NOT NULL,
  event           text NOT NULL
                  CHECK (event IN ('started', 'succeeded', 'failed', 'cancelled', 'finished')),
  state           text NOT NULL,  -- the state the job entered
  url             text NOT NULL,
  status          text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'delivered', 'failed')),
  body            text,
  attempts        integer NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  claimed_by      text,
  claimed_until   timestamptz,
  finished_at     timestamptz,
  UNIQUE (job_id, event)
);
CREATE INDEX job_notifications_due ON job_notifications (next_attempt_at)
  WHERE status = 'pending';

CREATE TABLE notification_attempts (
  notification_id bigint NOT NULL REFERENCES job_notifications (id) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  at              timestamptz NOT NULL,
  duration_ms     double precision NOT NULL,
  status_code     integer,  -- NULL: no HTTP answer (see error)
  error           text,
  sender          text NOT NULL,  -- the replica that sent it
  PRIMARY KEY (notification_id, attempt)
);

-- Every transition writes a job_events row (DESIGN §5), so this sees every
-- state change of every process. 'started' is the first move to RUNNING
-- (UNIQUE (job_id, event) keeps a resumed job from sending it again).
CREATE FUNCTION queue_job_notifications() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  job_tenant text;
  notify jsonb;
BEGIN
  IF NEW.to_state NOT IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED') THEN
    RETURN NULL;
  END IF;
  SELECT j.tenant, j.spec -> 'notify' INTO job_tenant, notify FROM jobs j WHERE j.id = NEW.job_id;
  IF notify IS NULL OR jsonb_typeof(notify) <> 'object'
     OR jsonb_typeof(notify -> 'url') IS DISTINCT FROM 'string' THEN
    RETURN NULL;
  END IF;
  INSERT INTO job_notifications (job_id, tenant, event, state, url)
  SELECT NEW.job_id, job_tenant, wanted.event, NEW.to_state, notify ->> 'url'
  FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(notify -> 'events') = 'array'
                                      THEN notify -> 'events' ELSE '["finished"]' END)
       AS wanted(event)
  WHERE (wanted.event = 'started' AND NEW.to_state = 'RUNNING')
     OR (wanted.event = 'finished' AND NEW.to_state IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
     OR (wanted.event IN ('succeeded', 'failed', 'cancelled') AND wanted.event = lower(NEW.to_state))
  ON CONFLICT (job_id, event) DO NOTHING;
  IF FOUND THEN
    PERFORM pg_notify('tpujobs_notifications', NEW.job_id::text);
  END IF;
  RETURN NULL;
END
$$;

-- The WHEN clause keeps submits (QUEUED events) from calling the function.
CREATE TRIGGER job_events_queue_notifications AFTER INSERT ON job_events
  FOR EACH ROW WHEN (NEW.to_state IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'))
  EXECUTE FUNCTION queue_job_notifications();
