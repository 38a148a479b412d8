// The queue and placement policy for the emulated TPU pool.
//
// Placement is all-or-nothing. A request gets one of:
//  - kSingleCore: one free core (core k when pinned_core = k). Best fit: the
//    busy host with the fewest free cores wins; an idle host is broken only
//    when no busy one has room, so whole hosts stay free for big jobs.
//  - kHost: every core of one fully free host.
//  - kSlice of n hosts: every core of n consecutive, fully free hosts of one
//    generation, buddy-aligned: the hosts are
//        [run.first_host + k*n, run.first_host + (k+1)*n)
//    for some k >= 0, inside one host run (a maximal range of consecutive
//    hosts of one generation, see scheduler/pool.h). In a v3-64 pool a v3-32
//    slice is hosts 0-3 or 4-7, never 2-5.
//  - kCpu: no core; always starts at the next schedule().
// Only kHealthy hosts receive new work. When several places fit, the one that
// leaves the largest aligned runs of free hosts intact is chosen.
//
// Order: higher priority first, then lower submit_order, then lower id.
// schedule() walks the queue in that order and starts every job that fits.
// The first job that does not fit (the *head*) gets a reservation: the
// cores where it can start earliest, judged by the running jobs'
// expected_runtime (a job without one is assumed to run forever; among equal
// candidates the one with the fewest busy cores wins). A later job may then
// start ("backfill") only when it fits now and
//   - does not touch the reserved cores (resources the head cannot use or
//     does not need), or
//   - the reserved start is known and the job's own expected_runtime ends by
//     then.
// So no job ever delays the head's reserved start. Jobs held back by quota,
// or that cannot fit on the healthy hosts even when idle, never become head.
//
// Fair share (scheduler/fair_share.h): among equal priorities, the job of the
// tenant with the higher fair-share factor goes first (set_fair_share), then
// submit order. The order is thus that of the effective priority
// (priority + factor), with the base priority always deciding first.
//
// Preemption (scheduler/preemption.h): after a pass, preempt() lets the head
// preempt running jobs of strictly lower base priority that are preemptible,
// choosing the cheapest set whose cores, with the free ones, form a place
// where the head fits. Only the head preempts, so the reservation and
// backfill rules above still hold: the victims' cores become the head's
// reservation (they are expected to end at once), and nothing backfills
// onto them. The head does not preempt when its reserved start is known and
// within options.preemption_min_wait (waiting is cheaper than a checkpoint
// and a requeue), nor while jobs it preempted earlier still hold the cores
// of a place where it fits. A victim keeps its cores until the caller
// finish()es it (after its checkpoint) and may submit() it again with
// `preempted` set: it then waits with kPreempted and its old submit order.
//
// Time is passed in; there are no clocks, no I/O and no globals.
//
// @warning Not thread-safe, not even the const methods (pending() fills a
// cache). The service serialises every call with one mutex.
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

struct CoreRef {
  int host;
  int core;
  friend bool operator==(const CoreRef&, const CoreRef&) = default;
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

enum class PendingReason {
  kNone,           // a cpu job, waiting only for the next schedule()
  kResources,      // not enough free cores of the right shape
  kPriority,       // fits now, but would delay a higher-priority job's reservation
  kHostUnhealthy,  // cannot fit on the healthy hosts even if they were idle
  kQuota,          // the tenant's running jobs already use its core quota
  kPreempted,      // was preempted by a higher-priority job; waits to resume
  // Held by the service before the queue, never returned by Scheduler: a
  // job it depends on has not ended yet (scheduler/dependencies.h).
  kDependency,
};

// "None", "Resources", "Priority", "HostUnhealthy", "Quota", "Preempted",
// "Dependency".
std::string_view pending_reason_name(PendingReason reason);

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

// The running jobs the head asks to stop so that it can start (preempt()).
struct Preemption {
  JobId preemptor = 0;
  std::vector<JobId> victims;  // ascending
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

  // A waiting job's reason, position and estimated start; nullopt when the
  // job is not waiting. Computed from the current state and the `now` of the
  // last schedule() (meaningful right after a schedule()). The reason and the
  // position cost O(log queue). The estimated starts are planned in queue
  // order, lazily, only as far as the job asked about, and not at all past
  // the point where no waiting shape can get a known start (say, when every
  // running job's runtime is unknown), nor past the first
  // options.estimate_horizon jobs; the plan is kept until the next change.
  // So the first call after a change costs O(cores + waiting shapes x
  // hosts) to start the plan, plus O(min(jobs ahead, horizon) x hosts);
  // later calls O(log queue) plus whatever the plan has not reached yet.
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

