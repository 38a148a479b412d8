#include "db/job_repository.h"

#include <algorithm>
#include <array>
#include <thread>

#include "db/job_rows.h"

namespace tpujobs::db {
namespace {

// A list's rows: of the spec only what a listed view shows of it (issue 34:
// a list of 500 wrote, sent and parsed 500 specs, for max_retries alone),
// and the result without its XLA report, which no view shows (views::put_result).
#define TPUJOBS_JOB_LIST_COLUMNS                                                       \
  TPUJOBS_JOB_COLUMNS_BEFORE_SPEC                                                      \
  "jsonb_strip_nulls(jsonb_build_object('max_retries', "                               \
  "j.spec->'max_retries')), " TPUJOBS_JOB_COLUMNS_AFTER_SPEC_WITH(                     \
      "CASE WHEN jsonb_typeof(j.result) = 'object' THEN j.result - 'xla_report' ELSE " \
      "j.result END")

constexpr int kMaxPageSize = 500;

// The cursor is the (created_at, id) of the last row shown, made opaque so
// clients do not build their own.
std::string encode_cursor(TimePoint created_at, std::int64_t id) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(created_at.time_since_epoch()).count();
  return to_hex(std::to_string(micros) + ":" + std::to_string(id));
}

std::optional<std::pair<TimePoint, std::int64_t>> decode_cursor(std::string_view cursor) {
  const std::optional<std::string> text = from_hex(cursor);
  if (!text) return std::nullopt;
  const std::size_t colon = text->find(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long micros = std::stoll(text->substr(0, colon), &used);
    if (used != colon) return std::nullopt;
    const std::string id_text = text->substr(colon + 1);
    const long long id = std::stoll(id_text, &used);
    if (used != id_text.size()) return std::nullopt;
    return std::make_pair(TimePoint(std::chrono::duration_cast<TimePoint::duration>(
                              std::chrono::microseconds(micros))),
                          static_cast<std::int64_t>(id));
  } catch (...) {
    return std::nullopt;
  }
}

// Rows are inserted in (tenant, idempotency_key) order, so two batches that
// hold the same keys lock them in the same order and cannot deadlock (not
// reproduced: 400 rounds of two such batches at once never deadlocked with
// the input order either); within a batch, a key's first use (lowest ord)
// wins. A job array none of whose keys was used is inserted whole; one with
// a key used before (a retry, or the key of another array) is inserted not
// at all (InsertedJob::not_stored), so that an array answered 409 stored
// none of its children, whether the key was used by a committed job or by
// an earlier row of the same batch. (Two arrays with the same key committed
// at the same moment by two committers would both see no key used, the
// lookup seeing committed rows only: kLockSweepKeys makes them take turns.)
constexpr const char* kInsertJobs =
    "WITH numbered AS ("
    "  SELECT nextval('jobs_id_seq') AS id, t.*,"
    // Looked up for an array's keyed children only: a lone submit's key is
    // the insert's ON CONFLICT's to find.
    "    t.array_group > 0 AND t.idempotency_key IS NOT NULL"
    "      AND EXISTS (SELECT 1 FROM jobs e WHERE e.tenant = t.tenant"
    "                  AND e.idempotency_key = t.idempotency_key) AS committed_key"
    "  FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::integer[], $5::jsonb[],"
    "              $6::jsonb[], $7::jsonb[], $8::text[], $9::text[], $10::bigint[],"
    "              $11::integer[], $12::jsonb[])"
    "       WITH ORDINALITY AS t(tenant, name, labels, priority, spec, resolved, warnings,"
    "                            idempotency_key, spec_hash, array_group, array_index,"
    "                            array_values, ord)"
    // Used: by a committed job, or by an earlier row of this batch. (A
    // window in `numbered` would number the rows in its own order.)
    "), keyed AS ("
    "  SELECT numbered.*, committed_key OR (array_group > 0 AND idempotency_key IS NOT NULL"
    "    AND count(*) OVER (PARTITION BY tenant, idempotency_key ORDER BY ord) > 1) AS key_used"
    "  FROM numbered"
    "), input AS ("
    // An array's id is its first child's.
    "  SELECT keyed.*, CASE WHEN array_group > 0"
    "                       THEN min(id) OVER (PARTITION BY array_group) END AS array_id,"
    "    array_group > 0 AND bool_or(key_used) OVER (PARTITION BY array_group) AS array_retried"
    "  FROM keyed"
    "), inserted AS ("
    "  INSERT INTO jobs AS j (id, tenant, name, labels, priority, state, spec, resolved,"
    "                         warnings, idempotency_key, spec_hash, array_id, array_index,"
    "                         array_values)"
    "  SELECT id, tenant, name, labels, priority, 'QUEUED', spec, resolved, warnings,"
    "         idempotency_key, spec_hash, array_id,"
    "         CASE WHEN array_group > 0 THEN array_index END,"
    "         CASE WHEN array_group > 0 THEN array_values END"
    "  FROM input WHERE NOT array_retried ORDER BY tenant, idempotency_key, ord"
    "  ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
    "  RETURNING j.*"
    "), events AS ("
    "  INSERT INTO job_events (job_id, from_state, to_state, reason)"
    "  SELECT id, NULL, 'QUEUED', 'Submitted' FROM inserted"
    ")"
    " SELECT input.ord, j.changed_xid::text, " TPUJOBS_JOB_COLUMNS
    " FROM inserted j JOIN input ON input.id = j.id";

// With, first, how many children a stored sweep has (0 for a lone job): a
// sweep submitted again with fewer children is not the sweep stored.
constexpr const char* kJobsByIdempotencyKey =
    "SELECT CASE WHEN j.array_id IS NULL THEN 0"
    "            ELSE (SELECT count(*) FROM jobs s WHERE s.array_id = j.array_id) "
    "END, " TPUJOBS_JOB_COLUMNS
    " FROM jobs j JOIN unnest($1::text[], $2::text[]) AS k(tenant, idempotency_key)"
    " ON j.tenant = k.tenant AND j.idempotency_key = k.idempotency_key";

// Two transactions that store sweeps with one key (two replicas' committers,
// a client's retry on another) take turns: the second's insert then finds
// the first's children, and stores none of its own. (Without it, each could
// find no child of the other and store the children the other lacks.) The
// locks, in their order, are this transaction's until it ends. Keys share
// 64 locks: a batch of 256 one-child sweeps takes 64 of the server's lock
// table, not 256 (two sweeps of other keys at once may wait for each other).
constexpr std::int32_t kSweepKeyLocks = 29;  // the advisory locks' class
constexpr const char* kLockSweepKeys =
    "SELECT pg_advisory_xact_lock($3::integer, h) FROM ("
    "  SELECT DISTINCT hashtext(t || E'\\n' || k) & 63 AS h"
    "  FROM unnest($1::text[], $2::text[]) AS s(t, k) ORDER BY h) AS locks";

constexpr const char* kListedRows =
    "SELECT " TPUJOBS_JOB_LIST_COLUMNS " FROM jobs j WHERE j.id = ANY($1::bigint[])";

constexpr const char* kUnfinished = "('QUEUED', 'STARTING', 'RUNNING')";

// kInsertJobs' parameters: an array for each column.
std::vector<Param> insert_params(const std::vector<NewJob>& jobs) {
  std::array<std::vector<std::optional<std::string>>, 12> columns;
  for (auto& column : columns) column.reserve(jobs.size());
  for (const NewJob& job : jobs) {
    columns[0].emplace_back(job.tenant);
    columns[1].emplace_back(job.name);
    columns[2].emplace_back(job.labels_json);
    columns[3].emplace_back(std::to_string(job.priority));
    columns[4].emplace_back(job.spec_json);
    columns[5].emplace_back(job.resolved_json);
    columns[6].emplace_back(job.warnings_json);
    columns[7].emplace_back(job.idempotency_key);
    columns[8].emplace_back(job.spec_hash);
    columns[9].emplace_back(std::to_string(job.array_group));
    columns[10].emplace_back(std::to_string(job.array_index));
    columns[11].emplace_back(job.array_values_json);
  }
  std::vector<Param> params;
  for (const auto& column : columns) params.push_back(Param::array(column));
  return params;
}

// kLockSweepKeys for the batch's sweeps' keys, and a lone job's that could
// be a child's ("K#3"); nullopt when it has none.
std::optional<Statement> lock_sweep_keys(const std::vector<NewJob>& jobs) {
  std::vector<std::optional<std::string>> tenants, keys;
  for (const NewJob& job : jobs) {
    if (!job.idempotency_key) continue;
    const std::string& key = *job.idempotency_key;
    const std::size_t hash = key.rfind('#');
    const bool childlike = hash != std::string::npos && hash + 1 < key.size() &&
                           key.find_first_not_of("0123456789", hash + 1) == std::string::npos;
    if (job.array_group == 0 && !childlike) continue;
    tenants.emplace_back(job.tenant);
    keys.emplace_back(key.substr(0, hash));
  }
  if (keys.empty()) return std::nullopt;
  return Statement{
      kLockSweepKeys,
      {Param::array(tenants), Param::array(keys), static_cast<std::int64_t>(kSweepKeyLocks)}};
}

// `jobs` in id order: for reads whose ORDER BY the plan would serve by
// walking the unfinished jobs' index, every queued job on the way.
std::vector<JobRow> by_id(std::vector<JobRow> jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const JobRow& a, const JobRow& b) { return a.id < b.id; });
  return jobs;
}

}  // namespace

