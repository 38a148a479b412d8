// plan_pass over the agents' hosts (DESIGN §9): what a cluster's leader and a
// single process both place by. The same policy on a one-agent pool over
// several passes: placement_test, fair_share_test; its invariants under
// random events: property_test, dependency_property_test.
#include "scheduler/pass.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/clock.h"

namespace tpujobs::scheduler {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

ResourceRequest single_core() {
  ResourceRequest r;
  r.kind = RequestKind::kSingleCore;
  r.devices_per_host = 1;
  r.hosts = 1;
  return r;
}

ResourceRequest slice(int hosts) {
  ResourceRequest r;
  r.kind = RequestKind::kSlice;
  r.generation = Generation::kV3;
  r.devices_per_host = 8;
  r.hosts = hosts;
  r.accelerator_type = "v3-" + std::to_string(8 * hosts);
  return r;
}

ResourceRequest whole_host() {
  ResourceRequest r;
  r.kind = RequestKind::kHost;
  r.devices_per_host = 8;
  r.hosts = 1;
  return r;
}

// A snapshot being built, with the hosts' names for describe().
struct Cluster {
  PassSnapshot snapshot;
  std::vector<std::string> names;

  // Agents named in order, each with the given number of v3 hosts (8 cores).
  explicit Cluster(const std::vector<std::pair<std::string, int>>& counts = {}) {
    for (const auto& [agent, count] : counts) {
      snapshot.agents.push_back(PassAgent{agent, 0});
      for (int i = 0; i < count; ++i) add_host(agent, i);
    }
    snapshot.tenants.push_back(PassTenant{"t", std::nullopt, 0, 1.0});
  }
  void add_host(const std::string& agent, int index) {
    int a = 0;
    while (a < static_cast<int>(snapshot.agents.size()) && snapshot.agents[a].name != agent) ++a;
    if (a == static_cast<int>(snapshot.agents.size())) snapshot.agents.push_back({agent, 0});
    PassHost host;
    host.agent = a;
    host.cores.assign(8, 0);
    snapshot.hosts.push_back(host);
    names.push_back(agent + "-h" + std::to_string(index));
  }
  PassHost& host(int h) { return snapshot.hosts[h]; }
  int tenant(const std::string& name) {
    for (std::size_t t = 0; t < snapshot.tenants.size(); ++t) {
      if (snapshot.tenants[t].name == name) return static_cast<int>(t);
    }
    snapshot.tenants.push_back(PassTenant{name, std::nullopt, 0, 1.0});
    return static_cast<int>(snapshot.tenants.size()) - 1;
  }
  WaitingEntry& wait(JobId id, const ResourceRequest& request, std::optional<minutes> timeout = {},
                     int priority = 0, const std::string& tenant_name = "t") {
    snapshot.shapes.push_back(request);
    WaitingEntry entry;
    entry.id = id;
    entry.order = id;
    entry.priority = priority;
    entry.tenant = tenant(tenant_name);
    entry.shape = static_cast<int>(snapshot.shapes.size()) - 1;
    entry.timeout = timeout;
    snapshot.waiting.push_back(entry);
    return snapshot.waiting.back();
  }
  void run(JobId id, int host, std::vector<int> cores, std::optional<PassTime> end = {},
           int priority = 0, bool preemptible = true) {
    for (int c : cores) snapshot.hosts[host].cores[c] = id;
    for (RunningEntry& r : snapshot.running) {
      if (r.id == id) return;
    }
    snapshot.running.push_back(RunningEntry{id, priority, preemptible, false, end, id});
  }

