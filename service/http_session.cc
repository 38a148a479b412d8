#include "service/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <optional>
#include <string>

#include "service/http_request.h"

namespace tpujobs::service::http_internal {

thread_local int io_thread_slot = -1;

std::int64_t steady_nanoseconds(base::Clock& clock) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock.now().time_since_epoch())
      .count();
}

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string problem_body(int status, std::string_view title, std::string_view detail) {
  // Kept dependency-free: this TU must not pull in the JSON library too.
  std::string body = "{\"type\":\"about:blank\",\"title\":\"";
  body += title;
  body += "\",\"status\":" + std::to_string(status) + ",\"detail\":\"";
  body += detail;
  body += "\"}";
  return body;
}

}  // namespace

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
    parser_->header_limit(kHttpHeaderLimit);
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
                               state_.clock.now() - request_received_);
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
    linger_deadline_ = state_.clock.now() + std::chrono::seconds(2);
    drain();
  }

  void drain() {
    const auto left = linger_deadline_ - state_.clock.now();
    if (left <= base::Clock::time_point::duration::zero()) return close();
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
  base::Clock::time_point request_received_;
  base::Clock::time_point linger_deadline_{};
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
  api::Request request = to_api_request(std::move(message), state_.clock.now());
  request_method_ = request.method;
  request_path_ = request.path;
  request_received_ = request.received_at;
  ++state_.in_flight;
  const int slot = io_thread_slot;
  if (slot >= 0) state_.handler_since[slot] = steady_nanoseconds(state_.clock);
  state_.handler.handle(std::move(request), std::make_shared<Writer>(shared_from_this()));
  if (slot >= 0) state_.handler_since[slot] = 0;
}

void start_session(tcp::socket socket, ServerState& state, SessionRegistry& registry) {
  std::make_shared<Session>(std::move(socket), state, registry)->start();
}

void close_sessions(SessionRegistry& registry, bool force) {
  std::vector<std::shared_ptr<Session>> alive;
  {
    base::MutexLock lock(registry.mutex);
    for (auto& [_, weak] : registry.sessions) {
      if (auto s = weak.lock()) alive.push_back(std::move(s));
    }
  }
  for (auto& s : alive) s->close_from_outside(force);
}

}  // namespace tpujobs::service::http_internal
