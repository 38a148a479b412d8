// The telemetry writer: what a running job produces besides its state (log
// lines, metric points, its newest checkpoint, its progress) is queued here
// by the training threads and stored in batches by one writer thread, so a
// training step never waits on PostgreSQL. Every Agent (a standalone
// serve's too) uses one.
//
// Order: one flush stores the queued log lines, then the metric points,
// then the checkpoints, then the progress. A checkpoint is stored only when
// the lines and points queued before it are: a stored checkpoint never has
// lines or points before it missing. What the database cannot take because
// it is unreachable stays queued, in order, for the next flush (a newer
// checkpoint or progress of the same job replaces an older one); what it
// refuses for any other reason is dropped and reported on stderr (a fenced
// write that no longer lands is not refused: the store drops it quietly).
//
// Threads: producers call log()/metric()/progress()/checkpoint() from any
// thread; flush() runs on the writer thread (start()) or on the caller's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "db/job_output_repository.h"
#include "executor/executor.h"
#include "service/wake_bus.h"

namespace tpujobs::db {
struct Repositories;
class ClusterRepository;
}  // namespace tpujobs::db

namespace tpujobs::service {

// Where telemetry goes. Every write carries the placement it is
// fenced by (JobRow::placement; 0: not fenced).
class TelemetryStore {
 public:
  virtual ~TelemetryStore() = default;
  virtual base::Status append_logs(const std::vector<db::LogLine>& lines) = 0;
  virtual base::Status append_metrics(const std::vector<db::MetricPoint>& points) = 0;
  virtual base::Status save_checkpoint(std::int64_t job, const executor::Checkpoint& checkpoint,
                                       std::int64_t fence) = 0;
  virtual base::Status update_progress(std::int64_t job, const std::string& progress_json,
                                       const std::string& metrics_json, std::int64_t fence) = 0;
  // Lines of these jobs were just stored: their log followers and waits
  // look now.
  virtual void logs_stored(const std::set<std::int64_t>& jobs) = 0;
};

// TelemetryStore over the repositories. Stored lines wake the log
// followers of every replica by NOTIFY tpujobs_logs, or, with a wake bus (a
// standalone serve's, whose API service is in this process), by a publish
// on the bus, which also names the job of each progress or checkpoint write
// on kJobsChangedChannel, so that the API service forgets its view. Both
// repositories and the bus must outlive it.
class RepositoryTelemetryStore final : public TelemetryStore {
 public:
  RepositoryTelemetryStore(db::Repositories& repo, db::ClusterRepository& cluster,
                           WakeBus* wake_bus = nullptr);
  base::Status append_logs(const std::vector<db::LogLine>& lines) override;
  base::Status append_metrics(const std::vector<db::MetricPoint>& points) override;
  base::Status save_checkpoint(std::int64_t job, const executor::Checkpoint& checkpoint,
                               std::int64_t fence) override;
  base::Status update_progress(std::int64_t job, const std::string& progress_json,
                               const std::string& metrics_json, std::int64_t fence) override;
  void logs_stored(const std::set<std::int64_t>& jobs) override;

