#include "api/tenant_limits.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "api/problem.h"
#include "api/public_error.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

template <class T>
std::optional<T> either(const std::optional<T>& own, const std::optional<T>& fallback) {
  return own ? own : fallback;
}

json value_or_null(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }
json value_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

Response refusal(const std::string& limit, const json& value, std::int64_t current,
                 std::string detail, std::string hint, std::int64_t retry_after_seconds) {
  return problem(429, detail,
                 {{"limit", limit}, {"value", value}, {"current", current}, {"hint", hint}})
      .header("Retry-After", std::to_string(std::max<std::int64_t>(1, retry_after_seconds)));
}

}  // namespace

TenantLimiter::TenantLimiter(LimitsBackend backend, TenantLimits defaults,
                             std::chrono::milliseconds refresh, base::Clock& clock)
    : backend_(std::move(backend)), defaults_(defaults), refresh_(refresh), clock_(clock) {}

TenantLimiter::~TenantLimiter() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

void TenantLimiter::start_refresher() {
  {
    base::MutexLock lock(mutex_);
    if (refresher_running_ || !backend_.load) return;
    refresher_running_ = true;
  }
  reload();
  refresher_ = std::thread([this] {
    for (;;) {
      {
        base::MutexLock lock(mutex_);
        clock_.wait_for(lock, wake_, refresh_, [this]() REQUIRES(mutex_) { return stopping_; });
        if (stopping_) return;
      }
      reload();
    }
  });
}

void TenantLimiter::reload() {
  // Read outside the lock; a failed read keeps what was read before.
  auto loaded = backend_.load();
  base::MutexLock lock(mutex_);
  loaded_at_ = clock_.now();
  if (loaded.ok()) stored_ = std::move(*loaded);
}

TenantLimits TenantLimiter::effective(const std::string& tenant) {
  bool stale = false;
  {
    base::MutexLock lock(mutex_);
    stale = !refresher_running_ && (!loaded_at_ || clock_.now() - *loaded_at_ >= refresh_);
  }
  if (stale && backend_.load) reload();
  base::MutexLock lock(mutex_);
  TenantLimits own;
  if (auto it = stored_.find(tenant); it != stored_.end()) own = it->second;
  return {either(own.max_queued, defaults_.max_queued),
          either(own.submits_per_second, defaults_.submits_per_second),
          either(own.submit_burst, defaults_.submit_burst),
          either(own.requests_per_second, defaults_.requests_per_second),
          either(own.request_burst, defaults_.request_burst),
          either(own.max_array_size, defaults_.max_array_size)};
}

std::optional<double> TenantLimiter::take(Bucket& bucket, double rate, std::int64_t burst,
                                          double n) {
  const double capacity = burst > 0 ? static_cast<double>(burst) : std::max(1.0, rate);
  const auto now = clock_.now();
  if (bucket.tokens < 0) {
    bucket.tokens = capacity;
  } else {
    const double elapsed = std::chrono::duration<double>(now - bucket.at).count();
    bucket.tokens = std::min(capacity, bucket.tokens + std::max(0.0, elapsed) * rate);
  }
  bucket.at = now;
  n = std::min(n, capacity);  // more than the burst could never be taken
  if (bucket.tokens >= n) {
    bucket.tokens -= n;
    return std::nullopt;
  }
  return (n - bucket.tokens) / rate;
}

std::optional<Response> TenantLimiter::admit_request(const std::string& tenant, double cost) {
  const TenantLimits limits = effective(tenant);
  if (!limits.requests_per_second || *limits.requests_per_second <= 0) return std::nullopt;
  base::MutexLock lock(mutex_);
  const std::optional<double> wait = take(request_buckets_[tenant], *limits.requests_per_second,
                                          limits.request_burst.value_or(0), cost);
  if (!wait) return std::nullopt;
  ++refused_["requests_per_second"];
  std::string detail = "tenant '" + tenant + "' sends more than " +
                       json(*limits.requests_per_second).dump() + " requests a second (burst " +
                       std::to_string(limits.request_burst.value_or(0)) + ")";
  std::string hint = "slow down: retry after Retry-After seconds";
  if (cost > 1) {
    const json counted =
        cost == std::floor(cost) ? json(static_cast<std::int64_t>(cost)) : json(cost);
    detail += "; this request counts as " + counted.dump() + " of them";
    hint +=
        ", or ask for fewer jobs a page (limit): each 50 past the first count as one request more";
  }
  return refusal("requests_per_second", *limits.requests_per_second, 0, detail, hint,
                 static_cast<std::int64_t>(std::ceil(*wait)));
}

