// The listener of the HTTP server: binds, accepts (backing off when the
// process runs out of descriptors), runs the I/O threads and the spares that
// stand in for threads stuck in a handler, and shuts down. The connections
// themselves are http_session.cc's.
//
// Each I/O thread runs an io_context of its own, and each connection is
// handed to one of them in turn when accepted (by the listener's own thread):
// its reads, handler and writes stay on that thread. With one io_context run by both threads of a
// 2-core machine, the status reads of wrk's 64 connections cost 26-33 µs of CPU each in about half
// the processes or runs and 18 µs in the others (the slow ones' profile: more futex wake-ups,
// context switches and time in the scheduler's mutex); with a context per thread 16-22 µs in every
// run (bench/RESULTS.md, session 33).
#include "service/http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <condition_variable>
#include <memory>
#include <thread>

#include "base/mutex.h"
#include "service/http_session.h"

namespace tpujobs::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using http_internal::close_sessions;
using http_internal::io_thread_slot;
using http_internal::ServerState;
using http_internal::SessionRegistry;
using http_internal::start_session;
using http_internal::steady_nanoseconds;

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, api::Handler& handler)
      : state_(std::move(options), handler),
        contexts_(make_contexts(std::max(1, state_.options.io_threads))),
        acceptor_(asio::make_strand(accept_context_)) {
    for (auto& context : contexts_) work_.emplace_back(context->get_executor());
    work_.emplace_back(accept_context_.get_executor());
  }

  base::Status start() {
    beast::error_code ec;
    const auto address = asio::ip::make_address(state_.options.address, ec);
    if (ec) {
      return base::make_error(
          base::ErrorCode::kInvalid,
          "invalid listen address '" + state_.options.address + "': " + ec.message());
    }
    const tcp::endpoint endpoint(address, state_.options.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return base::make_error(base::ErrorCode::kUnavailable,
                              "cannot listen on " + state_.options.address + ":" +
                                  std::to_string(state_.options.port) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    accept_thread_ = std::thread([this] { accept_context_.run(); });
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      threads_.emplace_back([this, i] {
        io_thread_slot = static_cast<int>(i);
        contexts_[i]->run();
      });
    }
    if (state_.options.spare_io_threads > 0) {
      base::MutexLock lock(spares_mutex_);
      spares_.resize(static_cast<std::size_t>(state_.options.spare_io_threads));
      watchdog_ = std::thread([this] { watch_for_stuck_threads(); });
    }
    return base::Status::Ok();
  }

  std::uint16_t port() const { return port_; }

  void stop_accepting() {
    state_.stopping = true;
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ignored;
      accept_retry_.cancel();
      acceptor_.close(ignored);
    });
    close_sessions(registry_, false);
  }

  void shutdown(std::chrono::milliseconds deadline) {
    if (threads_.empty()) return;
    if (!state_.stopping) stop_accepting();
    const auto until = state_.clock.now() + deadline;
    while (state_.in_flight > 0 && state_.clock.now() < until) {
      state_.clock.sleep_for(std::chrono::milliseconds(5));
    }
    close_sessions(registry_, true);
    while (state_.connections > 0 && state_.clock.now() < until + std::chrono::seconds(1)) {
      state_.clock.sleep_for(std::chrono::milliseconds(5));
    }
    {
      base::MutexLock lock(spares_mutex_);
      watchdog_stopping_ = true;
    }
    watchdog_wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    work_.clear();
    accept_context_.stop();
    accept_thread_.join();
    for (auto& context : contexts_) context->stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::vector<std::thread> spares;
    {
      base::MutexLock lock(spares_mutex_);  // a spare leaving takes it
      for (Spare& spare : spares_) spares.push_back(std::move(spare.thread));
    }
    for (std::thread& spare : spares) {
      if (spare.joinable()) spare.join();
    }
  }

  ServerState state_;

 private:
  void accept() {
    // The next context in turn; a strand still, as a spare may run the
    // context beside its stuck thread.
    asio::io_context& context = *contexts_[next_context_++ % contexts_.size()];
    acceptor_.async_accept(asio::make_strand(context),
                           [this](beast::error_code ec, tcp::socket socket) {
                             if (ec) {
                               if (ec == asio::error::operation_aborted || !acceptor_.is_open())
                                 return;
                               if (out_of_resources(ec)) return back_off();
                               return accept();  // e.g. a connection reset before it was taken
                             }
                             socket.set_option(tcp::no_delay(true), ec);
                             start_session(std::move(socket), state_, registry_);
                             accept();
                           });
  }

  // Accept failed for want of descriptors or memory: the connection stays in
  // the backlog, so trying again at once fails again at once (a spin that
  // starves every thread). Wait for connections to close first.
  static bool out_of_resources(const beast::error_code& ec) {
    return ec == asio::error::no_descriptors ||  // EMFILE
           ec == beast::error_code(ENFILE, beast::system_category()) ||
           ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
  }

  void back_off() {
    ++state_.accept_backoffs;
    accept_retry_.expires_after(state_.options.accept_backoff);
    accept_retry_.async_wait([this](beast::error_code ec) {
      if (ec || !acceptor_.is_open()) return;
      accept();
    });
  }

  static std::vector<std::unique_ptr<asio::io_context>> make_contexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    for (int i = 0; i < n; ++i) contexts.push_back(std::make_unique<asio::io_context>());
    return contexts;
  }

  // Whether the thread in this slot has been inside a handler for longer
  // than stuck_after.
  bool stuck(int slot) const {
    const std::int64_t limit =
        steady_nanoseconds(state_.clock) -
        std::chrono::duration_cast<std::chrono::nanoseconds>(state_.options.stuck_after).count();
    const std::int64_t started = state_.handler_since[static_cast<std::size_t>(slot)];
    return started != 0 && started < limit;
  }

  // Whether every thread running this context (its own, and its spares) is stuck.
  bool context_stuck(std::size_t context) const REQUIRES(spares_mutex_) {
    if (!stuck(static_cast<int>(context))) return false;
    for (std::size_t i = 0; i < spares_.size(); ++i) {
      if (spares_[i].running && spares_[i].context == context && !stuck(spare_slot(i)))
        return false;
    }
    return true;
  }

  int spare_slot(std::size_t spare) const { return static_cast<int>(contexts_.size() + spare); }

  // Every half stuck_after: for each context whose every thread is stuck,
  // starts a spare on it (the one thread that checks, so two never start
  // for one need).
  void watch_for_stuck_threads() {
    base::MutexLock lock(spares_mutex_);
    while (!watchdog_stopping_) {
      state_.clock.wait_for(lock, watchdog_wake_, state_.options.stuck_after / 2,
                            [this]() REQUIRES(spares_mutex_) { return watchdog_stopping_; });
      if (watchdog_stopping_) return;
      for (std::size_t context = 0; context < contexts_.size(); ++context) {
        if (context_stuck(context)) start_spare(context);
      }
    }
  }

  void start_spare(std::size_t context) REQUIRES(spares_mutex_) {
    for (std::size_t i = 0; i < spares_.size(); ++i) {
      if (spares_[i].running) continue;
      if (spares_[i].thread.joinable()) spares_[i].thread.join();  // it has left
      spares_[i].running = true;
      spares_[i].context = context;
      spares_[i].thread = std::thread([this, i, context] { run_spare(i, context); });
      return;
    }
  }

  // Runs the context beside its stuck thread until that thread is back.
  void run_spare(std::size_t index, std::size_t context) {
    io_thread_slot = spare_slot(index);
    asio::io_context& io = *contexts_[context];
    while (!io.stopped()) {
      io.run_one_for(std::chrono::milliseconds(200));
      if (!stuck(static_cast<int>(context))) break;
    }
    base::MutexLock lock(spares_mutex_);
    spares_[index].running = false;
  }

  std::vector<std::unique_ptr<asio::io_context>> contexts_;  // one per I/O thread
  // The listener's own, on a thread of its own: a handler that holds an I/O
  // thread never holds up the connections that come meanwhile.
  asio::io_context accept_context_;
  std::thread accept_thread_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::size_t next_context_ = 0;  // on the acceptor's strand
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_{acceptor_.get_executor()};
  SessionRegistry registry_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;

  struct Spare {
    std::thread thread;
    bool running = false;
    std::size_t context = 0;  // the one it runs
  };
  base::Mutex spares_mutex_;
  std::condition_variable watchdog_wake_;
  std::vector<Spare> spares_ GUARDED_BY(spares_mutex_);
  bool watchdog_stopping_ GUARDED_BY(spares_mutex_) = false;
  std::thread watchdog_;
};

