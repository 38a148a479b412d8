// The pool's view, usage (any tenant) and the pool's administration (admins).
#include <algorithm>

#include "api/jobs_api.h"
#include "api/problem.h"
#include "api/request_reading.h"
#include "api/usage.h"

namespace tpujobs::api {

using nlohmann::json;

// The pool's view (any tenant) and its administration (admins).
void JobsApi::add_pool_routes() {
  router_.add("GET", "/v1/pool", Access::kTenant,
              [this](Request&, const PathParams&, ResponseWriterPtr w) {
                w->respond(json_response(200, service_.pool_view()));
              });
  router_.add("GET", "/v1/usage", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { usage(r, w); });
  // An action not listed has no route: a 404, never a guess.
  constexpr std::pair<const char*, scheduler::HostHealth> kHostActions[] = {
      {"drain", scheduler::HostHealth::kDraining},
      {"fail", scheduler::HostHealth::kFailed},
      {"recover", scheduler::HostHealth::kHealthy}};
  for (const auto& [action, health] : kHostActions) {
    router_.add("POST", std::string("/v1/pool/hosts/{host}:") + action, Access::kAdmin,
                [this, health = health](Request&, const PathParams& p, ResponseWriterPtr w) {
                  w->respond(answer(service_.set_host_health(p.find("host")->second, health)));
                });
  }
  router_.add(
      "POST", "/v1/tenants/{tenant}/quota", Access::kAdmin,
      [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
        std::optional<json> body = parse_body(r, w);
        if (!body) return;
        if (!body->is_object() || !body->contains("max_cores") ||
            !((*body)["max_cores"].is_null() || (*body)["max_cores"].is_number_unsigned() ||
              ((*body)["max_cores"].is_number_integer() &&
               (*body)["max_cores"].get<std::int64_t>() >= 0)) ||
            body->size() != 1) {
          w->respond(
              problem(422, "the body must be {\"max_cores\": N} with N >= 0, or null for no limit",
                      {{"errors",
                        json::array({{{"field", "max_cores"},
                                      {"message", "must be a non-negative integer or null"}}})}}));
          return;
        }
        const json& value = (*body)["max_cores"];
        std::optional<int> max_cores;
        if (!value.is_null())
          max_cores = static_cast<int>(std::min<std::int64_t>(value.get<std::int64_t>(), 1 << 20));
        w->respond(answer(service_.set_quota(p.find("tenant")->second.substr(0, 64), max_cores)));
      });
  router_.add("POST", "/v1/pool/leases/{id}:release", Access::kAdmin,
              [this](Request&, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w)) w->respond(answer(service_.force_release(*id)));
              });
}

void JobsApi::usage(Request& request, ResponseWriterPtr writer) {
  const auto now = (options_.clock != nullptr ? *options_.clock : base::real_clock()).wall_now();
  UsageQuery query;
  query.to = now;
  query.from = now - std::chrono::hours(24);
  for (auto [name, target] : {std::pair{"from", &query.from}, std::pair{"to", &query.to}}) {
    std::optional<std::string> text = request.query_value(name);
    if (!text) continue;
    std::optional<std::chrono::system_clock::time_point> time = parse_usage_time(*text, now);
    if (!time) {
      writer->respond(problem(
          400,
          std::string(name) + " must be a UTC time or an age, got '" + text->substr(0, 64) + "'",
          {{"field", name}, {"hint", "e.g. 2026-11-23T10:00:00Z, or 24h for a day ago"}}));
      return;
    }
    *target = *time;
  }
  if (query.from >= query.to) {
    writer->respond(problem(400, "from must be before to",
                            {{"field", "from"}, {"hint", "the window is [from, to)"}}));
    return;
  }
  const std::string group_by = request.query_value("group_by").value_or("tenant");
  if (group_by != "tenant" && group_by != "label") {
    writer->respond(
        problem(400, "group_by must be tenant or label, got '" + group_by.substr(0, 32) + "'",
                {{"field", "group_by"},
                 {"hint", "group_by=label groups by each key=value; add label=KEY for one key"}}));
    return;
  }
  query.by_label = group_by == "label";
  query.label_key = request.query_value("label");
  // A tenant sees its own use; an admin everyone's, or one tenant's.
  query.tenant =
      request.admin ? request.query_value("tenant") : std::optional<std::string>(request.tenant);
  base::Result<std::vector<UsageRow>> rows = service_.usage(query);
  if (!rows.ok()) {
    writer->respond(answer(base::Result<nlohmann::json>(rows.error())));
    return;
  }
  const bool csv = request.query_value("format") == "csv" ||
                   request.header("accept").find("text/csv") != std::string_view::npos;
  if (csv) {
    Response response;
    response.content_type = "text/csv; charset=utf-8";
    response.body = usage_csv(*rows);
    writer->respond(std::move(response));
    return;
  }
  writer->respond(json_response(200, usage_json(query, *rows)));
}

}  // namespace tpujobs::api