  // After a schedule(): the running jobs the head preempts, now marked as
  // preempting (see the top of this file); nullopt when it preempts none.
  // The caller stops each victim at a checkpoint and then finish()es it.
  // O(places of the head's shape x their cores).
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
  // Requests that place alike; the pass caches "does not fit" per shape.
  struct Shape {
    RequestKind kind;
    std::optional<Generation> generation;
    int devices_per_host;
    int hosts;
    std::optional<int> pinned_core;
    auto operator<=>(const Shape&) const = default;
  };
  struct Tenant {
    std::string name;
    std::optional<int> max_cores;
    int used_cores = 0;
    double fair_share = 1.0;
  };
  struct Job {
    JobRequest request;
    int shape = 0;
    int tenant = 0;
    bool running = false;
    double fair_share = 1.0;  // the tenant's factor its queue entry is keyed by
    bool preempting = false;  // running, asked to stop by preempt()
    // While waiting: the estimated start, valid while `planned` equals the
    // plan's version (see plan_through).
    mutable std::optional<Clock::time_point> estimated_start;
    mutable std::uint64_t planned = 0;
    // While running:
    Placement placement;
    Clock::time_point started;
    Clock::time_point last_heartbeat;
  };
  struct QueueEntry {
    int priority;
    double fair_share;
    std::int64_t submit_order;
    JobId id;
    Job* job;
    bool operator<(const QueueEntry& other) const;
  };
  struct Choice;
  class CoreTimes;
  class Queue;  // the waiting TPU jobs in order, with O(log n) ranks
  struct Plan;  // the estimated starts planned so far since the last change

  int intern_shape(const ResourceRequest& request);
  int intern_tenant(const std::string& tenant);
  bool generation_matches(const Shape& shape, int host) const;
  // Calls visit(first host) for each aligned block of hosts a whole-host or
  // slice shape could take (buddy-aligned inside a host run of its
  // generation, see the top of this file), until visit returns true.
  template <class Visit>
  void for_each_block(const Shape& shape, Visit visit) const;
  bool fits_idle(const Shape& shape, bool healthy_only) const;
  // Where `shape` fits now, avoiding cores set in `avoid` (per host masks;
  // empty = avoid nothing).
  std::optional<Choice> find_free(const Shape& shape,
                                  const std::vector<std::uint32_t>& avoid) const;
  // Where `shape` can start earliest given when each core frees up.
  std::optional<Choice> find_earliest(const Shape& shape, const CoreTimes& times) const;
  int largest_free_block(int host_begin, int host_end, const std::vector<int>& free_prefix) const;
  Placement start(Job& job, Choice choice, Clock::time_point now);
  void release(Job& job);
  // The head's reservation; marks its cores in `reserved` (per host masks).
  Reservation reserve(const Job& head, Clock::time_point now,
                      std::vector<std::uint32_t>& reserved) const;
  CoreTimes core_times(Clock::time_point now) const;
  // Starts a new plan when the state changed since the current one.
  Plan& current_plan() const;
  // Plans estimated starts in queue order until `job` has one (or cannot).
  void plan_through(const Job& job) const;
  void dequeue(Job& job);
  bool over_quota(const Job& job) const;
  QueueEntry entry_of(const Job& job) const;

  Pool pool_;
  SchedulerOptions options_;
  // Per flat core index: when its holder is expected to end (max(): unknown).
  std::vector<Clock::time_point> core_end_;
  std::unordered_map<JobId, Job> jobs_;  // waiting and running; node-stable
  std::unique_ptr<Queue> queue_;         // waiting TPU jobs
  std::set<QueueEntry> cpu_queue_;       // waiting cpu jobs: start at the next pass
  std::vector<int> shape_waiting_;       // waiting jobs per shape
  // Known expected runtimes of the waiting jobs, per shape: a shape whose
  // shortest job cannot end before the head's reserved start cannot backfill.
  std::vector<std::multiset<std::chrono::milliseconds>> shape_runtimes_;
  std::vector<Shape> shapes_;
  std::map<Shape, int> shape_index_;
  std::vector<Tenant> tenants_;
  std::unordered_map<std::string, int> tenant_index_;
  int running_count_ = 0;
  std::optional<Reservation> reservation_;
  Clock::time_point last_pass_{};
  // Any change bumps version_; pending() replans when the plan's lags.
  std::uint64_t version_ = 1;
  mutable std::unique_ptr<Plan> plan_;
};

}  // namespace tpujobs::scheduler