  // "job@agent:host,host, " for each start, then "job:Reason#position " for
  // each wait.
  std::string describe(const PassPlan& plan) const {
    std::string out;
    for (const PlannedStart& p : plan.starts) {
      out += std::to_string(p.job) + "@" + snapshot.agents[p.agent].name + ":";
      for (int h : p.hosts) out += names[h] + ",";
      out += " ";
    }
    for (const Waiting& w : plan.waiting) {
      out += std::to_string(w.job) + ":" + std::string(pending_reason_name(w.reason)) + "#" +
             std::to_string(w.queue_position) + " ";
    }
    return out;
  }
  std::string pass() const { return describe(plan_pass(snapshot)); }
};

TEST(PlanPass, SliceGoesOnTheHostsOfOneAgentOnly) {
  Cluster cluster({{"a", 2}, {"b", 2}});
  cluster.run(99, 1, {3});  // a-h1 is partly busy: a cannot take a 2-host slice
  cluster.wait(1, slice(2));
  cluster.wait(2, slice(2));
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("1@b:b-h0,b-h1, 2:Resources#1 ", cluster.describe(plan));
  EXPECT_EQ("v3-16", plan.starts[0].accelerator_type);
  EXPECT_EQ(16u, plan.starts[0].cores.size());
}

TEST(PlanPass, ASliceNoAgentHasAloneTakesAnAlignedBlockOfThePoolsHosts) {
  // The pool's topology: a-h0 a-h1 a-h2 b-h0 | b-h1 b-h2 c-h0 c-h1.
  Cluster cluster({{"a", 3}, {"b", 3}, {"c", 2}});
  cluster.wait(7, slice(4));
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("7@a:a-h0,a-h1,a-h2,b-h0, ", cluster.describe(plan));
  ASSERT_EQ(1u, plan.starts.size());
  const std::vector<std::pair<int, int>> parts{{0, 3}, {1, 1}};
  EXPECT_EQ(parts, plan.starts[0].parts);
  EXPECT_EQ(32u, plan.starts[0].cores.size());

  // a-h0 busy: the second block, not the first four free hosts.
  Cluster busy({{"a", 3}, {"b", 3}, {"c", 2}});
  busy.run(99, 0, {0});
  busy.wait(7, slice(4));
  EXPECT_EQ("7@b:b-h1,b-h2,c-h0,c-h1, ", busy.pass());
  // And b-h1 busy too: six hosts are free, but no aligned four.
  busy.run(99, 4, {0});
  EXPECT_EQ("7:Resources#1 ", busy.pass());
}

TEST(PlanPass, OfTheAlignedBlocksThatFitASliceTakesTheOneOverTheFewestAgents) {
  // a-h0 b-h0 c-h0 c-h1 (three agents) | d-h0 d-h1 e-h0 e-h1 (two).
  Cluster cluster({{"a", 1}, {"b", 1}, {"c", 2}, {"d", 2}, {"e", 2}});
  cluster.wait(7, slice(4));
  EXPECT_EQ("7@d:d-h0,d-h1,e-h0,e-h1, ", cluster.pass());
}

TEST(PlanPass, ALostAgentsHostsLeaveThePoolsTopologyAFailedHostStaysAHole) {
  Cluster lost({{"a", 2}, {"b", 2}, {"c", 2}});
  for (int h : {2, 3}) lost.host(h).usable = lost.host(h).in_pool = false;  // b is lost
  lost.wait(7, slice(4));
  EXPECT_EQ("7@a:a-h0,a-h1,c-h0,c-h1, ", lost.pass());
  Cluster failed({{"a", 2}, {"b", 2}, {"c", 2}});
  failed.host(2).usable = false;  // b-h0 failed; b is alive
  failed.wait(7, slice(4));
  const PassPlan plan = plan_pass(failed.snapshot);
  EXPECT_EQ("7:HostUnhealthy#1 ", failed.describe(plan));
  EXPECT_EQ("its hosts belong to a lost agent or are drained or failed", plan.waiting[0].detail);
}

TEST(PlanPass, NothingIsPlacedOnAnAgentWhoseHeartbeatsAreLate) {
  Cluster cluster({{"a", 2}, {"b", 2}, {"c", 2}});
  cluster.host(2).punctual = cluster.host(3).punctual = false;  // b: killed, not yet lost
  cluster.wait(7, slice(4));
  EXPECT_EQ("7:HostUnhealthy#1 ", cluster.pass());
  // Declared lost, its hosts leave the pool: a and c form the block.
  for (int h : {2, 3}) cluster.host(h).in_pool = cluster.host(h).usable = false;
  EXPECT_EQ("7@a:a-h0,a-h1,c-h0,c-h1, ", cluster.pass());
  // Nor does a slice b has alone: b may be dead, and the job would end
  // FAILED (or spend a retry) without running. It goes once b is on time.
  Cluster alone({{"b", 2}});
  alone.host(0).punctual = alone.host(1).punctual = false;
  alone.wait(8, slice(2));
  EXPECT_EQ("8:HostUnhealthy#1 ", alone.pass());
  alone.host(0).punctual = alone.host(1).punctual = true;
  EXPECT_EQ("8@b:b-h0,b-h1, ", alone.pass());
}

TEST(PlanPass, ARetryGoesOnlyToAgentsHeardFromSinceItsFailure) {
  base::FakeClock clock;
  const PassTime t0 = clock.wall_now();
  Cluster cluster({{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}});
  for (PassHost& h : cluster.snapshot.hosts) h.heard_at = t0 + seconds(2);
  cluster.host(2).heard_at = cluster.host(3).heard_at = t0;  // b: silent since just before
  Cluster fresh = cluster;
  cluster.wait(7, slice(4)).heard_after = t0 + seconds(1);
  cluster.wait(8, single_core()).heard_after = t0 + seconds(1);
  EXPECT_EQ("7@c:c-h0,c-h1,d-h0,d-h1, 8@a:a-h0, ", cluster.pass());
  // Never requeued: b is alive, the first block is free.
  fresh.wait(9, slice(4));
  EXPECT_EQ("9@a:a-h0,a-h1,b-h0,b-h1, ", fresh.pass());
  // Once b heartbeats again, the retry may go there too.
  Cluster again = fresh;
  again.snapshot.waiting.clear();
  again.host(2).heard_at = again.host(3).heard_at = t0 + seconds(3);
  again.wait(7, slice(4)).heard_after = t0 + seconds(1);
  EXPECT_EQ("7@a:a-h0,a-h1,b-h0,b-h1, ", again.pass());
}

TEST(PlanPass, ASliceOneAgentHasStaysOnIt) {
  Cluster cluster({{"a", 1}, {"b", 2}});
  cluster.wait(7, slice(2));
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("7@b:b-h0,b-h1, ", cluster.describe(plan));
  EXPECT_TRUE(plan.starts[0].parts.empty());
}

TEST(PlanPass, HostsOfALostAgentAreNotUsed) {
  Cluster cluster({{"a", 1}});
  cluster.host(0).usable = false;
  cluster.wait(1, single_core());
  EXPECT_EQ("1:HostUnhealthy#1 ", cluster.pass());
  cluster.add_host("b", 0);
  EXPECT_EQ("1@b:b-h0, ", cluster.pass());
}

TEST(PlanPass, SingleCoresFillAHostBeforeTheNextAndNeverOverlap) {
  Cluster cluster({{"a", 2}});
  for (int i = 1; i <= 17; ++i) cluster.wait(i, single_core());
  const PassPlan plan = plan_pass(cluster.snapshot);
  ASSERT_EQ(16u, plan.starts.size());
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(i + 1, plan.starts[i].job);
    EXPECT_EQ((CoreRef{i / 8, i % 8}), plan.starts[i].cores[0]) << "job " << i + 1;
    EXPECT_EQ("v3", plan.starts[i].accelerator_type);
  }
  ASSERT_EQ(1u, plan.waiting.size());
  EXPECT_EQ(17, plan.waiting[0].job);
}

