// The connections of the HTTP server (http_server.h): one Session a
// connection reads requests with the server's limits and deadlines, hands
// them to the api::Handler and writes the answers and streams back. What the
// listener (http_server.cc) and the sessions share is here.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "api/http.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "service/http_server.h"

namespace tpujobs::service::http_internal {

// The slot in ServerState::handler_since of the I/O thread running here
// (-1 on any other thread).
extern thread_local int io_thread_slot;

struct ServerState {
  ServerState(HttpServerOptions o, api::Handler& h)
      : options(std::move(o)),
        clock(options.clock != nullptr ? *options.clock : base::real_clock()),
        handler(h),
        handler_since(static_cast<std::size_t>(std::max(1, options.io_threads) +
                                               std::max(0, options.spare_io_threads))) {}
  HttpServerOptions options;
  base::Clock& clock;
  api::Handler& handler;
  // Per I/O thread (regular ones first, then the spares): when the handler
  // it runs started (steady ns), 0 when it runs none.
  std::vector<std::atomic<std::int64_t>> handler_since;
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<std::int64_t> connections{0};
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> accept_backoffs{0};
  std::atomic<std::uint64_t> first_byte_timeouts{0};
  std::atomic<std::uint64_t> idle_timeouts{0};
  std::atomic<std::uint64_t> slow_streams_cut_off{0};
};

// `clock`'s steady time in nanoseconds (ServerState::handler_since).
std::int64_t steady_nanoseconds(base::Clock& clock);

class Session;

struct SessionRegistry {
  base::Mutex mutex;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions GUARDED_BY(mutex);
};

// Starts a session on an accepted connection; it registers itself in
// `registry` and lives as long as the connection.
void start_session(boost::asio::ip::tcp::socket socket, ServerState& state,
                   SessionRegistry& registry);

// Closes every registered connection that is idle between requests (with
// `force`, whatever it is doing). Thread-safe.
void close_sessions(SessionRegistry& registry, bool force);

}  // namespace tpujobs::service::http_internal
