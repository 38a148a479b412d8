// What a running job writes: log lines, metric points and checkpoints
// (tables job_logs, job_metrics, job_checkpoints). Writers number lines and
// points themselves (seq from 1); appends are idempotent on (job_id, seq), so
// a writer resumed after a crash can resend a batch without duplicates.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

// The seq of job `job`'s last metric point at or before `step` (SQL).
#define TPUJOBS_LAST_SEQ_THROUGH(job, step)                              \
  "SELECT seq FROM job_metrics WHERE job_id = " job " AND step <= " step \
  " ORDER BY seq DESC LIMIT 1"

// The resume point of each row of `rows` (a table or a WITH query of jobs,
// alias j), then `more` columns: the job's id, its newest checkpoint's step,
// its highest log and metric seq, and the seq of its last point at or before
// that step (JobOutputRepository::resume_points_from reads the first five
// columns and counts the recorded points past the checkpoint from the last
// two).
#define TPUJOBS_RESUME_POINTS_OF(rows, more)                                                 \
  "SELECT j.id, c.step,"                                                                     \
  " (SELECT COALESCE(max(seq), 0) FROM job_logs WHERE job_id = j.id),"                       \
  " (SELECT COALESCE(max(seq), 0) FROM job_metrics WHERE job_id = j.id),"                    \
  " COALESCE((" TPUJOBS_LAST_SEQ_THROUGH(                                                    \
      "j.id",                                                                                \
      "COALESCE(c.step, 0)") "), 0)" more " FROM " rows                                      \
                             " j LEFT JOIN LATERAL (SELECT step, epoch FROM job_checkpoints" \
                             "  WHERE job_id = j.id ORDER BY step DESC LIMIT 1) AS c ON true"
#define TPUJOBS_RESUME_POINTS_WHERE(condition) \
  TPUJOBS_RESUME_POINTS_OF("jobs", "") " WHERE " condition

namespace tpujobs::db {

struct LogLine {
  std::int64_t job_id = 0;
  std::int64_t seq = 0;
  TimePoint at{};  // default (epoch): the time of the insert
  std::string line{};
  // Non-zero: stored only while the job runs under this placement
  // (JobRow::placement, DESIGN §9 fencing); a line of a stale copy is dropped.
  std::int64_t fence = 0;
};

struct MetricPoint {
  std::int64_t job_id = 0;
  std::int64_t seq = 0;
  std::int64_t step = 0;
  int epoch = 0;
  TimePoint at{};              // default (epoch): the time of the insert
  std::string metrics_json{};  // {"loss": 0.31, "samples_per_s": 5120, ...}
  std::int64_t fence = 0;      // as LogLine's
};

struct CheckpointRow {
  std::int64_t job_id = 0;
  std::int64_t step = 0;
  int epoch = 0;
  TimePoint at{};
  std::string bytes{};
};

class JobOutputRepository {
 public:
  // The pool must outlive the repository.
  explicit JobOutputRepository(ConnectionPool& pool,
                               std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Inserts the lines in one statement; a (job_id, seq) already stored is
  // skipped. kInvalid when a job does not exist.
  base::Status append_logs(const std::vector<LogLine>& lines);
  // Lines with seq > after_seq, ascending, at most limit (clamped to 1..10000).
  base::Result<std::vector<LogLine>> list_logs(std::int64_t job_id, std::int64_t after_seq,
                                               int limit);
  // The highest seq stored for the job; 0 when none.
  base::Result<std::int64_t> max_log_seq(std::int64_t job_id);

  // As the log calls, for metric points.
  base::Status append_metrics(const std::vector<MetricPoint>& points);
  base::Result<std::vector<MetricPoint>> list_metrics(std::int64_t job_id, std::int64_t after_seq,
                                                      int limit);
  base::Result<std::int64_t> max_metric_seq(std::int64_t job_id);
  // How many points the job recorded past `step`: the seqs after its last
  // stored point at or before `step` (a point dropped past the job output
  // rate leaves its seq unused; without drops, the stored points past it).
  base::Result<std::int64_t> count_metrics_after_step(std::int64_t job_id, std::int64_t step);

  // Where a placed job takes up its run, in one read: the step of its newest
  // checkpoint (none when it never saved one: then nothing else needs
  // reading before it starts), the highest log and metric seq stored, and
  // how many points it recorded past that checkpoint (past step 0 without),
  // as count_metrics_after_step counts them.
  struct ResumePoint {
    std::optional<std::int64_t> checkpoint_step;
    std::int64_t max_log_seq = 0;
    std::int64_t max_metric_seq = 0;
    std::int64_t metrics_after_checkpoint = 0;
  };
  base::Result<ResumePoint> resume_point(std::int64_t job_id);
  // The resume points of the STARTING jobs placed on `agent`, by job: read
  // with the agent's work (JobRepository::work_on_agent), so that a job it
  // starts waits on no read of its own before it runs.
  static Statement resume_points_statement(const std::string& agent);
  static std::map<std::int64_t, ResumePoint> resume_points_from(const QueryResult& rows);

  // Stores a checkpoint (replacing one at the same step) and deletes all but
  // the job's two latest (by step), in one transaction. The bytes go in as
  // rows of 8,096 bytes, streamed by COPY (migrations 009, 013). With a
  // non-zero fence, only while the job runs under that placement
  // (JobRow::placement): kConflict (nothing stored) otherwise.
  //
  // Retention (issue 34): the rows of the checkpoints it replaces are dead
  // until a VACUUM frees their pages, and autovacuum (its threshold a fifth
  // of the table, looked at once a minute) let one job that checkpoints often
  // grow the table to a thousand times its live checkpoints. So once the
  // checkpoints this repository replaced since its last VACUUM add up to
  // vacuum_after_replaced(size) bytes, it runs VACUUM on the checkpoint
  // tables itself, after the commit (SKIP_LOCKED: not when another one runs).
  // The next checkpoints reuse the pages freed, and the table stays within a
  // few checkpoints of its live data (bench/db/checkpoint_retention_bench).
  base::Status save_checkpoint(std::int64_t job_id, std::int64_t step, int epoch,
                               const std::string& bytes, std::int64_t fence = 0);
  // The checkpoint with the highest step; nullopt when none.
  base::Result<std::optional<CheckpointRow>> latest_checkpoint(std::int64_t job_id);

  // The bytes of checkpoints replaced (by checkpoints of `size` bytes) after
  // which save_checkpoint vacuums: two such checkpoints, at least 1 MiB.
  static std::int64_t vacuum_after_replaced(std::size_t size);
  // How many VACUUMs save_checkpoint has run through this repository.
  std::int64_t vacuums() const { return retention_->vacuums.load(); }

 private:
  struct Retention {
    std::atomic<std::int64_t> replaced_bytes{0};  // since the last VACUUM
    std::atomic<std::int64_t> vacuums{0};
  };
  // Once enough was replaced: VACUUM of the checkpoint tables on `connection`.
  void vacuum_if_due(Connection& connection, std::int64_t replaced, std::size_t size);

  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
  // Shared by copies of the repository.
  std::shared_ptr<Retention> retention_ = std::make_shared<Retention>();
};

}  // namespace tpujobs::db
