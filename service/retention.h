// Retention (issue 17): the log lines and metric points of jobs finished
// longer ago than a configured age are purged, the job rows kept. A thread
// purges in small batches (db::WorkloadRepository::purge_finished_outputs),
// pausing between them, so a backlog never holds the database for long; every
// replica may run one (batches skip what another replica holds).
#pragma once

#include <chrono>
#include <condition_variable>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"
#include "db/workload_repository.h"

namespace tpujobs::service {

struct RetentionOptions {
  std::chrono::seconds keep{30 * 86400};     // purge what finished longer ago than this
  int batch_jobs = 50;                       // jobs per batch (one statement each)
  std::chrono::milliseconds pause{200};      // between batches while a backlog lasts
  base::Clock* clock = &base::real_clock();  // must outlive the purger
};

class RetentionPurger {
 public:
  // The pool must outlive the purger.
  RetentionPurger(db::ConnectionPool& pool, RetentionOptions options);
  ~RetentionPurger();
  RetentionPurger(const RetentionPurger&) = delete;
  RetentionPurger& operator=(const RetentionPurger&) = delete;

  void start();
  void stop();  // idempotent

  // Purges batches until one comes back short (or the database errs).
  // Returns what it removed. For tests; the thread calls it.
  base::Result<db::PurgeBatch> purge_now();

  // How often the thread looks: a quarter of `keep`, between 1 s and 60 s,
  // so a job is purged within that long after it is due.
  std::chrono::milliseconds interval() const;

 private:
  void loop();

  db::WorkloadRepository repo_;
  RetentionOptions options_;
  base::Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tpujobs::service
