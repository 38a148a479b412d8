#include "service/http_server.h"

#include <atomic>
#include <boost/algorithm/string/case_conv.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <thread>
#include <unordered_map>

#include "api/url.h"
#include "base/mutex.h"

namespace tpujobs::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string problem_body(int status, std::string_view title, std::string_view detail) {
  // Kept dependency-free: this TU must not pull in the JSON library too.
  std::string body = "{\"type\":\"about:blank\",\"title\":\"";
  body += title;
  body += "\",\"status\":" + std::to_string(status) + ",\"detail\":\"";
  body += detail;
  body += "\"}";
  return body;
}

std::int64_t steady_nanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The slot in ServerState::handler_since of the I/O thread running here
// (-1 on any other thread).
thread_local int io_thread_slot = -1;

struct ServerState {
  ServerState(HttpServerOptions o, api::Handler& h)
      : options(std::move(o)),
        handler(h),
        handler_since(static_cast<std::size_t>(std::max(1, options.io_threads) +
                                               std::max(0, options.spare_io_threads))) {}
  HttpServerOptions options;
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

class Session;

struct SessionRegistry {
  base::Mutex mutex;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions GUARDED_BY(mutex);
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ServerState& state, SessionRegistry& registry)
      : stream_(std::move(socket)),
        deadline_(stream_.get_executor()),
        state_(state),
        registry_(registry) {
    ++state_.connections;
  }
  ~Session() {
    --state_.connections;
    base::MutexLock lock(registry_.mutex);
    registry_.sessions.erase(this);
  }

