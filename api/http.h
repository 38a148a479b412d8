// The HTTP types the API layer works with. service/http_server.cc adapts
// Boost.Beast to them, so only that one translation unit includes Beast.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpujobs::api {

struct Request {
  std::string method;                             // "GET", "POST", ...
  std::string target;                             // as sent: "/v1/jobs?state=RUNNING"
  std::string path;                               // percent-decoded path without the query
  std::multimap<std::string, std::string> query;  // percent-decoded
  std::map<std::string, std::string> headers;     // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point received_at;
  // Set by the API once it knows who is asking (bearer token, or the
  // default tenant when the service runs without tokens).
  std::string tenant;
  bool admin = false;  // the principal may operate the pool (and sees every tenant's usage)

  // The header's value, or "" when absent. `name` must be lower case.
  std::string_view header(std::string_view name) const;
  // The first value of a query parameter, or nullopt.
  std::optional<std::string> query_value(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers

  Response& header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

// Where a handler sends its answer. Exactly one of respond() or
// start_stream() is called, once, from any thread; the writer may outlive
// the connection (then everything it is asked to send is dropped).
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual void respond(Response response) = 0;

  // Streaming (Server-Sent Events): sends the status line and headers of
  // `head` (its body is ignored) and keeps the connection open. write()
  // queues bytes and returns false once the peer has gone; end() closes
  // the connection after what was queued is sent.
  virtual void start_stream(Response head) = 0;
  virtual bool write(std::string data) = 0;
  virtual void end() = 0;
  virtual bool closed() const = 0;
};
using ResponseWriterPtr = std::shared_ptr<ResponseWriter>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on an I/O thread: must not block for long. Slow work goes
  // elsewhere and answers through `writer` later.
  virtual void handle(Request request, ResponseWriterPtr writer) = 0;
  // Called once a response has been sent (or a stream started).
  virtual void completed(std::string_view method, std::string_view path, int status,
                         std::chrono::steady_clock::duration elapsed) = 0;
};

}  // namespace tpujobs::api