base::Result<std::vector<InsertedJob>> JobRepository::insert_jobs(const std::vector<NewJob>& jobs) {
  if (jobs.empty()) return std::vector<InsertedJob>{};
  // The rows that meet an existing idempotency key (one inserted earlier in
  // this batch, or committed before by another) are not inserted: the
  // statement after the insert reads them. It sees what the insert stored
  // and what it waited on (its own snapshot, READ COMMITTED). All run in one
  // transaction: when the read fails, no row of the batch is stored, so the
  // error its submits are answered is true (a read after the insert's commit
  // that failed left committed jobs answered as not stored).
  std::vector<std::optional<std::string>> tenants, keys;
  for (const NewJob& job : jobs) {
    if (!job.idempotency_key) continue;
    tenants.emplace_back(job.tenant);
    keys.emplace_back(job.idempotency_key);
  }
  std::vector<Statement> statements;
  if (std::optional<Statement> lock = lock_sweep_keys(jobs)) statements.push_back(std::move(*lock));
  const std::size_t inserted_at = statements.size();
  statements.push_back({kInsertJobs, insert_params(jobs)});
  if (!keys.empty())
    statements.push_back({kJobsByIdempotencyKey, {Param::array(tenants), Param::array(keys)}});

  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::vector<InsertedJob>> {
        base::Result<std::vector<QueryResult>> answers = connection.execute_generic(statements);
        if (!answers.ok()) return note_unanswered_insert(connection, answers.error());
        const QueryResult& rows = (*answers)[inserted_at];
        std::vector<std::optional<InsertedJob>> results(jobs.size());
        for (int row = 0; row < rows.rows(); ++row) {
          const std::int64_t ord = rows.int64(row, 0);
          results[ord - 1] = InsertedJob{false, read_job(rows, row, 2)};
          results[ord - 1]->row.changed_xid = rows.int64(row, 1);
        }
        if (answers->size() > inserted_at + 1) {
          const QueryResult& existing = (*answers)[inserted_at + 1];
          for (int row = 0; row < existing.rows(); ++row) {
            JobRow job = read_job(existing, row, 1);
            for (std::size_t i = 0; i < jobs.size(); ++i) {
              if (!results[i] && jobs[i].tenant == job.tenant &&
                  jobs[i].idempotency_key == job.idempotency_key) {
                results[i] = InsertedJob{.existing = true, .row = job};
                results[i]->array_size = existing.int64(row, 0);
              }
            }
          }
        }
        std::vector<InsertedJob> out;
        out.reserve(jobs.size());
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          if (!results[i] && jobs[i].array_group > 0)
            results[i] = InsertedJob{.existing = false, .row = {}, .not_stored = true};
          if (!results[i])
            return base::make_error(base::ErrorCode::kInternal, "a job was neither new nor found");
          out.push_back(std::move(*results[i]));
        }
        return out;
      });
}

