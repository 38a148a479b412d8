// The scheduler leader's placement over the agents' hosts (DESIGN §9).
#include "service/cluster_placement.h"

#include <gtest/gtest.h>

#include <map>

namespace tpujobs::service {
namespace {

using scheduler::RequestKind;

ClusterHost host(const std::string& agent, int index, bool usable = true) {
  ClusterHost h;
  h.name = agent + "-h" + std::to_string(index);
  h.agent = agent;
  h.usable = usable;
  h.core_job.assign(8, 0);
  return h;
}

scheduler::ResourceRequest single_core() {
  scheduler::ResourceRequest r;
  r.kind = RequestKind::kSingleCore;
  r.devices_per_host = 1;
  r.hosts = 1;
  return r;
}

scheduler::ResourceRequest slice(int hosts) {
  scheduler::ResourceRequest r;
  r.kind = RequestKind::kSlice;
  r.generation = scheduler::Generation::kV3;
  r.devices_per_host = 8;
  r.hosts = hosts;
  r.accelerator_type = "v3-" + std::to_string(8 * hosts);
  return r;
}

// "job@agent:host,host" for each placement, then "job:Reason" for each wait.
std::string describe(const PlacementInput& input, const PlacementPass& pass) {
  std::string out;
  for (const ClusterPlacement& p : pass.placed) {
    out += std::to_string(p.job) + "@" + p.agent + ":";
    for (int h : p.hosts) out += input.hosts[h].name + ",";
    out += " ";
  }
  for (const WaitingReason& w : pass.waiting) {
    out += std::to_string(w.job) + ":" + std::string(scheduler::pending_reason_name(w.reason)) +
           "#" + std::to_string(w.queue_position) + " ";
  }
  return out;
}

TEST(ClusterPlacementTest, SliceGoesOnTheHostsOfOneAgentOnly) {
  PlacementInput input;
  input.hosts = {host("a", 0), host("a", 1), host("b", 0), host("b", 1)};
  input.hosts[1].core_job[3] = 99;  // a-h1 is partly busy: a cannot take a 2-host slice
  const PlacementPass pass = place_jobs(input, {{1, "t", slice(2)}, {2, "t", slice(2)}});
  EXPECT_EQ("1@b:b-h0,b-h1, 2:Resources#1 ", describe(input, pass));
  EXPECT_EQ(1, input.hosts[2].core_job[0]);
}

// Agents named in order, each with the given number of hosts.
std::vector<ClusterHost> agents(const std::vector<std::pair<std::string, int>>& counts) {
  std::vector<ClusterHost> hosts;
  for (const auto& [agent, count] : counts) {
    for (int i = 0; i < count; ++i) hosts.push_back(host(agent, i));
  }
  return hosts;
}

TEST(ClusterPlacementTest, ASliceNoAgentHasAloneTakesAnAlignedBlockOfThePoolsHosts) {
  // The pool's topology: a-h0 a-h1 a-h2 b-h0 | b-h1 b-h2 c-h0 c-h1.
  PlacementInput input;
  input.hosts = agents({{"a", 3}, {"b", 3}, {"c", 2}});
  PlacementPass pass = place_jobs(input, {{7, "t", slice(4)}});
  EXPECT_EQ("7@a:a-h0,a-h1,a-h2,b-h0, ", describe(input, pass));
  ASSERT_EQ(1u, pass.placed.size());
  const std::vector<std::pair<std::string, int>> parts{{"a", 3}, {"b", 1}};
  EXPECT_EQ(parts, pass.placed[0].parts);
  EXPECT_EQ(32u, pass.placed[0].cores.size());
  EXPECT_EQ(7, input.hosts[3].core_job[7]);

  // a-h0 busy: the second block, not the first four free hosts.
  PlacementInput busy;
  busy.hosts = agents({{"a", 3}, {"b", 3}, {"c", 2}});
  busy.hosts[0].core_job[0] = 99;
  EXPECT_EQ("7@b:b-h1,b-h2,c-h0,c-h1, ", describe(busy, place_jobs(busy, {{7, "t", slice(4)}})));
  // And b-h1 busy too: six hosts are free, but no aligned four.
  busy.hosts = agents({{"a", 3}, {"b", 3}, {"c", 2}});
  busy.hosts[0].core_job[0] = busy.hosts[4].core_job[0] = 99;
  EXPECT_EQ("7:Resources#1 ", describe(busy, place_jobs(busy, {{7, "t", slice(4)}})));
}

TEST(ClusterPlacementTest, OfTheAlignedBlocksThatFitASliceTakesTheOneOverTheFewestAgents) {
  // a-h0 b-h0 c-h0 c-h1 (three agents) | d-h0 d-h1 e-h0 e-h1 (two).
  PlacementInput input;
  input.hosts = agents({{"a", 1}, {"b", 1}, {"c", 2}, {"d", 2}, {"e", 2}});
  EXPECT_EQ("7@d:d-h0,d-h1,e-h0,e-h1, ", describe(input, place_jobs(input, {{7, "t", slice(4)}})));
}

TEST(ClusterPlacementTest, ALostAgentsHostsLeaveThePoolsTopologyAFailedHostStaysAHole) {
  PlacementInput input;
  input.hosts = agents({{"a", 2}, {"b", 2}, {"c", 2}});
  input.hosts[2].usable = input.hosts[3].usable = false;  // b is lost
  input.hosts[2].in_pool = input.hosts[3].in_pool = false;
  EXPECT_EQ("7@a:a-h0,a-h1,c-h0,c-h1, ", describe(input, place_jobs(input, {{7, "t", slice(4)}})));
  PlacementInput failed;
  failed.hosts = agents({{"a", 2}, {"b", 2}, {"c", 2}});
  failed.hosts[2].usable = false;  // b-h0 failed; b is alive
  EXPECT_EQ("7:HostUnhealthy#1 ", describe(failed, place_jobs(failed, {{7, "t", slice(4)}})));
}

TEST(ClusterPlacementTest, NothingIsPlacedOnAnAgentWhoseHeartbeatsAreLate) {
  PlacementInput input;
  input.hosts = agents({{"a", 2}, {"b", 2}, {"c", 2}});
  input.hosts[2].punctual = input.hosts[3].punctual = false;  // b: killed, not yet declared lost
  EXPECT_EQ("7:HostUnhealthy#1 ", describe(input, place_jobs(input, {{7, "t", slice(4)}})));
  // Declared lost, its hosts leave the pool: a and c form the block.
  input.hosts[2].in_pool = input.hosts[3].in_pool = false;
  input.hosts[2].usable = input.hosts[3].usable = false;
  EXPECT_EQ("7@a:a-h0,a-h1,c-h0,c-h1, ", describe(input, place_jobs(input, {{7, "t", slice(4)}})));
  // Nor does a slice b has alone: b may be dead, and the job would end
  // FAILED (or spend a retry) without running. It goes once b is on time.
  PlacementInput alone;
  alone.hosts = {host("b", 0), host("b", 1)};
  alone.hosts[0].punctual = alone.hosts[1].punctual = false;
  EXPECT_EQ("8:HostUnhealthy#1 ", describe(alone, place_jobs(alone, {{8, "t", slice(2)}})));
  alone.hosts[0].punctual = alone.hosts[1].punctual = true;
  EXPECT_EQ("8@b:b-h0,b-h1, ", describe(alone, place_jobs(alone, {{8, "t", slice(2)}})));
}

TEST(ClusterPlacementTest, ARetryGoesOnlyToAgentsHeardFromSinceItsFailure) {
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point t0{seconds(1000)};
  PlacementInput input;
  input.hosts = agents({{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}});
  for (ClusterHost& h : input.hosts) h.heard_at = t0 + seconds(2);
  input.hosts[2].heard_at = input.hosts[3].heard_at = t0;  // b: silent since just before
  WaitingJob retry{7, "t", slice(4)};
  retry.requeued_at = t0 + seconds(1);
  WaitingJob single{8, "t", single_core()};
  single.requeued_at = t0 + seconds(1);
  WaitingJob fresh{9, "t", slice(4)};  // never requeued: b is alive, the first block is free
  EXPECT_EQ("7@c:c-h0,c-h1,d-h0,d-h1, 8@a:a-h0, ",
            describe(input, place_jobs(input, {retry, single})));
  PlacementInput again;
  again.hosts = input.hosts;
  for (ClusterHost& h : again.hosts) std::fill(h.core_job.begin(), h.core_job.end(), 0);
  EXPECT_EQ("9@a:a-h0,a-h1,b-h0,b-h1, ", describe(again, place_jobs(again, {fresh})));
  // Once b heartbeats again, the retry may go there too.
  again.hosts[2].heard_at = again.hosts[3].heard_at = t0 + seconds(3);
  for (ClusterHost& h : again.hosts) std::fill(h.core_job.begin(), h.core_job.end(), 0);
  EXPECT_EQ("7@a:a-h0,a-h1,b-h0,b-h1, ", describe(again, place_jobs(again, {retry})));
}

TEST(ClusterPlacementTest, ASliceOneAgentHasStaysOnIt) {
  PlacementInput input;
  input.hosts = {host("a", 0), host("b", 0), host("b", 1)};
  const PlacementPass pass = place_jobs(input, {{7, "t", slice(2)}});
  EXPECT_EQ("7@b:b-h0,b-h1, ", describe(input, pass));
  EXPECT_TRUE(pass.placed[0].parts.empty());
}

TEST(ClusterPlacementTest, HostsOfALostAgentAreNotUsed) {
  PlacementInput input;
  input.hosts = {host("a", 0, /*usable=*/false)};
  const PlacementPass pass = place_jobs(input, {{1, "t", single_core()}});
  EXPECT_EQ("1:HostUnhealthy#1 ", describe(input, pass));
  input.hosts.push_back(host("b", 0));
  EXPECT_EQ("1@b:b-h0, ", describe(input, place_jobs(input, {{1, "t", single_core()}})));
}

TEST(ClusterPlacementTest, SingleCoresFillAHostBeforeTheNextAndNeverOverlap) {
  PlacementInput input;
  input.hosts = {host("a", 0)};
  std::vector<WaitingJob> queue;
  for (int i = 1; i <= 9; ++i) queue.push_back({i, "t", single_core()});
  const PlacementPass pass = place_jobs(input, queue);
  ASSERT_EQ(8u, pass.placed.size());
  for (int c = 0; c < 8; ++c) EXPECT_EQ(c + 1, input.hosts[0].core_job[c]);
  EXPECT_EQ("9:Resources#1 ", describe(input, PlacementPass{{}, pass.waiting, std::nullopt}));
}

TEST(ClusterPlacementTest, CpuJobsGoToTheEmptiestAliveAgent) {
  PlacementInput input;
  input.free_cpu_slots = {{"a", 1}, {"b", 2}};
  scheduler::ResourceRequest cpu;  // kCpu by default
  const PlacementPass pass =
      place_jobs(input, {{1, "t", cpu}, {2, "t", cpu}, {3, "t", cpu}, {4, "t", cpu}});
  EXPECT_EQ("1@b: 2@a: 3@b: 4:Resources#1 ", describe(input, pass));
}

TEST(ClusterPlacementTest, QuotaHoldsATenantBack) {
  PlacementInput input;
  input.hosts = {host("a", 0)};
  input.quota_left = {{"capped", 1}};
  const PlacementPass pass = place_jobs(
      input,
      {{1, "capped", single_core()}, {2, "capped", single_core()}, {3, "free", single_core()}});
  EXPECT_EQ("1@a:a-h0, 3@a:a-h0, 2:Quota#1 ", describe(input, pass));
}

scheduler::ResourceRequest whole_host() {
  scheduler::ResourceRequest r;
  r.kind = RequestKind::kHost;
  r.devices_per_host = 8;
  r.hosts = 1;
  return r;
}

// Agent a's two hosts: h0 has cores 0-6 held by job 100 (no time limit),
// h1 core 0 by job 101, which ends within ten minutes.
PlacementInput two_busy_hosts(std::chrono::system_clock::time_point now) {
  PlacementInput input;
  input.hosts = {host("a", 0), host("a", 1)};
  for (int c = 0; c < 7; ++c) input.hosts[0].core_job[c] = 100;
  input.hosts[1].core_job[0] = 101;
  input.now = now;
  input.expected_end[101] = now + std::chrono::minutes(10);
  return input;
}

WaitingJob limited(std::int64_t id, scheduler::ResourceRequest request,
                   std::optional<std::chrono::minutes> limit) {
  WaitingJob job{id, "t", std::move(request)};
  if (limit) job.expected_runtime = *limit;
  return job;
}

TEST(ClusterPlacementTest, TheHeadReservesTheHostThatFreesFirstAndLaterJobsKeepOffIt) {
  const auto now = std::chrono::system_clock::time_point(std::chrono::hours(1000));
  PlacementInput input = two_busy_hosts(now);
  const PlacementPass pass =
      place_jobs(input, {limited(2, whole_host(), std::nullopt),
                         limited(3, single_core(), std::nullopt),  // h0's free core: not reserved
                         limited(4, single_core(), std::nullopt),  // only h1 is left: reserved
                         limited(5, single_core(), std::chrono::minutes(5)),  // ends in time
                         limited(6, single_core(), std::chrono::minutes(20))});
  EXPECT_EQ(describe(input, pass),
            "3@a:a-h0, 5@a:a-h1, 2:Resources#1 4:Resources#2 6:Resources#3 ");
  ASSERT_TRUE(pass.reservation);
  EXPECT_EQ(pass.reservation->job, 2);
  EXPECT_EQ(pass.reservation->cores.size(), 8u);
  EXPECT_EQ(pass.reservation->cores.front().host, 1);
  EXPECT_EQ(pass.waiting.front().estimated_start, now + std::chrono::minutes(10));
  EXPECT_FALSE(pass.waiting[1].estimated_start) << "only the head has a reserved start";
}

TEST(ClusterPlacementTest, WithoutKnownEndsTheHeadStillHoldsItsCoresButHasNoEstimatedStart) {
  PlacementInput input = two_busy_hosts({});
  input.expected_end.clear();
  const PlacementPass pass = place_jobs(
      input, {limited(2, whole_host(), std::nullopt), limited(3, single_core(), std::nullopt),
              limited(4, single_core(), std::chrono::minutes(1)),
              limited(5, single_core(), std::nullopt)});
  // The fewest busy cores: h1. Nothing may backfill onto it without a known start.
  EXPECT_EQ(describe(input, pass), "3@a:a-h0, 2:Resources#1 4:Resources#2 5:Resources#3 ");
  ASSERT_TRUE(pass.reservation);
  EXPECT_EQ(pass.reservation->cores.front().host, 1);
  EXPECT_FALSE(pass.waiting.front().estimated_start);
}

TEST(ClusterPlacementTest, AJobHeldByQuotaNeverBecomesTheHead) {
  PlacementInput input = two_busy_hosts({});
  input.quota_left["capped"] = 4;
  WaitingJob capped{2, "capped", whole_host()};
  const PlacementPass pass = place_jobs(input, {capped, limited(3, single_core(), std::nullopt),
                                                limited(4, single_core(), std::nullopt)});
  EXPECT_EQ(describe(input, pass), "3@a:a-h0, 4@a:a-h1, 2:Quota#1 ");
  EXPECT_FALSE(pass.reservation);
}

TEST(ClusterPlacementTest, HeadPreemptsTheLowerPriorityHostOfOneAgent) {
  PlacementInput input;
  input.hosts = {host("a", 0), host("b", 0)};
  input.hosts[0].core_job.assign(8, 10);  // job 10, priority 2
  input.hosts[1].core_job.assign(8, 11);  // job 11, priority 0, not preemptible
  std::map<std::int64_t, scheduler::RunningJobInfo> running = {{10, {10, 2, true, false, 1, 8}},
                                                               {11, {11, 0, false, false, 2, 8}}};
  auto lookup = [&](std::int64_t id) -> std::optional<scheduler::RunningJobInfo> {
    auto it = running.find(id);
    return it == running.end() ? std::nullopt : std::optional(it->second);
  };
  scheduler::ResourceRequest whole = slice(1);
  whole.kind = RequestKind::kHost;
  const std::vector<WaitingJob> queue = {{1, "t", whole}, {2, "t", single_core()}};
  const PlacementPass pass = place_jobs(input, queue);
  ASSERT_EQ("1:Resources#1 2:Resources#2 ", describe(input, pass));
  // Priority 3 preempts job 10 (job 11 is not preemptible).
  std::optional<ClusterPreemption> p =
      choose_cluster_preemption(input, pass, queue, {{1, 3}, {2, 9}}, lookup);
  ASSERT_TRUE(p);
  EXPECT_EQ(1, p->preemptor);
  EXPECT_EQ(std::vector<std::int64_t>{10}, p->victims);
  // Equal priority preempts nothing; only the head preempts.
  EXPECT_FALSE(choose_cluster_preemption(input, pass, queue, {{1, 2}, {2, 9}}, lookup));
  // Being preempted already: nothing more.
  running[10].preempting = true;
  EXPECT_FALSE(choose_cluster_preemption(input, pass, queue, {{1, 3}, {2, 9}}, lookup));
}

}  // namespace
}  // namespace tpujobs::service
