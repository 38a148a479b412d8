#include "scheduler/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tests/scheduler/pass_driver.h"

namespace tpujobs::scheduler {
namespace {

using std::chrono::seconds;

TEST(FairShare, FactorIsTwoToTheMinusUsageOverShare) {
  const std::map<std::string, double> factors =
      fair_share_factors({{"a", 300.0}, {"b", 100.0}, {"idle", 0.0}, {"even", 200.0}});
  // Shares 1/4 each; usage fractions 0.5, 1/6, 0, 1/3.
  EXPECT_DOUBLE_EQ(std::exp2(-0.5 * 4), factors.at("a"));
  EXPECT_DOUBLE_EQ(std::exp2(-(100.0 / 600) * 4), factors.at("b"));
  EXPECT_DOUBLE_EQ(1.0, factors.at("idle"));
  EXPECT_DOUBLE_EQ(std::exp2(-(200.0 / 600) * 4), factors.at("even"));
  // Nobody used anything: everyone 1.
  EXPECT_DOUBLE_EQ(1.0, fair_share_factors({{"a", 0}, {"b", 0}}).at("a"));
  // Exactly the share: one half.
  EXPECT_DOUBLE_EQ(0.5, fair_share_factors({{"a", 5}, {"b", 5}}).at("b"));
}

TEST(FairShare, UsageDecaysWithTheHalfLife) {
  const seconds h(3600);
  // 8 cores for one hour that ended one half-life ago count half of 8 cores
  // for one hour that just ended.
  const double recent = decayed_core_seconds(8, seconds(3600), seconds(0), h);
  const double older = decayed_core_seconds(8, seconds(7200), seconds(3600), h);
  EXPECT_NEAR(recent / 2, older, 1e-9);
  // The integral of 2^(-t/h) over one half-life is h / (2 ln 2).
  EXPECT_NEAR(8 * 3600 / (2 * std::log(2.0)), recent, 1e-6);
}

JobSpec single(JobId id, int priority, std::string tenant) {
  JobSpec spec;
  spec.id = id;
  spec.priority = priority;
  spec.tenant = std::move(tenant);
  spec.request.kind = RequestKind::kSingleCore;
  spec.request.devices_per_host = 1;
  spec.request.hosts = 1;
  return spec;
}

std::vector<JobId> queue(const PassPlan& plan) {
  std::vector<JobId> ids;
  for (const Waiting& w : plan.waiting) ids.push_back(w.job);
  return ids;
}

TEST(FairShare, OrdersEqualPrioritiesOnlyAndKeepsSubmitOrderWithin) {
  PassDriver driver("v3-8");
  // A higher-priority job holds the host, so the rest wait in order.
  JobSpec blocker = single(6, 9, "other");
  blocker.request.kind = RequestKind::kHost;
  blocker.request.devices_per_host = 8;
  ASSERT_TRUE(driver.submit(blocker));
  ASSERT_EQ(1u, driver.pass().starts.size());
  ASSERT_TRUE(driver.submit(single(1, 0, "heavy")));
  ASSERT_TRUE(driver.submit(single(2, 0, "heavy")));
  ASSERT_TRUE(driver.submit(single(3, 0, "light")));
  ASSERT_TRUE(driver.submit(single(4, 1, "heavy")));
  EXPECT_EQ((std::vector<JobId>{4, 1, 2, 3}), queue(driver.pass()));
  driver.set_fair_share("heavy", 0.2);
  driver.set_fair_share("light", 0.9);
  EXPECT_EQ((std::vector<JobId>{4, 3, 1, 2}), queue(driver.pass()));
  // A later submit of the light tenant keeps its place behind job 3.
  ASSERT_TRUE(driver.submit(single(5, 0, "light")));
  const PassPlan& plan = driver.pass();
  EXPECT_EQ((std::vector<JobId>{4, 3, 5, 1, 2}), queue(plan));
  EXPECT_EQ(1, driver.job(4)->waiting->queue_position);
  EXPECT_EQ(5, driver.job(2)->waiting->queue_position);
}

// Two tenants with equal shares and equal demand, one of which submits its
// whole backlog first: over time both get the same core-seconds. Passes one
// simulated second apart; the factors are recomputed each second from the
// exact decayed usage of every span run so far.
TEST(FairShare, EqualDemandGetsEqualCoresOverTime) {
  const seconds half_life(600);
  const seconds job_runtime(60);
  PassDriver driver("v3-8");
  const PassTime t0 = driver.now();
  struct Span {
    std::string tenant;
    PassTime start;
    std::optional<PassTime> end;
  };
  std::map<JobId, Span> spans;
  JobId next = 0;
  auto submit = [&](const std::string& tenant, int count) {
    for (int i = 0; i < count; ++i) {
      JobSpec spec = single(++next, 0, tenant);
      spec.timeout = job_runtime;
      ASSERT_TRUE(driver.submit(spec));
    }
  };
  // "a" queues 400 jobs, then "b" 400: in submit order alone "a" would hold
  // every core for the first 50 minutes.
  submit("a", 400);
  submit("b", 400);
  std::map<std::string, double> core_seconds;  // held within the measured span
  const PassTime measure_from = t0 + std::chrono::minutes(10);
  const PassTime measure_to = t0 + std::chrono::minutes(50);
  for (PassTime now = t0; now < measure_to; now += seconds(1), driver.advance(seconds(1))) {
    // Jobs that ran their time end.
    for (auto& [id, span] : spans) {
      if (!span.end && now - span.start >= job_runtime) {
        span.end = now;
        driver.end(id);
      }
    }
    std::map<std::string, double> usage = {{"a", 0.0}, {"b", 0.0}};
    for (const auto& [id, span] : spans) {
      usage[span.tenant] += decayed_core_seconds(
          1, now - span.start, span.end ? now - *span.end : seconds(0), half_life);
    }
    for (const auto& [tenant, factor] : fair_share_factors(usage)) {
      driver.set_fair_share(tenant, factor);
    }
    for (const PlannedStart& p : driver.pass().starts) {
      spans[p.job] = Span{driver.job(p.job)->spec.tenant, now, {}};
    }
    for (const auto& [id, span] : spans) {
      if (!span.end && now >= measure_from) core_seconds[span.tenant] += 1;
    }
  }
  const double total = core_seconds["a"] + core_seconds["b"];
  EXPECT_NEAR(8.0 * 40 * 60, total, 8.0 * 60) << "the pool should stay busy";
  EXPECT_NEAR(0.5, core_seconds["a"] / total, 0.05)
      << "a: " << core_seconds["a"] << " b: " << core_seconds["b"];
}

}  // namespace
}  // namespace tpujobs::scheduler