TEST(PlanPass, CpuJobsGoToTheEmptiestAliveAgent) {
  Cluster cluster;
  cluster.snapshot.agents = {{"a", 1}, {"b", 2}};
  for (int i = 1; i <= 4; ++i) cluster.wait(i, ResourceRequest{});  // kCpu by default
  EXPECT_EQ("1@b: 2@a: 3@b: 4:Resources#1 ", cluster.pass());
  cluster.snapshot.agents.clear();
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("no agent is alive", plan.waiting[0].detail);
}

TEST(PlanPass, QuotaHoldsATenantBack) {
  Cluster cluster({{"a", 1}});
  cluster.wait(1, single_core(), {}, 0, "capped");
  cluster.wait(2, single_core(), {}, 0, "capped");
  cluster.wait(3, single_core(), {}, 0, "free");
  cluster.snapshot.tenants[cluster.tenant("capped")].max_cores = 1;
  EXPECT_EQ("1@a:a-h0, 3@a:a-h0, 2:Quota#1 ", cluster.pass());
}

// Agent a's two hosts: h0 has cores 0-6 held by job 100 (no time limit),
// h1 core 0 by job 101, which ends within ten minutes.
Cluster two_busy_hosts(PassTime now, bool known_end = true) {
  Cluster cluster({{"a", 2}});
  cluster.snapshot.now = now;
  cluster.run(100, 0, {0, 1, 2, 3, 4, 5, 6});
  std::optional<PassTime> end;
  if (known_end) end = now + minutes(10);
  cluster.run(101, 1, {0}, end);
  return cluster;
}

