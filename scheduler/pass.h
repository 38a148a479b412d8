// The one placement policy (DESIGN §1, §4, §5, §9): a pure function from a
// snapshot of one scheduling pass to what the pass decides. The scheduler
// leader (service/scheduler_leader_pass.cc) calls it over the tables, a
// cluster's and a standalone's alike, and applies its plan; the policy's
// tests drive it over a pool in memory (tests/scheduler/pass_driver.h).
//
// Hosts are given in pool order, grouped by agent. A *run* is a maximal range
// of consecutive hosts of one agent and one generation.
//
// Placement is all-or-nothing. A request gets one of:
//  - kSingleCore: one free core (core k when pinned_core = k). Best fit: the
//    busy host with the fewest free cores wins; an idle host is broken only
//    when no busy one has room, and then the one whose free aligned block is
//    smallest, so whole hosts stay free for big jobs.
//  - kHost: every core of one fully free host.
//  - kSlice of n hosts: every core of n consecutive, fully free hosts of one
//    run, buddy-aligned inside it: [first + k*n, first + (k+1)*n). Of the
//    blocks that fit, the one breaking the smallest free aligned block, then
//    the first. When no run has such a block, the hosts of its shape that are
//    in the pool (their agent is not lost), in pool order, are cut into blocks
//    of n from the first; a block over two or more agents whose hosts are all
//    usable and free fits, the one over the fewest agents first. Its replicas
//    then run on the agents that own the hosts.
//  - kCpu: a cpu slot of an agent, the one with the most slots left.
// A host takes new work only when `usable` (healthy, its agent alive) and
// `punctual` (its agent heartbeats on time); a job requeued after a failure
// (`heard_after`) only on hosts whose agent was heard from since.
//
// Order: higher priority first, then the tenant's higher fair-share factor
// (scheduler/fair_share.h), then lower order, then lower id. The pass walks
// the waiting jobs in that order and starts every one that fits. The first
// that does not fit (the *head*) gets a reservation: the place where it can
// start earliest, judged by the running jobs' expected ends (unknown: never;
// among equal places the one with the fewest busy cores). A later job starts
// ("backfill") only when it fits now and
//   - does not touch the reserved cores, or
//   - the reserved start is known and the job's own timeout ends by then.
// So no job ever delays the head's reserved start. Jobs held back by quota,
// or that cannot fit the usable hosts even idle, never become head.
//
// Preemption (scheduler/preemption.h): the head may preempt running jobs of
// strictly lower base priority that are preemptible, on the blocks of one run
// where it fits, unless its reserved start is known and within
// options.preemption_min_wait; never new victims on a host that does not
// take its work now (a late agent's), and none yet when the cheapest are on
// a host not heard from since the head's own failure (PlaceStart::kSoon).
// Victims are reported; the caller stops them at
// a checkpoint and reports them `preempting` (expected to end at once) in
// later passes, when nothing more is preempted for that place.
//
// Pending reasons, judged on the state after the pass's placements:
// Quota (the tenant's cores plus the job's exceed its cap), HostUnhealthy
// (cannot fit the usable hosts even idle, or its spec does not resolve),
// Priority (fits the free cores now, held back by the head's reservation),
// Resources otherwise; a job requeued by a preemption reads Preempted for
// Resources or Priority. Queue positions count the jobs left waiting, in
// order, from 1. Estimated starts are planned for the first
// options.estimate_horizon waiting jobs: each takes its earliest place given
// the running jobs' ends and the planned jobs before it (as Slurm's backfill
// plans bf_max_job_test jobs); nullopt when unknown.
//
// Before placement each job's start_by and dependencies are judged
// (scheduler/dependencies.h): a passed deadline or a dependency that can never
// be met ends the job (`unstartable`); a dependency still waiting holds it
// outside the queue (`held`).
//
// Time is passed in; there are no clocks, no I/O and no globals.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/job_state.h"
#include "scheduler/dependencies.h"
#include "scheduler/generation.h"
#include "scheduler/pool.h"
#include "scheduler/request.h"