base::Result<std::optional<JobRow>> JobRepository::get_job(std::int64_t id) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::optional<JobRow>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT " TPUJOBS_JOB_COLUMNS " FROM jobs j WHERE j.id = $1::bigint", {id});
        if (!rows.ok()) return rows.error();
        if (rows->rows() == 0) return std::optional<JobRow>();
        return std::optional<JobRow>(read_job(*rows, 0));
      });
}

base::Result<std::optional<JobWithCheckpoint>> JobRepository::get_job_with_checkpoint(
    std::int64_t id) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<JobWithCheckpoint>> {
        // The checkpoint's columns first, as insert_jobs puts its ordinal.
        base::Result<QueryResult> rows = connection.execute(
            "SELECT c.step, c.epoch, " TPUJOBS_JOB_COLUMNS
            " FROM jobs j LEFT JOIN LATERAL (SELECT step, epoch FROM job_checkpoints"
            "   WHERE job_id = j.id ORDER BY step DESC LIMIT 1) c ON true"
            " WHERE j.id = $1::bigint",
            {id});
        if (!rows.ok()) return rows.error();
        return job_with_checkpoint(*rows);
      });
}

base::Result<JobPage> JobRepository::list_jobs(const JobFilter& filter) {
  const int limit = std::clamp(filter.limit, 1, kMaxPageSize);
  std::optional<TimePoint> after_time;
  std::optional<std::int64_t> after_id;
  if (!filter.cursor.empty()) {
    const auto decoded = decode_cursor(filter.cursor);
    if (!decoded) return base::make_error(base::ErrorCode::kInvalid, "malformed cursor");
    after_time = decoded->first;
    after_id = decoded->second;
  }
  // The statement holds only the conditions the filter sets, each a text of
  // this program with its value bound to a parameter, rather than every
  // condition guarded by "$n IS NULL OR ...": a list of 20 under the soak's
  // flood spent 2.5 ms on that statement in the database, on this one 0.6
  // (issue 34; bench/RESULTS.md, session 30).
  std::string sql = "SELECT j.id, j.state, j.created_at FROM jobs j WHERE true";
  std::vector<Param> params;
  auto placeholder = [&params](Param value) {
    params.push_back(std::move(value));
    return "$" + std::to_string(params.size());
  };
  if (filter.tenant) sql += " AND j.tenant = " + placeholder(*filter.tenant) + "::text";
  if (!filter.states.empty()) {
    sql +=
        " AND j.state = ANY(" + placeholder(Param::array(state_names(filter.states))) + "::text[])";
  }
  if (!filter.labels.empty()) {
    std::vector<std::optional<std::string>> labels;
    for (const auto& [key, value] : filter.labels) {
      labels.emplace_back(key);
      labels.emplace_back(value);
    }
    sql += " AND j.labels @> jsonb_object(" + placeholder(Param::array(labels)) + "::text[])";
  }
  if (filter.name) sql += " AND j.name = " + placeholder(*filter.name) + "::text";
  if (after_time) {
    const std::string time = placeholder(*after_time);  // numbered before the id
    const std::string id = placeholder(*after_id);
    sql += " AND (j.created_at, j.id) < (" + time + "::timestamptz, " + id + "::bigint)";
  }
  if (filter.array_id) sql += " AND j.array_id = " + placeholder(*filter.array_id) + "::bigint";
  // One row more than asked tells whether another page follows.
  sql += " ORDER BY j.created_at DESC, j.id DESC LIMIT " + placeholder(limit + 1) + "::integer";
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<JobPage> {
        // Generic, without scans: a page's plan kept from when the jobs
        // were few sorted every job of the state (tests/support/kept_plans.h).
        base::Result<QueryResult> rows = connection.execute_generic(sql, params);
        if (!rows.ok()) return rows.error();
        JobPage page;
        const int listed = std::min(rows->rows(), limit);
        page.jobs.reserve(static_cast<std::size_t>(listed));
        for (int i = 0; i < listed; ++i) {
          const std::int64_t id = rows->int64(i, 0);
          page.jobs.push_back(
              {.id = id,
               .state = parse_job_state(rows->text(i, 1)).value_or(JobState::kQueued),
               .cursor = encode_cursor(rows->timestamp(i, 2), id)});
        }
        if (rows->rows() > limit) page.next_cursor = page.jobs.back().cursor;
        return page;
      });
}

