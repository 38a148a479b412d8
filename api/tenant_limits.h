// Per-tenant limits (issue 34; Slurm's MaxSubmitJobs, MaxArraySize and RPC
// rate limits): jobs queued at once, submits and requests per second (a
// token bucket: a rate and a burst), and the size of a job array. An admin
// sets them per tenant (POST /v1/tenants/{tenant}/limits); a field left out
// takes the service's default (serve's flags). They are stored in
// PostgreSQL and every replica reads them, at most `refresh` old.
//
// Over a limit the answer is 429 with Retry-After and problem+json naming the
// limit, its value and the current count. The buckets are each replica's
// own: with N replicas behind a balancer a tenant gets up to N times the rate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "api/http.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"

namespace tpujobs::api {

// A limit left empty is not bounded; 0 for a rate means no bound as well.
struct TenantLimits {
  std::optional<std::int64_t> max_queued;
  std::optional<double> submits_per_second;
  std::optional<std::int64_t> submit_burst;
  std::optional<double> requests_per_second;
  std::optional<std::int64_t> request_burst;
  std::optional<std::int64_t> max_array_size;
};

// Where the limits live (db/tenant_limits_repository.h, wired by serve).
struct LimitsBackend {
  std::function<base::Result<std::map<std::string, TenantLimits>>()> load;
  std::function<base::Status(const std::string& tenant, const TenantLimits&)> save;
  // The tenant's QUEUED jobs, counted up to `at_most`.
  std::function<base::Result<std::int64_t>(const std::string& tenant, std::int64_t at_most)> queued;
};

// What GET /v1/jobs?limit=N counts as against requests_per_second: 1 for
// up to 50 jobs (the default page), 1 more for every 50 past them (a page of
// 500: 10), as Kubernetes' API Priority and Fairness weighs a LIST by the
// objects it returns. A limit that is not a number counts as 1 (the route
// refuses it).
double list_request_cost(const Request& request);

class TenantLimiter {
 public:
  TenantLimiter(LimitsBackend backend, TenantLimits defaults,
                std::chrono::milliseconds refresh = std::chrono::seconds(1),
                base::Clock& clock = base::real_clock());
  ~TenantLimiter();  // stops the refresher
  TenantLimiter(const TenantLimiter&) = delete;
  TenantLimiter& operator=(const TenantLimiter&) = delete;

  // Reads the stored limits every `refresh` on a thread of its own, so that
  // no request waits on the database for them (one that hangs included).
  // Without it (tests), a request finding them stale reads them itself.
  void start_refresher();

  // nullopt: the request may go on; else the 429 to answer. A request that
  // counts as `cost` requests (a wide list: list_request_cost) takes as many
  // tokens, at most the bucket's burst, so it is never refused for good.
  std::optional<Response> admit_request(const std::string& tenant, double cost = 1);
  // Before `jobs` jobs (a sweep's children, or 1) are submitted: the array
  // size, the submit rate and the queued-jobs limit, the whole sweep or
  // nothing.
  std::optional<Response> admit_submit(const std::string& tenant, std::int64_t jobs, bool is_array);

  // The tenant's limits in effect (its own, else the defaults) as JSON.
  base::Result<std::string> describe(const std::string& tenant);
  // Sets the tenant's limits from a JSON body; a 422 problem when it is not one.
  std::optional<Response> set(const std::string& tenant, const std::string& body);
  std::string prometheus() const;

 private:
  struct Bucket {
    double tokens = -1;  // -1: full (not used yet)
    std::chrono::steady_clock::time_point at{};
  };
  TenantLimits effective(const std::string& tenant);
  void reload();
  // Takes `n` tokens; nullopt when taken, else the seconds until they are there.
  std::optional<double> take(Bucket& bucket, double rate, std::int64_t burst, double n)
      REQUIRES(mutex_);
  // The tenant's QUEUED jobs as far as admitting `jobs` more needs: a count
  // of the last `refresh_` plus what this process admitted since, when the
  // jobs fit under `at_most` by it; else counted now.
  base::Result<std::int64_t> queued(const std::string& tenant, std::int64_t jobs,
                                    std::int64_t at_most);

  const LimitsBackend backend_;
  const TenantLimits defaults_;
  const std::chrono::milliseconds refresh_;
  base::Clock& clock_;  // the buckets' time and the refresher's waits
  mutable base::Mutex mutex_;
  std::map<std::string, TenantLimits> stored_ GUARDED_BY(mutex_);
  std::optional<std::chrono::steady_clock::time_point> loaded_at_ GUARDED_BY(mutex_);
  std::map<std::string, Bucket> request_buckets_ GUARDED_BY(mutex_);
  std::map<std::string, Bucket> submit_buckets_ GUARDED_BY(mutex_);
  std::map<std::string, std::uint64_t> refused_ GUARDED_BY(mutex_);  // by limit name
  struct QueuedCount {
    std::int64_t jobs = 0;  // counted, plus admitted here since
    std::chrono::steady_clock::time_point counted_at{};
  };
  std::map<std::string, QueuedCount> queued_ GUARDED_BY(mutex_);
  bool refresher_running_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::condition_variable wake_;
  std::thread refresher_;
};

}  // namespace tpujobs::api