 private:
  db::Repositories& repo_;
  db::ClusterRepository& cluster_;
  WakeBus* const wake_bus_;
  void changed(std::int64_t job);
};

// A metric point's values as JSON text, without the non-finite ones (JSON
// has no NaN): what jobs.latest_metrics and metric_points hold.
std::string metric_values_json(const std::map<std::string, double>& values);
// A job's progress as JSON text, as jobs.progress holds it.
std::string progress_json(const executor::Progress& progress);

struct TelemetryWriterOptions {
  // How often the writer thread stores lines, points and progress; a
  // checkpoint wakes it at once, so a crash loses as little training as
  // possible. While the database is away it tries once an interval.
  std::chrono::milliseconds interval{200};
  base::Clock* clock = &base::real_clock();  // must outlive the writer
  // The most of a job's time that storing its checkpoints may take, as a
  // share. A store that took d is followed by d * (1 / share - 1) in which
  // the job's trainer skips the checkpoints it may skip (periodic and
  // epoch-end ones, never the last or one asked on cancel): a checkpoint of
  // hundreds of MiB costs PostgreSQL about a CPU-second, taken from the
  // training beside it, and one every epoch of a short epoch would take
  // more of the job's time than its training does.
  double checkpoint_time_share = 0.1;
  // The most bytes of log lines and metric points held here, queued or
  // being stored (each counted as its struct and its text). A job that logs
  // faster than the database stores (a line every step of a tiny model:
  // tens of thousands a second) waits in log() until the writer has stored
  // some, as a program writing to a full pipe does, instead of growing this
  // process by gigabytes. While the database is unreachable nothing waits:
  // lines and points stay queued, in order, up to this bound; past it they
  // are dropped and counted, and once the database is back each job whose
  // output was dropped gets one log line in its place, at the first dropped
  // line's seq ("tpujobs: N log lines and M metric points were dropped here
  // while the database was unavailable ..."). A job's state, its
  // checkpoints and progress are never dropped so (they are one item per
  // job, replaced by newer ones).
  std::size_t max_queued_line_bytes = std::size_t{32} << 20;
  // The most lines (or points) one INSERT carries: a store's encoding of its
  // batch (several copies of each line) stays a few MiB.
  std::size_t max_lines_per_store = 4096;
  // The most log lines, and apart the most metric points, one job stores a
  // second, with a burst of ten seconds' worth (0: no bound). A job past it
  // (a point every step of a tiny model: tens of thousands a second, which
  // take PostgreSQL from every other tenant) has the rest dropped and
  // counted. A dropped line takes no seq. A line saying how many lines and
  // points were dropped since the previous such line ("tpujobs: N log lines
  // and M metric points were dropped since ...", the run's first "... so far
  // in this run") precedes the job's next line, at most once every ten
  // seconds, and ends its output (flush_job).
  // A dropped point leaves its seq unused.
  double output_per_second = 0;
};

class TelemetryWriter {
 public:
  // The store must outlive the writer.
  TelemetryWriter(TelemetryStore& store, TelemetryWriterOptions options);
  ~TelemetryWriter();

  TelemetryWriter(const TelemetryWriter&) = delete;
  TelemetryWriter& operator=(const TelemetryWriter&) = delete;

  // Called on the flushing thread after a checkpoint is stored. Set before start().
  std::function<void(std::int64_t job, const executor::Checkpoint& checkpoint)>
      on_checkpoint_stored;

  // Starts the writer thread.
  void start();
  // Stops the writer thread after one last flush. Idempotent.
  void stop();

  // Returns the seq the job's next line takes: line.seq + 1, or line.seq
  // when the line was dropped past output_per_second, or line.seq + 2 when
  // a line saying what was dropped took line.seq before it.
  std::int64_t log(db::LogLine line);
  void metric(db::MetricPoint point);
  void progress(std::int64_t job, std::int64_t fence, std::string progress_json,
                std::string metrics_json);
  // Keeps only the newest checkpoint of a job; wakes the writer thread.
  // Holds it until stored (the trainer reuses its bytes after that).
  void checkpoint(std::int64_t job, std::int64_t fence,
                  std::shared_ptr<const executor::Checkpoint> checkpoint);
  // What executor::TrainingSink::ready_for_checkpoint answers for `job`:
  // false while a checkpoint of the job waits here or is being stored (the
  // trainer then skips the checkpoints it may skip instead of encoding ones
  // that would be replaced before they are stored), and while the job is
  // within the time share of its last stored checkpoint (see
  // TelemetryWriterOptions::checkpoint_time_share).
  bool ready_for_checkpoint(std::int64_t job);

  // Stores what is queued, once (see the top of this file). True when
  // everything queued before the call is stored.
  bool flush();
  // Flushes until everything is stored or `give_up()` says to stop,
  // sleeping on the clock between tries (backing off from 50 ms to 2 s)
  // while the database is unreachable.
  bool flush_until(const std::function<bool()>& give_up);
  // Stores `job`'s queued log lines, metric points and progress now, apart
  // from the other jobs' output, once: what a job's end waits for (its last
  // lines stored before its final state) is its own output, not a whole
  // flush of a neighbour that logs faster than the database stores. First
  // waits for a flush holding earlier output of the job, so its lines land
  // in order. False when the database was unreachable (they stay queued, in
  // order, for the writer thread).
  bool flush_job(std::int64_t job);
  // Stores the queued log lines and metric points now, in one attempt: a
  // reader of a running job's output expects what was logged before it
  // asked. Checkpoints and progress are left to the writer thread.
  void flush_lines();