base::Result<std::vector<JobRow>> JobRepository::listed_rows(const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return std::vector<JobRow>();
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::vector<JobRow>> {
        base::Result<QueryResult> rows = connection.execute(kListedRows, {Param::bigints(ids)});
        if (!rows.ok()) return rows.error();
        return read_jobs(*rows);
      });
}

base::Status JobRepository::update_progress(std::int64_t id,
                                            const std::optional<std::string>& progress_json,
                                            const std::optional<std::string>& latest_metrics_json,
                                            std::int64_t fence) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // By key, whatever the table was when the session planned it (execute_generic).
    base::Result<QueryResult> rows = connection.execute_generic(
        "UPDATE jobs SET progress = COALESCE($2::jsonb, progress),"
        " latest_metrics = COALESCE($3::jsonb, latest_metrics), updated_at = now()"
        " WHERE id = $1::bigint AND ($4::bigint = 0 OR placement = $4::bigint)",
        {id, progress_json, latest_metrics_json, fence});
    if (!rows.ok()) return rows.error();
    if (rows->affected_rows() == 0) {
      return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
    }
    return base::Status::Ok();
  });
}

base::Status JobRepository::set_pending(
    const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch,
    std::optional<std::int64_t> leader_term) {
  if (batch.empty()) return base::Status::Ok();
  std::vector<std::optional<std::string>> ids, pending;
  for (const auto& [id, json] : batch) {
    ids.emplace_back(std::to_string(id));
    pending.push_back(json);
  }
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // A row of its own (db/migrations/040), rewritten only when it changed.
    // Each job's state is looked up by its key: a join, planned while the
    // statistics lagged a burst of submits, read all 100,000 queued rows.
    // Planned generically, without scans: a plan the leader's session made
    // while the jobs were few scanned them for each reason.
    base::Result<QueryResult> rows = connection.execute_generic(
        "WITH held AS (SELECT $3::bigint IS NULL OR (SELECT term FROM scheduler_term"
        "  WHERE id = 1 FOR SHARE) = $3::bigint AS held),"
        " w AS (INSERT INTO job_pending AS p (job_id, pending)"
        "  SELECT u.id, u.pending FROM unnest($1::bigint[], $2::jsonb[]) AS u(id, pending)"
        "  WHERE (SELECT held FROM held)"
        "    AND (SELECT j.state FROM jobs j WHERE j.id = u.id) = 'QUEUED'"
        "  ON CONFLICT (job_id) DO UPDATE SET pending = EXCLUDED.pending"
        "  WHERE p.pending IS DISTINCT FROM EXCLUDED.pending)"  // runs, read or not
        " SELECT held, set_config('synchronous_commit', 'off', true) FROM held",
        {Param::array(ids), Param::array(pending), leader_term});
    if (!rows.ok()) return rows.error();
    if (!rows->boolean(0, 0)) {
      return base::make_error(base::ErrorCode::kConflict,
                              "the scheduler's term is no longer " +
                                  std::to_string(leader_term.value_or(0)) +
                                  ": another replica leads, and no reason was written");
    }
    return base::Status::Ok();
  });
}

