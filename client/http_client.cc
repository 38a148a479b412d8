#include "client/http_client.h"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <condition_variable>
#include <memory>
#include <thread>

#include "base/mutex.h"

namespace tpujobs::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using TimePoint = base::Clock::time_point;
using std::chrono::milliseconds;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The fields by lower-cased name (a repeated one: its last value).
template <class Fields>
std::map<std::string, std::string> headers_of(const Fields& fields) {
  std::map<std::string, std::string> out;
  for (const auto& field : fields)
    out[lower(std::string(field.name_string()))] = std::string(field.value());
  return out;
}

// One request's connection. Every step (resolve, connect, write, read) is
// bounded by a deadline: the socket steps are asynchronous on a private
// io_context and a timer cancels them when the deadline passes (Beast's own
// stream timeouts bound only asynchronous operations, not the blocking
// ones); the resolve is waited for with the deadline.
class Exchange {
 public:
  Exchange(const ServerUrl& server, base::Clock& clock) : server_(server), clock_(clock) {}

  beast::tcp_stream& stream() { return stream_; }

  // Resolves the server's host and connects to the first address that
  // answers.
  beast::error_code open(TimePoint deadline, milliseconds limit) {
    tcp::resolver::results_type endpoints;
    beast::error_code ec = resolve(deadline, limit, &endpoints);
    if (ec) return ec;
    return step("connect", deadline, limit,
                [&](auto done) { stream_.async_connect(endpoints, done); });
  }

  // Runs one asynchronous step: `start(done)` begins it, and it ends when
  // `done` is called or, cancelled, when `deadline` passes (then the error
  // is beast::error::timeout). `limit` is the time allowed that a timeout's
  // text reports.
  template <class Start>
  beast::error_code step(const char* name, TimePoint deadline, milliseconds limit, Start start) {
    step_ = name;
    limit_ = limit;
    const int generation = ++generation_;
    const auto left = deadline - clock_.now();
    timed_out_ = left <= left.zero();
    if (timed_out_) return beast::error::timeout;
    timer_.expires_after(left);
    timer_.async_wait([this, generation](const beast::error_code& ec) {
      if (ec || generation != generation_) return;  // the step ended first
      timed_out_ = true;
      stream_.cancel();
    });
    bool finished = false;
    beast::error_code result;
    start([&finished, &result](const beast::error_code& ec, auto&&...) {
      result = ec;
      finished = true;
    });
    while (!finished && io_.run_one() > 0) {
    }
    timer_.cancel();
    if (!finished) return asio::error::operation_aborted;  // the io_context ran dry
    return timed_out_ ? beast::error::timeout : result;
  }

  // The same with `limit` from now.
  template <class Start>
  beast::error_code step(const char* name, milliseconds limit, Start start) {
    return step(name, clock_.now() + limit, limit, std::move(start));
  }

  // "<step>: <why>" for the error of the last step.
  std::string describe(const beast::error_code& ec) const {
    return std::string(step_) + ": " +
           (ec == beast::error::timeout
                ? "timed out after " + std::to_string(limit_.count()) + " ms"
                : ec.message());
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

 private:
  // getaddrinfo() cannot be interrupted once it runs (Asio's resolver
  // cancels only a resolve not yet started, and its destructor waits for
  // one in progress), so it runs on a thread of its own that the exchange
  // stops waiting for at the deadline; that thread ends when getaddrinfo()
  // gives up by itself.
  beast::error_code resolve(TimePoint deadline, milliseconds limit,
                            tcp::resolver::results_type* endpoints) {
    step_ = "resolve";
    limit_ = limit;
    struct Lookup {
      base::Mutex mutex;
      std::condition_variable done_cv;
      bool done GUARDED_BY(mutex) = false;
      beast::error_code ec GUARDED_BY(mutex);
      tcp::resolver::results_type results GUARDED_BY(mutex);
    };
    auto lookup = std::make_shared<Lookup>();
    std::thread([lookup, host = server_.host, port = server_.port] {
      asio::io_context io;
      tcp::resolver resolver(io);
      beast::error_code ec;
      tcp::resolver::results_type results = resolver.resolve(host, port, ec);
      base::MutexLock lock(lookup->mutex);
      lookup->ec = ec;
      lookup->results = std::move(results);
      lookup->done = true;
      lookup->done_cv.notify_all();
    }).detach();
    base::MutexLock lock(lookup->mutex);
    if (!clock_.wait_for(lock, lookup->done_cv, deadline - clock_.now(),
                         [&]() REQUIRES(lookup->mutex) { return lookup->done; }))
      return beast::error::timeout;
    *endpoints = lookup->results;
    return lookup->ec;
  }

  const ServerUrl& server_;
  base::Clock& clock_;
  asio::io_context io_;
  beast::tcp_stream stream_{io_};
  asio::steady_timer timer_{io_};
  const char* step_ = "resolve";
  milliseconds limit_{0};
  int generation_ = 0;  // of the step in progress: a stale timer is ignored
  bool timed_out_ = false;
};

class BeastHttpClient final : public HttpClient {
 public:
  BeastHttpClient(ServerUrl server, HttpClientOptions options)
      : server_(std::move(server)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : base::real_clock()) {}