  // How many items wait (lines, points, checkpoints, progress): for tests
  // and the service's readiness.
  std::size_t queued();
  // The bytes of lines and points held (queued or being stored), as
  // TelemetryWriterOptions::max_queued_line_bytes counts them.
  std::size_t queued_line_bytes();
  // Log lines and metric points dropped at the bound while the database
  // was unreachable, since the start.
  std::uint64_t dropped_lines();
  std::uint64_t dropped_points();
  // Log lines and metric points dropped past output_per_second, since the
  // start.
  std::uint64_t limited_lines();
  std::uint64_t limited_points();

 private:
  struct Progress {
    std::int64_t fence = 0;
    std::string progress, metrics;
  };
  // What a job lost at the bound during one outage; its marker line takes
  // the first dropped line's seq.
  struct Dropped {
    std::int64_t first_seq = -1;  // -1: only metric points were dropped
    std::int64_t fence = 0;
    db::TimePoint at{};
    std::int64_t lines = 0, points = 0;
  };
  struct FencedCheckpoint {
    std::int64_t fence = 0;
    std::shared_ptr<const executor::Checkpoint> checkpoint;
  };
  void loop();
  // Stores lines then points; false when the database was unreachable
  // (the unstored ones are back at the front of the queues). Runs under
  // flush_mutex_, or in flush_job() on one job's output alone.
  bool store_lines(std::vector<db::LogLine>& logs, std::vector<db::MetricPoint>& metrics);
  void requeue_lines(std::vector<db::LogLine>& logs, std::vector<db::MetricPoint>& metrics);
  // Takes the queued markers, lines and points into the (empty) vectors,
  // but those of the jobs a flush_job() is storing, and marks their jobs in
  // flush.
  void take_lines(std::vector<db::LogLine>& logs, std::vector<db::MetricPoint>& metrics)
      REQUIRES(mutex_);
  // Takes `job`'s queued marker, lines and points, in order.
  void take_job_lines(std::int64_t job, std::vector<db::LogLine>& logs,
                      std::vector<db::MetricPoint>& metrics) REQUIRES(mutex_);
  // A flush() or flush_lines() is done with what it took.
  void end_flush();
  // Waits while the held lines and points are at their bound (see
  // TelemetryWriterOptions::max_queued_line_bytes), then counts `bytes`;
  // false (nothing counted) when the bound is reached while the database
  // is unreachable: the item is dropped.
  bool take_room(base::MutexLock& lock, std::size_t bytes) REQUIRES(mutex_);
  void count_dropped(std::int64_t job, std::int64_t fence, std::int64_t line_seq, db::TimePoint at,
                     bool line) REQUIRES(mutex_);
  // Held lines and points of `bytes` were stored (or refused for good): the
  // database answered.
  void release_room(std::size_t bytes);
  // Ends an outage: producers wait for room again, and what they dropped
  // becomes marker lines for the next flush.
  void database_answered() REQUIRES(mutex_);
  // Reports the first unreachable store of an outage on stderr.
  void note_unavailable(const std::string& message);
  // The marker lines of the jobs whose output was dropped, taken once the
  // database stores again.
  std::vector<db::LogLine> take_drop_markers() REQUIRES(mutex_);
  // Stores `items` in batches of at most max_lines_per_store with `append`,
  // releasing each batch's room; false (the unstored ones left in `items`)
  // when the database was unreachable.
  template <typename Item, typename Append>
  bool store_batches(std::vector<Item>& items, Append append, const char* what);
  // False when the database was unreachable; reports and drops other errors.
  static bool stored_or_dropped(const base::Status& status, const char* what);
  // Stores one job's checkpoint (then tells on_checkpoint_stored) or its
  // progress: false when the database is away and it stays for later.
  bool store_checkpoint(std::int64_t job, const FencedCheckpoint& checkpoint);
  bool store_progress(std::int64_t job, const Progress& progress);

