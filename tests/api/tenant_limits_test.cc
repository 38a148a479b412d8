// Per-tenant limits through the API: a fake store and a fake clock.
#include "api/tenant_limits.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using namespace std::chrono_literals;
using testing::CapturingWriter;
using testing::FakeJobService;

// The rows a database would hold, and the QUEUED count it would give.
struct FakeStore {
  std::map<std::string, TenantLimits> rows;
  std::int64_t queued = 0;
  bool database_away = false;
  std::atomic<int> loads = 0;
  int counts = 0;    // of the QUEUED jobs
  std::mutex mutex;  // the refresher's thread reads `rows`
  LimitsBackend backend() {
    return {[this]() -> base::Result<std::map<std::string, TenantLimits>> {
              ++loads;
              std::lock_guard lock(mutex);
              return rows;
            },
            [this](const std::string& tenant, const TenantLimits& l) {
              rows[tenant] = l;
              return base::Status::Ok();
            },
            [this](const std::string&, std::int64_t at_most) -> base::Result<std::int64_t> {
              ++counts;
              if (database_away)
                return base::make_error(base::ErrorCode::kUnavailable,
                                        "could not connect to server: /tmp/.s.PGSQL.5432");
              return std::min(queued, at_most);
            }};
  }
};

struct Fixture {
  FakeStore store;
  base::FakeClock clock;
  TenantLimiter limiter{store.backend(), TenantLimits{}, 1s, clock};
  FakeJobService service;
  JobsApi api{service, [this] {
                ApiOptions o;
                o.limits = &limiter;
                return o;
              }()};

  Response call(std::string method, std::string target, std::string body = "") {
    Request request = testing::request_for(std::move(method), std::move(target));
    request.body = std::move(body);
    auto writer = std::make_shared<CapturingWriter>();
    api.handle(std::move(request), writer);
    return writer->response;
  }
};

const char* kSpec = R"({"model": {"layers": [{"type": "linear", "out": 10}]},
                        "data": {"dataset": "digits"}})";

std::string sweep_of(int n) {
  nlohmann::json spec = nlohmann::json::parse(kSpec);
  nlohmann::json seeds = nlohmann::json::array();
  for (int i = 0; i < n; ++i) seeds.push_back(i);
  spec["sweep"] = {{"trainer.seed", seeds}};
  return spec.dump();
}

std::string header(const Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "";
}

TEST(TenantLimits, AnAdminSetsThemAndTheyReadBackWithDefaultsForTheRest) {
  Fixture f;
  Response set = f.call("POST", "/v1/tenants/default/limits",
                        R"({"max_queued": 3, "submits_per_second": 2.5, "submit_burst": 4})");
  ASSERT_EQ(set.status, 200) << set.body;
  const auto body = nlohmann::json::parse(set.body);
  EXPECT_EQ(body["max_queued"], 3);
  EXPECT_EQ(body["submits_per_second"], 2.5);
  EXPECT_TRUE(body["requests_per_second"].is_null());
  EXPECT_EQ(f.store.rows["default"].submit_burst, 4);
  Response read = f.call("GET", "/v1/tenants/default/limits");
  EXPECT_EQ(nlohmann::json::parse(read.body)["max_queued"], 3);
  Response bad =
      f.call("POST", "/v1/tenants/default/limits", R"({"max_queue": 3, "max_array_size": -1})");
  EXPECT_EQ(bad.status, 422) << bad.body;
  EXPECT_EQ(nlohmann::json::parse(bad.body)["errors"].size(), 2u) << bad.body;
}