double list_request_cost(const Request& request) {
  const std::optional<std::string> text = request.query_value("limit");
  if (!text) return 1;
  std::int64_t limit = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), limit);
  if (error != std::errc() || end != text->data() + text->size() || limit < 1) return 1;
  return 1 + static_cast<double>((std::min<std::int64_t>(limit, 500) - 1) / 50);
}

std::optional<Response> TenantLimiter::admit_submit(const std::string& tenant, std::int64_t jobs,
                                                    bool is_array) {
  const TenantLimits limits = effective(tenant);
  if (is_array && limits.max_array_size && jobs > *limits.max_array_size) {
    base::MutexLock lock(mutex_);
    ++refused_["max_array_size"];
    return refusal("max_array_size", *limits.max_array_size, jobs,
                   "the sweep makes " + std::to_string(jobs) + " jobs; tenant '" + tenant +
                       "' may submit arrays of at most " + std::to_string(*limits.max_array_size),
                   "sweep fewer values, or ask an admin to raise max_array_size", 60);
  }
  if (limits.submits_per_second && *limits.submits_per_second > 0) {
    base::MutexLock lock(mutex_);
    const std::optional<double> wait = take(submit_buckets_[tenant], *limits.submits_per_second,
                                            limits.submit_burst.value_or(0), 1);
    if (wait) {
      ++refused_["submits_per_second"];
      return refusal("submits_per_second", *limits.submits_per_second, 0,
                     "tenant '" + tenant + "' submits more than " +
                         json(*limits.submits_per_second).dump() + " a second (burst " +
                         std::to_string(limits.submit_burst.value_or(0)) + ")",
                     "slow down: retry after Retry-After seconds",
                     static_cast<std::int64_t>(std::ceil(*wait)));
    }
  }
  if (limits.max_queued && backend_.queued) {
    // A database that cannot count would not store the jobs either: the
    // submit's 503 now, rather than after a second wait.
    auto queued = this->queued(tenant, jobs, *limits.max_queued);
    if (!queued.ok()) {
      return problem(503,
                     public_database_detail("the job was not stored: the database could not be "
                                            "reached (" +
                                            queued.error().message + "); submit it again later"),
                     {{"hint", "retry after the database is back"}})
          .header("Retry-After", "1");
    }
    if (*queued + jobs > *limits.max_queued) {
      base::MutexLock lock(mutex_);
      ++refused_["max_queued"];
      return refusal("max_queued", *limits.max_queued, *queued,
                     "tenant '" + tenant + "' has " + std::to_string(*queued) + " jobs queued; " +
                         std::to_string(jobs) + " more would pass its limit of " +
                         std::to_string(*limits.max_queued) +
                         (jobs > 1 ? " (the whole sweep is refused)" : ""),
                     "wait for queued jobs to start, cancel some, or ask an admin to raise "
                     "max_queued",
                     30);
    }
    base::MutexLock lock(mutex_);
    queued_[tenant].jobs += jobs;
  }
  return std::nullopt;
}

base::Result<std::int64_t> TenantLimiter::queued(const std::string& tenant, std::int64_t jobs,
                                                 std::int64_t at_most) {
  // A count per submit would scan up to `at_most` rows each time. Under the
  // limit, one of the last refresh_ serves, as the limits themselves do:
  // another replica's submits of that span may pass it, as a limit it just
  // stored may not bind yet. A refusal is always counted afresh.
  const auto now = clock_.now();
  {
    base::MutexLock lock(mutex_);
    const auto it = queued_.find(tenant);
    if (it != queued_.end() && now - it->second.counted_at < refresh_ &&
        it->second.jobs + jobs <= at_most)
      return it->second.jobs;
  }
  base::Result<std::int64_t> counted = backend_.queued(tenant, at_most);
  if (counted.ok()) {
    base::MutexLock lock(mutex_);
    queued_[tenant] = {*counted, now};
  }
  return counted;
}

