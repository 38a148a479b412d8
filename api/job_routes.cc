// The job resource: list, read, wait for, cancel, and read the log, metrics,
// events and XLA report of a job (submit and validate: api/job_submit.cc).
#include <limits>

#include "api/jobs_api.h"
#include "api/list_cap.h"
#include "api/problem.h"
#include "api/request_reading.h"
#include "api/tenant_limits.h"

namespace tpujobs::api {

using nlohmann::json;

void JobsApi::add_job_routes() {
  router_.add("POST", "/v1/jobs", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { submit(r, w); });
  router_.add("POST", "/v1/jobs:validate", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { validate(r, w); });
  router_.add(
      "GET", "/v1/jobs", Access::kTenant,
      [this](Request& r, const PathParams&, ResponseWriterPtr w) { list_jobs(r, w); },
      list_request_cost);
  router_.add("GET", "/v1/jobs/{id}", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                w->respond(answer(service_.get_job_text(*id, r.tenant)));
              });
  router_.add("GET", "/v1/jobs/{id}/wait", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                const std::optional<std::int64_t> seconds = query_int(r, w, "timeout", 0, 300, 30);
                if (!seconds) return;
                auto admitted = waiters_->admit(r.tenant, std::move(w));
                if (!admitted) return;
                w = std::move(*admitted);
                service_.wait_job(
                    *id, r.tenant, std::chrono::seconds(*seconds),
                    [w](base::Result<nlohmann::json> result) { w->respond(answer(result)); });
              });
  router_.add("POST", "/v1/jobs/{id}/cancel", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w))
                  w->respond(answer(service_.cancel_job(*id, r.tenant), 202));
              });
  router_.add("GET", "/v1/jobs/{id}/logs", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) { job_logs(r, p, w); });
  router_.add("GET", "/v1/jobs/{id}/metrics", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                const std::optional<std::int64_t> after =
                    query_int(r, w, "after", 0, std::numeric_limits<std::int64_t>::max(), 0);
                if (!after) return;
                w->respond(answer(service_.job_metrics(*id, r.tenant, *after)));
              });
  router_.add("GET", "/v1/jobs/{id}/events", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w)) w->respond(answer(service_.job_events(*id, r.tenant)));
              });
  router_.add("GET", "/v1/jobs/{id}/xla-report", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                base::Result<std::string> report = service_.xla_report(*id, r.tenant);
                if (!report.ok()) {
                  w->respond(answer(base::Result<nlohmann::json>(report.error())));
                  return;
                }
                Response response;
                response.content_type = "text/plain; charset=utf-8";
                response.body = std::move(*report);
                w->respond(std::move(response));
              });
}

void JobsApi::list_jobs(Request& request, ResponseWriterPtr writer) {
  JobQuery query;
  query.tenant = request.tenant;
  for (auto [it, end] = request.query.equal_range("state"); it != end; ++it) {
    std::string_view list = it->second;
    while (!list.empty()) {
      const std::size_t comma = list.find(',');
      std::string state(list.substr(0, comma));
      for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (!base::parse_job_state(state)) {
        writer->respond(
            problem(400, "unknown state '" + state.substr(0, 32) + "'",
                    {{"field", "state"},
                     {"hint", "states: QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED"}}));
        return;
      }
      query.states.push_back(std::move(state));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  }
  for (auto [it, end] = request.query.equal_range("label"); it != end; ++it) {
    const std::size_t eq = it->second.find('=');
    if (eq == std::string::npos || eq == 0) {
      writer->respond(
          problem(400, "label filters look like label=key=value", {{"field", "label"}}));
      return;
    }
    query.labels.emplace_back(it->second.substr(0, eq), it->second.substr(eq + 1));
  }
  query.name = request.query_value("name");
  const std::optional<std::int64_t> limit =
      query_int(request, writer, "limit", 1, 500, query.limit);
  if (!limit) return;
  query.limit = static_cast<int>(*limit);
  query.cursor = request.query_value("cursor");
  if (request.query_value("array")) {
    const std::optional<std::int64_t> array =
        query_int(request, writer, "array", 1, std::numeric_limits<std::int64_t>::max(), 0);
    if (!array) return;
    query.array_id = *array;
  }
  query.max_bytes = kMaxListBytes;
  base::Result<JobListPage> listed = service_.list_jobs(query);
  if (!listed.ok() && listed.code() == base::ErrorCode::kInvalid && query.cursor) {
    // The only thing of a list query the store can refuse is the cursor.
    writer->respond(problem(422, "malformed cursor: it is not a next_cursor this service gave",
                            {{"field", "cursor"},
                             {"hint",
                              "pass the next_cursor of the previous page as it was given, or "
                              "leave cursor out for the first page"}}));
    return;
  }
  writer->respond(answer(cap_job_list(std::move(listed))));
}

void JobsApi::job_logs(Request& request, const PathParams& params, ResponseWriterPtr writer) {
  auto id = job_id(params, writer);
  if (!id) return;
  const std::optional<std::int64_t> after_query =
      query_int(request, writer, "after", 0, std::numeric_limits<std::int64_t>::max(), 0);
  if (!after_query) return;
  const std::optional<std::int64_t> limit = query_int(request, writer, "limit", 1, 10000, 1000);
  if (!limit) return;
  std::int64_t after = *after_query;
  if (auto last = request.header("last-event-id"); !last.empty()) {
    if (auto n = parse_int(last)) after = std::max(after, *n);
  }
  const bool follow =
      request.header("accept").find("text/event-stream") != std::string_view::npos ||
      request.query_value("follow") == "true";
  if (follow) {
    auto admitted = followers_->admit(request.tenant, std::move(writer));
    if (admitted) service_.follow_logs(*id, request.tenant, after, std::move(*admitted));
    return;
  }
  writer->respond(answer(service_.job_logs(*id, request.tenant, after, static_cast<int>(*limit))));
}

}  // namespace tpujobs::api
