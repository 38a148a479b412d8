// Fuzzes the HTTP request path: the bytes of a request go through Beast's
// request parser with the server's limits (service/http_session.cc: 16 KiB of
// headers, a 1 MiB body), are turned into an api::Request by the server's own
// service::to_api_request, and are routed by the real JobsApi over a
// FakeJobService. Whatever arrives, the answer is exactly one response, never
// a 5xx (the fake service never fails), and every error is a problem+json
// object with a detail.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "api/jobs_api.h"
#include "base/clock.h"
#include "service/http_request.h"
#include "tests/api/fake_job_service.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tpujobs::api::testing::CapturingWriter;
using tpujobs::api::testing::FakeJobService;

void check(bool condition) {
  if (!condition) std::abort();
}

// Counts answers: a handler must send exactly one.
class CountingWriter final : public CapturingWriter {
 public:
  void respond(tpujobs::api::Response r) override {
    ++answers;
    CapturingWriter::respond(std::move(r));
  }
  void start_stream(tpujobs::api::Response head) override {
    ++answers;
    CapturingWriter::start_stream(std::move(head));
  }
  int answers = 0;
};

// Parses the whole input as one request, as the server would read it off a
// connection that then closes. Returns false when Beast refuses it (the
// server answers 400/413/431 itself and never calls the API).
bool parse_request(std::string_view bytes, http::request<http::string_body>* out) {
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(tpujobs::service::kHttpHeaderLimit);
  parser.body_limit(1 << 20);
  beast::error_code ec;
  while (!bytes.empty() && !parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    if (ec == http::error::need_more) {
      ec = {};
      if (used == 0) break;
    } else if (ec) {
      return false;
    }
    bytes.remove_prefix(used);
  }
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return false;
  }
  *out = parser.release();
  return true;
}

tpujobs::api::JobsApi& api(FakeJobService& service) {
  tpujobs::api::ApiOptions options;
  options.static_file = [](std::string_view path) -> std::string_view {
    return path == "/index.html" ? std::string_view("<!doctype html><title>tpujobs</title>")
                                 : std::string_view();
  };
  static tpujobs::api::JobsApi instance(service, options);
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  http::request<http::string_body> message;
  if (!parse_request(std::string_view(reinterpret_cast<const char*>(data), size), &message))
    return 0;

  // The server's own translation (service/http_request.h).
  tpujobs::api::Request request =
      tpujobs::service::to_api_request(std::move(message), tpujobs::base::real_clock().now());

  static FakeJobService service;
  service.submitted.clear();
  service.host_actions.clear();
  auto writer = std::make_shared<CountingWriter>();
  api(service).handle(std::move(request), writer);
  check(writer->answers == 1);

  const tpujobs::api::Response& response = writer->response;
  check(response.status >= 200 && response.status < 500);
  const bool is_json = response.content_type == "application/json" ||
                       response.content_type == "application/problem+json";
  if (response.status >= 400) {
    check(response.content_type == "application/problem+json");
    const nlohmann::json problem = nlohmann::json::parse(response.body, nullptr, false);
    check(problem.is_object());
    check(problem.value("status", 0) == response.status);
    check(!problem.value("detail", "").empty());
  } else if (is_json && !response.body.empty()) {
    check(!nlohmann::json::parse(response.body, nullptr, false).is_discarded());
  }
  return 0;
}