TEST(PlanPass, TheHeadReservesTheHostThatFreesFirstAndLaterJobsKeepOffIt) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  Cluster cluster = two_busy_hosts(now);
  cluster.wait(2, whole_host());
  cluster.wait(3, single_core());              // h0's free core: not reserved
  cluster.wait(4, single_core());              // only h1 is left: reserved
  cluster.wait(5, single_core(), minutes(5));  // ends in time
  cluster.wait(6, single_core(), minutes(20));
  const PassPlan plan = plan_pass(cluster.snapshot);
  // 4 and 6 fit h1's free cores, but would delay the head: Priority.
  EXPECT_EQ("3@a:a-h0, 5@a:a-h1, 2:Resources#1 4:Priority#2 6:Priority#3 ", cluster.describe(plan));
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(2, plan.reservation->job);
  EXPECT_EQ(8u, plan.reservation->cores.size());
  EXPECT_EQ(1, plan.reservation->cores.front().host);
  EXPECT_EQ(now + minutes(10), plan.waiting[0].estimated_start);
  // The head holds h1 for ever after (no time limit), and h0's cores never
  // free: no later start is known.
  EXPECT_FALSE(plan.waiting[1].estimated_start);
}

TEST(PlanPass, EstimatedStartsFollowTheQueueWithinTheHorizon) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  Cluster cluster({{"a", 1}});
  cluster.snapshot.now = now;
  cluster.snapshot.options.estimate_horizon = 3;
  cluster.run(100, 0, {0}, now + minutes(10));
  for (JobId id = 1; id <= 4; ++id) cluster.wait(id, whole_host(), minutes(10));
  const PassPlan plan = plan_pass(cluster.snapshot);
  ASSERT_EQ(4u, plan.waiting.size());
  EXPECT_EQ(now + minutes(10), plan.waiting[0].estimated_start);
  EXPECT_EQ(now + minutes(20), plan.waiting[1].estimated_start);
  EXPECT_EQ(now + minutes(30), plan.waiting[2].estimated_start);
  EXPECT_FALSE(plan.waiting[3].estimated_start) << "past the horizon";
}

TEST(PlanPass, WithoutKnownEndsTheHeadStillHoldsItsCoresButHasNoEstimatedStart) {
  Cluster cluster = two_busy_hosts({}, /*known_end=*/false);
  cluster.wait(2, whole_host());
  cluster.wait(3, single_core());
  cluster.wait(4, single_core(), minutes(1));
  cluster.wait(5, single_core());
  const PassPlan plan = plan_pass(cluster.snapshot);
  // The fewest busy cores: h1. Nothing may backfill onto it without a known start.
  EXPECT_EQ("3@a:a-h0, 2:Resources#1 4:Priority#2 5:Priority#3 ", cluster.describe(plan));
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(1, plan.reservation->cores.front().host);
  EXPECT_FALSE(plan.waiting.front().estimated_start);
}

TEST(PlanPass, AJobHeldByQuotaNeverBecomesTheHead) {
  Cluster cluster = two_busy_hosts({}, /*known_end=*/false);
  cluster.wait(2, whole_host(), {}, 0, "capped");
  cluster.snapshot.tenants[cluster.tenant("capped")].max_cores = 4;
  cluster.wait(3, single_core());
  cluster.wait(4, single_core());
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("3@a:a-h0, 4@a:a-h1, 2:Quota#1 ", cluster.describe(plan));
  EXPECT_FALSE(plan.reservation);
}

TEST(PlanPass, HeadPreemptsTheLowerPriorityHostOfOneAgent) {
  Cluster cluster({{"a", 1}, {"b", 1}});
  cluster.run(10, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/2);
  cluster.run(11, 1, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/0, /*preemptible=*/false);
  cluster.wait(1, whole_host(), {}, /*priority=*/3);
  cluster.wait(2, single_core(), {}, /*priority=*/1);
  PassPlan plan = plan_pass(cluster.snapshot);
  ASSERT_EQ("1:Resources#1 2:Resources#2 ", cluster.describe(plan));
  // Priority 3 preempts job 10 (job 11 is not preemptible); only the head
  // preempts.
  ASSERT_TRUE(plan.preemption);
  EXPECT_EQ(1, plan.preemption->preemptor);
  EXPECT_EQ(std::vector<JobId>{10}, plan.preemption->victims);
  // Being preempted already: nothing more.
  cluster.snapshot.running[0].preempting = true;
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption);
  // Equal priority preempts nothing.
  cluster.snapshot.running[0].preempting = false;
  cluster.snapshot.waiting[0].priority = 2;
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption);
}

