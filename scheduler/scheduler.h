// The in-memory pool and queue of a single process: which jobs wait, which
// hold which cores, their leases, quotas and fair-share factors. Every
// decision (placement, reservation and backfill, preemption, pending
// reasons and estimated starts) is scheduler::plan_pass's (scheduler/pass.h),
// over a snapshot of this state; this class keeps the state and applies the
// plan.
//
// Time is passed in; there are no clocks, no I/O and no globals.
//
// @warning Not thread-safe. The service serialises every call with one mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "scheduler/generation.h"
#include "scheduler/pass.h"
#include "scheduler/pool.h"
#include "scheduler/request.h"

namespace tpujobs::scheduler {

// Time points only: the scheduler never reads a clock (see the top of this file).
using Clock = base::Clock;

struct JobRequest {
  JobId id = 0;
  int priority = 0;               // higher runs first
  std::int64_t submit_order = 0;  // ties broken by it, ascending (a monotonic sequence)
  std::string tenant;
  ResourceRequest request;
  // Used for backfill and estimated starts; nullopt = unknown (runs forever
  // as far as planning is concerned).
  std::optional<std::chrono::milliseconds> expected_runtime;
  // False: never preempted (the spec's "preemptible").
  bool preemptible = true;
  // Requeued after a preemption: waits with kPreempted rather than
  // kResources or kPriority.
  bool preempted = false;
};

struct Placement {
  JobId job = 0;
  RequestKind kind = RequestKind::kCpu;
  Generation generation = Generation::kV3;  // meaningless for kCpu
  std::vector<int> hosts;                   // ascending; empty for kCpu
  std::vector<CoreRef> cores;               // host-major, ascending; empty for kCpu
  // "v3-32" for a slice or a whole host (v3-8), "v3" for a single core, "cpu" for kCpu.
  std::string accelerator_type;
};

struct PendingInfo {
  PendingReason reason = PendingReason::kNone;
  int queue_position = 0;  // 1-based among waiting TPU jobs, in scheduling order; 0 for cpu
  // When the job would start if every running and earlier job took exactly
  // its expected_runtime; nullopt when an unknown runtime (or quota, or an
  // unhealthy pool) makes that impossible to say.
  std::optional<Clock::time_point> estimated_start;
};

// What the head of the queue is guaranteed (see the top of this file).
struct Reservation {
  JobId job = 0;
  std::optional<Clock::time_point> start;  // nullopt: a holder's runtime is unknown
  std::vector<CoreRef> cores;
};

struct SchedulerOptions {
  std::chrono::milliseconds lease_timeout{30000};
  // The head preempts only when its reserved start is unknown or later than
  // this after the pass (see the top of this file).
  std::chrono::milliseconds preemption_min_wait{60000};
  // Estimated starts are planned for this many waiting jobs at the head of
  // the queue; the rest read "unknown". As Slurm's backfill looks at
  // bf_max_job_test jobs: it bounds the planning a change costs when every
  // job states a runtime.
  int estimate_horizon = 500;
};

class Scheduler {
 public:
  Scheduler(PoolLayout layout, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Enqueues a job (also used to requeue one after a host failure). Returns
  // false, changing nothing, when the id is already queued or running. A
  // request that can never fit (see can_ever_fit) waits with kHostUnhealthy;
  // the service rejects those before submitting.
  bool submit(JobRequest job);

  // Starts every job that may start now (see the top of this file) and
  // returns their placements in start order (cpu jobs first). Leases start
  // at `now`. Stops walking the queue once nothing more can start, so a pass
  // over a full pool costs little whatever the queue length.
  std::vector<Placement> schedule(Clock::time_point now);

  // Dequeues a waiting job or releases a running one. False if unknown.
  bool cancel(JobId job);
  // Releases the cores of a job that ended (or dequeues it). Unknown ids are
  // ignored.
  void finish(JobId job);

  // A waiting job's reason, position and estimated start, as the last
  // schedule() planned them (scheduler/pass.h); nullopt when the job is not
  // waiting. A job submitted since reads Resources with no position until the
  // next schedule() (a cpu job: None). O(1).
  std::optional<PendingInfo> pending(JobId job) const;
  // A running job's placement; nullopt when the job is not running.
  std::optional<Placement> placement(JobId job) const;
  // The head's reservation from the last schedule(), if a job is blocked.
  std::optional<Reservation> reservation() const;

  // Failing a host returns the running jobs that lost cores on it, in
  // ascending id order; they are released everywhere and forgotten (the
  // caller fails or resubmits them). Draining keeps running jobs but places
  // nothing new; kHealthy recovers. Out-of-range hosts: no-op, empty result.
  std::vector<JobId> set_host_health(int host, HostHealth health);
  std::optional<int> find_host(std::string_view name) const;

  // Renews a running job's lease. Ignored for jobs that are not running.
  void heartbeat(JobId job, Clock::time_point now);
  // Releases and returns (ascending) the running jobs whose last heartbeat
  // (or start) is more than lease_timeout before `now`.
  std::vector<JobId> reclaim_expired(Clock::time_point now);
  // Admin: releases a running job's cores. False if the job is not running.
  bool force_release(JobId job);

  // Caps the TPU cores a tenant's running jobs may hold together; nullopt
  // removes the cap. A job that would exceed it waits with kQuota.
  void set_tenant_quota(std::string tenant, std::optional<int> max_cores);

  // Sets a tenant's fair-share factor (scheduler/fair_share.h; 1 until
  // set), reordering its waiting jobs. O(its waiting jobs x log queue) when
  // the factor changes, O(log tenants) when not.
  void set_fair_share(const std::string& tenant, double factor);
  double fair_share(const std::string& tenant) const;

  // After a schedule() and before any other change: the running jobs its
  // head preempts (PassPlan::preemption), now marked as preempting; nullopt
  // when it preempts none. The caller stops each victim at a checkpoint and
  // then finish()es it.
  std::optional<Preemption> preempt(Clock::time_point now);
  // A running job asked to stop by preempt() and not finished yet.
  bool preempting(JobId job) const;

  // Everything GET /v1/pool shows.
  struct HostView {
    int index;
    std::string name;
    Generation generation;
    HostHealth health;
    std::vector<std::optional<JobId>> cores;  // the job on each core, or none
  };
  struct PoolView {
    std::vector<HostView> hosts;
    int total_cores;
    int used_cores;
    int healthy_cores;  // cores on kHealthy hosts
    int queued_jobs;
    int running_jobs;  // including cpu jobs
  };
  PoolView view() const;

  // False when the pool could not hold `request` even idle and all healthy.
  bool can_ever_fit(const ResourceRequest& request) const;

  // The waiting jobs: cpu jobs, then the others in scheduling order.
  std::vector<JobId> queue() const;

 private:
  // Requests that place alike share one entry of the pass's shapes.
  struct Shape {
    RequestKind kind;
    std::optional<Generation> generation;
    int devices_per_host;
    int hosts;
    std::optional<int> pinned_core;
    auto operator<=>(const Shape&) const = default;
  };
  struct Job {
    JobRequest request;
    int shape = 0;
    int tenant = 0;
    bool running = false;
    bool preempting = false;  // running, asked to stop by preempt()
    // While waiting: what the pass numbered pending_pass said of it.
    PendingInfo pending;
    std::uint64_t pending_pass = 0;
    // While running:
    Placement placement;
    Clock::time_point started;
    Clock::time_point last_heartbeat;
  };

  int intern_shape(const ResourceRequest& request);
  int intern_tenant(const std::string& tenant);
  Placement start(Job& job, const PlannedStart& planned, Clock::time_point now);
  void release(Job& job);
  void forget(JobId id);
  // Entries of snapshot_.waiting / snapshot_.running, kept in place with a
  // slot per job (removal moves the last entry into the hole).
  void add_waiting(const Job& job);
  void remove_waiting(JobId id);
  void remove_running(JobId id);

  Pool pool_;
  SchedulerOptions options_;
  // The next pass's input, kept current by every change so a pass does not
  // rebuild it: hosts mirror pool_, tenants_ and shapes_ are its indexes.
  PassSnapshot snapshot_;
  std::unordered_map<JobId, std::size_t> waiting_slot_;
  std::unordered_map<JobId, std::size_t> running_slot_;
  std::unordered_map<JobId, Job> jobs_;                // waiting and running; node-stable
  std::map<Shape, int> shape_index_;                   // into snapshot_.shapes
  std::unordered_map<std::string, int> tenant_index_;  // into snapshot_.tenants
  int running_count_ = 0;
  // From the last schedule():
  std::uint64_t passes_ = 0;
  std::optional<Reservation> reservation_;
  std::optional<Preemption> preemption_;
  Clock::time_point last_pass_{};
  // Any change bumps version_; preempt() acts only on a pass still current.
  std::uint64_t version_ = 1;
  std::uint64_t pass_version_ = 0;
};

}  // namespace tpujobs::scheduler
