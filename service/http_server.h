// The HTTP/1.1 server: Boost.Beast, asynchronous, keep-alive, several I/O
// threads. It parses requests into api::Request and hands them to one
// api::Handler. Only http_server.cc, http_session.cc and http_request.cc
// include Beast.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "api/http.h"
#include "base/clock.h"
#include "base/result.h"

namespace tpujobs::service {

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port (see HttpServer::port())
  int io_threads = 2;
  std::size_t body_limit = 1 << 20;                 // larger bodies get 413
  std::chrono::milliseconds header_timeout{10000};  // whole header must arrive within
  std::chrono::milliseconds body_timeout{30000};    // whole body must arrive within
  std::chrono::milliseconds idle_timeout{60000};    // keep-alive connection with no request
  // A new connection that sends nothing is closed after this (an idle
  // keep-alive one, after idle_timeout): connections that never speak hold
  // descriptors the others need.
  std::chrono::milliseconds first_byte_timeout{5000};
  // A stream (log follower) whose unsent data passes this many bytes is cut
  // off: a client that does not read must not hold the server's memory.
  std::size_t stream_buffer_limit = 4 << 20;
  // After accept fails for want of descriptors or memory (EMFILE, ENFILE,
  // ENOBUFS, ENOMEM), the listener waits this long before it tries again
  // instead of retrying at once (which spins: the pending connection stays).
  std::chrono::milliseconds accept_backoff{100};
  // Each I/O thread serves the connections handed to it as they are
  // accepted (in turn), and runs their handlers (the cheapest path). When
  // every thread serving a connection's I/O thread has been inside a handler
  // for longer than `stuck_after` (handlers waiting on a database that
  // hangs, up to its deadline), one more thread serves them, up to
  // `spare_io_threads` in all, so that requests which do not wait (the
  // health probes) are still read and answered; a spare leaves once the
  // thread it stands in for is back.
  int spare_io_threads = 0;
  std::chrono::milliseconds stuck_after{100};
  // Where the server reads the time, sleeps and waits (nullptr: base::real_clock()).
  // The read, write and accept deadlines are Asio timers, on real time whatever this is.
  base::Clock* clock = nullptr;
};

// What the server refused or cut off, since it started (Prometheus counters).
struct HttpServerCounters {
  std::uint64_t accept_backoffs = 0;       // accept failed for want of descriptors
  std::uint64_t first_byte_timeouts = 0;   // connections closed before their first byte
  std::uint64_t idle_timeouts = 0;         // keep-alive connections closed idle
  std::uint64_t slow_streams_cut_off = 0;  // streams whose buffer passed its bound
};

class HttpServer {
 public:
  // `handler` must outlive the server.
  HttpServer(HttpServerOptions options, api::Handler& handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts the I/O threads. kInvalid for an address that does not
  // parse, kUnavailable when it cannot be bound.
  base::Status start();
  // The bound port (useful with port 0). Valid after start().
  std::uint16_t port() const;
  // Stops accepting new connections; requests already read still get their
  // answer. Idle keep-alive connections are closed.
  void stop_accepting();
  // Waits until no request is in flight or `deadline` passes, then closes
  // every connection (streams included) and joins the I/O threads.
  void shutdown(std::chrono::milliseconds deadline);

  std::int64_t in_flight() const;
  std::int64_t open_connections() const;
  HttpServerCounters counters() const;
  // The counters and the open connections in Prometheus' text format.
  std::string prometheus_metrics() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpujobs::service
