#include "db/database_probe.h"

#include <memory>

#include "db/connection.h"

namespace tpujobs::db {

DatabaseProbe::DatabaseProbe(std::string conninfo, Options options)
    : conninfo_(std::move(conninfo)), options_(options) {}

DatabaseProbe::~DatabaseProbe() { stop(); }

void DatabaseProbe::start() {
  if (thread_.joinable()) return;
  probe_once();
  thread_ = std::thread([this] { loop(); });
}

void DatabaseProbe::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool DatabaseProbe::ready() const {
  if (!answered_) return false;
  const auto answered_at =
      std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(answered_at_));
  return std::chrono::steady_clock::now() - answered_at <= options_.interval + 2 * options_.timeout;
}

void DatabaseProbe::loop() {
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      lock.wait_for(wake_, options_.interval, [this]() REQUIRES(mutex_) { return stopping_; });
      if (stopping_) return;
    }
    probe_once();
  }
}

bool DatabaseProbe::probe_once() {
  if (connection_ && connection_->is_broken()) connection_.reset();
  if (!connection_) {
    Result<std::unique_ptr<Connection>> opened = Connection::open(conninfo_, options_.timeout);
    if (opened.ok()) connection_ = std::move(*opened);
  }
  const bool answered = connection_ && connection_->execute("SELECT 1").ok();
  if (answered) answered_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
  answered_ = answered;
  return answered;
}

}  // namespace tpujobs::db
