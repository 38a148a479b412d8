// A small blocking HTTP/1.1 client for end-to-end tests: one connection per
// request, to 127.0.0.1 only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace tpujobs::testing {

struct HttpResponse {
  int status = 0;  // 0: could not connect or no answer
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

HttpResponse http(int port, const std::string& method, const std::string& target,
                  const std::string& body = "",
                  const std::map<std::string, std::string>& headers = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Opens `target` with Accept: text/event-stream and hands every complete
// event block ("id: 3\nevent: log\ndata: {...}") to `on_event` until it
// returns false, the server closes, or `timeout` passes. Returns the status.
int read_event_stream(
    int port, const std::string& target,
    const std::function<bool(const std::string& event, const std::string& data)>& on_event,
    std::chrono::milliseconds timeout);

// Sends raw bytes and returns whatever comes back until the server closes
// or `timeout` passes (for malformed-request tests).
std::string raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds timeout);

}  // namespace tpujobs::testing