// The head chooses no new victims where it could not start once they
// stopped: a host whose agent heartbeats late (it would wait there until
// the agent is punctual again or declared lost, and its victims lose their
// work meanwhile), even where the victims cost least. A place already
// freeing for it there (its victim marked before the agent turned late)
// still holds it back from a second preemption elsewhere.
TEST(PlanPass, NoNewVictimIsChosenOnAHostWhoseAgentHeartbeatsLate) {
  Cluster cluster({{"a", 1}, {"b", 1}});
  cluster.run(10, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/2);
  cluster.run(11, 1, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/1);  // the cheaper victim
  cluster.wait(1, whole_host(), {}, /*priority=*/3);
  PassPlan plan = plan_pass(cluster.snapshot);
  ASSERT_TRUE(plan.preemption);
  EXPECT_EQ(std::vector<JobId>{11}, plan.preemption->victims);
  cluster.host(1).punctual = false;  // b
  plan = plan_pass(cluster.snapshot);
  ASSERT_TRUE(plan.preemption);
  EXPECT_EQ(std::vector<JobId>{10}, plan.preemption->victims);
  cluster.host(0).punctual = false;  // a too
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption);

  // Job 11 was marked while b was punctual; b turns late as it stops.
  cluster.host(0).punctual = true;
  cluster.snapshot.running[1].preempting = true;
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption) << "job 10 would lose its work for nothing";
}

// A head requeued after its own failure waits for a heartbeat from a host
// before that host's victims are chosen: its cheaper victim is not passed
// over for a dearer one on a host that happened to beat first.
TEST(PlanPass, ARequeuedHeadWaitsForTheCheaperVictimsHostToBeHeard) {
  base::FakeClock clock;
  const PassTime t0 = clock.wall_now();
  Cluster cluster({{"a", 1}, {"b", 1}});
  cluster.host(0).heard_at = t0;               // a: last heard before the failure
  cluster.host(1).heard_at = t0 + seconds(2);  // b: heard since
  cluster.run(10, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/1);  // the cheaper victim, on a
  cluster.run(11, 1, {0, 1, 2, 3, 4, 5, 6, 7}, {}, /*priority=*/2);
  cluster.wait(1, whole_host(), {}, /*priority=*/3).heard_after = t0 + seconds(1);
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption) << "a's next heartbeat settles it";
  cluster.host(0).heard_at = t0 + seconds(3);
  const PassPlan plan = plan_pass(cluster.snapshot);
  ASSERT_TRUE(plan.preemption);
  EXPECT_EQ(std::vector<JobId>{10}, plan.preemption->victims);
  // Were job 11 the cheaper, it would have gone at once: b was heard.
  cluster.host(0).heard_at = t0;
  cluster.snapshot.running[0].priority = 2;
  cluster.snapshot.running[1].priority = 1;
  ASSERT_TRUE(plan_pass(cluster.snapshot).preemption);
  EXPECT_EQ(std::vector<JobId>{11}, plan_pass(cluster.snapshot).preemption->victims);
}

TEST(PlanPass, NoPreemptionWhenTheReservedStartIsNear) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  Cluster cluster({{"a", 1}});
  cluster.snapshot.now = now;
  cluster.run(10, 0, {0, 1, 2, 3, 4, 5, 6, 7}, now + seconds(30));
  cluster.wait(1, whole_host(), {}, /*priority=*/3);
  EXPECT_FALSE(plan_pass(cluster.snapshot).preemption) << "ends within preemption_min_wait";
  cluster.snapshot.running[0].expected_end = now + minutes(5);
  ASSERT_TRUE(plan_pass(cluster.snapshot).preemption);
}