  void start() {
    {
      base::MutexLock lock(registry_.mutex);
      registry_.sessions.emplace(this, weak_from_this());
    }
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this()] { self->wait_for_request(); });
  }

  // Closes the connection if it is idle between requests (or, with `force`,
  // whatever it is doing). Thread-safe.
  void close_from_outside(bool force) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), force] {
      if (force || self->phase_ == Phase::kIdle) self->close();
    });
  }

  // Called through the writer, from any thread. A handler that answers at
  // once (most reads) is on the session's strand already: the write then
  // starts inline instead of through the queue, without waking a thread.
  void post_response(api::Response response) {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this(), r = std::move(response)]() mutable {
                     self->write_response(std::move(r));
                   });
  }
  void post_stream_start(api::Response head) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), h = std::move(head)]() mutable {
      self->start_stream(std::move(h));
    });
  }
  bool post_stream_data(std::string data) {
    if (stream_closed_) return false;
    asio::post(stream_.get_executor(), [self = shared_from_this(), d = std::move(data)]() mutable {
      if (self->head_request_ || self->phase_ == Phase::kClosed) return;  // HEAD: headers only
      self->stream_queued_bytes_ += d.size();
      if (self->stream_queued_bytes_ > self->state_.options.stream_buffer_limit) {
        ++self->state_.slow_streams_cut_off;
        return self->close();  // the client does not read: cut it off
      }
      self->stream_queue_.push_back(std::move(d));
      self->pump_stream();
    });
    return true;
  }
  void post_stream_end() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stream_end_requested_ = true;
      self->pump_stream();
    });
  }
  bool stream_closed() const { return stream_closed_; }

 private:
  enum class Phase { kIdle, kReading, kHandling, kWriting, kStreaming, kClosed };

  void wait_for_request() {
    if (state_.stopping) return close();
    phase_ = Phase::kIdle;
    if (buffer_.size() > 0) return read_header();
    const bool first = !spoke_;
    stream_.expires_after(first ? state_.options.first_byte_timeout : state_.options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this(), first](
                                                       beast::error_code ec, std::size_t n) {
      if (ec == beast::error::timeout) {
        ++(first ? self->state_.first_byte_timeouts : self->state_.idle_timeouts);
      }
      if (ec) return self->close();
      self->spoke_ = true;
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    phase_ = Phase::kReading;
    head_request_ = false;
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(state_.options.body_limit);
    stream_.expires_never();
    arm_deadline(state_.options.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              self->disarm_deadline();
                              self->on_header(ec);
                            });
  }

  // A read that must finish by a deadline. Unlike tcp_stream's own expiry,
  // which closes the socket, this only cancels the read, so the client can
  // still be told 408.
  // A timer that fired just as the read finished has its handler queued
  // already, and cancel() cannot take it back: the handler goes by the
  // timer's expiry, which a disarm or a new deadline has moved into the
  // future. (The expiry rather than a captured counter: a larger handler
  // costs the recycled handler memory, about 6 µs a request.)
  void arm_deadline(std::chrono::milliseconds timeout) {
    deadline_hit_ = false;
    deadline_.expires_after(timeout);
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->deadline_.expiry() > asio::steady_timer::clock_type::now())
        return;  // the read finished first
      self->deadline_hit_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void disarm_deadline() { deadline_.expires_at(asio::steady_timer::time_point::max()); }

  void on_header(beast::error_code ec) {
    if (ec && deadline_hit_)
      return reject(408, "Request Timeout", "the request header did not arrive in time");
    if (ec == http::error::header_limit)
      return reject(431, "Request Header Fields Too Large", "headers exceed 16 KiB");
    if (ec == http::error::body_limit) {
      return reject(413, "Payload Too Large",
                    "the request body is larger than " + std::to_string(state_.options.body_limit) +
                        " bytes");
    }
    if (ec) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof) return close();
      return reject(400, "Bad Request", "malformed HTTP request");
    }
    const auto& header = parser_->get();
    if (const auto length = parser_->content_length();
        length && *length > state_.options.body_limit) {
      return reject(413, "Payload Too Large",
                    "the request body is larger than " + std::to_string(state_.options.body_limit) +
                        " bytes");
    }
    if (parser_->is_done()) return dispatch_request();
    auto read_body = [self = shared_from_this()] {
      self->arm_deadline(self->state_.options.body_timeout);
      http::async_read(
          self->stream_, self->buffer_, *self->parser_, [self](beast::error_code ec, std::size_t) {
            self->disarm_deadline();
            if (ec && self->deadline_hit_) {
              return self->reject(408, "Request Timeout",
                                  "the request body did not arrive in time");
            }
            if (ec == http::error::body_limit) {
              return self->reject(413, "Payload Too Large",
                                  "the request body is larger than " +
                                      std::to_string(self->state_.options.body_limit) + " bytes");
            }
            if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
                ec == asio::error::eof || ec == asio::error::connection_reset ||
                ec == asio::error::operation_aborted) {
              return self->close();
            }
            if (ec)
              return self->reject(400, "Bad Request", "malformed request body: " + ec.message());
            self->dispatch_request();
          });
    };
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this(), read_body](beast::error_code ec, std::size_t) {
                          if (ec) return self->close();
                          read_body();
                        });
      return;
    }
    read_body();
  }

  void dispatch_request();

  void reject(int status, std::string_view title, std::string detail) {
    api::Response response;
    response.status = status;
    response.content_type = "application/problem+json";
    response.body = problem_body(status, title, detail);
    keep_alive_ = false;
    ++state_.in_flight;
    request_method_ = "";
    write_response(std::move(response));
  }

  void write_response(api::Response response) {
    if (phase_ == Phase::kClosed) {
      finish_request(response.status);
      return;
    }
    phase_ = Phase::kWriting;
    if (head_request_) {
      // RFC 9110 §9.3.2: the GET answer's status and headers, its length
      // included, and no body.
      auto message = std::make_shared<http::response<http::empty_body>>(
          static_cast<http::status>(response.status), 11);
      const bool has_content =
          response.status >= 200 && response.status != 204 && response.status != 304;
      if (has_content) message->content_length(response.body.size());
      send(std::move(message), std::move(response));
      return;
    }
    auto message = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), 11);
    message->body() = std::move(response.body);
    message->prepare_payload();
    send(std::move(message), std::move(response));
  }

  template <class Body>
  void send(std::shared_ptr<http::response<Body>> message, api::Response response) {
    message->set(http::field::server, "tpujobs");
    message->set(http::field::content_type, response.content_type);
    for (auto& [name, value] : response.headers) message->set(name, value);
    message->keep_alive(keep_alive_ && !state_.stopping);
    stream_.expires_after(state_.options.body_timeout);
    const int status = response.status;
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message, status](beast::error_code ec, std::size_t) {
          self->finish_request(status);
          if (ec) return self->close();
          if (!message->keep_alive()) return self->linger();
          self->wait_for_request();
        });
  }

  void finish_request(int status) {
    if (!request_method_.empty()) {
      state_.handler.completed(request_method_, request_path_, status,
                               std::chrono::steady_clock::now() - request_received_);
    }
    --state_.in_flight;
  }

  void start_stream(api::Response head) {
    if (phase_ == Phase::kClosed) {
      stream_closed_ = true;
      finish_request(head.status);
      return;
    }
    phase_ = Phase::kStreaming;
    std::string raw = "HTTP/1.1 " + std::to_string(head.status) + " " +
                      std::string(http::obsolete_reason(static_cast<http::status>(head.status))) +
                      "\r\nServer: tpujobs\r\nContent-Type: " + head.content_type +
                      "\r\nCache-Control: no-cache\r\nConnection: close\r\n";
    for (auto& [name, value] : head.headers) raw += name + ": " + value + "\r\n";
    raw += "\r\n";
    if (head_request_) {
      // HEAD on a stream: the headers, then the end.
      stream_queue_.clear();
      stream_queued_bytes_ = 0;
      stream_end_requested_ = true;
      stream_closed_ = true;
    }
    stream_queued_bytes_ += raw.size();
    stream_queue_.push_front(std::move(raw));
    stream_.expires_never();
    finish_request(head.status);
    // A read that completes means the peer closed (or misbehaves): stop.
    stream_.async_read_some(
        buffer_.prepare(1024),
        [self = shared_from_this()](beast::error_code, std::size_t) { self->close(); });
    pump_stream();
  }

  void pump_stream() {
    if (phase_ != Phase::kStreaming || stream_writing_) return;
    if (stream_queue_.empty()) {
      if (stream_end_requested_) close();
      return;
    }
    stream_writing_ = true;
    auto data = std::make_shared<std::string>(std::move(stream_queue_.front()));
    stream_queue_.pop_front();
    asio::async_write(stream_.socket(), asio::buffer(*data),
                      [self = shared_from_this(), data](beast::error_code ec, std::size_t) {
                        self->stream_writing_ = false;
                        self->stream_queued_bytes_ -= data->size();
                        if (ec) return self->close();
                        self->pump_stream();
                      });
  }

  // Closes after an answer sent before the whole request was read (413, 408):
  // stop sending, then read and drop what the client still sends for a
  // moment, so it gets to read the answer instead of a connection reset.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    linger_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    drain();
  }

  void drain() {
    const auto left = linger_deadline_ - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return close();
    stream_.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(left));
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(64 * 1024),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->drain();
                            });
  }

  void close() {
    if (phase_ == Phase::kClosed) return;
    const bool handling = phase_ == Phase::kHandling;
    phase_ = Phase::kClosed;
    stream_closed_ = true;
    deadline_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    (void)handling;  // a response still owed is dropped in write_response()
  }

  beast::tcp_stream stream_;
  asio::steady_timer deadline_;
  bool deadline_hit_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  ServerState& state_;
  SessionRegistry& registry_;
  Phase phase_ = Phase::kIdle;
  bool keep_alive_ = true;
  bool head_request_ = false;  // the request being answered is a HEAD
  std::string request_method_;
  std::string request_path_;
  std::chrono::steady_clock::time_point request_received_;
  std::chrono::steady_clock::time_point linger_deadline_{};
  std::deque<std::string> stream_queue_;
  // Bytes of the stream not yet written to the socket (queued, or being
  // written): bounded by stream_buffer_limit.
  std::size_t stream_queued_bytes_ = 0;
  bool spoke_ = false;  // the client has sent at least one byte
  bool stream_writing_ = false;
  bool stream_end_requested_ = false;
  std::atomic<bool> stream_closed_{false};
};

