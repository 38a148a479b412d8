// JobRepository's transitions (db/job_repository.h): one statement moves a
// job from one state to another, under the conditions the Transition sets,
// and records the event; the variants answer the changed row as a view
// reads it, or as the agent it is placed on starts it.
#include <algorithm>
#include <span>
#include <vector>

#include "db/job_repository.h"
#include "db/job_rows.h"

namespace tpujobs::db {
namespace {

// Applies a Transition (JobRepository::transition): `state` is the state the
// row takes, `then` more rows of the event's insert (each SELECTed from
// `changed`: job_id, from_state, to_state, reason, detail), `returning` what
// the changed row gives (its id and previous state at least), `answer` the
// statement's result.
#define TPUJOBS_TRANSITION_TO(state, then, returning, answer) \
  "WITH previous AS (" \
    "  SELECT id, state, cancel_requested AND $25::text IS NOT NULL AS cancelled FROM jobs" \
    "  WHERE id = $1::bigint AND state = ANY($2::text[])" \
    "    AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')" \
    "    AND ($17::bigint IS NULL OR placement = $17::bigint)" \
    /* Every agent it is placed on still alive under the placement's epoch, */ \
    /* its row share-locked so that a drain or a leave waits for this */ \
    /* statement, or this one sees it (and places nothing). */ \
    "    AND ($20::text[] IS NULL OR cardinality($20::text[]) = (SELECT count(*) FROM" \
    "      (SELECT 1 FROM agents a JOIN unnest($20::text[], $21::bigint[]) AS r(name, epoch)" \
    "         ON a.name = r.name AND a.epoch = r.epoch" \
    "       WHERE a.state = 'alive' FOR SHARE OF a) AS alive))" \
    /* The scheduler leader's writes: only while the term is still its own. */ \
    "    AND ($22::bigint IS NULL" \
    "         OR (SELECT term FROM scheduler_term WHERE id = 1 FOR SHARE) = $22::bigint)" \
    "  FOR UPDATE" \
    "), changed AS (" \
    "  UPDATE jobs j SET" \
    "    state = CASE WHEN previous.cancelled THEN 'CANCELLED' ELSE " state " END," \
    "    updated_at = now()," \
    "    allocation = CASE WHEN $6::boolean THEN NULL ELSE COALESCE($7::jsonb, j.allocation) END," \
    "    error = CASE WHEN previous.cancelled THEN $26::jsonb ELSE COALESCE($8::jsonb, j.error) END," \
    "    result = COALESCE($9::jsonb, j.result)," \
    "    started_at = CASE WHEN $10::boolean THEN now() ELSE j.started_at END," \
    "    finished_at = CASE WHEN $11::boolean THEN now() ELSE j.finished_at END," \
    "    attempt = j.attempt + CASE WHEN $12::boolean THEN 1 ELSE 0 END," \
    "    unstarted_requeues = j.unstarted_requeues + CASE WHEN $23::boolean THEN 1 ELSE 0 END," \
    "    preempted_by = CASE WHEN $13::boolean THEN NULL" \
    "                        ELSE COALESCE($18::bigint, j.preempted_by) END," \
    "    agent = CASE WHEN $16::boolean THEN NULL ELSE COALESCE($14::text, j.agent) END," \
    "    placement_epoch = CASE WHEN $16::boolean THEN NULL" \
    "                           ELSE COALESCE($15::bigint, j.placement_epoch) END," \
    "    placement = CASE WHEN $16::boolean THEN NULL ELSE COALESCE($27::bigint, j.placement) END," \
    "    requeued_at = CASE WHEN $19::boolean THEN now() ELSE j.requeued_at END" \
    "  FROM previous WHERE j.id = previous.id" \
    "  RETURNING " returning \
    /* Its reason goes when it leaves the queue (db/migrations/040), */ \
    /* found by its key: joined to `changed`, a plan made while the */ \
    /* reasons were few walked them all. */ \
    "), cleared AS (" \
    "  DELETE FROM job_pending WHERE job_id = $1::bigint AND $3::text <> 'QUEUED'" \
    "    AND EXISTS (SELECT 1 FROM changed)" \
    "), event AS (" \
    "  INSERT INTO job_events (job_id, from_state, to_state, reason, detail)" \
    "  SELECT c.id, c.from_state," \
    "    CASE WHEN p.cancelled THEN 'CANCELLED' ELSE $3::text END," \
    "    CASE WHEN p.cancelled THEN $25::text ELSE $4::text END, $5::jsonb" \
    "  FROM changed c JOIN previous p ON p.id = c.id" then \
    ") " answer
#define TPUJOBS_TRANSITION(returning, answer) \
  TPUJOBS_TRANSITION_TO("$3::text", "", returning, answer)

// set_config(..., true) lasts until this statement's own commit.
#define TPUJOBS_ASYNCHRONOUS_COMMIT                                    \
  "set_config('synchronous_commit', CASE WHEN $24::boolean THEN 'off'" \
  " ELSE current_setting('synchronous_commit') END, true)"

constexpr const char* kTransition =
    TPUJOBS_TRANSITION("j.id, previous.state AS from_state",
                       "SELECT (SELECT count(*) FROM changed), " TPUJOBS_ASYNCHRONOUS_COMMIT
                       ", (SELECT count(*) FROM previous WHERE cancelled)");
// The same, answering the changed row as get_job_with_checkpoint reads it
// (no row when nothing changed).
constexpr const char* kTransitionWithView =
    TPUJOBS_TRANSITION(TPUJOBS_JOB_COLUMNS ", previous.state AS from_state",
                       "SELECT c.step, c.epoch, j.*, " TPUJOBS_ASYNCHRONOUS_COMMIT
                       " FROM changed j LEFT JOIN LATERAL (SELECT step, epoch FROM job_checkpoints"
                       "   WHERE job_id = j.id ORDER BY step DESC LIMIT 1) c ON true");

// The same, answering the changed row with where it resumes, as
// work_on_agent reads a STARTING job: the resume point's five columns, its
// checkpoint's epoch, then the row's (no row when nothing changed).
// job_logs, job_metrics and job_checkpoints are read as the statement found
// them; it changes none.
#define TPUJOBS_WITH_WORK \
  TPUJOBS_RESUME_POINTS_OF("changed", ", c.epoch, j.*, " TPUJOBS_ASYNCHRONOUS_COMMIT)
constexpr const char* kTransitionWithWork =
    TPUJOBS_TRANSITION(TPUJOBS_JOB_COLUMNS ", previous.state AS from_state", TPUJOBS_WITH_WORK);
// The same for a placement that goes on to RUNNING (Transition::then_running):
// the row takes RUNNING, and the second event's reason names the newest
// checkpoint, the one the job resumes from.
constexpr const char* kTransitionWithWorkThenRunning = TPUJOBS_TRANSITION_TO(
    "'RUNNING'",
    " UNION ALL SELECT r.id, $3::text, 'RUNNING',"
    "   CASE WHEN k.step IS NULL THEN $28::text ELSE $29::text || k.step || $30::text END, NULL"
    " FROM changed r LEFT JOIN LATERAL (SELECT step FROM job_checkpoints"
    "   WHERE job_id = r.id ORDER BY step DESC LIMIT 1) AS k ON true",
    TPUJOBS_JOB_COLUMNS ", previous.state AS from_state", TPUJOBS_WITH_WORK);

// `asynchronous`: $24, whether the commit waits for the WAL.
std::vector<Param> transition_params(const Transition& t, bool asynchronous) {
  const std::vector<std::optional<std::string>> from = state_names(t.from);
  Param cancelled_reason = std::nullopt, cancelled_error = std::nullopt;
  if (t.if_cancel_requested) {
    cancelled_reason = t.if_cancel_requested->reason;
    cancelled_error = t.if_cancel_requested->error_json;
  }
  Param alive_names = std::nullopt, alive_epochs = std::nullopt;  // NULL: no agent to check
  if (!t.require_alive.empty()) {
    std::vector<std::optional<std::string>> names;
    std::vector<std::int64_t> epochs;
    for (const auto& [name, epoch] : t.require_alive) {
      names.emplace_back(name);
      epochs.push_back(epoch);
    }
    alive_names = Param::array(names);
    alive_epochs = Param::bigints(epochs);
  }
  const std::vector<Param> params{t.job_id,
                                  Param::array(from),
                                  to_string(t.to),
                                  t.reason,
                                  t.detail_json,
                                  t.clear_allocation,
                                  t.allocation_json,
                                  t.error_json,
                                  t.result_json,
                                  t.set_started_at,
                                  t.set_finished_at,
                                  t.increment_attempt,
                                  t.clear_preempted_by,
                                  t.agent,
                                  t.placement_epoch,
                                  t.clear_placement,
                                  t.require_placement,
                                  t.preempted_by,
                                  t.set_requeued_at,
                                  alive_names,
                                  alive_epochs,
                                  t.require_leader_term,
                                  t.count_unstarted_requeue,
                                  asynchronous,
                                  cancelled_reason,
                                  cancelled_error,
                                  t.placement};
  return params;
}

}  // namespace

base::Result<bool> JobRepository::transition(const Transition& t) {
  const BatchedTransition one[] = {{t}};
  base::Result<std::vector<TransitionOutcome>> outcomes = transitions(one);
  if (!outcomes.ok()) return outcomes.error();
  return outcomes->front().applied;
}

base::Result<std::optional<JobWithCheckpoint>> JobRepository::transition_with_view(
    const Transition& t) {
  const std::vector<Param> params = transition_params(t, t.asynchronous_commit);
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<JobWithCheckpoint>> {
        base::Result<QueryResult> rows = connection.execute_generic(kTransitionWithView, params);
        if (!rows.ok()) return rows.error();
        return job_with_checkpoint(*rows);
      });
}