base::Result<std::string> TenantLimiter::describe(const std::string& tenant) {
  const TenantLimits l = effective(tenant);
  return json{{"tenant", tenant},
              {"max_queued", value_or_null(l.max_queued)},
              {"submits_per_second", value_or_null(l.submits_per_second)},
              {"submit_burst", value_or_null(l.submit_burst)},
              {"requests_per_second", value_or_null(l.requests_per_second)},
              {"request_burst", value_or_null(l.request_burst)},
              {"max_array_size", value_or_null(l.max_array_size)}}
      .dump();
}

std::optional<Response> TenantLimiter::set(const std::string& tenant, const std::string& body) {
  const json parsed = json::parse(body, nullptr, false);
  std::vector<base::FieldError> errors;
  TenantLimits limits;
  if (!parsed.is_object()) {
    errors.push_back({"", "the body must be a JSON object of limits",
                      "e.g. {\"max_queued\": 1000, \"submits_per_second\": 5}"});
  } else {
    for (auto it = parsed.begin(); it != parsed.end(); ++it) {
      const std::string& key = it.key();
      const json& v = *it;
      const bool rate = key == "submits_per_second" || key == "requests_per_second";
      const bool count = key == "max_queued" || key == "submit_burst" || key == "request_burst" ||
                         key == "max_array_size";
      if (!rate && !count) {
        errors.push_back({key.substr(0, 64), "unknown limit",
                          "known: max_queued, submits_per_second, submit_burst, "
                          "requests_per_second, request_burst, max_array_size"});
        continue;
      }
      if (v.is_null()) continue;  // the service's default
      const bool ok = rate ? v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1e6
                           : v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
                                 v.get<std::int64_t>() <= (1 << 30);
      if (!ok) {
        errors.push_back({key,
                          rate ? "must be a number from 0 to 1000000, or null"
                               : "must be an integer from 0 to 1073741824, or null",
                          "null takes the service's default"});
        continue;
      }
      if (key == "max_queued") limits.max_queued = v.get<std::int64_t>();
      if (key == "submit_burst") limits.submit_burst = v.get<std::int64_t>();
      if (key == "request_burst") limits.request_burst = v.get<std::int64_t>();
      if (key == "max_array_size") limits.max_array_size = v.get<std::int64_t>();
      if (key == "submits_per_second") limits.submits_per_second = v.get<double>();
      if (key == "requests_per_second") limits.requests_per_second = v.get<double>();
    }
  }
  if (!errors.empty()) return spec_problems(errors);
  if (base::Status saved = backend_.save(tenant, limits); !saved.ok()) {
    return problem(503, public_database_detail(saved.error().message)).header("Retry-After", "1");
  }
  {
    base::MutexLock lock(mutex_);
    loaded_at_.reset();  // this replica reads them at once; the others within `refresh`
  }
  if (backend_.load) reload();
  return std::nullopt;
}

std::string TenantLimiter::prometheus() const {
  base::MutexLock lock(mutex_);
  std::string out =
      "# HELP tpujobs_tenant_limit_refusals_total Requests refused with 429 by a tenant limit.\n"
      "# TYPE tpujobs_tenant_limit_refusals_total counter\n";
  for (const char* limit :
       {"max_queued", "submits_per_second", "requests_per_second", "max_array_size"}) {
    auto it = refused_.find(limit);
    out += std::string("tpujobs_tenant_limit_refusals_total{limit=\"") + limit + "\"} " +
           std::to_string(it == refused_.end() ? 0 : it->second) + "\n";
  }
  return out;
}

}  // namespace tpujobs::api