TEST(PlanPass, VerdictsEndOrHoldJobsBeforeTheQueue) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  Cluster cluster({{"a", 1}});
  cluster.snapshot.now = now;
  cluster.snapshot.dependencies = {{{50, DependencyCondition::kSucceeded}},
                                   {{51, DependencyCondition::kSucceeded}},
                                   {{52, DependencyCondition::kFinished}}};
  cluster.snapshot.dependency_states = {{50, base::JobState::kRunning},
                                        {51, base::JobState::kFailed},
                                        {52, base::JobState::kCancelled}};
  cluster.wait(1, single_core()).dependencies = 0;  // waits for 50
  cluster.wait(2, single_core()).dependencies = 1;  // 51 failed: never
  cluster.wait(3, single_core()).dependencies = 2;  // 52 ended: satisfied
  cluster.wait(4, single_core()).start_deadline = now;
  cluster.wait(5, single_core()).start_deadline = now + seconds(1);
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("3@a:a-h0, 5@a:a-h0, ", cluster.describe(plan));
  ASSERT_EQ(1u, plan.held.size());
  EXPECT_EQ(1, plan.held[0].job);
  EXPECT_NE(std::string::npos, plan.held[0].detail.find("job 50"));
  ASSERT_EQ(2u, plan.unstartable.size());
  EXPECT_EQ(2, plan.unstartable[0].job);
  EXPECT_EQ(Unstartable::kDependencyNeverSatisfied, plan.unstartable[0].why);
  EXPECT_EQ(4, plan.unstartable[1].job);
  EXPECT_EQ(Unstartable::kStartDeadlineExceeded, plan.unstartable[1].why);
}

TEST(PlanPass, FairShareOrdersEqualPrioritiesOnly) {
  Cluster cluster({{"a", 1}});
  cluster.wait(1, whole_host(), {}, 0, "heavy");
  cluster.wait(2, whole_host(), {}, 0, "light");
  cluster.wait(3, whole_host(), {}, 1, "heavy");
  cluster.snapshot.tenants[cluster.tenant("heavy")].fair_share = 0.25;
  cluster.snapshot.tenants[cluster.tenant("light")].fair_share = 1.0;
  EXPECT_EQ("3@a:a-h0, 2:Resources#1 1:Resources#2 ", cluster.pass());
}

// The queue's order (scheduler/pass.h) whatever order the entries come in,
// with priorities and orders of either sign and tenants of equal factors.
TEST(PlanPass, TheQueueIsInOrderWhateverTheEntriesOrder) {
  Cluster cluster({{"a", 1}});
  const int priorities[] = {-7, 0, 3, 0, -7, 100, 3, 0};
  const std::int64_t orders[] = {5, -2, 1LL << 40, 5, -(1LL << 40), 9, 1, 0};
  const char* tenants[] = {"x", "y", "z", "x", "y", "z", "x", "y"};
  for (int i = 0; i < 8; ++i) {
    WaitingEntry& entry = cluster.wait(i + 1, whole_host(), {}, priorities[i], tenants[i]);
    entry.order = orders[i];
    entry.shape = -1;  // every job waits, in the queue's order
  }
  cluster.snapshot.tenants[cluster.tenant("x")].fair_share = 0.5;
  cluster.snapshot.tenants[cluster.tenant("y")].fair_share = 0.5;
  cluster.snapshot.tenants[cluster.tenant("z")].fair_share = 2.0;
  std::vector<WaitingEntry> expected = cluster.snapshot.waiting;
  std::sort(expected.begin(), expected.end(), [&](const WaitingEntry& a, const WaitingEntry& b) {
    const double fa = cluster.snapshot.tenants[a.tenant].fair_share;
    const double fb = cluster.snapshot.tenants[b.tenant].fair_share;
    return std::tie(b.priority, fb, a.order, a.id) < std::tie(a.priority, fa, b.order, b.id);
  });
  std::vector<JobId> want;
  for (const WaitingEntry& e : expected) want.push_back(e.id);
  EXPECT_EQ((std::vector<JobId>{6, 3, 7, 2, 8, 4, 5, 1}), want);
  for (int round = 0; round < 3; ++round) {
    if (round == 1) cluster.snapshot.waiting = expected;  // already in order
    if (round == 2) std::reverse(cluster.snapshot.waiting.begin(), cluster.snapshot.waiting.end());
    std::vector<JobId> got;
    for (const Waiting& w : plan_pass(cluster.snapshot).waiting) got.push_back(w.job);
    EXPECT_EQ(want, got) << "round " << round;
  }
}

