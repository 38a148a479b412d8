#include "db/connection_pool.h"

#include <cassert>

namespace tpujobs::db {

PooledConnection::PooledConnection(PooledConnection&& other) noexcept
    : pool_(other.pool_), connection_(std::move(other.connection_)) {}

PooledConnection& PooledConnection::operator=(PooledConnection&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = other.pool_;
    connection_ = std::move(other.connection_);
  }
  return *this;
}

PooledConnection::~PooledConnection() { release(); }

void PooledConnection::release() {
  if (connection_) pool_->give_back(std::move(connection_));
}

base::Result<std::unique_ptr<ConnectionPool>> ConnectionPool::create(std::string conninfo, int size,
                                                                     base::Clock& clock,
                                                                     OnOpen on_open) {
  if (size < 1) return base::make_error(base::ErrorCode::kInvalid, "pool size must be at least 1");
  std::unique_ptr<ConnectionPool> pool(
      new ConnectionPool(std::move(conninfo), size, clock, std::move(on_open)));
  base::Result<std::unique_ptr<Connection>> first = pool->open(std::chrono::milliseconds(0));
  if (!first.ok()) return first.error();
  {
    base::MutexLock lock(pool->mutex_);
    pool->idle_.push_back(std::move(*first));
    pool->open_ = 1;
  }
  return pool;
}

base::Result<std::unique_ptr<Connection>> ConnectionPool::open(
    std::chrono::milliseconds answer_timeout) {
  base::Result<std::unique_ptr<Connection>> opened =
      Connection::open(conninfo_, answer_timeout, clock_);
  if (opened.ok() && on_open_) on_open_(**opened);
  return opened;
}

ConnectionPool::~ConnectionPool() {
  base::MutexLock lock(mutex_);
  assert(open_ == static_cast<int>(idle_.size()) && "a PooledConnection outlived its pool");
}

base::Result<PooledConnection> ConnectionPool::acquire(std::chrono::milliseconds timeout) {
  const base::Clock::time_point deadline = clock_.now() + timeout;
  base::MutexLock lock(mutex_);
  for (;;) {
    while (!idle_.empty()) {
      std::unique_ptr<Connection> connection = std::move(idle_.back());
      idle_.pop_back();
      // A connection the server closed while it sat in the pool (restart,
      // idle timeout) is replaced rather than handed out to fail.
      if (!connection->lost_while_idle()) {
        connection->set_answer_timeout(answer_timeout_);
        return PooledConnection(this, std::move(connection));
      }
      --open_;
    }
    if (open_ < size_) {
      ++open_;
      lock.unlock();
      base::Result<std::unique_ptr<Connection>> opened = open(answer_timeout_);
      lock.lock();
      if (opened.ok()) return PooledConnection(this, std::move(*opened));
      --open_;
      freed_.notify_one();
      return opened.error();
    }
    // Woken by a connection given back, or at the deadline.
    const bool freed =
        clock_.wait_for(lock, freed_, deadline - clock_.now(),
                        [this]() REQUIRES(mutex_) { return !idle_.empty() || open_ < size_; });
    if (!freed) {
      return base::make_error(
          base::ErrorCode::kUnavailable,
          "no database connection became free within " + std::to_string(timeout.count()) + " ms");
    }
  }
}

void ConnectionPool::give_back(std::unique_ptr<Connection> connection) {
  // A transaction left open by a caller must not leak into the next borrower.
  // (With the answer timeout: a server that does not answer the ROLLBACK
  // gets the connection closed.)
  if (!connection->is_broken() && connection->in_transaction()) {
    (void)connection->execute_script("ROLLBACK");
  }
  base::MutexLock lock(mutex_);
  if (connection->is_broken() || connection->in_transaction()) {
    --open_;  // dropped; the next acquire opens a fresh one
  } else {
    idle_.push_back(std::move(connection));
  }
  freed_.notify_one();
}

bool ConnectionPool::ping(std::chrono::milliseconds timeout) {
  base::Result<PooledConnection> connection = acquire(timeout);
  if (!connection.ok()) return false;
  return (*connection)->execute("SELECT 1").ok();
}

}  // namespace tpujobs::db