base::Result<bool> JobRepository::request_preemption(std::int64_t victim, std::int64_t placement,
                                                     std::int64_t preemptor,
                                                     const std::string& preemptor_reason,
                                                     const std::string& preemptor_detail,
                                                     std::optional<std::int64_t> leader_term) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<bool> {
        base::Result<QueryResult> rows = connection.execute(
            "WITH marked AS ("
            "  UPDATE jobs SET preempted_by = $3::bigint, updated_at = now()"
            "  WHERE id = $1::bigint AND placement = $2::bigint"
            "    AND state IN ('STARTING', 'RUNNING') AND preempted_by IS NULL"
            "    AND NOT cancel_requested"
            "    AND ($6::bigint IS NULL"
            "         OR (SELECT term FROM scheduler_term WHERE id = 1 FOR SHARE) = $6::bigint)"
            "  RETURNING id"
            "), event AS ("
            "  INSERT INTO job_events (job_id, from_state, to_state, reason, detail)"
            "  SELECT p.id, p.state, p.state, $4::text, $5::jsonb FROM jobs p"
            "  WHERE p.id = $3::bigint AND p.state = 'QUEUED' AND $4::text <> ''"
            "    AND EXISTS (SELECT 1 FROM marked)"
            ")"
            " SELECT count(*) FROM marked",
            {victim, placement, preemptor, preemptor_reason, preemptor_detail, leader_term});
        if (!rows.ok()) return rows.error();
        return rows->int64(0, 0) > 0;
      });
}

