// A small blocking HTTP/1.1 client behind an interface, so the client
// commands can be tested against a fake server. The command-line client
// talks to the service with it, and the service's notifier POSTs webhooks
// with it (service/notifier.cc). This is the only client translation unit
// that includes Beast.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace tpujobs::client {

// Where the service is: `http://host[:port][/base]`. https is not supported
// (the service itself speaks plain HTTP; put TLS in a proxy and the client on
// the proxy's inside).
struct ServerUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // "" or "/prefix" without a trailing slash
};

// kInvalid, saying why, for anything but an http:// URL with a host.
base::Result<ServerUrl> parse_server_url(std::string_view url);

// What a request to `server` sends as Host: `host[:port]`, the port unless
// it is 80, an IPv6 address in brackets ("[::1]:8080").
std::string host_header(const ServerUrl& server);

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path and query, relative to the server's base path
  std::string body;    // sent as application/json when not empty
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpResponse {
  // 0 when there was no HTTP answer at all (refused, reset, timed out);
  // `error` then says why, naming the step that failed first: "resolve: ",
  // "connect: ", "write: " or "read: ", then the system's message or
  // "timed out after N ms".
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string error;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;

  // One request on its own connection (sent with `Connection: close`):
  // resolving the host, connecting, writing and reading the whole answer
  // together take at most `timeout`, after which the exchange is abandoned.
  // Never throws: a transport failure is a response with status 0.
  virtual HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;

  // Sends `request` and hands the response body to `on_body` piece by piece
  // as it arrives (for text/event-stream), until the server ends it,
  // `on_body` returns false, no byte arrives for `idle_timeout`, or
  // `deadline` passes (each step, from resolving the host on, is bounded by
  // both). Only a 2xx body is streamed; any other answer comes
  // back whole in the result. The result's body is empty for a 2xx.
  virtual HttpResponse stream(const HttpRequest& request,
                              const std::function<bool(std::string_view)>& on_body,
                              std::chrono::milliseconds idle_timeout,
                              base::Clock::time_point deadline) = 0;
};

using HttpClientPtr = std::unique_ptr<HttpClient>;

// How a client presents itself, and what answer it accepts.
struct HttpClientOptions {
  std::string user_agent = "tpujobs-cli";
  // A larger answer body fails the exchange (status 0, "read: body limit
  // exceeded"); stream() keeps at most this much of a non-2xx body.
  std::size_t max_body_bytes = 64u << 20;
  // What deadlines are read on (stream()'s `deadline` is a time of it) and
  // the resolve is waited with; null: base::real_clock(). The socket steps'
  // timers run for the time left on it when each step starts.
  base::Clock* clock = nullptr;
};

// A client that opens a new TCP connection to `server` per request. Every
// request carries host_header(server) and the options' User-Agent; a
// request's own headers replace these.
HttpClientPtr make_http_client(ServerUrl server, HttpClientOptions options = {});

}  // namespace tpujobs::client