  HttpResponse send(const HttpRequest& request, milliseconds timeout) override {
    HttpResponse out;
    try {
      const TimePoint deadline = clock_.now() + timeout;
      Exchange exchange(server_, clock_);
      http::request<http::string_body> message = build(request);
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      parser.body_limit(options_.max_body_bytes);
      beast::error_code ec = exchange.open(deadline, timeout);
      if (!ec) {
        ec = exchange.step("write", deadline, timeout,
                           [&](auto done) { http::async_write(exchange.stream(), message, done); });
      }
      if (!ec) {
        ec = exchange.step("read", deadline, timeout, [&](auto done) {
          http::async_read(exchange.stream(), buffer, parser, done);
        });
      }
      if (ec) {
        out.error = exchange.describe(ec);
        return out;
      }
      out.status = parser.get().result_int();
      out.body = std::move(parser.get().body());
      out.headers = headers_of(parser.get());
      exchange.close();
    } catch (const std::exception& e) {
      out = HttpResponse{};
      out.error = e.what();
    }
    return out;
  }

  HttpResponse stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_body,
                      milliseconds idle_timeout, TimePoint deadline) override {
    HttpResponse out;
    // Each step may take the idle timeout, and none may pass the deadline.
    auto budget = [&] {
      return std::clamp(std::chrono::ceil<milliseconds>(deadline - clock_.now()),
                        milliseconds::zero(), idle_timeout);
    };
    try {
      Exchange exchange(server_, clock_);
      http::request<http::string_body> message = build(request);
      beast::flat_buffer buffer;
      http::response_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      const milliseconds limit = budget();
      beast::error_code ec = exchange.open(clock_.now() + limit, limit);
      if (!ec) {
        ec = exchange.step("write", budget(),
                           [&](auto done) { http::async_write(exchange.stream(), message, done); });
      }
      if (!ec) {
        ec = exchange.step("read", budget(), [&](auto done) {
          http::async_read_header(exchange.stream(), buffer, parser, done);
        });
      }
      if (ec) {
        out.error = exchange.describe(ec);
        return out;
      }
      out.status = parser.get().result_int();
      out.headers = headers_of(parser.get());
      const bool success = out.status >= 200 && out.status < 300;
      char chunk[8192];
      while (!parser.is_done()) {
        parser.get().body().data = chunk;
        parser.get().body().size = sizeof(chunk);
        ec = exchange.step("read", budget(), [&](auto done) {
          http::async_read(exchange.stream(), buffer, parser, done);
        });
        if (ec && ec != http::error::need_buffer) {
          // The end of a Connection: close body is the normal end of a stream.
          if (ec != http::error::end_of_stream && ec != asio::error::eof)
            out.error = exchange.describe(ec);
          break;
        }
        const std::size_t got = sizeof(chunk) - parser.get().body().size;
        if (got == 0) continue;
        if (success) {
          if (!on_body(std::string_view(chunk, got))) break;
        } else if (out.body.size() < options_.max_body_bytes) {
          out.body.append(chunk, got);
        }
      }
      exchange.close();
    } catch (const std::exception& e) {
      if (out.status == 0) out = HttpResponse{};
      out.error = e.what();
    }
    return out;
  }

 private:
  http::request<http::string_body> build(const HttpRequest& request) const {
    http::request<http::string_body> message(http::string_to_verb(request.method),
                                             server_.base_path + request.target, 11);
    message.set(http::field::host, host_header(server_));
    message.set(http::field::user_agent, options_.user_agent);
    message.set(http::field::connection, "close");
    if (!request.body.empty()) message.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : request.headers) message.set(name, value);
    message.body() = request.body;
    message.prepare_payload();
    return message;
  }

  ServerUrl server_;
  HttpClientOptions options_;
  base::Clock& clock_;
};

}  // namespace

std::string host_header(const ServerUrl& server) {
  const std::string host =
      server.host.find(':') != std::string::npos ? "[" + server.host + "]" : server.host;
  return server.port == "80" ? host : host + ":" + server.port;
}

base::Result<ServerUrl> parse_server_url(std::string_view url) {
  auto fail = [](std::string message) -> base::Result<ServerUrl> {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return fail(url.substr(0, 8) == "https://"
                    ? "https is not supported; reach the service over http (TLS belongs in a proxy)"
                    : "the server URL must start with http://, got '" + std::string(url) + "'");
  }
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  ServerUrl server;
  if (slash != std::string_view::npos) {
    server.base_path = std::string(rest.substr(slash));
    while (!server.base_path.empty() && server.base_path.back() == '/') server.base_path.pop_back();
  }
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8080
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail("unterminated IPv6 address in '" + std::string(url) + "'");
    }
    server.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') {
      return fail("unexpected text after the IPv6 address in '" + std::string(url) + "'");
    }
  } else {
    const std::size_t colon = authority.find(':');
    server.host = std::string(authority.substr(0, colon));
    authority.remove_prefix(colon == std::string_view::npos ? authority.size() : colon);
  }
  if (!authority.empty()) {  // ":port"
    std::string_view port = authority.substr(1);
    const bool numeric =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numeric || std::stoi(std::string(port)) > 65535) {
      return fail("bad port in '" + std::string(url) + "'");
    }
    server.port = std::string(port);
  }
  if (server.host.empty()) {
    return fail("the server URL has no host: '" + std::string(url) + "'");
  }
  return server;
}

HttpClientPtr make_http_client(ServerUrl server, HttpClientOptions options) {
  return std::make_unique<BeastHttpClient>(std::move(server), std::move(options));
}

}  // namespace tpujobs::client
