// The scheduler leader's pending reasons, stored by a thread of their own
// (service/scheduler_leader.h). A pass hands over the reasons that changed
// and goes on: placing the next jobs does not wait on writing why the
// others wait. In a burst of submits at 100,000 queued, that write was some
// 15 ms of a 35-ms pass (bench/RESULTS.md, issue 29).
//
// A reason handed over replaces one of the same job not yet written, so a
// writer that falls behind writes each job's newest reason once. A write
// that fails is reported once (take_failure): the leader then writes every
// reason again. A reason written after its job left the queue is not stored
// (JobRepository::set_pending writes only a QUEUED job's).
//
// Threads: hand() from the leader's thread; the writes on the writer's
// (start()), or on the caller's in flush() when no thread runs (the
// leader's unit tests).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"

namespace tpujobs::service {

class ReasonWriter {
 public:
  // A job's reason as JSON text; nullopt clears it.
  using Batch = std::vector<std::pair<std::int64_t, std::optional<std::string>>>;
  // The leader's term the reasons were derived under: the store writes them
  // only while it holds (LeaderStore::set_pending).
  using Term = std::optional<std::int64_t>;
  struct Hooks {
    std::function<base::Status(const Batch&, Term)> store;  // one statement
    std::function<void(const Batch&)> stored;               // after a write that landed
    std::function<void(const Batch&)> unknown;  // after one that failed: it may have landed
  };
  // At most `max_batch` reasons a statement.
  ReasonWriter(Hooks hooks, base::Clock& clock, std::size_t max_batch);
  ~ReasonWriter();
  ReasonWriter(const ReasonWriter&) = delete;
  ReasonWriter& operator=(const ReasonWriter&) = delete;

  void start();
  // Lets the write under way end; what was not written yet is dropped.
  void stop();
  // Reasons of another term than those not written yet replace them all.
  void hand(Batch reasons, Term term);
  // Drops what was not written yet (a leader that lost its lock: the next
  // one writes every reason anew).
  void drop();
  // Writes what was handed, here, unless the thread runs.
  void flush();
  // Whether a write failed since the last call.
  bool take_failure() { return failed_.exchange(false); }

  // Statements, reasons written, and their time (Prometheus, with the leader's).
  std::int64_t writes() const { return writes_.load(); }
  std::int64_t reasons() const { return reasons_.load(); }
  std::int64_t write_nanos() const { return write_nanos_.load(); }
  std::int64_t max_write_nanos() const { return max_write_nanos_.load(); }

 private:
  void loop();
  // Takes up to max_batch_ of the reasons handed, by job.
  Batch take() REQUIRES(mutex_);
  void write(const Batch& batch, Term term);

  const Hooks hooks_;
  base::Clock& clock_;
  const std::size_t max_batch_;
  base::Mutex mutex_;
  std::condition_variable handed_;
  std::map<std::int64_t, std::optional<std::string>> queued_ GUARDED_BY(mutex_);
  Term term_ GUARDED_BY(mutex_);  // queued_'s
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
  std::atomic<bool> failed_{false};
  std::atomic<std::int64_t> writes_{0};
  std::atomic<std::int64_t> reasons_{0};
  std::atomic<std::int64_t> write_nanos_{0};
  std::atomic<std::int64_t> max_write_nanos_{0};
};

}  // namespace tpujobs::service