base::Result<std::optional<PlacedWork>> JobRepository::transition_with_work(const Transition& t) {
  const BatchedTransition one[] = {{t, /*with_work=*/true}};
  base::Result<std::vector<TransitionOutcome>> outcomes = transitions(one);
  if (!outcomes.ok()) return outcomes.error();
  return std::move(outcomes->front().work);
}

base::Result<std::vector<TransitionOutcome>> JobRepository::transitions(
    std::span<const BatchedTransition> batch) {
  // One pipeline is one transaction (its statements run up to one sync),
  // and it commits as a whole or not at all.
  const bool asynchronous = std::all_of(batch.begin(), batch.end(), [](const BatchedTransition& b) {
    return b.transition.asynchronous_commit;
  });
  std::vector<Statement> statements;
  statements.reserve(batch.size());
  for (const BatchedTransition& b : batch) {
    const Transition& t = b.transition;
    std::vector<Param> params = transition_params(t, asynchronous);
    const char* sql = kTransition;
    if (b.with_work) sql = t.then_running ? kTransitionWithWorkThenRunning : kTransitionWithWork;
    if (b.with_work && t.then_running) {
      params.emplace_back(t.then_running->started);
      params.emplace_back(t.then_running->resumed_before_step);
      params.emplace_back(t.then_running->resumed_after_step);
    }
    statements.push_back({sql, std::move(params)});
  }
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::vector<TransitionOutcome>> {
        base::Result<std::vector<QueryResult>> answers = connection.execute_generic(statements);
        if (!answers.ok()) return answers.error();
        std::vector<TransitionOutcome> outcomes(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
          const QueryResult& rows = (*answers)[i];
          if (!batch[i].with_work) {
            outcomes[i].applied = rows.int64(0, 0) > 0;
            outcomes[i].cancelled_instead = outcomes[i].applied && rows.int64(0, 2) > 0;
            continue;
          }
          if (rows.rows() == 0) continue;
          auto points = JobOutputRepository::resume_points_from(rows);
          PlacedWork work{read_job(rows, 0, /*first_column=*/6), points.begin()->second};
          if (!rows.is_null(0, 5)) work.checkpoint_epoch = static_cast<int>(rows.int64(0, 5));
          outcomes[i] = {true, std::move(work)};
        }
        return outcomes;
      });
}

}  // namespace tpujobs::db