  TelemetryStore& store_;
  TelemetryWriterOptions options_;

  base::Mutex flush_mutex_ ACQUIRED_BEFORE(mutex_);  // one flush at a time: batches land in order
  base::Mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;  // the queued lines fell below their bound
  std::size_t queued_line_bytes_ GUARDED_BY(mutex_) = 0;
  bool lines_unstorable_ GUARDED_BY(mutex_) = false;  // the last store found no database
  // The writer thread's last flush left something unstored: its next try
  // waits an interval, even for a checkpoint (else, with a checkpoint held
  // while the database is away, it tried again at once, without end: a core
  // and a connection attempt every few milliseconds, the held lines moved
  // back and forth each time).
  bool retry_paced_ GUARDED_BY(mutex_) = false;
  // Whether the writer thread should flush now rather than at its interval.
  bool flush_due_locked() const REQUIRES(mutex_);
  std::vector<db::LogLine> logs_ GUARDED_BY(mutex_);
  std::vector<db::MetricPoint> metrics_ GUARDED_BY(mutex_);
  bool dropping_ GUARDED_BY(mutex_) = false;  // at the bound while the database is away
  std::map<std::int64_t, Dropped> dropped_ GUARDED_BY(mutex_);
  std::vector<db::LogLine> markers_ GUARDED_BY(mutex_);  // of the last outage, not yet stored
  std::uint64_t dropped_lines_ GUARDED_BY(mutex_) = 0;
  std::uint64_t dropped_points_ GUARDED_BY(mutex_) = 0;
  // A job's output against TelemetryWriterOptions::output_per_second: its
  // token buckets, and what it dropped since its last marker line.
  struct Rate {
    double lines = 0, points = 0;  // tokens
    base::Clock::time_point at{};
    std::int64_t next_seq = 0;                      // of its next line (0: none seen)
    std::optional<base::Clock::time_point> marked;  // its last marker line
    std::int64_t dropped_lines = 0, dropped_points = 0, fence = 0;
  };
  // `job`'s Rate (a new one holds a whole burst); null without a bound.
  Rate* rate_of(std::int64_t job) REQUIRES(mutex_);
  // Whether one more line (or point) is within `rate`; counts the one that
  // is not.
  bool within_rate(Rate& rate, bool line, std::int64_t fence) REQUIRES(mutex_);
  // Queues `line` (or counts it dropped while the database is away).
  void push_line(base::MutexLock& lock, db::LogLine line) REQUIRES(mutex_);
  // Queues the line saying what `job` dropped past its bound (`rate`), at
  // `seq`; false when it dropped nothing, or when `end` is false and its
  // last such line is less than ten seconds old.
  bool push_rate_marker(base::MutexLock& lock, std::int64_t job, Rate& rate, std::int64_t seq,
                        bool end) REQUIRES(mutex_);
  std::map<std::int64_t, Rate> rates_ GUARDED_BY(mutex_);
  std::uint64_t limited_lines_ GUARDED_BY(mutex_) = 0;
  std::uint64_t limited_points_ GUARDED_BY(mutex_) = 0;
  std::map<std::int64_t, Progress> progress_ GUARDED_BY(mutex_);
  std::map<std::int64_t, FencedCheckpoint> checkpoints_ GUARDED_BY(mutex_);
  std::set<std::int64_t> storing_ GUARDED_BY(mutex_);  // jobs of the flush's checkpoints
  // Jobs with output in the running flush() (or flush_lines()), and the
  // jobs flush_job() calls are storing: one job's output is in one store at
  // a time, so its lines land in order.
  std::set<std::int64_t> in_flush_ GUARDED_BY(mutex_);
  std::set<std::int64_t> in_job_flush_ GUARDED_BY(mutex_);
  std::condition_variable flush_ended_;  // in_flush_ was emptied
  // Until when each job skips the checkpoints it may skip (only times not
  // yet passed are kept).
  std::map<std::int64_t, base::Clock::time_point> next_checkpoint_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tpujobs::service