class Writer final : public api::ResponseWriter {
 public:
  explicit Writer(std::shared_ptr<Session> session) : session_(std::move(session)) {}
  void respond(api::Response response) override {
    if (auto session = take()) session->post_response(std::move(response));
  }
  void start_stream(api::Response head) override {
    base::MutexLock lock(mutex_);
    if (used_ || !session_) return;
    used_ = true;
    session_->post_stream_start(std::move(head));
  }
  bool write(std::string data) override {
    base::MutexLock lock(mutex_);
    return session_ && session_->post_stream_data(std::move(data));
  }
  void end() override {
    base::MutexLock lock(mutex_);
    if (session_) session_->post_stream_end();
    session_.reset();
  }
  bool closed() const override {
    base::MutexLock lock(mutex_);
    return !session_ || session_->stream_closed();
  }

 private:
  std::shared_ptr<Session> take() {
    base::MutexLock lock(mutex_);
    if (used_) return nullptr;
    used_ = true;
    return std::move(session_);
  }
  mutable base::Mutex mutex_;
  bool used_ GUARDED_BY(mutex_) = false;
  std::shared_ptr<Session> session_ GUARDED_BY(mutex_);
};

void Session::dispatch_request() {
  phase_ = Phase::kHandling;
  stream_.expires_never();
  http::request<http::string_body> message = parser_->release();
  parser_.reset();
  keep_alive_ = message.keep_alive();
  head_request_ = message.method() == http::verb::head;
  api::Request request;
  request.received_at = std::chrono::steady_clock::now();
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  api::RequestTarget split = api::split_target(request.target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  for (const auto& field : message)
    request.headers[boost::algorithm::to_lower_copy(std::string(field.name_string()))] =
        std::string(field.value());
  request.body = std::move(message.body());
  request_method_ = request.method;
  request_path_ = request.path;
  request_received_ = request.received_at;
  ++state_.in_flight;
  const int slot = io_thread_slot;
  if (slot >= 0) state_.handler_since[slot] = steady_nanoseconds();
  state_.handler.handle(std::move(request), std::make_shared<Writer>(shared_from_this()));
  if (slot >= 0) state_.handler_since[slot] = 0;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, api::Handler& handler)
      : state_(std::move(options), handler),
        io_(state_.options.io_threads),
        acceptor_(asio::make_strand(io_)) {}

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
    for (int i = 0; i < std::max(1, state_.options.io_threads); ++i) {
      threads_.emplace_back([this, i] {
        io_thread_slot = i;
        io_.run();
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
    for_each_session([](Session& s) { s.close_from_outside(false); });
  }

  void shutdown(std::chrono::milliseconds deadline) {
    if (threads_.empty()) return;
    if (!state_.stopping) stop_accepting();
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (state_.in_flight > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for_each_session([](Session& s) { s.close_from_outside(true); });
    while (state_.connections > 0 &&
           std::chrono::steady_clock::now() < until + std::chrono::seconds(1)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    {
      base::MutexLock lock(spares_mutex_);
      watchdog_stopping_ = true;
    }
    watchdog_wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    work_.reset();
    io_.stop();
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
    acceptor_.async_accept(
        asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
          if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
            if (out_of_resources(ec)) return back_off();
            return accept();  // e.g. a connection reset before it was taken
          }
          socket.set_option(tcp::no_delay(true), ec);
          std::make_shared<Session>(std::move(socket), state_, registry_)->start();
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

  // I/O threads inside a handler for longer than stuck_after.
  int stuck_threads() const {
    const std::int64_t limit =
        steady_nanoseconds() -
        std::chrono::duration_cast<std::chrono::nanoseconds>(state_.options.stuck_after).count();
    int stuck = 0;
    for (const std::atomic<std::int64_t>& since : state_.handler_since) {
      const std::int64_t started = since;
      if (started != 0 && started < limit) ++stuck;
    }
    return stuck;
  }

  // Every half stuck_after: when every running I/O thread is stuck, starts
  // a spare (the one thread that checks, so two never start for one need).
  void watch_for_stuck_threads() {
    base::MutexLock lock(spares_mutex_);
    while (!watchdog_stopping_) {
      lock.wait_for(watchdog_wake_, state_.options.stuck_after / 2);
      if (watchdog_stopping_) return;
      int running = std::max(1, state_.options.io_threads);
      for (const Spare& spare : spares_) running += spare.running ? 1 : 0;
      if (stuck_threads() < running) continue;
      for (std::size_t i = 0; i < spares_.size(); ++i) {
        if (spares_[i].running) continue;
        if (spares_[i].thread.joinable()) spares_[i].thread.join();  // it has left
        spares_[i].running = true;
        const int slot = std::max(1, state_.options.io_threads) + static_cast<int>(i);
        spares_[i].thread = std::thread([this, i, slot] { run_spare(i, slot); });
        break;
      }
    }
  }

  void run_spare(std::size_t index, int slot) {
    io_thread_slot = slot;
    while (!io_.stopped()) {
      io_.run_one_for(std::chrono::milliseconds(200));
      if (stuck_threads() == 0) break;
    }
    base::MutexLock lock(spares_mutex_);
    spares_[index].running = false;
  }

  template <class F>
  void for_each_session(F f) {
    std::vector<std::shared_ptr<Session>> alive;
    {
      base::MutexLock lock(registry_.mutex);
      for (auto& [_, weak] : registry_.sessions) {
        if (auto s = weak.lock()) alive.push_back(std::move(s));
      }
    }
    for (auto& s : alive) f(*s);
  }

  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
      io_.get_executor()};
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_{acceptor_.get_executor()};
  SessionRegistry registry_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;

  struct Spare {
    std::thread thread;
    bool running = false;
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
