#include "db/database_probe.h"

#include <unistd.h>

#include <array>
#include <iostream>
#include <memory>

#include "db/connection.h"

namespace tpujobs::db {

namespace {

std::string instance_name() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + ":" + std::to_string(getpid());
}

}  // namespace

DatabaseProbe::DatabaseProbe(std::string conninfo, Options options)
    : conninfo_(std::move(conninfo)),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : base::real_clock()),
      instance_(instance_name()) {}

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
  if (!answered_ || writes_failing_) return false;
  const auto answered_at = base::Clock::time_point(base::Clock::time_point::duration(answered_at_));
  return clock_.now() - answered_at <= options_.interval + 2 * options_.timeout;
}

void DatabaseProbe::loop() {
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      clock_.wait_for(lock, wake_, options_.interval,
                      [this]() REQUIRES(mutex_) { return stopping_; });
      if (stopping_) return;
    }
    probe_once();
  }
}

bool DatabaseProbe::probe_once() {
  if (connection_ && connection_->is_broken()) connection_.reset();
  if (!connection_) {
    base::Result<std::unique_ptr<Connection>> opened =
        Connection::open(conninfo_, options_.timeout, clock_);
    if (opened.ok()) connection_ = std::move(*opened);
  }
  const bool answered = connection_ && connection_->execute("SELECT 1").ok();
  if (answered) answered_at_ = clock_.now().time_since_epoch().count();
  answered_ = answered;
  if (answered && options_.write_probe && (writes_failing_ || clock_.now() >= next_write_)) {
    probe_write();
  }
  return answered;
}

void DatabaseProbe::note_write(bool ok) {
  if (!ok && !writes_failing_.exchange(true))
    std::cerr << "tpujobs: a write failed: not ready until a probe write succeeds\n";
  // A success clears nothing: a write that fits a page already allocated
  // can succeed on a full disk. Only the probe's own write does.
}

void DatabaseProbe::probe_write() {
  next_write_ = clock_.now() + options_.write_interval;
  // Rows of processes gone for a day are removed on the way.
  base::Result<QueryResult> written = connection_->execute(
      "WITH gone AS (DELETE FROM readiness_probe WHERE instance <> $1::text"
      " AND probed_at < now() - interval '1 day')"
      " INSERT INTO readiness_probe (instance, probed_at) VALUES ($1::text, now())"
      " ON CONFLICT (instance) DO UPDATE SET probed_at = excluded.probed_at",
      {instance_});
  const bool failing = !written.ok();
  if (writes_failing_.exchange(failing) != failing) {
    std::cerr << "tpujobs: readiness: "
              << (failing ? "the database refuses writes: " + written.error().message
                          : std::string("the database takes writes again"))
              << "\n";
  }
}

}  // namespace tpujobs::db