namespace tpujobs::scheduler {

using PassTime = base::Clock::wall_time_point;

enum class PendingReason {
  kNone,           // not waiting
  kResources,      // not enough free cores of the right shape
  kPriority,       // fits now, but would delay a higher-priority job's reservation
  kHostUnhealthy,  // cannot fit on the usable hosts even if they were idle
  kQuota,          // the tenant's running jobs already use its core quota
  kPreempted,      // was preempted by a higher-priority job; waits to resume
  kDependency,     // a job it depends on has not ended yet (never queued)
};

// "None", "Resources", "Priority", "HostUnhealthy", "Quota", "Preempted",
// "Dependency".
std::string_view pending_reason_name(PendingReason reason);

struct CoreRef {
  int host;
  int core;
  friend bool operator==(const CoreRef&, const CoreRef&) = default;
};

struct PassAgent {
  std::string name;
  int cpu_slots = 0;  // cpu jobs it may still start
  bool alive = true;  // false: listed only because hosts name it (lost, draining)
  friend bool operator==(const PassAgent&, const PassAgent&) = default;
};

struct PassHost {
  int agent = 0;  // index into PassSnapshot::agents
  Generation generation = Generation::kV3;
  bool usable = true;                  // healthy, and its agent alive
  bool punctual = true;                // its agent heartbeats on time
  bool in_pool = true;                 // its agent is not lost: part of the pool's topology
  std::optional<PassTime> heard_at{};  // its agent's last heartbeat
  std::vector<JobId> cores;            // per core: the job holding it, 0 when free
};

struct PassTenant {
  std::string name;
  std::optional<int> max_cores;  // nullopt: no cap
  int used_cores = 0;            // held by its running jobs
  double fair_share = 1.0;       // scheduler/fair_share.h
  friend bool operator==(const PassTenant&, const PassTenant&) = default;
};

// What placement needs of a waiting job, and no more: 88 bytes whatever
// its spec (bench/RESULTS.md).
struct WaitingEntry {
  JobId id = 0;
  std::int64_t order = 0;  // ties broken by it (a submit sequence, or the id)
  int priority = 0;
  int tenant = 0;          // index into PassSnapshot::tenants
  int shape = -1;          // index into PassSnapshot::shapes; -1: its spec does not resolve
  bool preempted = false;  // requeued after a preemption
  // Its time limit, for backfill and estimates (nullopt: runs forever).
  std::optional<std::chrono::milliseconds> timeout{};
  // Requeued after a failure: only hosts whose agent was heard from since.
  std::optional<PassTime> heard_after{};
  // Its start_by deadline (submit time + start_by), while it never started.
  std::optional<PassTime> start_deadline{};
  int dependencies = -1;  // index into PassSnapshot::dependencies; -1: none
  friend bool operator==(const WaitingEntry&, const WaitingEntry&) = default;
};

struct RunningEntry {
  JobId id = 0;
  int priority = 0;
  bool preemptible = true;
  bool preempting = false;                 // asked to stop for a preemptor: ends at once
  std::optional<PassTime> expected_end{};  // start + time limit; nullopt: unknown
  std::int64_t started = 0;                // any monotonic measure of its start
  friend bool operator==(const RunningEntry&, const RunningEntry&) = default;
};

struct PassOptions {
  std::chrono::milliseconds preemption_min_wait{60000};
  int estimate_horizon = 500;
  friend bool operator==(const PassOptions&, const PassOptions&) = default;
};

struct PassSnapshot {
  std::vector<PassAgent> agents;
  std::vector<PassHost> hosts;
  std::vector<PassTenant> tenants;
  std::vector<ResourceRequest> shapes;  // the waiting jobs' requests, deduplicated by the caller
  std::vector<WaitingEntry> waiting;    // any order
  std::vector<RunningEntry> running;    // the jobs holding cores
  std::vector<std::vector<Dependency>> dependencies;
  // The states of the jobs depended on (absent: no such job).
  std::unordered_map<JobId, base::JobState> dependency_states;
  PassTime now{};
  PassOptions options;
};

struct PlannedStart {
  JobId job = 0;
  RequestKind kind = RequestKind::kCpu;
  int agent = 0;               // the first part's agent (cpu: the slot's)
  std::vector<int> hosts;      // ascending; empty for cpu
  std::vector<CoreRef> cores;  // host-major, ascending; empty for cpu
  std::optional<Generation> generation;
  // A slice spanning agents: each agent and how many of `hosts` (in order)
  // it runs. Empty when `agent` runs it all.
  std::vector<std::pair<int, int>> parts;
  std::string accelerator_type;  // "v3-32", "v3-8"; "v3" for a single core; "cpu"
  int rank = 0;                  // 1-based in the pass's order
  friend bool operator==(const PlannedStart&, const PlannedStart&) = default;
};

struct Waiting {
  JobId job = 0;
  std::uint32_t entry = 0;  // its index into PassSnapshot::waiting
  PendingReason reason = PendingReason::kResources;
  int queue_position = 0;  // 1-based among the jobs left waiting
  std::optional<PassTime> estimated_start{};
  // Why, when the reason alone does not say: a text of static storage, so a
  // pass over a long queue allocates nothing per waiting job for it.
  std::string_view detail{};
  friend bool operator==(const Waiting&, const Waiting&) = default;
};

struct PassReservation {
  JobId job = 0;
  std::optional<PassTime> start;  // nullopt: a holder's end is unknown
  std::vector<CoreRef> cores;
  friend bool operator==(const PassReservation&, const PassReservation&) = default;
};

struct Preemption {
  JobId preemptor = 0;
  std::vector<JobId> victims;  // ascending
  friend bool operator==(const Preemption&, const Preemption&) = default;
};

enum class Unstartable { kStartDeadlineExceeded, kDependencyNeverSatisfied };

struct Ended {
  JobId job = 0;
  Unstartable why = Unstartable::kStartDeadlineExceeded;
  std::string detail;
  friend bool operator==(const Ended&, const Ended&) = default;
};

struct Held {
  JobId job = 0;
  std::uint32_t entry = 0;  // its index into PassSnapshot::waiting
  std::string detail;       // scheduler::DependencyCheck::detail
  friend bool operator==(const Held&, const Held&) = default;
};

struct PassPlan {
  std::vector<PlannedStart> starts;  // cpu jobs first, then in order
  std::vector<Waiting> waiting;      // in order
  std::optional<PassReservation> reservation;
  std::optional<Preemption> preemption;
  std::vector<Ended> unstartable;
  std::vector<Held> held;
  // The same snapshot at any later `now` before this time plans this same
  // plan (PassTime::max(): at any later time); the snapshot's own `now`
  // when a later time may change it. Time then changes nothing but the
  // passing of a start_by deadline. It is the snapshot's `now` when the
  // plan starts, ends or preempts jobs, when a running job's end is known
  // (or it is stopping for a preemptor), when the reservation's start or
  // an estimated start is known, and when a waiting job waits for a host
  // heard from after its requeue (heartbeats are not compared: see
  // same_surroundings).
  PassTime holds_until{};
  friend bool operator==(const PassPlan&, const PassPlan&) = default;
};

PassPlan plan_pass(const PassSnapshot& snapshot);

// Whether two snapshots agree in everything a plan reads besides the
// waiting jobs (their entries, shapes and dependency lists, which a caller
// keeping them between passes vouches for) and `now`: the agents, the hosts
// but for their heartbeats, the tenants, the running jobs, the dependency
// states and the options. A caller whose waiting jobs did not change since
// the snapshot of its last plan, with surroundings the same and `now`
// before that plan's holds_until, has that plan again without planning.
bool same_surroundings(const PassSnapshot& a, const PassSnapshot& b);

// False when `shape` cannot fit the given hosts even idle and all usable
// (the service rejects such a request at submit time).
bool can_ever_fit(const std::vector<PassHost>& hosts, const ResourceRequest& shape);

}  // namespace tpujobs::scheduler
