#include "service/retention.h"

#include <algorithm>
#include <iostream>

namespace tpujobs::service {

RetentionPurger::RetentionPurger(db::ConnectionPool& pool, RetentionOptions options)
    : repo_(pool), options_(options) {}

RetentionPurger::~RetentionPurger() { stop(); }

void RetentionPurger::start() {
  thread_ = std::thread([this] { loop(); });
}

void RetentionPurger::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::chrono::milliseconds RetentionPurger::interval() const {
  const std::chrono::milliseconds quarter =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.keep) / 4;
  return std::clamp(quarter, std::chrono::milliseconds(1000), std::chrono::milliseconds(60000));
}

base::Result<db::PurgeBatch> RetentionPurger::purge_now() {
  db::PurgeBatch total;
  for (;;) {
    auto batch = repo_.purge_finished_outputs(options_.keep, options_.batch_jobs);
    if (!batch.ok()) return batch.error();
    total.jobs += batch->jobs;
    total.log_lines += batch->log_lines;
    total.metric_points += batch->metric_points;
    if (batch->jobs < options_.batch_jobs) return total;
    {
      base::MutexLock lock(mutex_);
      if (stopping_) return total;
    }
    options_.clock->sleep_for(options_.pause);
  }
}

void RetentionPurger::loop() {
  for (;;) {
    auto purged = purge_now();
    if (!purged.ok()) {
      std::cerr << "tpujobs: retention: " << purged.error().message << std::endl;
    } else if (purged->jobs > 0) {
      std::cerr << "tpujobs: retention: purged the outputs of " << purged->jobs
                << " finished job(s) (" << purged->log_lines << " log lines, "
                << purged->metric_points << " metric points)" << std::endl;
    }
    base::MutexLock lock(mutex_);
    if (options_.clock->wait_for(lock, wake_, interval(),
                                 [this]() REQUIRES(mutex_) { return stopping_; }))
      return;
  }
}

}  // namespace tpujobs::service
