// A fixed-size pool of PostgreSQL connections shared by the service's
// threads. A connection is lent out as a PooledConnection and comes back when
// that handle is destroyed; a connection that broke (server restart, network)
// is dropped and a fresh one is opened on a later acquire, so the pool heals
// by itself once the server is back.
//
// @warning Do NOT create a query string by embedding values in it! Use $n
// placeholders and pass Params (see db/connection.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"
#include "db/connection.h"

namespace tpujobs::db {

class ConnectionPool;

// A connection borrowed from the pool; returned to it on destruction. The
// pool must outlive it.
class PooledConnection {
 public:
  PooledConnection(PooledConnection&& other) noexcept;
  PooledConnection& operator=(PooledConnection&& other) noexcept;
  ~PooledConnection();

  Connection& operator*() const { return *connection_; }
  Connection* operator->() const { return connection_.get(); }

 private:
  friend class ConnectionPool;
  PooledConnection(ConnectionPool* pool, std::unique_ptr<Connection> connection)
      : pool_(pool), connection_(std::move(connection)) {}
  void release();

  ConnectionPool* pool_;
  std::unique_ptr<Connection> connection_;
};

class ConnectionPool {
 public:
  // Opens one connection to check the conninfo (the rest open on demand, up
  // to size). kUnavailable when the server cannot be reached, kInvalid when
  // size < 1. Waits and deadlines are read off `clock`, which must outlive
  // the pool.
  // `on_open`, when given, is called with each connection the pool opens,
  // before its first use (the scheduler leader's backends take its
  // priority: service/serve.cc).
  using OnOpen = std::function<void(const Connection&)>;
  static base::Result<std::unique_ptr<ConnectionPool>> create(
      std::string conninfo, int size, base::Clock& clock = base::real_clock(),
      OnOpen on_open = nullptr);
  ~ConnectionPool();  // all PooledConnections must be gone by then
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Waits up to timeout for a free connection. kUnavailable when none frees
  // up in time or when a new connection cannot be opened (server down).
  // The connection comes with the pool's answer timeout.
  base::Result<PooledConnection> acquire(std::chrono::milliseconds timeout);

  // How long each statement on a lent connection waits for its answer
  // before the connection is closed and the statement fails kUnavailable
  // (Connection's class comment); zero, the default: forever. Applies from
  // the next acquire on: set it after the migrations, which may run long.
  void set_answer_timeout(std::chrono::milliseconds timeout) { answer_timeout_ = timeout; }
  std::chrono::milliseconds answer_timeout() const { return answer_timeout_; }

  // True when the server answers a trivial query now (for /readyz).
  bool ping(std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

  int size() const { return size_; }
  const std::string& conninfo() const { return conninfo_; }

 private:
  friend class PooledConnection;
  ConnectionPool(std::string conninfo, int size, base::Clock& clock, OnOpen on_open)
      : conninfo_(std::move(conninfo)), size_(size), clock_(clock), on_open_(std::move(on_open)) {}
  // Connection::open, then on_open_.
  base::Result<std::unique_ptr<Connection>> open(std::chrono::milliseconds answer_timeout);
  void give_back(std::unique_ptr<Connection> connection);

  const std::string conninfo_;
  const int size_;
  base::Clock& clock_;
  const OnOpen on_open_;
  std::atomic<std::chrono::milliseconds> answer_timeout_{std::chrono::milliseconds(0)};
  base::Mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Connection>> idle_ GUARDED_BY(mutex_);
  int open_ GUARDED_BY(mutex_) = 0;  // connections that exist: idle, lent out, or being opened
};

// Borrows a connection for the duration of body(Connection&), which returns a
// Result or Status; an acquire failure is returned as body's result type.
template <class Body>
auto with_connection(ConnectionPool& pool, std::chrono::milliseconds timeout, Body&& body)
    -> decltype(body(std::declval<Connection&>())) {
  base::Result<PooledConnection> connection = pool.acquire(timeout);
  if (!connection.ok()) return connection.error();
  return body(**connection);
}

}  // namespace tpujobs::db
