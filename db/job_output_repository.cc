#include "db/job_output_repository.h"

#include <algorithm>

namespace tpujobs::db {

// A row t of a job's output with column t.fence lands when t.fence is 0
// (unfenced) or the job still runs under that placement (JobRow::placement:
// not an earlier placement on the same agent's registration). FOR SHARE
// orders it against a concurrent requeue: the requeue waits for this
// insert, or this insert sees the requeue and is dropped.
#define TPUJOBS_FENCE_HOLDS                                            \
  "(t.fence = 0 OR EXISTS (SELECT 1 FROM jobs f WHERE f.id = t.job_id" \
  " AND f.placement = t.fence AND f.state IN ('STARTING', 'RUNNING') FOR SHARE))"
namespace {

constexpr int kMaxListLimit = 10000;
// A checkpoint is stored as rows of this many bytes (migrations 009, 013):
// with its key and headers a row is 8,144 bytes, within the 8,160 of
// job_checkpoint_chunks' toast_tuple_target, so each fills one 8 KiB page of
// the table itself rather than four tuples of its TOAST table.
constexpr std::size_t kCheckpointChunkBytes = 8096;
// A checkpoint is read back this many bytes a statement (rows stored before
// migration 013 are 1 MiB each, newer ones kCheckpointChunkBytes).
constexpr std::int64_t kCheckpointReadBytes = std::int64_t{16} << 20;
// How long save_checkpoint's VACUUM may take before its connection is given
// up (when the pool's statements have a shorter answer deadline).
constexpr std::chrono::milliseconds kVacuumAnswerTimeout{300'000};

std::optional<std::string> time_or_now(TimePoint at) {
  if (at == TimePoint{}) return std::nullopt;  // COALESCE(..., now()) in SQL
  return format_timestamp(at);
}

// The one bigint a query such as SELECT max(...) or count(*) returns.
base::Result<std::int64_t> single_int64(ConnectionPool& pool, std::chrono::milliseconds timeout,
                                        const char* sql, std::initializer_list<Param> params) {
  return with_connection(pool, timeout, [&](Connection& connection) -> base::Result<std::int64_t> {
    base::Result<QueryResult> rows = connection.execute(sql, params);
    if (!rows.ok()) return rows.error();
    return rows->int64(0, 0);
  });
}

}  // namespace

base::Status JobOutputRepository::append_logs(const std::vector<LogLine>& lines) {
  if (lines.empty()) return base::Status::Ok();
  std::vector<std::optional<std::string>> jobs, seqs, times, texts;
  std::vector<std::optional<std::string>> fences;
  bool fenced = false;
  for (const LogLine& line : lines) {
    jobs.emplace_back(std::to_string(line.job_id));
    seqs.emplace_back(std::to_string(line.seq));
    times.push_back(time_or_now(line.at));
    texts.emplace_back(line.line);
    fences.emplace_back(std::to_string(line.fence));
    fenced |= line.fence != 0;
  }
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // The fence by key, whatever the jobs were when the session planned it.
    base::Result<QueryResult> rows =
        fenced ? connection.execute_generic(
                     "INSERT INTO job_logs (job_id, seq, at, line)"
                     " SELECT job_id, seq, COALESCE(at, now()), line"
                     " FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[],"
                     "             $5::bigint[]) AS t(job_id, seq, at, line, fence)"
                     " WHERE " TPUJOBS_FENCE_HOLDS " ON CONFLICT (job_id, seq) DO NOTHING",
                     {Param::array(jobs), Param::array(seqs), Param::array(times),
                      Param::array(texts), Param::array(fences)})
               : connection.execute(
                     "INSERT INTO job_logs (job_id, seq, at, line)"
                     " SELECT job_id, seq, COALESCE(at, now()), line"
                     " FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[])"
                     "      AS t(job_id, seq, at, line)"
                     " ON CONFLICT (job_id, seq) DO NOTHING",
                     {Param::array(jobs), Param::array(seqs), Param::array(times),
                      Param::array(texts)});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Result<std::vector<LogLine>> JobOutputRepository::list_logs(std::int64_t job_id,
                                                                  std::int64_t after_seq,
                                                                  int limit) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::vector<LogLine>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT seq, at, line FROM job_logs"
            " WHERE job_id = $1::bigint AND seq > $2::bigint ORDER BY seq LIMIT $3::integer",
            {job_id, after_seq, std::clamp(limit, 1, kMaxListLimit)});
        if (!rows.ok()) return rows.error();
        std::vector<LogLine> lines;
        lines.reserve(rows->rows());
        for (int row = 0; row < rows->rows(); ++row) {
          lines.push_back(
              {job_id, rows->int64(row, 0), rows->timestamp(row, 1), rows->string(row, 2)});
        }
        return lines;
      });
}