// The entries as a leader keeps them, in or near the queue's order or far
// from it: the queue is the same, and each reason names its entry.
TEST(PlanPass, ALongQueueIsInOrderHoweverNearOrFarItsEntriesAre) {
  Cluster cluster({{"a", 1}});
  constexpr int kJobs = 2000;
  for (int i = 1; i <= kJobs; ++i) cluster.wait(i, whole_host()).shape = -1;
  const std::vector<WaitingEntry> in_order = cluster.snapshot.waiting;
  std::vector<std::vector<WaitingEntry>> arrangements(12, in_order);
  std::swap(arrangements[1][10], arrangements[1][11]);  // a few near their places
  std::swap(arrangements[1][500], arrangements[1][503]);
  std::rotate(arrangements[2].begin(), arrangements[2].end() - 1, arrangements[2].end());
  arrangements[3].back().priority = 1;                         // one far from its place: first
  std::swap(arrangements[3].front(), arrangements[3].back());  // and the first last
  for (std::size_t at = 0; at + 100 <= kJobs; at += 200) {     // batches in either order
    std::rotate(arrangements[4].begin() + at, arrangements[4].begin() + at + 50,
                arrangements[4].begin() + at + 100);
  }
  std::reverse(arrangements[5].begin(), arrangements[5].end());
  for (std::size_t left = 0; left < 8; ++left) {  // the last ones take placed jobs' places
    arrangements[6][left * 3] = arrangements[6].back();
    arrangements[6].pop_back();
  }
  std::shuffle(arrangements[7].begin(), arrangements[7].end(), std::mt19937(29));
  std::vector<WaitingEntry> moved;  // one in 25 taken out, put back last, in reverse
  std::erase_if(arrangements[8], [&](const WaitingEntry& e) {
    if (e.id % 25 != 0) return false;
    moved.insert(moved.begin(), e);
    return true;
  });
  arrangements[8].insert(arrangements[8].end(), moved.begin(), moved.end());
  arrangements[9][kJobs / 2].priority = 1;  // one in the middle, first
  // The last ones in the places of the first, the first two of them in
  // order (as a leader left them in bench/service/big_queue.py's run).
  for (std::size_t place = 0; place < 7; ++place)
    arrangements[10][place] = in_order[place == 0 ? kJobs - 7 : kJobs - place];
  arrangements[10].resize(kJobs - 7);
  for (std::size_t place = 1000; place < 1003; ++place)  // three in order, in the middle
    arrangements[11][place] = in_order[kJobs - 1003 + place];
  arrangements[11].resize(kJobs - 3);
  for (std::size_t a = 0; a < arrangements.size(); ++a) {
    cluster.snapshot.waiting = arrangements[a];
    std::vector<WaitingEntry> expected = arrangements[a];
    std::sort(expected.begin(), expected.end(), [](const WaitingEntry& x, const WaitingEntry& y) {
      return std::tie(y.priority, x.order) < std::tie(x.priority, y.order);
    });
    const PassPlan plan = plan_pass(cluster.snapshot);
    ASSERT_EQ(expected.size(), plan.waiting.size()) << "arrangement " << a;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const Waiting& w = plan.waiting[i];
      ASSERT_EQ(expected[i].id, w.job) << "arrangement " << a << ", position " << i + 1;
      ASSERT_EQ(static_cast<int>(i) + 1, w.queue_position) << "arrangement " << a;
      ASSERT_EQ(w.job, cluster.snapshot.waiting[w.entry].id) << "arrangement " << a;
    }
  }
}

// Entries in order but for a few moved anywhere, a few raised, or both:
// the queue is each time what a sort of the entries makes it.
TEST(PlanPass, TheQueueIsInOrderAfterAnyFewMoves) {
  constexpr int kJobs = 400;
  std::mt19937 random(57);
  for (int round = 0; round < 300; ++round) {
    Cluster cluster({{"a", 1}});
    for (int i = 1; i <= kJobs; ++i) cluster.wait(i, whole_host()).shape = -1;
    std::vector<WaitingEntry>& waiting = cluster.snapshot.waiting;
    const int moves = round % 40;  // up to past kJobs / 16, where it sorts instead
    for (int m = 0; m < moves; ++m) {
      const std::size_t from = random() % waiting.size();
      const WaitingEntry moved = waiting[from];
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(from));
      waiting.insert(waiting.begin() + static_cast<std::ptrdiff_t>(random() % waiting.size()),
                     moved);
    }
    for (int r = 0; r < round % 3; ++r) waiting[random() % waiting.size()].priority = 1;
    std::vector<WaitingEntry> expected = waiting;
    std::sort(expected.begin(), expected.end(), [](const WaitingEntry& x, const WaitingEntry& y) {
      return std::tie(y.priority, x.order) < std::tie(x.priority, y.order);
    });
    const PassPlan plan = plan_pass(cluster.snapshot);
    ASSERT_EQ(expected.size(), plan.waiting.size()) << "round " << round;
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_EQ(expected[i].id, plan.waiting[i].job) << "round " << round << ", position " << i + 1;
  }
}

