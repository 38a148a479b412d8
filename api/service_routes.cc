// Probes, metrics, the API document and the web UI's static files.
#include "api/jobs_api.h"
#include "api/problem.h"
#include "api/request_reading.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

std::string content_type_for(std::string_view path) {
  auto ends = [&](std::string_view s) {
    return path.size() >= s.size() && path.substr(path.size() - s.size()) == s;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

}  // namespace

// Probes, metrics and the API document: open to anyone.
void JobsApi::add_service_routes() {
  router_.add("GET", "/healthz", Access::kOpen,
              [](Request&, const PathParams&, ResponseWriterPtr w) {
                w->respond(json_response(200, {{"status", "ok"}}));
              });
  router_.add(
      "GET", "/readyz", Access::kOpen, [this](Request&, const PathParams&, ResponseWriterPtr w) {
        const bool ready = service_.ready();
        Response response = json_response(
            ready ? 200 : 503, {{"ready", ready}, {"database", ready ? "ok" : "unreachable"}});
        if (!ready) response.header("Retry-After", "1");
        w->respond(std::move(response));
      });
  router_.add("GET", "/metrics", Access::kOpen,
              [this](Request&, const PathParams&, ResponseWriterPtr w) {
                Response response;
                response.content_type = "text/plain; version=0.0.4; charset=utf-8";
                response.body = service_.prometheus_metrics();
                if (options_.notifications)
                  response.body += options_.notifications->prometheus_metrics();
                response.body += latency_.prometheus();
                response.body +=
                    followers_->prometheus() + waiters_->prometheus() + wide_slots_->prometheus();
                if (options_.more_metrics) response.body += options_.more_metrics();
                if (options_.limits) response.body += options_.limits->prometheus();
                w->respond(std::move(response));
              });
  router_.add("GET", "/openapi.json", Access::kOpen,
              [](Request&, const PathParams&, ResponseWriterPtr w) {
                Response response;
                response.body = std::string(openapi_document());
                w->respond(std::move(response));
              });
}

Response JobsApi::serve_static(const Request& request) {
  std::string path = request.path == "/" ? "/index.html" : request.path;
  if (path.find("..") != std::string::npos || path.find('\\') != std::string::npos) {
    return problem(400, "path traversal is not allowed");
  }
  std::string_view file = options_.static_file ? options_.static_file(path) : std::string_view();
  if (file.empty()) {
    return problem(404, "no route or file for GET " + request.path.substr(0, 256),
                   {{"hint", "GET /openapi.json lists every route"}});
  }
  Response response;
  response.content_type = content_type_for(path);
  response.body = std::string(file);
  response.header("Cache-Control", path == "/index.html" ? "no-cache" : "public, max-age=300");
  return response;
}

}  // namespace tpujobs::api