TEST(TenantLimits, OverTheQueuedLimitASubmitIs429AndASweepThatWouldCrossItIsRefusedWhole) {
  Fixture f;
  f.store.rows["default"].max_queued = 10;
  f.store.queued = 7;
  ASSERT_EQ(f.call("POST", "/v1/jobs", sweep_of(3)).status, 201);  // 7 + 3 = 10: allowed
  ASSERT_EQ(f.service.submitted.size(), 3u);
  f.store.queued = 8;
  Response sweep = f.call("POST", "/v1/jobs", sweep_of(3));
  ASSERT_EQ(sweep.status, 429) << sweep.body;
  EXPECT_EQ(f.service.submitted.size(), 3u) << "no child of a refused sweep is submitted";
  EXPECT_EQ(sweep.content_type, "application/problem+json");
  EXPECT_FALSE(header(sweep, "Retry-After").empty());
  const auto problem = nlohmann::json::parse(sweep.body);
  EXPECT_EQ(problem["limit"], "max_queued");
  EXPECT_EQ(problem["value"], 10);
  EXPECT_EQ(problem["current"], 8);
  f.store.queued = 10;  // another replica's jobs: seen once the last count is a refresh old
  f.clock.advance(1s);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 429);
  f.store.queued = 9;  // a refusal is counted afresh: one started meanwhile
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
}

// Counting a tenant's queue scans up to its limit's rows: under the limit a
// count serves a refresh (with what this replica admitted since added).
TEST(TenantLimits, UnderItsQueuedLimitATenantsQueueIsCountedOncePerRefresh) {
  Fixture f;
  f.store.rows["default"].max_queued = 3;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.store.counts, 1);
  f.store.queued = 3;  // the three, stored
  Response over = f.call("POST", "/v1/jobs", kSpec);
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(nlohmann::json::parse(over.body)["current"], 3);
  EXPECT_EQ(f.store.counts, 2);
  f.store.queued = 1;  // two started
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.store.counts, 3) << "after a refusal the next submit counts again";
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.store.counts, 3);
  f.clock.advance(1s);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.store.counts, 4);
}

TEST(TenantLimits, ArraySizeAndTheSubmitRateAre429) {
  Fixture f;
  f.store.rows["default"].max_array_size = 4;
  f.store.rows["default"].submits_per_second = 1;
  f.store.rows["default"].submit_burst = 2;
  Response wide = f.call("POST", "/v1/jobs", sweep_of(5));
  ASSERT_EQ(wide.status, 429) << wide.body;
  EXPECT_EQ(nlohmann::json::parse(wide.body)["limit"], "max_array_size");
  EXPECT_EQ(nlohmann::json::parse(wide.body)["current"], 5);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);  // the burst
  Response fast = f.call("POST", "/v1/jobs", kSpec);
  ASSERT_EQ(fast.status, 429);
  EXPECT_EQ(nlohmann::json::parse(fast.body)["limit"], "submits_per_second");
  EXPECT_EQ(header(fast, "Retry-After"), "1");
  f.clock.advance(1s);  // one token back
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 429);
}

TEST(TenantLimits, TheRequestRateBoundsEveryTenantRouteButNotTheProbes) {
  Fixture f;
  f.store.rows["default"].requests_per_second = 2;
  f.store.rows["default"].request_burst = 3;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 200);
  Response over = f.call("GET", "/v1/jobs");
  ASSERT_EQ(over.status, 429);
  EXPECT_EQ(nlohmann::json::parse(over.body)["limit"], "requests_per_second");
  EXPECT_EQ(f.call("GET", "/healthz").status, 200);
  EXPECT_EQ(f.call("GET", "/readyz").status, 200);
  f.clock.advance(500ms);  // a token at 2/s
  EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 200);
  EXPECT_NE(f.call("GET", "/metrics")
                .body.find("tpujobs_tenant_limit_refusals_total{limit=\"requests_per_second\"} 1"),
            std::string::npos);
}

