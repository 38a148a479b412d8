#include "api/jobs_api.h"

#include "api/checks_api.h"
#include "api/problem.h"
#include "api/public_error.h"
#include "api/request_reading.h"

namespace tpujobs::api {

using nlohmann::json;

namespace {

// A handler that throws answers 500 instead of ending the process.
void run_route(const Route& route, Request& request, const PathParams& params,
               ResponseWriterPtr writer) {
  try {
    route.handler(request, params, writer);
  } catch (const std::exception& e) {
    writer->respond(problem(500, public_internal_detail(e.what())));
  }
}

}  // namespace

void LatencyHistogram::observe(const std::string& route, const std::string& method, int status,
                               double seconds) {
  const std::string key =
      "method=\"" + method + "\",route=\"" + route + "\",code=\"" + std::to_string(status) + "\"";
  base::MutexLock lock(mutex_);
  Series& s = series_[key];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++s.buckets[i];
  }
  ++s.count;
  s.sum += seconds;
}

std::string LatencyHistogram::prometheus() const {
  std::string out =
      "# HELP tpujobs_http_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE tpujobs_http_request_duration_seconds histogram\n";
  base::MutexLock lock(mutex_);
  char number[64];
  for (const auto& [labels, s] : series_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      std::snprintf(number, sizeof number, "%g", kBuckets[i]);
      out += "tpujobs_http_request_duration_seconds_bucket{" + labels + ",le=\"" + number + "\"} " +
             std::to_string(s.buckets[i]) + "\n";
    }
    out += "tpujobs_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " +
           std::to_string(s.count) + "\n";
    std::snprintf(number, sizeof number, "%.6f", s.sum);
    out += "tpujobs_http_request_duration_seconds_sum{" + labels + "} " + number + "\n";
    out += "tpujobs_http_request_duration_seconds_count{" + labels + "} " +
           std::to_string(s.count) + "\n";
  }
  return out;
}

JobsApi::JobsApi(JobService& service, ApiOptions options)
    : service_(service),
      options_(std::move(options)),
      followers_(StreamSlots::create("log followers", "tpujobs_log_followers", options_.followers)),
      waiters_(StreamSlots::create("long-poll waiters", "tpujobs_wait_requests", options_.waiters)),
      wide_slots_(StreamSlots::create("wide requests", "tpujobs_wide_requests",
                                      options_.wide_requests,
                                      "wait for an answer before asking again, or ask for fewer "
                                      "jobs a page (limit=50 runs at once)")),
      wide_lane_(options_.wide_request_threads > 0
                     ? std::make_unique<FairLane>(options_.wide_request_threads,
                                                  options_.wide_request_nice)
                     : nullptr) {
  add_routes();
}

void JobsApi::handle(Request request, ResponseWriterPtr writer) {
  Router::Matched matched = router_.match(request.method, request.path);
  const Route* route = matched.route;
  const std::string& allowed = matched.allowed;
  switch (matched.match) {
    case Router::Match::kFound:
      if (!utf8_query(request, writer) || !authorize(request, *route, writer)) return;
      {
        const double cost = route->cost ? route->cost(request) : 1.0;
        if (options_.limits && route->access != Access::kOpen) {
          if (auto refused = options_.limits->admit_request(request.tenant, cost)) {
            writer->respond(std::move(*refused));
            return;
          }
        }
        if (cost > 1 && wide_lane_) {
          std::optional<ResponseWriterPtr> slot = wide_slots_->admit(request.tenant, writer);
          if (!slot) return;  // refused, answered
          const std::string tenant = request.tenant;
          wide_lane_->post(tenant, [route, request = std::move(request), params = matched.params,
                                    writer = std::move(*slot)]() mutable {
            run_route(*route, request, params, writer);
          });
          return;
        }
        run_route(*route, request, matched.params, writer);
        return;
      }
    case Router::Match::kNoMethod:
      writer->respond(problem(405,
                              request.method.substr(0, 16) + " is not allowed on " +
                                  request.path.substr(0, 256),
                              {{"allowed", allowed}})
                          .header("Allow", allowed));
      return;
    case Router::Match::kNoPath:
      if (request.method == "GET" || request.method == "HEAD") {
        writer->respond(serve_static(request));
        return;
      }
      writer->respond(problem(
          404, "no route for " + request.method.substr(0, 16) + " " + request.path.substr(0, 256),
          {{"hint", "GET /openapi.json lists every route"}}));
      return;
  }
}

void JobsApi::completed(std::string_view method, std::string_view path, int status,
                        std::chrono::steady_clock::duration elapsed) {
  std::string route = router_.pattern_of(method, path);
  if (route.empty()) route = status == 404 ? "unmatched" : "static";
  latency_.observe(route, std::string(method.substr(0, 8)), status,
                   std::chrono::duration<double>(elapsed).count());
}

bool JobsApi::authorize(Request& request, const Route& route, const ResponseWriterPtr& writer) {
  if (route.access == Access::kOpen) return true;
  std::string token;
  if (std::string_view auth = request.header("authorization"); !auth.empty()) {
    if (auth.size() < 8 ||
        !std::equal(auth.begin(), auth.begin() + 7, "bearer ", [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      writer->respond(
          problem(401, "the Authorization header must be `Bearer <token>`",
                  {{"hint", "create a token with `tpujobs token create --tenant NAME`"}})
              .header("WWW-Authenticate", "Bearer realm=\"tpujobs\""));
      return false;
    }
    token = std::string(auth.substr(7));
  } else if (auto query = request.query_value("access_token")) {
    token = *query;  // EventSource cannot send headers
  }
  Principal principal{options_.default_tenant, true};
  if (!token.empty()) {
    auto found = service_.authenticate(token);
    if (!found.ok()) {
      writer->respond(
          problem(503, "cannot check the token: " + public_database_detail(found.error().message))
              .header("Retry-After", "1"));
      return false;
    }
    if (!*found) {
      writer->respond(
          problem(401, "unknown or revoked token",
                  {{"hint", "create a token with `tpujobs token create --tenant NAME`"}})
              .header("WWW-Authenticate", "Bearer realm=\"tpujobs\", error=\"invalid_token\""));
      return false;
    }
    principal = **found;
  } else if (service_.auth_required()) {
    writer->respond(problem(401, "this service requires a bearer token",
                            {{"hint",
                              "send `Authorization: Bearer <token>`; an admin creates one with "
                              "`tpujobs token create --tenant NAME`"}})
                        .header("WWW-Authenticate", "Bearer realm=\"tpujobs\""));
    return false;
  }
  if (route.access == Access::kAdmin && !principal.admin) {
    writer->respond(
        problem(403, "pool operations need an admin token",
                {{"hint", "ask an admin: `tpujobs token create --tenant NAME --role admin`"}}));
    return false;
  }
  request.tenant = std::move(principal.tenant);
  request.admin = principal.admin;
  return true;
}

void JobsApi::add_routes() {
  add_job_routes();
  add_pool_routes();
  add_dataset_routes();
  add_service_routes();
  add_notification_routes();
  add_limit_routes();
  add_check_routes(router_);  // api/checks_api.h
}

std::string_view Request::header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<std::string> Request::query_value(std::string_view name) const {
  auto it = query.find(std::string(name));
  if (it == query.end()) return std::nullopt;
  return it->second;
}

}  // namespace tpujobs::api