TEST(PlanPass, AnUnresolvableSpecWaitsHostUnhealthy) {
  Cluster cluster({{"a", 1}});
  cluster.wait(1, single_core()).shape = -1;
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("1:HostUnhealthy#1 ", cluster.describe(plan));
  EXPECT_EQ("no registered agent has hosts of its kind", plan.waiting[0].detail);
}

// A plan that depends on time only through start_by deadlines holds until
// the first of them: the same snapshot later plans the same (the leader then
// plans nothing: service/scheduler_leader.h).
TEST(PlanPass, APlanHoldsUntilTheFirstStartByDeadlineWhenNothingElseInItDependsOnTime) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  Cluster cluster({{"a", 1}});
  cluster.snapshot.now = now;
  cluster.run(100, 0, {0, 1, 2, 3, 4, 5, 6, 7});  // its end is unknown
  cluster.wait(1, whole_host());
  cluster.wait(2, single_core()).start_deadline = now + minutes(10);
  cluster.wait(3, single_core()).start_deadline = now + minutes(5);
  const PassPlan plan = plan_pass(cluster.snapshot);
  EXPECT_EQ("1:Resources#1 2:Resources#2 3:Resources#3 ", cluster.describe(plan));
  EXPECT_EQ(now + minutes(5), plan.holds_until);
  cluster.snapshot.now = now + minutes(5) - seconds(1);
  EXPECT_TRUE(plan_pass(cluster.snapshot) == plan);
  cluster.snapshot.now = now + minutes(5);
  const PassPlan later = plan_pass(cluster.snapshot);
  ASSERT_EQ(1u, later.unstartable.size());
  EXPECT_EQ(3, later.unstartable[0].job);
  EXPECT_EQ(now + minutes(5), later.holds_until) << "it ends a job: it holds for its pass only";

  cluster.snapshot.waiting.pop_back();
  cluster.snapshot.waiting.pop_back();
  EXPECT_EQ(PassTime::max(), plan_pass(cluster.snapshot).holds_until) << "no deadline: for ever";
}

TEST(PlanPass, APlanThatActsOrKnowsATimeHoldsOnlyForItsOwnPass) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  {
    Cluster cluster = two_busy_hosts(now);  // job 101's end is known: so is the head's start
    cluster.wait(2, whole_host());
    EXPECT_EQ(now, plan_pass(cluster.snapshot).holds_until);
  }
  {
    Cluster cluster = two_busy_hosts(now, /*known_end=*/false);
    cluster.wait(2, whole_host());
    EXPECT_EQ(PassTime::max(), plan_pass(cluster.snapshot).holds_until);
    cluster.snapshot.running[0].preempting = true;  // ends at once
    EXPECT_EQ(now, plan_pass(cluster.snapshot).holds_until);
  }
  {
    Cluster cluster = two_busy_hosts(now, /*known_end=*/false);
    cluster.wait(2, single_core());  // starts on h0's free core
    EXPECT_EQ(now, plan_pass(cluster.snapshot).holds_until);
  }
  {
    Cluster cluster = two_busy_hosts(now, /*known_end=*/false);
    cluster.wait(2, whole_host()).heard_after = now;  // waits for a heartbeat after its requeue
    EXPECT_EQ(now, plan_pass(cluster.snapshot).holds_until);
  }
}

TEST(PlanPass, SurroundingsAreTheSameButForHeartbeatsAndTheWaitingJobs) {
  base::FakeClock clock;
  const PassTime now = clock.wall_now();
  const Cluster cluster = two_busy_hosts(now);
  PassSnapshot other = cluster.snapshot;
  other.hosts[0].heard_at = now + seconds(1);
  other.now = now + seconds(1);
  other.waiting.push_back(WaitingEntry{});  // the caller's to compare
  EXPECT_TRUE(same_surroundings(cluster.snapshot, other));
  auto differs = [&](auto change) {
    PassSnapshot changed = cluster.snapshot;
    change(changed);
    return !same_surroundings(cluster.snapshot, changed);
  };
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.hosts[0].cores[7] = 5; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.hosts[1].usable = false; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.hosts[1].punctual = false; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.agents[0].cpu_slots = 1; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.tenants[0].fair_share = 0.5; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.tenants[0].max_cores = 8; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.running[1].expected_end.reset(); }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.dependency_states[7] = base::JobState::kFailed; }));
  EXPECT_TRUE(differs([](PassSnapshot& s) { s.options.estimate_horizon = 1; }));
}

}  // namespace
}  // namespace tpujobs::scheduler