base::Result<std::int64_t> JobOutputRepository::max_log_seq(std::int64_t job_id) {
  return single_int64(pool_, acquire_timeout_,
                      "SELECT COALESCE(max(seq), 0) FROM job_logs WHERE job_id = $1::bigint",
                      {job_id});
}

base::Status JobOutputRepository::append_metrics(const std::vector<MetricPoint>& points) {
  if (points.empty()) return base::Status::Ok();
  std::vector<std::optional<std::string>> jobs, seqs, steps, epochs, times, metrics;
  std::vector<std::optional<std::string>> fences;
  for (const MetricPoint& point : points) {
    jobs.emplace_back(std::to_string(point.job_id));
    seqs.emplace_back(std::to_string(point.seq));
    steps.emplace_back(std::to_string(point.step));
    epochs.emplace_back(std::to_string(point.epoch));
    times.push_back(time_or_now(point.at));
    metrics.emplace_back(point.metrics_json);
    fences.emplace_back(std::to_string(point.fence));
  }
  // Unfenced points pass the fence (fence 0), so one statement serves both.
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // The fence by key, whatever the jobs were when the session planned it.
    base::Result<QueryResult> rows = connection.execute_generic(
        "INSERT INTO job_metrics (job_id, seq, step, epoch, at, metrics)"
        " SELECT job_id, seq, step, epoch, COALESCE(at, now()), metrics"
        " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::integer[],"
        "             $5::timestamptz[], $6::jsonb[], $7::bigint[])"
        "      AS t(job_id, seq, step, epoch, at, metrics, fence)"
        " WHERE " TPUJOBS_FENCE_HOLDS " ON CONFLICT (job_id, seq) DO NOTHING",
        {Param::array(jobs), Param::array(seqs), Param::array(steps), Param::array(epochs),
         Param::array(times), Param::array(metrics), Param::array(fences)});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Result<std::vector<MetricPoint>> JobOutputRepository::list_metrics(std::int64_t job_id,
                                                                         std::int64_t after_seq,
                                                                         int limit) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::vector<MetricPoint>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT seq, step, epoch, at, metrics FROM job_metrics"
            " WHERE job_id = $1::bigint AND seq > $2::bigint ORDER BY seq LIMIT $3::integer",
            {job_id, after_seq, std::clamp(limit, 1, kMaxListLimit)});
        if (!rows.ok()) return rows.error();
        std::vector<MetricPoint> points;
        points.reserve(rows->rows());
        for (int row = 0; row < rows->rows(); ++row) {
          points.push_back({job_id, rows->int64(row, 0), rows->int64(row, 1),
                            static_cast<int>(rows->int64(row, 2)), rows->timestamp(row, 3),
                            rows->string(row, 4)});
        }
        return points;
      });
}

base::Result<std::int64_t> JobOutputRepository::max_metric_seq(std::int64_t job_id) {
  return single_int64(pool_, acquire_timeout_,
                      "SELECT COALESCE(max(seq), 0) FROM job_metrics WHERE job_id = $1::bigint",
                      {job_id});
}

// The seq of a job's last stored point at or before a step. The points
// recorded past it are the seqs after it: a point dropped past
// --job-output-rate (service/telemetry_writer.h) leaves its seq unused, so
// a resumed run skips the ones it recorded, stored or not, never storing a
// step twice. (Found from the newest point back, by the primary key.)
base::Result<std::int64_t> JobOutputRepository::count_metrics_after_step(std::int64_t job_id,
                                                                         std::int64_t step) {
  static constexpr char kRecordedPast[] =
      "SELECT COALESCE(max(seq), 0)"
      " - COALESCE((" TPUJOBS_LAST_SEQ_THROUGH("$1::bigint", "$2::bigint") "), 0)"
      " FROM job_metrics WHERE job_id = $1::bigint";
  return single_int64(pool_, acquire_timeout_, kRecordedPast, {job_id, step});
}

