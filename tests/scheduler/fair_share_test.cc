#include "scheduler/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <string>

#include "scheduler/scheduler.h"

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

TEST(FairShare, OrdersEqualPrioritiesOnlyAndKeepsSubmitOrderWithin) {
  Scheduler s(*parse_pool("v3-8"), SchedulerOptions{});
  auto single = [](JobId id, int priority, std::string tenant) {
    JobRequest r;
    r.id = id;
    r.priority = priority;
    r.submit_order = id;
    r.tenant = std::move(tenant);
    r.request.kind = RequestKind::kSingleCore;
    r.request.devices_per_host = 1;
    r.request.hosts = 1;
    return r;
  };
  ASSERT_TRUE(s.submit(single(1, 0, "heavy")));
  ASSERT_TRUE(s.submit(single(2, 0, "heavy")));
  ASSERT_TRUE(s.submit(single(3, 0, "light")));
  ASSERT_TRUE(s.submit(single(4, 1, "heavy")));
  EXPECT_EQ((std::vector<JobId>{4, 1, 2, 3}), s.queue());
  s.set_fair_share("heavy", 0.2);
  s.set_fair_share("light", 0.9);
  EXPECT_EQ((std::vector<JobId>{4, 3, 1, 2}), s.queue());
  EXPECT_DOUBLE_EQ(0.2, s.fair_share("heavy"));
  EXPECT_DOUBLE_EQ(1.0, s.fair_share("unknown"));
  // A later submit of the light tenant keeps its place behind job 3.
  ASSERT_TRUE(s.submit(single(5, 0, "light")));
  EXPECT_EQ((std::vector<JobId>{4, 3, 5, 1, 2}), s.queue());
  // A pass over a full pool places them in that order too.
  JobRequest blocker = single(6, 9, "other");
  blocker.request.kind = RequestKind::kHost;
  blocker.request.devices_per_host = 8;
  ASSERT_TRUE(s.submit(blocker));
  EXPECT_EQ(1u, s.schedule(Clock::time_point{}).size());
  EXPECT_EQ(1, s.pending(4)->queue_position);
  EXPECT_EQ(5, s.pending(2)->queue_position);
}

// Two tenants with equal shares and equal demand, one of which submits its
// whole backlog first: over time both get the same core-seconds. A fake
// clock of one-second ticks; the factors are recomputed each tick from the
// exact decayed usage of every span run so far.
TEST(FairShare, EqualDemandGetsEqualCoresOverTime) {
  const seconds half_life(600);
  const seconds job_runtime(60);
  Scheduler s(*parse_pool("v3-8"), SchedulerOptions{});
  const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
  struct Span {
    std::string tenant;
    Clock::time_point start;
    std::optional<Clock::time_point> end;
  };
  std::map<JobId, Span> spans;
  std::map<JobId, std::string> tenant_of;
  JobId next = 0;
  auto submit = [&](const std::string& tenant, int count) {
    for (int i = 0; i < count; ++i) {
      JobRequest r;
      r.id = ++next;
      r.submit_order = r.id;
      r.tenant = tenant;
      r.request.kind = RequestKind::kSingleCore;
      r.request.devices_per_host = 1;
      r.request.hosts = 1;
      r.expected_runtime = job_runtime;
      tenant_of[r.id] = tenant;
      ASSERT_TRUE(s.submit(r));
    }
  };
  // "a" queues 400 jobs, then "b" 400: in submit order alone "a" would hold
  // every core for the first 50 minutes.
  submit("a", 400);
  submit("b", 400);
  std::map<std::string, double> core_seconds;  // held within the measured span
  const Clock::time_point measure_from = t0 + std::chrono::minutes(10);
  const Clock::time_point measure_to = t0 + std::chrono::minutes(50);
  for (Clock::time_point now = t0; now < measure_to; now += seconds(1)) {
    // Jobs that ran their time end.
    for (auto& [id, span] : spans) {
      if (!span.end && now - span.start >= job_runtime) {
        span.end = now;
        s.finish(id);
      }
    }
    std::map<std::string, double> usage = {{"a", 0.0}, {"b", 0.0}};
    for (const auto& [id, span] : spans) {
      usage[span.tenant] += decayed_core_seconds(
          1, now - span.start, span.end ? now - *span.end : seconds(0), half_life);
    }
    for (const auto& [tenant, factor] : fair_share_factors(usage)) s.set_fair_share(tenant, factor);
    for (const Placement& p : s.schedule(now)) spans[p.job] = Span{tenant_of[p.job], now, {}};
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