TEST(TenantLimits, AWideListCountsAsOneRequestAndOneMoreForEveryFiftyJobsPastTheFirst) {
  Fixture f;
  f.store.rows["default"].requests_per_second = 10;
  f.store.rows["default"].request_burst = 20;
  EXPECT_EQ(f.call("GET", "/v1/jobs?limit=500").status, 200);  // 10 of 20 tokens
  EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 200);          // 11
  Response over = f.call("GET", "/v1/jobs?limit=500");
  ASSERT_EQ(over.status, 429) << over.body;
  const nlohmann::json problem = nlohmann::json::parse(over.body);
  EXPECT_EQ(problem["limit"], "requests_per_second");
  EXPECT_NE(problem["detail"].get<std::string>().find("this request counts as 10 of them"),
            std::string::npos)
      << problem.dump();
  EXPECT_NE(problem["hint"].get<std::string>().find("fewer jobs a page (limit)"),
            std::string::npos);
  EXPECT_EQ(header(over, "Retry-After"), "1");  // 1 token missing at 10/s
  // The 9 tokens left take a narrow list and eight reads.
  EXPECT_EQ(f.call("GET", "/v1/jobs?limit=20").status, 200);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 200);
  EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 429);
}

TEST(TenantLimits, AListCostingMoreThanTheBurstIsStillAdmittedOnAFullBucket) {
  Fixture f;
  f.store.rows["default"].requests_per_second = 2;
  f.store.rows["default"].request_burst = 5;
  EXPECT_EQ(f.call("GET", "/v1/jobs?limit=500").status, 200) << "10 counted as the burst, 5";
  EXPECT_EQ(f.call("GET", "/v1/jobs/1").status, 429);
  f.clock.advance(2500ms);
  EXPECT_EQ(f.call("GET", "/v1/jobs?limit=500").status, 200);
}

TEST(ListRequestCost, IsOneForTheDefaultPageAndOneMoreForEveryFiftyJobsPastIt) {
  auto cost = [](std::string target) {
    return list_request_cost(testing::request_for("GET", std::move(target)));
  };
  EXPECT_EQ(cost("/v1/jobs"), 1);
  EXPECT_EQ(cost("/v1/jobs?limit=50"), 1) << "the default page";
  EXPECT_EQ(cost("/v1/jobs?limit=51"), 2);
  EXPECT_EQ(cost("/v1/jobs?limit=500"), 10);
  EXPECT_EQ(cost("/v1/jobs?limit=100000"), 10) << "the route refuses it; it counts as its most";
  EXPECT_EQ(cost("/v1/jobs?limit=ten"), 1);
  EXPECT_EQ(cost("/v1/jobs?limit=-5"), 1);
}

TEST(TenantLimits, EveryReplicaReadsStoredLimitsAtMostTheRefreshOld) {
  Fixture f;
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  // Another replica stored a limit: this one sees it once its copy is a second old.
  f.store.rows["default"].max_queued = 0;
  f.store.queued = 0;
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 201);
  f.clock.advance(1s);
  EXPECT_EQ(f.call("POST", "/v1/jobs", kSpec).status, 429);
}

TEST(TenantLimits, ADatabaseThatCannotCountTheQueueAnswers503NotStoredWithoutItsText) {
  Fixture f;
  f.store.rows["default"].max_queued = 5;
  f.store.database_away = true;
  Response r = f.call("POST", "/v1/jobs", kSpec);
  ASSERT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["detail"],
            "the job was not stored: the database could not be reached; submit it again later");
  EXPECT_TRUE(f.service.submitted.empty());
}

TEST(TenantLimits, WithTheRefresherARequestNeverReadsTheStoreItself) {
  FakeStore store;
  TenantLimiter limiter(store.backend(), TenantLimits{}, 20ms);
  limiter.start_refresher();
  const int loads_at_start = store.loads;
  EXPECT_FALSE(limiter.admit_submit("team-a", 3, true));
  {
    std::lock_guard lock(store.mutex);
    store.rows["team-a"].max_array_size = 2;  // as another replica would store it
  }
  bool refused = false;
  for (auto until = std::chrono::steady_clock::now() + 20s;
       !refused && std::chrono::steady_clock::now() < until;) {
    refused = limiter.admit_submit("team-a", 3, true).has_value();
    if (!refused) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(refused) << "the refresher never read the new limit";
  EXPECT_GT(store.loads, loads_at_start);
}

}  // namespace
}  // namespace tpujobs::api