base::Result<JobOutputRepository::ResumePoint> JobOutputRepository::resume_point(
    std::int64_t job_id) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<ResumePoint> {
        // Planned once (execute_generic): its plan took 0.26 ms of the
        // 1.4 ms from a job's placement to its start, planned again each time.
        const Param params[] = {job_id};
        base::Result<QueryResult> rows =
            connection.execute_generic(TPUJOBS_RESUME_POINTS_WHERE("j.id = $1::bigint"), params);
        if (!rows.ok()) return rows.error();
        std::map<std::int64_t, ResumePoint> points = resume_points_from(*rows);
        return points.empty() ? ResumePoint{} : points.begin()->second;  // no such job: none
      });
}

Statement JobOutputRepository::resume_points_statement(const std::string& agent) {
  return {TPUJOBS_RESUME_POINTS_WHERE("j.agent = $1::text AND j.state = 'STARTING'"), {agent}};
}

std::map<std::int64_t, JobOutputRepository::ResumePoint> JobOutputRepository::resume_points_from(
    const QueryResult& rows) {
  std::map<std::int64_t, ResumePoint> points;
  for (int row = 0; row < rows.rows(); ++row) {
    ResumePoint& point = points[rows.int64(row, 0)];
    if (!rows.is_null(row, 1)) point.checkpoint_step = rows.int64(row, 1);
    point.max_log_seq = rows.int64(row, 2);
    point.max_metric_seq = rows.int64(row, 3);
    point.metrics_after_checkpoint = point.max_metric_seq - rows.int64(row, 4);
  }
  return points;
}

base::Status JobOutputRepository::save_checkpoint(std::int64_t job_id, std::int64_t step, int epoch,
                                                  const std::string& bytes, std::int64_t fence) {
  // The chunks are copied in first, then one statement adds the checkpoint
  // row where the fence holds (job_checkpoint_chunks' key on it is
  // deferred) and prunes, and the transaction commits: the job row's lock
  // (FOR SHARE, the fence) is held only from that statement to the commit,
  // so a writer paused mid-copy stalls nobody who moves the job on. The
  // DELETE sees the rows before the INSERT: it keeps the newest one besides
  // the one saved (and their chunks go with the rest, by cascade).
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<Transaction> transaction = Transaction::begin(connection);
    if (!transaction.ok()) return transaction.error();
    base::Result<QueryResult> replaced = transaction->execute(
        "DELETE FROM job_checkpoint_chunks WHERE job_id = $1::bigint AND step = $2::bigint",
        {job_id, step});
    if (!replaced.ok()) return replaced.error();
    std::vector<CopyRow> chunks;
    for (std::size_t at = 0, seq = 0; at < bytes.size(); at += kCheckpointChunkBytes, ++seq) {
      chunks.push_back(
          {CopyField::int64(job_id), CopyField::int64(step),
           CopyField::int32(static_cast<std::int32_t>(seq)),
           CopyField::bytes(std::string_view(bytes).substr(at, kCheckpointChunkBytes))});
    }
    base::Result<std::int64_t> copied = transaction->copy_in(
        "COPY job_checkpoint_chunks (job_id, step, seq, bytes) FROM STDIN (FORMAT binary)", chunks);
    if (!copied.ok()) return copied.error();
    base::Result<QueryResult> saved = transaction->execute(
        "WITH saved AS ("
        "  INSERT INTO job_checkpoints (job_id, step, epoch, bytes)"
        "  SELECT job_id, step, epoch, NULL FROM"
        "   (VALUES ($1::bigint, $2::bigint, $3::integer, $4::bigint))"
        "   AS t(job_id, step, epoch, fence)"
        "  WHERE " TPUJOBS_FENCE_HOLDS
        "  ON CONFLICT (job_id, step)"
        "  DO UPDATE SET epoch = excluded.epoch, at = now(), bytes = NULL"
        "  RETURNING job_id, step"
        "), pruned AS ("
        "  DELETE FROM job_checkpoints c USING saved"
        "  WHERE c.job_id = saved.job_id AND c.step <> saved.step AND c.step NOT IN ("
        "    SELECT o.step FROM job_checkpoints o WHERE o.job_id = saved.job_id AND o.step <> "
        "saved.step"
        "    ORDER BY o.step DESC LIMIT 1)"
        "  RETURNING 1"
        ") SELECT (SELECT count(*) FROM saved), (SELECT count(*) FROM pruned)",
        {job_id, step, epoch, fence});
    if (!saved.ok()) return saved.error();
    if (saved->int64(0, 0) == 0) {
      // The transaction rolls back: the chunks copied go too.
      return base::make_error(base::ErrorCode::kConflict, "job " + std::to_string(job_id) +
                                                              " no longer runs under placement " +
                                                              std::to_string(fence));
    }
    base::Status committed = transaction->commit();
    if (!committed.ok()) return committed;
    const auto size = static_cast<std::int64_t>(bytes.size());
    vacuum_if_due(connection,
                  saved->int64(0, 1) * size +
                      replaced->affected_rows() * static_cast<std::int64_t>(kCheckpointChunkBytes),
                  bytes.size());
    return committed;
  });
}