base::Status JobRepository::request_cancel(std::int64_t id) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // By key, whatever the table was when the session planned it (execute_generic).
    base::Result<QueryResult> rows = connection.execute_generic(
        "WITH target AS (SELECT id, state FROM jobs WHERE id = $1::bigint FOR UPDATE),"
        " changed AS ("
        "  UPDATE jobs j SET cancel_requested = true, updated_at = now() FROM target"
        "  WHERE j.id = target.id AND target.state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
        "  RETURNING j.id)"
        " SELECT (SELECT state FROM target), (SELECT count(*) FROM changed)",
        {id});
    if (!rows.ok()) return rows.error();
    if (rows->is_null(0, 0)) {
      return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
    }
    if (rows->int64(0, 1) == 0) {
      return base::make_error(base::ErrorCode::kConflict,
                              "job " + std::to_string(id) + " is already " + rows->string(0, 0));
    }
    return base::Status::Ok();
  });
}

base::Result<std::vector<JobRow>> JobRepository::load_placed() {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::vector<JobRow>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT " TPUJOBS_JOB_SCHEDULING_COLUMNS
            " FROM jobs j WHERE j.state IN ('STARTING', 'RUNNING') ORDER BY j.id");
        if (!rows.ok()) return rows.error();
        return read_jobs(*rows);
      });
}

std::vector<Statement> JobRepository::schedule_statements(
    const std::optional<ScheduleSince>& since) {
  // A held row (ScheduleSince::held_ids) is left out while its changed_xid
  // is the one held: a hash anti-join of the few thousand held at most.
  static const std::string kSince = std::string("SELECT ") + TPUJOBS_JOB_SCHEDULING_WITH_SPEC +
                                    " FROM jobs j WHERE j.changed_xid >= $1::xid8 AND NOT EXISTS ("
                                    "SELECT 1 FROM unnest($3::bigint[], $4::xid8[]) AS h(id, xid)"
                                    " WHERE h.id = j.id AND h.xid = j.changed_xid)";
  static const std::string kAll = std::string("SELECT ") + TPUJOBS_JOB_SCHEDULING_COLUMNS +
                                  " FROM jobs j WHERE j.state IN " + kUnfinished;
  // Served by jobs_unfinished (id) WHERE unfinished: a slice reads only its rows.
  static const std::string kSweep = kAll + " AND j.id > $1::bigint ORDER BY j.id LIMIT $2::integer";
  std::vector<Statement> statements = {{"SELECT pg_snapshot_xmin(pg_current_snapshot())::text"}};
  if (since) {
    statements.push_back({kSince,
                          {since->low_water, since->specs_above, Param::bigints(since->held_ids),
                           Param::bigints(since->held_xids)}});
    if (since->sweep) {
      // Through the index, whatever the statistics say: they lag a burst of
      // submits by up to a minute (autovacuum's naptime), and then the
      // planner, counting a thousand rows, read every row above the slice's
      // start and sorted them (17-62 ms at 100,000 queued, bench/RESULTS.md).
      // The setting lasts until the pipeline's implicit transaction ends.
      statements.push_back({"SELECT set_config('enable_sort', 'off', true)"});
      statements.push_back({kSweep, {since->sweep->after, since->sweep->limit}});
    }
  } else {
    statements.push_back({kAll});
  }
  return statements;
}

