// plan_pass on a one-agent pool laid out by --pool, over several passes: the
// policy cases of the single-process Scheduler's tests, now run against the
// policy itself. The pool is kept by tests/scheduler/pass_driver.h, which
// applies each plan as the scheduler leader does and decides nothing.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scheduler/preemption.h"
#include "tests/scheduler/pass_driver.h"

namespace tpujobs::scheduler {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

ResourceRequest single_core(std::optional<int> pinned = std::nullopt,
                            std::optional<Generation> generation = Generation::kV3) {
  ResourceRequest request;
  request.kind = RequestKind::kSingleCore;
  request.generation = generation;
  request.devices_per_host = 1;
  request.hosts = 1;
  request.pinned_core = pinned;
  return request;
}

ResourceRequest whole_host(Generation generation = Generation::kV3) {
  ResourceRequest request;
  request.kind = RequestKind::kHost;
  request.generation = generation;
  request.devices_per_host = facts(generation).devices_per_host;
  request.hosts = 1;
  request.accelerator_type = std::string(facts(generation).name) + "-8";
  return request;
}

ResourceRequest pod_slice(std::string_view type) {
  const SliceType slice = *parse_slice_type(type);
  ResourceRequest request;
  request.kind = RequestKind::kSlice;
  request.generation = slice.generation;
  request.devices_per_host = facts(slice.generation).devices_per_host;
  request.hosts = slice.hosts();
  request.accelerator_type = std::string(type);
  return request;
}

JobSpec job(JobId id, ResourceRequest request, std::optional<milliseconds> timeout = {},
            int priority = 0, std::string tenant = "team") {
  JobSpec out;
  out.id = id;
  out.priority = priority;
  out.tenant = std::move(tenant);
  out.request = std::move(request);
  out.timeout = timeout;
  return out;
}

// "7:v3-32@4-7" for hosts and slices, "3:v3@1.2" (host.core) for a single
// core, "5:cpu" for a cpu job; space-separated, in start order.
std::string describe(const std::vector<PlannedStart>& starts) {
  std::string out;
  for (const PlannedStart& p : starts) {
    if (!out.empty()) out += " ";
    out.append(std::to_string(p.job)).append(":").append(p.accelerator_type);
    if (p.kind == RequestKind::kSingleCore) {
      out.append("@").append(std::to_string(p.cores[0].host));
      out.append(".").append(std::to_string(p.cores[0].core));
    } else if (!p.hosts.empty()) {
      out.append("@").append(std::to_string(p.hosts.front()));
      if (p.hosts.size() > 1) out.append("-").append(std::to_string(p.hosts.back()));
    }
  }
  return out;
}

std::string pass(PassDriver& driver) { return describe(driver.pass().starts); }

// "Resources#2" (reason and queue position from the last pass) or "not waiting".
std::string waiting(const PassDriver& driver, JobId id) {
  const DriverJob* job = driver.job(id);
  if (!job || !job->waiting) return "not waiting";
  return std::string(pending_reason_name(job->waiting->reason)) + "#" +
         std::to_string(job->waiting->queue_position);
}

std::optional<PassTime> estimated_start(const PassDriver& driver, JobId id) {
  return driver.job(id)->waiting->estimated_start;
}

TEST(Placement, SingleCoresPackOntoAHostAlreadyInUse) {
  PassDriver driver("v3-32");
  driver.submit(job(1, single_core()));
  driver.submit(job(2, single_core()));
  EXPECT_EQ("1:v3@0.0 2:v3@0.1", pass(driver));
  // The whole host avoids the busy one and the free pair 2-3.
  driver.submit(job(3, whole_host()));
  driver.submit(job(4, single_core()));
  EXPECT_EQ("3:v3-8@1 4:v3@0.2", pass(driver));
}

TEST(Placement, PinnedCoreGetsThatCoreOnSomeHost) {
  PassDriver driver("v3-32");
  driver.submit(job(1, single_core(5)));
  driver.submit(job(2, single_core(5)));
  driver.submit(job(3, single_core(0)));
  EXPECT_EQ("1:v3@0.5 2:v3@1.5 3:v3@0.0", pass(driver));
}

TEST(Placement, SlicesAreBuddyAligned) {
  PassDriver driver("v3-64");
  driver.submit(job(1, whole_host()));
  driver.submit(job(2, pod_slice("v3-32")));
  driver.submit(job(3, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-8@0 2:v3-32@4-7", pass(driver));
  // Hosts 1-3 are free, but a v3-32 must start at host 0 or 4.
  EXPECT_EQ("Resources#1", waiting(driver, 3));
  driver.end(1);
  EXPECT_EQ("3:v3-32@0-3", pass(driver));
}

TEST(Placement, SlicesNeverSpanTwoGenerationRuns) {
  PassDriver driver("v3-32,v4-8,v3-32");
  EXPECT_TRUE(can_ever_fit(driver.snapshot().hosts, pod_slice("v3-32")));
  EXPECT_FALSE(can_ever_fit(driver.snapshot().hosts, pod_slice("v3-64")));
  driver.submit(job(1, pod_slice("v3-32")));
  driver.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-32@0-3 2:v3-32@5-8", pass(driver));
}

TEST(Placement, SliceNamesCountTensorCores) {
  PassDriver driver("v4-16");
  driver.submit(job(1, pod_slice("v4-16")));
  EXPECT_EQ("1:v4-16@0-1", pass(driver));
  EXPECT_EQ(8u, driver.job(1)->placement->cores.size());
}

TEST(Placement, AllOrNothingThenStartsWhenCoresFree) {
  PassDriver driver("v3-32");
  driver.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", pass(driver));
  driver.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("", pass(driver));
  EXPECT_EQ("Resources#1", waiting(driver, 2));
  driver.end(1);
  driver.advance(seconds(1));
  EXPECT_EQ("2:v3-32@0-3", pass(driver));
  EXPECT_EQ("not waiting", waiting(driver, 2));
}

TEST(Placement, HigherPriorityFirstThenSubmitOrder) {
  PassDriver driver("v3-8");
  driver.submit(job(1, whole_host(), {}, 0));
  driver.submit(job(2, whole_host(), {}, 5));
  driver.submit(job(3, whole_host(), {}, 5));
  EXPECT_EQ("2:v3-8@0", pass(driver));
  EXPECT_EQ("Resources#1", waiting(driver, 3));
  EXPECT_EQ("Resources#2", waiting(driver, 1));
  driver.end(3, base::JobState::kCancelled);
  pass(driver);
  EXPECT_EQ("Resources#1", waiting(driver, 1));
}

TEST(Placement, BackfillOnlyWhenTheHeadIsNotDelayed) {
  PassDriver driver("v3-64");
  const PassTime t0 = driver.now();
  driver.submit(job(1, whole_host(), minutes(60)));
  EXPECT_EQ("1:v3-8@0", pass(driver));
  driver.submit(job(2, pod_slice("v3-64"), minutes(10)));
  driver.submit(job(3, single_core(), minutes(30)));  // ends before the head starts
  driver.submit(job(4, single_core(), minutes(90)));  // would delay it
  driver.submit(job(5, single_core()));               // no time limit
  EXPECT_EQ("3:v3@1.0", pass(driver));

  const std::optional<PassReservation>& reservation = driver.last_plan().reservation;
  ASSERT_TRUE(reservation);
  EXPECT_EQ(2, reservation->job);
  EXPECT_EQ(t0 + minutes(60), reservation->start);
  EXPECT_EQ(64u, reservation->cores.size());

  EXPECT_EQ("Resources#1", waiting(driver, 2));
  EXPECT_EQ("Priority#2", waiting(driver, 4));
  EXPECT_EQ("Priority#3", waiting(driver, 5));
  EXPECT_EQ(t0 + minutes(60), estimated_start(driver, 2));
  // After the head's 10 minutes.
  EXPECT_EQ(t0 + minutes(70), estimated_start(driver, 4));
  EXPECT_EQ(t0 + minutes(70), estimated_start(driver, 5));
}

TEST(Placement, UnknownEndsBackfillOnlyOutsideTheReservation) {
  // Hosts 0-3 are v3, host 4 is v4.
  PassDriver driver("v3-32,v4-8");
  driver.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", pass(driver));
  driver.submit(job(2, pod_slice("v3-32")));
  driver.submit(job(3, single_core(std::nullopt, Generation::kV3), minutes(1)));
  driver.submit(job(4, single_core(std::nullopt, std::nullopt)));
  driver.submit(job(5, whole_host(Generation::kV4)));
  EXPECT_EQ("4:v4@4.0", pass(driver));
  const std::optional<PassReservation>& reservation = driver.last_plan().reservation;
  ASSERT_TRUE(reservation);
  EXPECT_FALSE(reservation->start.has_value());
  // Every v3 core is reserved for the slice; job 1 may never end.
  EXPECT_EQ("Priority#2", waiting(driver, 3));
  EXPECT_EQ("Resources#3", waiting(driver, 5));
  EXPECT_FALSE(estimated_start(driver, 2).has_value());
}

TEST(Placement, UnknownEndsReserveTheLeastBusyPlace) {
  PassDriver driver("v3-64");
  driver.submit(job(1, whole_host()));
  driver.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-8@0 2:v3-32@4-7", pass(driver));
  driver.submit(job(3, pod_slice("v3-32")));
  driver.submit(job(4, whole_host()));
  EXPECT_EQ("", pass(driver));
  const std::optional<PassReservation>& reservation = driver.last_plan().reservation;
  ASSERT_TRUE(reservation);
  EXPECT_EQ(CoreRef({0, 0}), reservation->cores.front());
  EXPECT_EQ(CoreRef({3, 7}), reservation->cores.back());
  EXPECT_EQ("Priority#2", waiting(driver, 4));
}

TEST(Placement, AFailedHostTakesNoWorkUntilItRecovers) {
  PassDriver driver("v3-32");
  driver.submit(job(1, pod_slice("v3-32")));
  pass(driver);
  EXPECT_EQ(std::vector<JobId>{1}, driver.set_health(2, HostHealth::kFailed));
  driver.advance(seconds(1));
  driver.requeue_after_failure(1);
  driver.advance(seconds(1));  // the agent heartbeats since
  driver.submit(job(2, single_core(2)));
  driver.submit(job(3, single_core(2)));
  driver.submit(job(4, single_core(2)));
  driver.submit(job(5, single_core(2)));
  // It cannot run while host 2 is down. Host 3 first: it keeps the free
  // pair 0-1 whole.
  EXPECT_EQ("2:v3@3.2 3:v3@0.2 4:v3@1.2", pass(driver));
  EXPECT_EQ("HostUnhealthy#1", waiting(driver, 1));
  EXPECT_EQ("Resources#2", waiting(driver, 5));

  // Recovered, the slice heads the queue again and holds hosts 0-3 against
  // job 5, which would otherwise take host 2.
  driver.set_health(2, HostHealth::kHealthy);
  EXPECT_EQ("", pass(driver));
  EXPECT_EQ("Resources#1", waiting(driver, 1));
  EXPECT_EQ("Priority#2", waiting(driver, 5));
  for (JobId id : {2, 3, 4}) driver.end(id);
  EXPECT_EQ("1:v3-32@0-3", pass(driver));
  EXPECT_EQ("Resources#1", waiting(driver, 5));
}

TEST(Placement, ARetryWaitsForItsHostsToBeHeardFromAgain) {
  PassDriver driver("v3-8,v3-8");
  driver.submit(job(1, whole_host()));
  EXPECT_EQ("1:v3-8@0", pass(driver));
  driver.set_health(0, HostHealth::kFailed);
  driver.requeue_after_failure(1);
  EXPECT_EQ("", pass(driver));  // not heard from since the failure
  driver.advance(seconds(1));
  EXPECT_EQ("1:v3-8@1", pass(driver));
}

TEST(Placement, DrainingKeepsRunningJobsButPlacesNothingNew) {
  PassDriver driver("v3-8,v3-8");
  driver.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", pass(driver));
  EXPECT_TRUE(driver.set_health(0, HostHealth::kDraining).empty());
  driver.submit(job(2, single_core()));
  driver.submit(job(3, whole_host()));
  EXPECT_EQ("2:v3@1.0", pass(driver));
  EXPECT_EQ(base::JobState::kRunning, driver.job(1)->state);
  EXPECT_EQ("Resources#1", waiting(driver, 3));
  driver.set_health(1, HostHealth::kDraining);
  pass(driver);
  EXPECT_EQ("HostUnhealthy#1", waiting(driver, 3));
}

TEST(Placement, TenantQuotaHoldsJobsBackWithNoEstimatedStart) {
  PassDriver driver("v3-32");
  driver.set_quota("a", 8);
  driver.submit(job(1, whole_host(), {}, 0, "a"));
  driver.submit(job(2, single_core(), {}, 0, "a"));
  driver.submit(job(3, single_core(), {}, 0, "b"));
  EXPECT_EQ("1:v3-8@0 3:v3@1.0", pass(driver));
  EXPECT_EQ("Quota#1", waiting(driver, 2));
  EXPECT_FALSE(estimated_start(driver, 2).has_value());
  driver.set_quota("a", std::nullopt);
  EXPECT_EQ("2:v3@1.1", pass(driver));
}

TEST(Placement, CpuJobsTakeNoCoreAndStartFirst) {
  PassDriver driver("v3-8");
  driver.submit(job(1, whole_host()));
  driver.submit(job(2, whole_host(), {}, 9));
  driver.submit(job(3, ResourceRequest{}));
  EXPECT_EQ("3:cpu 2:v3-8@0", pass(driver));
  EXPECT_TRUE(driver.job(3)->placement->cores.empty());
  EXPECT_EQ("Resources#1", waiting(driver, 1));
}

TEST(Placement, CanEverFitJudgesTheIdlePoolWhateverItsHealth) {
  PassDriver driver("v3-32");
  auto fits = [&](const ResourceRequest& r) { return can_ever_fit(driver.snapshot().hosts, r); };
  EXPECT_TRUE(fits(pod_slice("v3-32")));
  EXPECT_FALSE(fits(pod_slice("v3-64")));
  EXPECT_FALSE(fits(whole_host(Generation::kV4)));
  EXPECT_TRUE(fits(single_core(7)));
  EXPECT_FALSE(fits(single_core(8)));
  EXPECT_TRUE(fits(single_core(std::nullopt, std::nullopt)));
  EXPECT_TRUE(fits(ResourceRequest{}));
  // Failing hosts does not change what the pool could hold.
  driver.set_health(0, HostHealth::kFailed);
  EXPECT_TRUE(fits(pod_slice("v3-32")));
  // A whole host needs the host's device count.
  ResourceRequest half_host = whole_host();
  half_host.devices_per_host = 4;
  EXPECT_FALSE(fits(half_host));
}

TEST(Placement, PendingReasonNames) {
  EXPECT_EQ("None", pending_reason_name(PendingReason::kNone));
  EXPECT_EQ("Resources", pending_reason_name(PendingReason::kResources));
  EXPECT_EQ("Priority", pending_reason_name(PendingReason::kPriority));
  EXPECT_EQ("HostUnhealthy", pending_reason_name(PendingReason::kHostUnhealthy));
  EXPECT_EQ("Quota", pending_reason_name(PendingReason::kQuota));
  EXPECT_EQ("Preempted", pending_reason_name(PendingReason::kPreempted));
  EXPECT_EQ("Dependency", pending_reason_name(PendingReason::kDependency));
}

// ------------------------------------------------------------- preemption

std::string victims(const PassPlan& plan) {
  if (!plan.preemption) return "none";
  std::string out = std::to_string(plan.preemption->preemptor) + " preempts";
  for (JobId id : plan.preemption->victims) out.append(" ").append(std::to_string(id));
  return out;
}

TEST(Preemption, HigherPriorityHeadPreemptsTheCheapestLowerPriorityJobs) {
  PassDriver driver("v3-8,v3-8");  // two hosts of 8 cores
  driver.submit(job(1, whole_host(), {}, /*priority=*/1));
  driver.submit(job(2, whole_host(), {}, /*priority=*/0));
  EXPECT_EQ("1:v3-8@0 2:v3-8@1", pass(driver));
  driver.submit(job(3, whole_host(), {}, /*priority=*/5));
  driver.advance(seconds(1));
  // Job 2 has the lower priority of the two.
  EXPECT_EQ("", pass(driver));
  EXPECT_EQ("3 preempts 2", victims(driver.last_plan()));
  EXPECT_TRUE(driver.job(2)->preempting);
  EXPECT_FALSE(driver.job(1)->preempting);
  // While job 2 checkpoints nothing more is preempted, and nothing else
  // takes its cores.
  driver.submit(job(4, single_core(), seconds(1), /*priority=*/0));
  driver.advance(seconds(1));
  EXPECT_EQ("", pass(driver));
  EXPECT_EQ("none", victims(driver.last_plan()));
  // It stops and waits again; the preemptor starts on its host.
  driver.stop_preempted(2);
  driver.advance(seconds(1));
  EXPECT_EQ("3:v3-8@1", pass(driver));
  EXPECT_EQ("Preempted#1", waiting(driver, 2));
  EXPECT_EQ("Resources#2", waiting(driver, 4));
}

TEST(Preemption, FewestVictimsThenMostRecentlyStarted) {
  PassDriver driver("v3-8,v3-8");
  // Host 0: eight single cores; host 1: one whole-host job started later.
  for (JobId id = 1; id <= 8; ++id) driver.submit(job(id, single_core(), {}, 0));
  EXPECT_EQ(8u, driver.pass().starts.size());
  driver.submit(job(9, whole_host(), {}, 0));
  driver.advance(seconds(5));
  EXPECT_EQ("9:v3-8@1", pass(driver));
  driver.submit(job(10, whole_host(), {}, 3));
  driver.advance(seconds(1));
  EXPECT_EQ("10 preempts 9", victims(driver.pass()));

  // A single core: of the equally cheap one-core victims, the newest.
  PassDriver one("v3-8");
  for (JobId id = 1; id <= 8; ++id) {
    one.submit(job(id, single_core(), {}, 0));
    one.pass();
    one.advance(seconds(1));
  }
  one.submit(job(20, single_core(), {}, 1));
  EXPECT_EQ("20 preempts 8", victims(one.pass()));
}

// choose_victims' lookup over `running` (kept by reference: changes show).
std::function<std::optional<RunningJobInfo>(std::int64_t)> lookup_in(
    const std::map<std::int64_t, RunningJobInfo>& running) {
  return [&running](std::int64_t id) -> std::optional<RunningJobInfo> {
    auto it = running.find(id);
    return it == running.end() ? std::nullopt : std::optional(it->second);
  };
}

TEST(Preemption, ChooseVictimsPrefersLowerPriorityOverFewerCores) {
  std::map<std::int64_t, RunningJobInfo> running = {{1, {1, 3, true, false, 10, 1}},
                                                    {2, {2, 1, true, false, 5, 8}}};
  const auto lookup = lookup_in(running);
  // Place 0 holds job 1 (priority 3, one core), place 1 job 2 (priority 1).
  const std::vector<std::vector<std::optional<std::int64_t>>> places = {{1}, {2}};
  std::optional<VictimChoice> choice = choose_victims(4, places, lookup);
  ASSERT_TRUE(choice);
  EXPECT_EQ(1u, choice->place);
  EXPECT_EQ(std::vector<std::int64_t>{2}, choice->victims);
  // Priority 3 may preempt job 2 only; 2 may preempt none.
  EXPECT_EQ(1u, choose_victims(3, places, lookup)->place);
  EXPECT_FALSE(choose_victims(1, places, lookup));
  // A place already freeing needs no victim.
  running[1].preempting = true;
  choice = choose_victims(4, places, lookup);
  ASSERT_TRUE(choice);
  EXPECT_EQ(0u, choice->place);
  EXPECT_TRUE(choice->victims.empty());
}

// A place the preemptor may only wait for gets no new victims, but one
// that frees by itself there still ends the choice.
TEST(Preemption, AWaitOnlyPlaceGetsNoNewVictimsButStillCountsWhenFreeing) {
  std::map<std::int64_t, RunningJobInfo> running = {{1, {1, 1, true, false, 10, 1}},
                                                    {2, {2, 2, true, false, 5, 1}}};
  const auto lookup = lookup_in(running);
  const std::vector<std::vector<std::optional<std::int64_t>>> places = {{1}, {2}};
  EXPECT_EQ(0u, choose_victims(4, places, lookup)->place) << "job 1 costs least";
  constexpr PlaceStart kNow = PlaceStart::kNow, kWaitOnly = PlaceStart::kWaitOnly;
  std::optional<VictimChoice> choice = choose_victims(4, places, lookup, {kWaitOnly, kNow});
  ASSERT_TRUE(choice);
  EXPECT_EQ(std::vector<std::int64_t>{2}, choice->victims);
  EXPECT_FALSE(choose_victims(4, places, lookup, {kWaitOnly, kWaitOnly}));
  running[1].preempting = true;
  choice = choose_victims(4, places, lookup, {kWaitOnly, kNow});
  ASSERT_TRUE(choice);
  EXPECT_EQ(0u, choice->place);
  EXPECT_TRUE(choice->victims.empty()) << "its victim still stops";
}

// The cheapest place on a host not yet heard from since the preemptor's
// failure: nothing now (its next heartbeat settles it), rather than dearer
// victims elsewhere. A dearer such place does not hold the cheaper one back.
TEST(Preemption, WhenTheCheapestPlaceIsSoonNothingIsPreemptedYet) {
  std::map<std::int64_t, RunningJobInfo> running = {{1, {1, 1, true, false, 10, 1}},
                                                    {2, {2, 2, true, false, 5, 1}}};
  const auto lookup = lookup_in(running);
  const std::vector<std::vector<std::optional<std::int64_t>>> places = {{1}, {2}};
  EXPECT_FALSE(choose_victims(4, places, lookup, {PlaceStart::kSoon, PlaceStart::kNow}))
      << "job 1 costs least; its host is heard from within a heartbeat";
  std::optional<VictimChoice> choice =
      choose_victims(4, places, lookup, {PlaceStart::kNow, PlaceStart::kSoon});
  ASSERT_TRUE(choice);
  EXPECT_EQ(std::vector<std::int64_t>{1}, choice->victims);
}

}  // namespace
}  // namespace tpujobs::scheduler
