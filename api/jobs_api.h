// The REST API of DESIGN §6: routes, request parsing and validation,
// answers. Plugs into the HTTP server as its api::Handler.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <string>

#include "api/fair_lane.h"
#include "api/http.h"
#include "api/job_service.h"
#include "api/notification_service.h"
#include "api/router.h"
#include "api/stream_slots.h"
#include "api/tenant_limits.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace tpujobs::api {

// Request latency per route, as a Prometheus histogram.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    2.5};
  void observe(const std::string& route, const std::string& method, int status, double seconds);
  std::string prometheus() const;

 private:
  struct Series {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable base::Mutex mutex_;
  std::map<std::string, Series> series_ GUARDED_BY(mutex_);  // key: labels text
};

struct ApiOptions {
  // Static files of the web UI by path ("/index.html"); returns "" when absent.
  std::function<std::string_view(std::string_view path)> static_file;
  std::string default_tenant = "default";
  // Job notifications (api/notify.h); null: a spec with "notify" is refused
  // and the notification routes answer 503. Must outlive the API.
  NotificationService* notifications = nullptr;
  // Bounds on log followers (SSE) and long-poll waiters (api/stream_slots.h).
  StreamLimits followers{16, 1024};
  StreamLimits waiters{64, 4096};
  // More Prometheus text for /metrics (the HTTP server's counters); may be empty.
  std::function<std::string()> more_metrics;
  // Per-tenant limits (api/tenant_limits.h); null: none. Must outlive the API.
  TenantLimiter* limits = nullptr;
  // What "now" is (the default window of /v1/usage); null: the real clock.
  base::Clock* clock = nullptr;
  // Wide requests (those that count as more than one request: a list of
  // more than 50 jobs, list_request_cost) run on this many threads of their
  // own, tenants in turn (api/fair_lane.h), instead of on the I/O thread
  // that read them; 0 runs them there. At most `wide_requests` of them wait
  // or run at once, per tenant and in total.
  int wide_request_threads = 0;
  int wide_request_nice = 0;  // their threads' nice (api/fair_lane.h)
  StreamLimits wide_requests{4, 64};
};

class JobsApi final : public Handler {
 public:
  JobsApi(JobService& service, ApiOptions options);

  void handle(Request request, ResponseWriterPtr writer) override;
  void completed(std::string_view method, std::string_view path, int status,
                 std::chrono::steady_clock::duration elapsed) override;

  const Router& router() const { return router_; }

 private:
  // The route table, one function per resource; each route states its Access.
  void add_routes();
  void add_job_routes();
  void add_pool_routes();
  void add_dataset_routes();
  void add_service_routes();
  // GET /v1/jobs/{id}/notifications, the tenant's secret, the allow-list.
  void add_notification_routes();
  // GET/POST /v1/tenants/{tenant}/limits (api/limits_routes.cc).
  void add_limit_routes();
  // Works out who is asking and whether they may use `route`; answers
  // 401/403/503 itself and returns false when they may not.
  bool authorize(Request& request, const Route& route, const ResponseWriterPtr& writer);
  void submit(Request& request, ResponseWriterPtr writer);
  // A spec with "sweep" (api/sweep.h): every child checked, then all
  // submitted as one job array.
  void submit_sweep(Request& request, nlohmann::json body, std::optional<std::string> key,
                    ResponseWriterPtr writer);
  // The children ready to submit; nullopt when it answered the problem.
  std::optional<std::vector<SubmitRequest>> check_sweep(const std::string& tenant,
                                                        const nlohmann::json& body,
                                                        const std::optional<std::string>& key,
                                                        const ResponseWriterPtr& writer);
  void validate(Request& request, ResponseWriterPtr writer);
  // GET /v1/jobs?state=&label=&name=&limit=&cursor=&array=
  void list_jobs(Request& request, ResponseWriterPtr writer);
  // GET /v1/jobs/{id}/logs: a page, or (text/event-stream) followed.
  void job_logs(Request& request, const PathParams& params, ResponseWriterPtr writer);
  // GET /v1/usage?from=&to=&group_by=tenant|label[&label=KEY][&format=csv]
  void usage(Request& request, ResponseWriterPtr writer);
  Response serve_static(const Request& request);

  JobService& service_;
  ApiOptions options_;
  Router router_;
  LatencyHistogram latency_;
  std::shared_ptr<StreamSlots> followers_;
  std::shared_ptr<StreamSlots> waiters_;
  std::shared_ptr<StreamSlots> wide_slots_;
  // Last: destroyed first, it runs what it holds while the routes still exist.
  std::unique_ptr<FairLane> wide_lane_;
};

// The OpenAPI document the service publishes at /openapi.json.
std::string_view openapi_document();

}  // namespace tpujobs::api
