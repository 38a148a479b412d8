// Where the scheduler leader places waiting jobs on the agents' hosts
// (DESIGN §9). A pure function over a snapshot the leader reads from
// PostgreSQL, so it is tested alone.
//
// Policy: jobs are taken in queue order (priority descending, then id); each
// goes where it fits now, or waits with a reason. The first job that waits
// for resources (the head) gets a reservation, as in scheduler/scheduler.h:
// of the places it could use on healthy hosts, the one that frees earliest
// by the running jobs' expected ends (a job's start plus its time limit; a
// job without one runs forever as far as planning goes; among equal ones,
// the fewest busy cores). A later job may start on the head's reserved
// cores only when its own time limit ends by the reserved start; elsewhere
// it starts whenever it fits ("backfill"). So no job delays the head's
// reserved start. Jobs held back by quota or health never become head. A
// single core
// takes the first free core (or the pinned one) of a usable host; a whole
// host needs a usable host of that device count with every core free; a pod
// slice of N hosts takes an aligned run of N positions of one agent (usable,
// idle hosts of its generation) when one agent has it; otherwise an aligned
// block of N hosts of several agents in the pool's topology: the hosts of
// its shape that belong to alive agents, in agent then position order (a
// lost agent's hosts leave it; a drained or failed host stays, as a hole),
// cut into blocks of N from the first; of the blocks that fit, the one over
// the fewest agents, then the first. Its replicas then run on the agents
// that own the hosts, joined by a collective. A job requeued after a failure
// (requeued_at) goes only to agents heard from since: a retry is not placed
// on an agent killed a moment before, still alive until declared lost.
// cpu jobs take a slot of an alive agent (max_cpu_jobs each), the emptiest.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/pool.h"
#include "scheduler/preemption.h"
#include "scheduler/request.h"
#include "scheduler/scheduler.h"

namespace tpujobs::service {

struct ClusterHost {
  std::string name;
  std::string agent;
  scheduler::Generation generation = scheduler::Generation::kV3;
  bool usable = true;  // its agent is alive and the host healthy
  // Its agent heartbeats on time: jobs are placed only there (an agent just
  // killed is alive until declared lost; a job placed there, or a part of a
  // slice spanning agents, would only wait out its silence).
  bool punctual = true;
  // Its agent is alive or draining: its hosts are part of the pool's
  // topology (a lost agent's hosts leave it; a drained or failed host, or a
  // draining agent's, stays, unusable).
  bool in_pool = true;
  // The agent's last heartbeat (nullopt: unknown).
  std::optional<std::chrono::system_clock::time_point> heard_at{};
  std::vector<std::int64_t> core_job;  // per core: the job holding it, 0 when free
};

struct WaitingJob {
  std::int64_t id = 0;
  std::string tenant;
  scheduler::ResourceRequest request;
  // False when the registered hosts cannot resolve the job's spec (no agent
  // with hosts of its kind): it waits, HostUnhealthy.
  bool resolvable = true;
  // Its time limit: how long it runs at most, for backfill (nullopt: none).
  std::optional<std::chrono::milliseconds> expected_runtime{};
  // When a failure requeued it (an unreachable peer, its agent stopping):
  // it is placed only on hosts whose agent heartbeated after that.
  std::optional<std::chrono::system_clock::time_point> requeued_at{};
};

struct ClusterPlacement {
  std::int64_t job = 0;
  std::string agent;       // the first part's: it writes the job's state and output
  std::vector<int> hosts;  // indexes into the hosts given
  // A slice spanning agents: each agent, in order, and how many of `hosts`
  // (consecutive, from the front) it runs. Empty when `agent` runs it all.
  std::vector<std::pair<std::string, int>> parts;
  std::vector<scheduler::CoreRef> cores;
  std::optional<scheduler::Generation> generation;  // none for cpu jobs
  std::string accelerator_type;
};

struct WaitingReason {
  std::int64_t job = 0;
  scheduler::PendingReason reason = scheduler::PendingReason::kResources;
  int queue_position = 0;  // 1-based among the jobs left waiting
  std::string detail;      // why, when the reason alone does not say
  // The head's reserved start, when the jobs it waits for have time limits.
  std::optional<std::chrono::system_clock::time_point> estimated_start{};
};

// The cores held for the head, and from when (nullopt: not known).
struct Reservation {
  std::int64_t job = 0;
  std::vector<scheduler::CoreRef> cores;
  std::optional<std::chrono::system_clock::time_point> start;
};

struct PlacementPass {
  std::vector<ClusterPlacement> placed;
  std::vector<WaitingReason> waiting;
  std::optional<Reservation> reservation;
};

struct PlacementInput {
  std::vector<ClusterHost> hosts;             // grouped by agent, in each agent's host order
  std::map<std::string, int> free_cpu_slots;  // alive agent -> cpu jobs it may still start
  std::map<std::string, int> quota_left;      // tenant -> cores it may still take (absent: no cap)
  // When the running jobs end at the latest (absent: no time limit).
  std::map<std::int64_t, std::chrono::system_clock::time_point> expected_end;
  std::chrono::system_clock::time_point now{};
};

// Places what fits from `queue` (in order). Updates input's hosts, slots
// and quotas to include what it placed.
PlacementPass place_jobs(PlacementInput& input, const std::vector<WaitingJob>& queue);

// Preemption (scheduler/preemption.h) after a pass: the first job left
// waiting for resources (the head; jobs waiting for quota or health never
// preempt) may preempt running jobs of strictly lower priority that are
// preemptible, on the places of one agent where it would fit (a slice
// spanning agents is not made by preemption). `running(id)` describes the
// job holding cores (nullopt: never a victim). The cluster plans no
// reserved starts, so the head preempts whenever it cannot start.
// Returns the victims (ascending), empty when it preempts none (or waits
// for jobs it preempted before).
struct ClusterPreemption {
  std::int64_t preemptor = 0;
  std::vector<std::int64_t> victims;
};
std::optional<ClusterPreemption> choose_cluster_preemption(
    const PlacementInput& input, const PlacementPass& pass, const std::vector<WaitingJob>& queue,
    const std::map<std::int64_t, int>& priority_of,
    const std::function<std::optional<scheduler::RunningJobInfo>(std::int64_t)>& running);

}  // namespace tpujobs::service
