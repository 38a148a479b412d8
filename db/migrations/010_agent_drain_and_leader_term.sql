-- A clean stop (DESIGN §9). An agent told to stop first drains: it stays
-- registered and keeps its heartbeat while it stops its copies at a
-- checkpoint and requeues the jobs placed on it, and no job is placed on it
-- meanwhile; then it leaves (lost at once). Before this, a stop that took
-- longer than the silence allowed was judged a loss, and the jobs placed on
-- it in its last moments ended FAILED or spent a retry without running.
ALTER TABLE agents DROP CONSTRAINT agents_state_check;
ALTER TABLE agents ADD CONSTRAINT agents_state_check
  CHECK (state IN ('alive', 'draining', 'lost'));

-- The scheduler leader's term: every replica that takes the lead raises it,
-- and the leader's writes about jobs (placements, requeues, preemptions)
-- apply only while the term is still its own. A leader paused in the middle
-- of a pass, whose lead passed to another replica meanwhile, has its stale
-- writes refused when it resumes (fencing, as the agents' epochs fence
-- theirs).
CREATE TABLE scheduler_term (
  id     integer PRIMARY KEY CHECK (id = 1),
  term   bigint NOT NULL,
  leader text NOT NULL,
  since  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO scheduler_term (id, term, leader) VALUES (1, 0, '');