std::int64_t JobOutputRepository::vacuum_after_replaced(std::size_t size) {
  return std::max<std::int64_t>(std::int64_t{1} << 20, 2 * static_cast<std::int64_t>(size));
}

void JobOutputRepository::vacuum_if_due(Connection& connection, std::int64_t replaced,
                                        std::size_t size) {
  const std::int64_t due = vacuum_after_replaced(size);
  if (retention_->replaced_bytes.fetch_add(replaced) + replaced < due) return;
  retention_->replaced_bytes.store(0);
  // A VACUUM of what a large checkpoint left may take longer than a
  // statement's usual answer deadline.
  const std::chrono::milliseconds deadline = connection.answer_timeout();
  if (deadline.count() > 0) connection.set_answer_timeout(std::max(deadline, kVacuumAnswerTimeout));
  base::Result<QueryResult> vacuumed =
      connection.execute("VACUUM (SKIP_LOCKED) job_checkpoint_chunks, job_checkpoints");
  connection.set_answer_timeout(deadline);
  // The checkpoint is stored either way: a VACUUM that failed is tried again
  // after the next save.
  if (vacuumed.ok()) {
    retention_->vacuums.fetch_add(1);
  } else {
    retention_->replaced_bytes.fetch_add(due);
  }
}

base::Result<std::optional<CheckpointRow>> JobOutputRepository::latest_checkpoint(
    std::int64_t job_id) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<CheckpointRow>> {
        // One snapshot for the row and its chunks, read a few at a time: a
        // save at the same step meanwhile cannot mix two checkpoints.
        base::Result<Transaction> transaction = Transaction::begin(connection);
        if (!transaction.ok()) return transaction.error();
        base::Status snapshot = transaction->execute_script(
            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
        if (!snapshot.ok()) return snapshot.error();
        base::Result<QueryResult> rows = transaction->execute(
            "SELECT step, epoch, at, bytes,"
            " (SELECT coalesce(sum(octet_length(k.bytes)), 0) FROM job_checkpoint_chunks k"
            "  WHERE k.job_id = c.job_id AND k.step = c.step),"
            " (SELECT octet_length(k.bytes) FROM job_checkpoint_chunks k"
            "  WHERE k.job_id = c.job_id AND k.step = c.step AND k.seq = 0)"
            " FROM job_checkpoints c WHERE job_id = $1::bigint ORDER BY step DESC LIMIT 1",
            {job_id});
        if (!rows.ok()) return rows.error();
        if (rows->rows() == 0) return std::optional<CheckpointRow>();
        CheckpointRow row{job_id, rows->int64(0, 0), static_cast<int>(rows->int64(0, 1)),
                          rows->timestamp(0, 2), ""};
        if (!rows->is_null(0, 3)) {
          row.bytes = rows->bytes(0, 3);  // stored before migration 009
        } else {
          row.bytes.reserve(static_cast<std::size_t>(rows->int64(0, 4)));
          // All chunks but the last are as long as the first.
          const std::int64_t chunk =
              rows->is_null(0, 5) ? 1 : std::max<std::int64_t>(1, rows->int64(0, 5));
          const std::int64_t chunks_a_read =
              std::max<std::int64_t>(1, kCheckpointReadBytes / chunk);
          for (std::int64_t next = 0;; next += chunks_a_read) {
            base::Result<QueryResult> chunks = transaction->execute(
                "SELECT bytes FROM job_checkpoint_chunks WHERE job_id = $1::bigint"
                " AND step = $2::bigint AND seq >= $3::integer ORDER BY seq LIMIT $4::integer",
                {job_id, row.step, next, chunks_a_read});
            if (!chunks.ok()) return chunks.error();
            for (int i = 0; i < chunks->rows(); ++i) row.bytes += chunks->bytes(i, 0);
            if (chunks->rows() < chunks_a_read) break;
          }
        }
        base::Status ended = transaction->commit();
        if (!ended.ok()) return ended.error();
        return std::optional<CheckpointRow>(std::move(row));
      });
}

}  // namespace tpujobs::db