JobRepository::ScheduleRead JobRepository::schedule_read_from(
    std::span<const QueryResult> answers, const std::optional<ScheduleSince>& since) {
  ScheduleRead read{read_jobs(answers[1]), !since, answers[0].string(0, 0)};
  if (since && since->sweep) {  // after its setting (schedule_statements)
    read.swept = ScheduleRead::Swept{since->sweep->after, read_jobs(answers[3]), false};
    read.swept->to_end = static_cast<int>(read.swept->rows.size()) < since->sweep->limit;
  }
  return read;
}

base::Result<std::map<std::int64_t, std::string>> JobRepository::job_specs(
    const std::vector<std::int64_t>& ids) {
  using Specs = std::map<std::int64_t, std::string>;
  if (ids.empty()) return Specs{};
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<Specs> {
        // By key, whatever the jobs were when the session planned it.
        base::Result<QueryResult> rows = connection.execute_generic(
            "SELECT id, spec FROM jobs WHERE id = ANY($1::bigint[])", {Param::bigints(ids)});
        if (!rows.ok()) return rows.error();
        Specs specs;
        for (int row = 0; row < rows->rows(); ++row)
          specs[rows->int64(row, 0)] = rows->string(row, 1);
        return specs;
      });
}

base::Result<std::vector<JobRow>> JobRepository::load_queued_except(
    const std::vector<std::int64_t>& known) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::vector<JobRow>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT " TPUJOBS_JOB_COLUMNS
            " FROM jobs j WHERE j.state = 'QUEUED' AND NOT (j.id = ANY($1::bigint[]))"
            " ORDER BY j.id",
            {Param::bigints(known)});
        if (!rows.ok()) return rows.error();
        return read_jobs(*rows);
      });
}

base::Error JobRepository::note_unanswered_insert(const Connection& connection, base::Error error) {
  if (error.maybe_applied) {
    base::MutexLock lock(unanswered_mutex_);
    unanswered_inserts_.push_back({std::this_thread::get_id(), connection.server_process()});
  }
  return error;
}

std::vector<ServerProcess> JobRepository::take_unanswered_inserts() {
  const std::thread::id self = std::this_thread::get_id();
  std::vector<ServerProcess> taken;
  base::MutexLock lock(unanswered_mutex_);
  std::erase_if(unanswered_inserts_, [&](const UnansweredInsert& insert) {
    if (insert.thread != self) return false;
    taken.push_back(insert.process);
    return true;
  });
  return taken;
}

base::Result<bool> JobRepository::end_server_process(const ServerProcess& process,
                                                     std::chrono::milliseconds wait) {
  if (process.pid <= 0) return true;  // none was known: nothing to wait for
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<bool> {
        // pg_terminate_backend's timeout waits for the exit.
        base::Result<QueryResult> rows = connection.execute(
            "SELECT coalesce(bool_and(pg_terminate_backend(pid, $3::bigint)), true)"
            "  FROM pg_stat_activity"
            " WHERE pid = $1::integer AND backend_start = $2::timestamptz",
            {process.pid, process.started,
             static_cast<std::int64_t>(std::max<long long>(1, wait.count()))});
        if (!rows.ok()) return rows.error();
        return rows->boolean(0, 0);
      });
}

