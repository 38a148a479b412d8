// Accounting (GET /v1/usage): core-seconds of TPU cores held by jobs over a
// window, per tenant or per label, by generation — what sacct / sreport give
// Slurm users. The service sums them from the job events (the spans a job
// was STARTING or RUNNING, clipped to the window, times the cores it holds);
// this file reads the query and renders the answer as JSON or CSV.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::api {

struct UsageQuery {
  std::chrono::system_clock::time_point from;
  std::chrono::system_clock::time_point to;
  bool by_label = false;                 // group_by=label: one group per "key=value"
  std::optional<std::string> label_key;  // with by_label: only this key's values
  std::optional<std::string> tenant;     // only this tenant's jobs (non-admins: always theirs)
};

struct UsageRow {
  std::string group;       // the tenant, or "key=value" ("" for jobs without labels)
  std::string generation;  // "v3", "v4", ... ("cpu" takes no TPU core)
  std::int64_t jobs = 0;   // jobs that held cores in the window
  double core_seconds = 0;
};

// A time for `from` / `to`: an RFC 3339 UTC time ("2026-11-23T10:00:00Z",
// fractions allowed) or an age before `now` ("24h", "90m", "7d").
// nullopt when it is neither.
std::optional<std::chrono::system_clock::time_point> parse_usage_time(
    std::string_view text, std::chrono::system_clock::time_point now);

// {"from", "to", "group_by", "total_core_seconds", "groups": [{"group",
// "core_seconds", "jobs", "by_generation": {"v3": ...}}]}, groups by
// core-seconds descending.
nlohmann::json usage_json(const UsageQuery& query, const std::vector<UsageRow>& rows);

// "group,generation,jobs,core_seconds" and one line per row (RFC 4180 quoting).
std::string usage_csv(const std::vector<UsageRow>& rows);

// "2026-11-23T10:00:00.000Z".
std::string rfc3339(std::chrono::system_clock::time_point time);

}  // namespace tpujobs::api
