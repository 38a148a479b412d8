// Test support, not production: a pool in memory placed by
// scheduler::plan_pass over simulated time, for the policy's tests (the
// property test, the cases ported from the single-process Scheduler's).
//
// It decides nothing. Each pass() builds a PassSnapshot from its state as the
// scheduler leader builds one from the tables (service/scheduler_leader_pass.cc,
// read_pass), calls plan_pass and applies the plan as the leader writes it:
//  - unstartable jobs end CANCELLED;
//  - starts take their cores (and leave the queue: the preempted mark clears);
//  - the preemption's victims are marked as being preempted (the leader's
//    preempted_by), and are reported as `preempting` in later passes;
//  - each waiting job keeps its Waiting answer, each held job its detail.
// Between passes a test changes the state as the agents and users do: jobs
// end, a victim stops at its checkpoint and waits again keeping its place
// (stop_preempted), hosts fail, drain and recover (a job on a failed host is
// released; the test then requeues it, as a retry, or leaves it FAILED).
//
// One agent, "local", owns every host and heartbeats at every pass; it has
// as many cpu slots as jobs. A job is ordered by its first submit, as the
// leader orders by job id. Time is simulated: advance() moves it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/job_state.h"
#include "scheduler/dependencies.h"
#include "scheduler/pass.h"
#include "scheduler/pool.h"
#include "scheduler/request.h"

namespace tpujobs::scheduler {

struct JobSpec {
  JobId id = 0;
  int priority = 0;
  std::string tenant = "team";
  ResourceRequest request;
  std::optional<std::chrono::milliseconds> timeout{};  // its time limit; nullopt: none
  bool preemptible = true;
  std::vector<Dependency> depends_on{};
  std::optional<std::chrono::milliseconds> start_by{};
};

struct DriverJob {
  JobSpec spec;
  std::int64_t order = 0;  // its first submit, kept when it waits again
  base::JobState state = base::JobState::kQueued;
  PassTime submitted{};
  bool ever_started = false;            // start_by and dependencies judged until then
  bool preempted = false;               // waits again after a preemption (Preempted)
  bool preempting = false;              // running, asked to stop for a preemptor
  std::optional<PassTime> heard_after;  // requeued after a host failure
  // While running:
  std::optional<PlannedStart> placement;
  PassTime started{};
  // While queued, from the last pass (a job submitted since has neither):
  std::optional<Waiting> waiting;
  std::optional<std::string> held;  // waits for a dependency
};

class PassDriver {
 public:
  explicit PassDriver(std::string_view pool, PassOptions options = {});
  PassDriver(PoolLayout layout, PassOptions options);

  PassTime now() const { return now_; }
  void advance(std::chrono::milliseconds span) { now_ += span; }

  // Queues a new job. False, changing nothing, when the id is known.
  bool submit(JobSpec spec);
  // One pass at now(): the plan, already applied.
  const PassPlan& pass();
  const PassPlan& last_plan() const { return plan_; }
  // What the next pass() would be given.
  PassSnapshot snapshot() const;

  // A queued or running job ends in `state` (terminal); its cores free.
  // False when it is not queued or running.
  bool end(JobId id, base::JobState state = base::JobState::kSucceeded);
  // A victim stops at its checkpoint and waits again, reading Preempted.
  void stop_preempted(JobId id);
  // kFailed: every running job with a core on the host loses its cores and
  // is returned (ascending), left FAILED until requeue_after_failure().
  std::vector<JobId> set_health(int host, HostHealth health);
  // A job evicted by a host failure waits again, for hosts heard from since.
  void requeue_after_failure(JobId id);

  void set_quota(const std::string& tenant, std::optional<int> max_cores);
  void set_fair_share(const std::string& tenant, double factor);

  const DriverJob* job(JobId id) const;
  const std::map<JobId, DriverJob>& jobs() const { return jobs_; }
  std::optional<JobId> holder(int host, int core) const;
  HostHealth health(int host) const { return health_[host]; }
  const PoolLayout& layout() const { return layout_; }
  int host_count() const { return static_cast<int>(layout_.hosts.size()); }

 private:
  void release(DriverJob& job);
  void apply(const PassPlan& plan);

  PoolLayout layout_;
  PassOptions options_;
  std::vector<HostHealth> health_;
  std::vector<std::vector<JobId>> cores_;  // per host and core: the holder, 0 when free
  std::map<JobId, DriverJob> jobs_;        // every job ever submitted
  std::map<std::string, std::optional<int>> quota_;
  std::map<std::string, double> fair_share_;
  std::int64_t submits_ = 0;
  PassTime now_ = PassTime{} + std::chrono::hours(1);
  PassPlan plan_;
};

}  // namespace tpujobs::scheduler
