#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>

#include "scheduler/preemption.h"

namespace tpujobs::scheduler {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(1);

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

ResourceRequest cpu() { return ResourceRequest{}; }

JobRequest job(JobId id, ResourceRequest request, std::optional<milliseconds> runtime = {},
               int priority = 0, std::string tenant = "team") {
  JobRequest out;
  out.id = id;
  out.priority = priority;
  out.submit_order = id;
  out.tenant = std::move(tenant);
  out.request = std::move(request);
  out.expected_runtime = runtime;
  return out;
}

// "7:v3-32@4-7" for hosts and slices, "3:v3@1.2" (host.core) for a single
// core, "5:cpu" for a cpu job.
std::string describe(const Placement& placement) {
  std::string out = std::to_string(placement.job) + ":" + placement.accelerator_type;
  // Appended piece by piece: GCC 12 at -O3 reports a false
  // -Wstringop-overflow for "literal" + std::to_string(...).
  if (placement.kind == RequestKind::kSingleCore) {
    out.append("@").append(std::to_string(placement.cores[0].host));
    out.append(".").append(std::to_string(placement.cores[0].core));
  } else if (!placement.hosts.empty()) {
    out.append("@").append(std::to_string(placement.hosts.front()));
    if (placement.hosts.size() > 1) out.append("-").append(std::to_string(placement.hosts.back()));
  }
  return out;
}

std::string describe(const std::vector<Placement>& placements) {
  std::string out;
  for (const Placement& placement : placements) {
    if (!out.empty()) out += " ";
    out += describe(placement);
  }
  return out;
}

std::string where(const Scheduler& scheduler, JobId id) {
  const std::optional<Placement> placement = scheduler.placement(id);
  return placement ? describe(*placement) : "not running";
}

// "Resources#2" (reason and queue position) or "not waiting".
std::string waiting(const Scheduler& scheduler, JobId id) {
  const std::optional<PendingInfo> info = scheduler.pending(id);
  if (!info) return "not waiting";
  return std::string(pending_reason_name(info->reason)) + "#" +
         std::to_string(info->queue_position);
}

Scheduler make(std::string_view pool) {
  base::Result<PoolLayout> layout = parse_pool(pool);
  EXPECT_TRUE(layout.ok()) << layout.error().message;
  return Scheduler(std::move(*layout), SchedulerOptions{});
}

TEST(Scheduler, SingleCoresPackOntoAHostAlreadyInUse) {
  Scheduler scheduler = make("v3-32");
  scheduler.submit(job(1, single_core()));
  scheduler.submit(job(2, single_core()));
  EXPECT_EQ("1:v3@0.0 2:v3@0.1", describe(scheduler.schedule(kT0)));
  // The whole host avoids the busy one and the free pair 2-3.
  scheduler.submit(job(3, whole_host()));
  scheduler.submit(job(4, single_core()));
  EXPECT_EQ("3:v3-8@1 4:v3@0.2", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, PinnedCoreGetsThatCoreOnSomeHost) {
  Scheduler scheduler = make("v3-32");
  scheduler.submit(job(1, single_core(5)));
  scheduler.submit(job(2, single_core(5)));
  scheduler.submit(job(3, single_core(0)));
  EXPECT_EQ("1:v3@0.5 2:v3@1.5 3:v3@0.0", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, SlicesAreBuddyAligned) {
  Scheduler scheduler = make("v3-64");
  scheduler.submit(job(1, whole_host()));
  scheduler.submit(job(2, pod_slice("v3-32")));
  scheduler.submit(job(3, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-8@0 2:v3-32@4-7", describe(scheduler.schedule(kT0)));
  // Hosts 1-3 are free, but a v3-32 must start at host 0 or 4.
  EXPECT_EQ("Resources#1", waiting(scheduler, 3));
  EXPECT_EQ(24, scheduler.view().total_cores - scheduler.view().used_cores);
  scheduler.finish(1);
  EXPECT_EQ("3:v3-32@0-3", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, SlicesNeverSpanTwoGenerationRuns) {
  Scheduler scheduler = make("v3-32,v4-8,v3-32");
  EXPECT_TRUE(scheduler.can_ever_fit(pod_slice("v3-32")));
  EXPECT_FALSE(scheduler.can_ever_fit(pod_slice("v3-64")));
  scheduler.submit(job(1, pod_slice("v3-32")));
  scheduler.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-32@0-3 2:v3-32@5-8", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, AllOrNothingThenStartsWhenCoresFree) {
  Scheduler scheduler = make("v3-32");
  scheduler.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", describe(scheduler.schedule(kT0)));
  scheduler.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("Resources#1", waiting(scheduler, 2));
  EXPECT_EQ("not running", where(scheduler, 2));
  scheduler.finish(1);
  EXPECT_EQ("2:v3-32@0-3", describe(scheduler.schedule(kT0 + seconds(1))));
  EXPECT_EQ("not waiting", waiting(scheduler, 2));
}

TEST(Scheduler, HigherPriorityFirstThenSubmitOrder) {
  Scheduler scheduler = make("v3-8");
  scheduler.submit(job(1, whole_host(), {}, 0));
  scheduler.submit(job(2, whole_host(), {}, 5));
  scheduler.submit(job(3, whole_host(), {}, 5));
  EXPECT_EQ("2:v3-8@0", describe(scheduler.schedule(kT0)));
  EXPECT_EQ((std::vector<JobId>{3, 1}), scheduler.queue());
  EXPECT_EQ("Resources#1", waiting(scheduler, 3));
  EXPECT_EQ("Resources#2", waiting(scheduler, 1));
  scheduler.cancel(3);
  scheduler.schedule(kT0);
  EXPECT_EQ("Resources#1", waiting(scheduler, 1));
}

TEST(Scheduler, BackfillOnlyWhenTheHeadIsNotDelayed) {
  Scheduler scheduler = make("v3-64");
  scheduler.submit(job(1, whole_host(), minutes(60)));
  EXPECT_EQ("1:v3-8@0", describe(scheduler.schedule(kT0)));
  scheduler.submit(job(2, pod_slice("v3-64"), minutes(10)));
  scheduler.submit(job(3, single_core(), minutes(30)));  // ends before the head starts
  scheduler.submit(job(4, single_core(), minutes(90)));  // would delay it
  scheduler.submit(job(5, single_core()));               // runtime unknown
  EXPECT_EQ("3:v3@1.0", describe(scheduler.schedule(kT0)));

  const std::optional<Reservation> reservation = scheduler.reservation();
  ASSERT_TRUE(reservation);
  EXPECT_EQ(2, reservation->job);
  EXPECT_EQ(kT0 + minutes(60), reservation->start);
  EXPECT_EQ(64u, reservation->cores.size());

  EXPECT_EQ("Resources#1", waiting(scheduler, 2));
  EXPECT_EQ("Priority#2", waiting(scheduler, 4));
  EXPECT_EQ("Priority#3", waiting(scheduler, 5));
  EXPECT_EQ(kT0 + minutes(60), scheduler.pending(2)->estimated_start);
  // After the head's 10 minutes.
  EXPECT_EQ(kT0 + minutes(70), scheduler.pending(4)->estimated_start);
  EXPECT_EQ(kT0 + minutes(70), scheduler.pending(5)->estimated_start);
}

TEST(Scheduler, UnknownRuntimesBackfillOnlyOutsideTheReservation) {
  // Hosts 0-3 are v3, host 4 is v4.
  Scheduler scheduler = make("v3-32,v4-8");
  scheduler.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", describe(scheduler.schedule(kT0)));
  scheduler.submit(job(2, pod_slice("v3-32")));
  scheduler.submit(job(3, single_core(std::nullopt, Generation::kV3), minutes(1)));
  scheduler.submit(job(4, single_core(std::nullopt, std::nullopt)));
  scheduler.submit(job(5, whole_host(Generation::kV4)));
  EXPECT_EQ("4:v4@4.0", describe(scheduler.schedule(kT0)));
  const std::optional<Reservation> reservation = scheduler.reservation();
  ASSERT_TRUE(reservation);
  EXPECT_FALSE(reservation->start.has_value());
  // Every v3 core is reserved for the slice; job 1 may never end.
  EXPECT_EQ("Priority#2", waiting(scheduler, 3));
  EXPECT_EQ("Resources#3", waiting(scheduler, 5));
  EXPECT_FALSE(scheduler.pending(2)->estimated_start.has_value());
}

TEST(Scheduler, UnknownRuntimesReserveTheLeastBusyPlace) {
  Scheduler scheduler = make("v3-64");
  scheduler.submit(job(1, whole_host()));
  scheduler.submit(job(2, pod_slice("v3-32")));
  EXPECT_EQ("1:v3-8@0 2:v3-32@4-7", describe(scheduler.schedule(kT0)));
  scheduler.submit(job(3, pod_slice("v3-32")));
  scheduler.submit(job(4, whole_host()));
  EXPECT_EQ("", describe(scheduler.schedule(kT0)));
  ASSERT_TRUE(scheduler.reservation());
  EXPECT_EQ(CoreRef({0, 0}), scheduler.reservation()->cores.front());
  EXPECT_EQ(CoreRef({3, 7}), scheduler.reservation()->cores.back());
  EXPECT_EQ("Priority#2", waiting(scheduler, 4));
}

TEST(Scheduler, FailedHostEvictsItsJobsAndTakesNoWork) {
  Scheduler scheduler = make("v3-32");
  scheduler.submit(job(1, pod_slice("v3-32")));
  scheduler.schedule(kT0);
  EXPECT_EQ((std::vector<JobId>{1}), scheduler.set_host_health(2, HostHealth::kFailed));
  EXPECT_EQ("not running", where(scheduler, 1));
  EXPECT_EQ(0, scheduler.view().used_cores);
  EXPECT_EQ(24, scheduler.view().healthy_cores);

  // Requeued: it cannot run while host 2 is down.
  scheduler.submit(job(1, pod_slice("v3-32")));
  scheduler.submit(job(2, single_core(2)));
  scheduler.submit(job(3, single_core(2)));
  scheduler.submit(job(4, single_core(2)));
  scheduler.submit(job(5, single_core(2)));
  // Host 3 first: it keeps the free pair 0-1 whole.
  EXPECT_EQ("2:v3@3.2 3:v3@0.2 4:v3@1.2", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("HostUnhealthy#1", waiting(scheduler, 1));
  EXPECT_EQ("Resources#2", waiting(scheduler, 5));

  // Recovered, the slice heads the queue again and holds hosts 0-3 against
  // job 5, which would otherwise take host 2.
  scheduler.set_host_health(2, HostHealth::kHealthy);
  EXPECT_EQ("", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("Resources#1", waiting(scheduler, 1));
  EXPECT_EQ("Priority#2", waiting(scheduler, 5));
  for (JobId id : {2, 3, 4}) scheduler.finish(id);
  EXPECT_EQ("1:v3-32@0-3", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("Resources#1", waiting(scheduler, 5));
}

TEST(Scheduler, FailingAHostEvictsEveryJobWithACoreThere) {
  Scheduler scheduler = make("v3-32");
  scheduler.submit(job(1, single_core()));
  scheduler.submit(job(2, single_core()));
  scheduler.submit(job(3, whole_host()));
  EXPECT_EQ("1:v3@0.0 2:v3@0.1 3:v3-8@1", describe(scheduler.schedule(kT0)));
  EXPECT_EQ((std::vector<JobId>{1, 2}), scheduler.set_host_health(0, HostHealth::kFailed));
  EXPECT_EQ("3:v3-8@1", where(scheduler, 3));
  EXPECT_TRUE(scheduler.set_host_health(7, HostHealth::kFailed).empty());  // no such host
}

TEST(Scheduler, DrainingKeepsRunningJobsButPlacesNothingNew) {
  Scheduler scheduler = make("v3-8,v3-8");
  scheduler.submit(job(1, single_core()));
  EXPECT_EQ("1:v3@0.0", describe(scheduler.schedule(kT0)));
  EXPECT_TRUE(scheduler.set_host_health(0, HostHealth::kDraining).empty());
  EXPECT_EQ("1:v3@0.0", where(scheduler, 1));
  scheduler.submit(job(2, single_core()));
  scheduler.submit(job(3, whole_host()));
  EXPECT_EQ("2:v3@1.0", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("Resources#1", waiting(scheduler, 3));
  scheduler.set_host_health(1, HostHealth::kDraining);
  scheduler.schedule(kT0);
  EXPECT_EQ("HostUnhealthy#1", waiting(scheduler, 3));
  EXPECT_EQ(HostHealth::kDraining, scheduler.view().hosts[1].health);
}

TEST(Scheduler, LeasesExpireWithoutHeartbeats) {
  Scheduler scheduler(*parse_pool("v3-8"), SchedulerOptions{seconds(30)});
  scheduler.submit(job(1, single_core()));
  scheduler.submit(job(2, single_core()));
  scheduler.schedule(kT0);
  scheduler.heartbeat(1, kT0 + seconds(20));
  EXPECT_TRUE(scheduler.reclaim_expired(kT0 + seconds(30)).empty());
  EXPECT_EQ((std::vector<JobId>{2}), scheduler.reclaim_expired(kT0 + seconds(31)));
  EXPECT_EQ("not running", where(scheduler, 2));
  EXPECT_EQ("1:v3@0.0", where(scheduler, 1));
  EXPECT_EQ((std::vector<JobId>{1}), scheduler.reclaim_expired(kT0 + seconds(51)));
  EXPECT_EQ(0, scheduler.view().used_cores);
}

TEST(Scheduler, ForceReleaseFreesARunningJobOnly) {
  Scheduler scheduler = make("v3-8");
  scheduler.submit(job(1, whole_host()));
  scheduler.submit(job(2, whole_host()));
  scheduler.schedule(kT0);
  EXPECT_FALSE(scheduler.force_release(2));  // waiting, not running
  EXPECT_TRUE(scheduler.force_release(1));
  EXPECT_FALSE(scheduler.force_release(1));
  EXPECT_EQ("2:v3-8@0", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, TenantQuotaHoldsJobsBack) {
  Scheduler scheduler = make("v3-32");
  scheduler.set_tenant_quota("a", 8);
  scheduler.submit(job(1, whole_host(), {}, 0, "a"));
  scheduler.submit(job(2, single_core(), {}, 0, "a"));
  scheduler.submit(job(3, single_core(), {}, 0, "b"));
  EXPECT_EQ("1:v3-8@0 3:v3@1.0", describe(scheduler.schedule(kT0)));
  EXPECT_EQ("Quota#1", waiting(scheduler, 2));
  EXPECT_FALSE(scheduler.pending(2)->estimated_start.has_value());
  scheduler.set_tenant_quota("a", std::nullopt);
  EXPECT_EQ("2:v3@1.1", describe(scheduler.schedule(kT0)));
}

TEST(Scheduler, CpuJobsTakeNoCoreAndAlwaysStart) {
  Scheduler scheduler = make("v3-8");
  scheduler.submit(job(1, whole_host()));
  scheduler.submit(job(2, whole_host(), {}, 9));
  scheduler.submit(job(3, cpu()));
  EXPECT_EQ("None#0", waiting(scheduler, 3));
  EXPECT_EQ("3:cpu 2:v3-8@0", describe(scheduler.schedule(kT0)));
  EXPECT_EQ(2, scheduler.view().running_jobs);
  EXPECT_EQ(8, scheduler.view().used_cores);
  scheduler.finish(3);
  EXPECT_EQ(1, scheduler.view().running_jobs);
}

TEST(Scheduler, CancelDequeuesOrReleases) {
  Scheduler scheduler = make("v3-8");
  EXPECT_TRUE(scheduler.submit(job(1, whole_host())));
  EXPECT_FALSE(scheduler.submit(job(1, single_core())));  // id in use
  scheduler.submit(job(2, whole_host()));
  scheduler.schedule(kT0);
  EXPECT_TRUE(scheduler.cancel(2));
  EXPECT_EQ("not waiting", waiting(scheduler, 2));
  EXPECT_TRUE(scheduler.cancel(1));
  EXPECT_EQ(0, scheduler.view().used_cores);
  EXPECT_FALSE(scheduler.cancel(1));
  EXPECT_FALSE(scheduler.cancel(99));
  EXPECT_EQ(0, scheduler.view().queued_jobs);
}

TEST(Scheduler, ViewShowsEveryHostAndCore) {
  Scheduler scheduler = make("v3-8,v4-8");
  scheduler.submit(job(7, single_core(3, Generation::kV4)));
  scheduler.submit(job(8, whole_host()));
  scheduler.submit(job(9, whole_host()));
  scheduler.schedule(kT0);
  scheduler.set_host_health(1, HostHealth::kDraining);
  const Scheduler::PoolView view = scheduler.view();
  ASSERT_EQ(2u, view.hosts.size());
  EXPECT_EQ("v4-8-h0", view.hosts[1].name);
  EXPECT_EQ(Generation::kV4, view.hosts[1].generation);
  EXPECT_EQ(HostHealth::kDraining, view.hosts[1].health);
  EXPECT_EQ((std::vector<std::optional<JobId>>{std::nullopt, std::nullopt, std::nullopt, 7}),
            view.hosts[1].cores);
  EXPECT_EQ(std::optional<JobId>(8), view.hosts[0].cores[5]);
  EXPECT_EQ(12, view.total_cores);
  EXPECT_EQ(9, view.used_cores);
  EXPECT_EQ(8, view.healthy_cores);
  EXPECT_EQ(1, view.queued_jobs);
  EXPECT_EQ(2, view.running_jobs);
  EXPECT_EQ(std::optional<int>(1), scheduler.find_host("v4-8-h0"));
  EXPECT_FALSE(scheduler.find_host("v4-8-h1").has_value());
}

TEST(Scheduler, CanEverFitJudgesTheIdleHealthyPool) {
  Scheduler scheduler = make("v3-32");
  EXPECT_TRUE(scheduler.can_ever_fit(pod_slice("v3-32")));
  EXPECT_FALSE(scheduler.can_ever_fit(pod_slice("v3-64")));
  EXPECT_FALSE(scheduler.can_ever_fit(whole_host(Generation::kV4)));
  EXPECT_TRUE(scheduler.can_ever_fit(single_core(7)));
  EXPECT_FALSE(scheduler.can_ever_fit(single_core(8)));
  EXPECT_TRUE(scheduler.can_ever_fit(single_core(std::nullopt, std::nullopt)));
  EXPECT_TRUE(scheduler.can_ever_fit(cpu()));
  // Failing hosts does not change what the pool could hold.
  scheduler.set_host_health(0, HostHealth::kFailed);
  EXPECT_TRUE(scheduler.can_ever_fit(pod_slice("v3-32")));
  // A whole host needs the host's device count.
  ResourceRequest half_host = whole_host();
  half_host.devices_per_host = 4;
  EXPECT_FALSE(scheduler.can_ever_fit(half_host));
}

TEST(Scheduler, SliceNamesCountTensorCores) {
  Scheduler scheduler = make("v4-16");
  scheduler.submit(job(1, pod_slice("v4-16")));
  EXPECT_EQ("1:v4-16@0-1", describe(scheduler.schedule(kT0)));
  EXPECT_EQ(8u, scheduler.placement(1)->cores.size());
}

// Builds the same mixed queue every time: shapes, known and unknown
// runtimes, priorities, and a tenant held by its quota.
void fill_mixed_queue(Scheduler& scheduler, std::uint32_t seed, int jobs) {
  std::mt19937 random(seed);
  scheduler.set_tenant_quota("capped", 8);
  for (JobId id = 1; id <= jobs; ++id) {
    ResourceRequest request;
    switch (random() % 5) {
      case 0:
        request = single_core();
        break;
      case 1:
        request = single_core(static_cast<int>(random() % 8));
        break;
      case 2:
        request = whole_host();
        break;
      case 3:
        request = pod_slice("v3-32");
        break;
      default:
        request = whole_host(Generation::kV4);
        break;
    }
    std::optional<milliseconds> runtime;
    if (random() % 4 != 0) runtime = minutes(1 + random() % 120);
    scheduler.submit(job(id, request, runtime, static_cast<int>(random() % 3),
                         random() % 4 == 0 ? "capped" : "team"));
    if (id == jobs / 2) scheduler.schedule(kT0);
  }
  scheduler.schedule(kT0 + minutes(1));
  // A host frees up: at the next pass, the jobs behind the head that fit
  // there only if they delay its reservation wait (Priority).
  for (JobId id = 1; id <= jobs; ++id) {
    const std::optional<Placement> placement = scheduler.placement(id);
    if (placement && placement->kind == RequestKind::kHost) {
      scheduler.finish(id);
      break;
    }
  }
  scheduler.schedule(kT0 + minutes(1));
}

std::string pending_text(const Scheduler& scheduler, JobId id) {
  const std::optional<PendingInfo> info = scheduler.pending(id);
  if (!info) return "not waiting";
  std::string out = waiting(scheduler, id);
  if (info->estimated_start) {
    out +=
        " at +" +
        std::to_string(std::chrono::duration_cast<seconds>(*info->estimated_start - kT0).count()) +
        "s";
  }
  return out;
}

// Estimated starts are planned lazily, only as far as the job asked about:
// the answers must not depend on the order of the questions, nor on what a
// plan made before a change had already worked out.
TEST(Scheduler, PendingAnswersDoNotDependOnTheOrderOfTheQuestions) {
  constexpr int kJobs = 60;
  Scheduler forward = make("v3-64,v4-8");
  Scheduler backward = make("v3-64,v4-8");
  Scheduler shuffled = make("v3-64,v4-8");
  for (Scheduler* scheduler : {&forward, &backward, &shuffled})
    fill_mixed_queue(*scheduler, 7, kJobs);

  std::vector<JobId> ids;
  for (JobId id = 1; id <= kJobs; ++id) ids.push_back(id);
  std::vector<std::string> expected;
  for (JobId id : ids) expected.push_back(pending_text(forward, id));
  std::vector<std::string> got(kJobs);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) got[*it - 1] = pending_text(backward, *it);
  EXPECT_EQ(expected, got);
  std::vector<JobId> order = ids;
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  for (JobId id : order) got[id - 1] = pending_text(shuffled, id);
  EXPECT_EQ(expected, got);

  // The queue positions follow the scheduling order.
  const std::vector<JobId> queue = backward.queue();
  for (std::size_t i = 0; i < queue.size(); ++i) {
    EXPECT_EQ(static_cast<int>(i) + 1, backward.pending(queue[i])->queue_position)
        << "job " << queue[i];
  }
  // The mix covers what it should: known and unknown starts, running and
  // waiting jobs, reasons but HostUnhealthy and Priority (right after a
  // pass a job reads Priority only when it fits solely on the head's cores
  // and ends too late: BackfillOnlyWhenTheHeadIsNotDelayed).
  std::string all;
  for (const std::string& text : expected) all += text + "\n";
  for (std::string_view part : {"Resources#", "Quota#", " at +", "not waiting"}) {
    EXPECT_NE(std::string::npos, all.find(part)) << part << " in\n" << all;
  }

  // Answers are the last pass's: until the next one, a job submitted since
  // reads Resources with no position, a cancelled one is not waiting.
  const JobId first = queue.front();
  forward.submit(job(kJobs + 1, single_core(), minutes(5)));
  forward.cancel(first);
  EXPECT_EQ("Resources#0", pending_text(forward, kJobs + 1));
  EXPECT_EQ("not waiting", pending_text(forward, first));
  // The next pass answers from the changed state only: half of it asked
  // before, a job appended and one ahead of everything cancelled, then all
  // of it asked again, against a scheduler that saw the same changes before
  // any question.
  for (JobId id = 1; id <= kJobs / 2; ++id) pending_text(backward, id);
  backward.submit(job(kJobs + 1, single_core(), minutes(5)));
  backward.cancel(first);
  Scheduler fresh = make("v3-64,v4-8");
  fill_mixed_queue(fresh, 7, kJobs);
  fresh.submit(job(kJobs + 1, single_core(), minutes(5)));
  fresh.cancel(first);
  for (Scheduler* scheduler : {&forward, &backward, &fresh}) scheduler->schedule(kT0 + minutes(2));
  for (JobId id = kJobs + 1; id >= 1; --id) {
    EXPECT_EQ(pending_text(fresh, id), pending_text(forward, id)) << "job " << id;
    EXPECT_EQ(pending_text(fresh, id), pending_text(backward, id)) << "job " << id;
  }
  EXPECT_EQ("not waiting", pending_text(forward, first));
}

// Estimates stop at the horizon, as Slurm's backfill stops at
// bf_max_job_test: later jobs read "unknown" however known the runtimes.
TEST(Scheduler, EstimatedStartsStopAtTheHorizon) {
  SchedulerOptions options;
  options.estimate_horizon = 3;
  Scheduler scheduler(*parse_pool("v3-8"), options);
  scheduler.submit(job(1, whole_host(), minutes(10)));
  for (JobId id = 2; id <= 5; ++id) scheduler.submit(job(id, whole_host(), minutes(10)));
  EXPECT_EQ("1:v3-8@0", describe(scheduler.schedule(kT0)));
  // Asked from the back, then from the front: the same answers.
  EXPECT_FALSE(scheduler.pending(5)->estimated_start.has_value());
  EXPECT_EQ(kT0 + minutes(10), scheduler.pending(2)->estimated_start);
  EXPECT_EQ(kT0 + minutes(20), scheduler.pending(3)->estimated_start);
  EXPECT_EQ(kT0 + minutes(30), scheduler.pending(4)->estimated_start);
  EXPECT_FALSE(scheduler.pending(5)->estimated_start.has_value());
  EXPECT_EQ("Resources#4", waiting(scheduler, 5));
}

TEST(Scheduler, PendingReasonNames) {
  EXPECT_EQ("Resources", pending_reason_name(PendingReason::kResources));
  EXPECT_EQ("Priority", pending_reason_name(PendingReason::kPriority));
  EXPECT_EQ("HostUnhealthy", pending_reason_name(PendingReason::kHostUnhealthy));
  EXPECT_EQ("Quota", pending_reason_name(PendingReason::kQuota));
  EXPECT_EQ("Dependency", pending_reason_name(PendingReason::kDependency));
}

// ------------------------------------------------------------- preemption

std::string victims(const std::optional<Preemption>& p) {
  if (!p) return "none";
  std::string out = std::to_string(p->preemptor) + " preempts";
  for (JobId id : p->victims) out.append(" ").append(std::to_string(id));
  return out;
}

TEST(Preemption, HigherPriorityHeadPreemptsTheCheapestLowerPriorityJobs) {
  Scheduler s = make("v3-8,v3-8");  // two hosts of 8 cores
  ASSERT_TRUE(s.submit(job(1, whole_host(), {}, /*priority=*/1)));
  ASSERT_TRUE(s.submit(job(2, whole_host(), {}, /*priority=*/0)));
  EXPECT_EQ("1:v3-8@0 2:v3-8@1", describe(s.schedule(kT0)));
  ASSERT_TRUE(s.submit(job(3, whole_host(), {}, /*priority=*/5)));
  EXPECT_EQ("", describe(s.schedule(kT0 + seconds(1))));
  // Job 2 has the lower priority of the two.
  EXPECT_EQ("3 preempts 2", victims(s.preempt(kT0 + seconds(1))));
  EXPECT_TRUE(s.preempting(2));
  EXPECT_FALSE(s.preempting(1));
  // While job 2 checkpoints nothing more is preempted, and nothing else
  // takes its cores.
  ASSERT_TRUE(s.submit(job(4, single_core(), seconds(1), /*priority=*/0)));
  EXPECT_EQ("", describe(s.schedule(kT0 + seconds(2))));
  EXPECT_EQ("none", victims(s.preempt(kT0 + seconds(2))));
  // It stops and is requeued; the preemptor starts on its host.
  s.finish(2);
  JobRequest again = job(2, whole_host(), {}, 0);
  again.preempted = true;
  ASSERT_TRUE(s.submit(again));
  EXPECT_EQ("3:v3-8@1", describe(s.schedule(kT0 + seconds(3))));
  EXPECT_EQ("Preempted#1", waiting(s, 2));
  EXPECT_EQ("Resources#2", waiting(s, 4));
}

TEST(Preemption, NeverEqualOrHigherPriorityNorNonPreemptible) {
  Scheduler s = make("v3-8,v3-8");
  ASSERT_TRUE(s.submit(job(1, whole_host(), {}, /*priority=*/5)));
  JobRequest fixed = job(2, whole_host(), {}, /*priority=*/0);
  fixed.preemptible = false;
  ASSERT_TRUE(s.submit(fixed));
  EXPECT_EQ("1:v3-8@0 2:v3-8@1", describe(s.schedule(kT0)));
  ASSERT_TRUE(s.submit(job(3, whole_host(), {}, /*priority=*/5)));
  EXPECT_EQ("", describe(s.schedule(kT0)));
  EXPECT_EQ("none", victims(s.preempt(kT0)));
}

TEST(Preemption, FewestVictimsThenMostRecentlyStarted) {
  Scheduler s = make("v3-8,v3-8");
  // Host 0: eight single cores; host 1: one whole-host job started later.
  for (JobId id = 1; id <= 8; ++id) ASSERT_TRUE(s.submit(job(id, single_core(), {}, 0)));
  EXPECT_EQ(8u, s.schedule(kT0).size());
  ASSERT_TRUE(s.submit(job(9, whole_host(), {}, 0)));
  EXPECT_EQ("9:v3-8@1", describe(s.schedule(kT0 + seconds(5))));
  ASSERT_TRUE(s.submit(job(10, whole_host(), {}, 3)));
  s.schedule(kT0 + seconds(6));
  EXPECT_EQ("10 preempts 9", victims(s.preempt(kT0 + seconds(6))));

  // A single core: of the equally cheap one-core victims, the newest.
  Scheduler t = make("v3-8");
  for (JobId id = 1; id <= 8; ++id) {
    ASSERT_TRUE(t.submit(job(id, single_core(), {}, 0)));
    t.schedule(kT0 + seconds(id));
  }
  ASSERT_TRUE(t.submit(job(20, single_core(), {}, 1)));
  t.schedule(kT0 + seconds(10));
  EXPECT_EQ("20 preempts 8", victims(t.preempt(kT0 + seconds(10))));
}

TEST(Preemption, NotWhenTheReservationStartsSoon) {
  base::Result<PoolLayout> layout = parse_pool("v3-8");
  SchedulerOptions options;
  options.preemption_min_wait = minutes(1);
  Scheduler s(std::move(*layout), options);
  ASSERT_TRUE(s.submit(job(1, whole_host(), seconds(30), 0)));
  s.schedule(kT0);
  ASSERT_TRUE(s.submit(job(2, whole_host(), {}, 4)));
  s.schedule(kT0);
  // Job 1 ends within the minute: waiting is cheaper than a checkpoint.
  EXPECT_EQ("none", victims(s.preempt(kT0)));
  Scheduler u = make("v3-8");
  ASSERT_TRUE(u.submit(job(1, whole_host(), minutes(10), 0)));
  u.schedule(kT0);
  ASSERT_TRUE(u.submit(job(2, whole_host(), {}, 4)));
  u.schedule(kT0);
  EXPECT_EQ("2 preempts 1", victims(u.preempt(kT0)));
}

TEST(Preemption, ChooseVictimsPrefersLowerPriorityOverFewerCores) {
  std::map<std::int64_t, RunningJobInfo> running = {{1, {1, 3, true, false, 10, 1}},
                                                    {2, {2, 1, true, false, 5, 8}}};
  auto lookup = [&](std::int64_t id) -> std::optional<RunningJobInfo> {
    auto it = running.find(id);
    return it == running.end() ? std::nullopt : std::optional(it->second);
  };
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

}  // namespace
}  // namespace tpujobs::scheduler