HttpServer::HttpServer(HttpServerOptions options, api::Handler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}
HttpServer::~HttpServer() { impl_->shutdown(std::chrono::milliseconds(0)); }
base::Status HttpServer::start() { return impl_->start(); }
std::uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::stop_accepting() { impl_->stop_accepting(); }
void HttpServer::shutdown(std::chrono::milliseconds deadline) { impl_->shutdown(deadline); }
std::int64_t HttpServer::in_flight() const { return impl_->state_.in_flight; }
std::int64_t HttpServer::open_connections() const { return impl_->state_.connections; }

HttpServerCounters HttpServer::counters() const {
  const ServerState& s = impl_->state_;
  return {s.accept_backoffs, s.first_byte_timeouts, s.idle_timeouts, s.slow_streams_cut_off};
}

std::string HttpServer::prometheus_metrics() const {
  const HttpServerCounters c = counters();
  std::string out;
  auto add = [&out](std::string_view name, std::string_view type, std::string_view help,
                    std::uint64_t value) {
    out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
           std::string(name) + " " + std::string(type) + "\n" + std::string(name) + " " +
           std::to_string(value) + "\n";
  };
  add("tpujobs_http_open_connections", "gauge", "HTTP connections open now.",
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, open_connections())));
  add("tpujobs_http_accept_backoffs_total", "counter",
      "Times accept failed for want of descriptors or memory and the listener waited.",
      c.accept_backoffs);
  add("tpujobs_http_first_byte_timeouts_total", "counter",
      "Connections closed because they sent nothing within --first-byte-timeout.",
      c.first_byte_timeouts);
  add("tpujobs_http_idle_timeouts_total", "counter",
      "Keep-alive connections closed after --idle-timeout without a request.", c.idle_timeouts);
  add("tpujobs_http_slow_streams_cut_off_total", "counter",
      "Streams closed because the client read too slowly (--stream-buffer-limit).",
      c.slow_streams_cut_off);
  return out;
}

}  // namespace tpujobs::service