base::Result<JobRepository::AgentWork> JobRepository::work_on_agent(const std::string& agent) {
  const std::vector<Statement> statements = {
      {"SELECT " TPUJOBS_JOB_COLUMNS " FROM jobs j"
       " WHERE j.agent = $1::text AND j.state IN ('STARTING', 'RUNNING')",
       {agent}},
      {"SELECT " TPUJOBS_JOB_COLUMNS " FROM jobs j"
       " WHERE j.state IN ('STARTING', 'RUNNING') AND j.agent <> $1::text"
       "   AND j.allocation -> 'slice' -> 'parts' @> "
       "jsonb_build_array(jsonb_build_object('agent', $1::text))",
       {agent}},
      JobOutputRepository::resume_points_statement(agent)};
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<AgentWork> {
        // Planned once: an agent woken to start a job waits on this read.
        // Without ORDER BY (sorted here), as orphaned_jobs: the plan is by
        // the placed jobs' partial index, not a walk of every unfinished
        // job's by id, whatever the table was when it was made.
        auto answers = connection.execute_generic(statements);
        if (!answers.ok()) return answers.error();
        return AgentWork{by_id(read_jobs((*answers)[0])), by_id(read_jobs((*answers)[1])),
                         JobOutputRepository::resume_points_from((*answers)[2])};
      });
}

base::Result<std::vector<JobRow>> JobRepository::orphaned_jobs() {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::vector<JobRow>> {
                           // The leader's session keeps the plan it made first, often while
                           // the table was nearly empty: a scan of the table then, which
                           // walked every queued job each housekeeping (bench/RESULTS.md,
                           // session 61). Generic, without ORDER BY (which the index of the
                           // unfinished jobs by id would serve, walking them all), its plan is
                           // by the partial index of the placed jobs whatever the table's size
                           // (and without bitmap scans, no BitmapAnd of every unfinished job:
                           // session 62).
                           base::Result<QueryResult> rows = connection.execute_generic(
                               "SELECT " TPUJOBS_JOB_COLUMNS
                               " FROM jobs j"
                               " WHERE j.agent IS NOT NULL AND j.state IN ('STARTING', 'RUNNING')"
                               "   AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.name = j.agent"
                               "                   AND a.state IN ('alive', 'draining')"
                               "                   AND a.epoch = j.placement_epoch)",
                               {});
                           if (!rows.ok()) return rows.error();
                           return by_id(read_jobs(*rows));
                         });
}

base::Result<std::vector<JobEventRow>> JobRepository::list_events(std::int64_t id) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::vector<JobEventRow>> {
        // By key, whatever the table was when the session planned it (execute_generic).
        base::Result<QueryResult> rows = connection.execute_generic(
            "SELECT id, job_id, at, from_state, to_state, reason, detail FROM job_events"
            " WHERE job_id = $1::bigint ORDER BY id",
            {id});
        if (!rows.ok()) return rows.error();
        std::vector<JobEventRow> events;
        for (int row = 0; row < rows->rows(); ++row) {
          JobEventRow event;
          event.id = rows->int64(row, 0);
          event.job_id = rows->int64(row, 1);
          event.at = rows->timestamp(row, 2);
          if (!rows->is_null(row, 3)) event.from_state = parse_job_state(rows->text(row, 3));
          event.to_state = parse_job_state(rows->text(row, 4)).value_or(JobState::kFailed);
          event.reason = rows->string(row, 5);
          event.detail_json = rows->optional_string(row, 6);
          events.push_back(std::move(event));
        }
        return events;
      });
}

base::Result<std::int64_t> JobRepository::count_queued() {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::int64_t> {
        base::Result<QueryResult> rows =
            connection.execute("SELECT count(*) FROM jobs WHERE state = 'QUEUED'");
        if (!rows.ok()) return rows.error();
        return rows->int64(0, 0);
      });
}

base::Result<std::map<std::string, std::int64_t>> JobRepository::count_jobs_by_state() {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::map<std::string, std::int64_t>> {
        base::Result<QueryResult> rows =
            connection.execute("SELECT state, count(*) FROM jobs GROUP BY state");
        if (!rows.ok()) return rows.error();
        std::map<std::string, std::int64_t> counts;
        for (std::string_view name : base::kJobStateNames) counts[std::string(name)] = 0;
        for (int row = 0; row < rows->rows(); ++row) {
          counts[rows->string(row, 0)] = rows->int64(row, 1);
        }
        return counts;
      });
}

}  // namespace tpujobs::db
