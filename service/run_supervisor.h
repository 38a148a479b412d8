// The agent's run supervisor (DESIGN §9): from one read of the jobs placed
// on this agent, which copies to start and which to stop. A pure function;
// the agent reads the rows, applies the plan to its runs and starts their
// threads.
//
// A copy runs while its job is STARTING or RUNNING here under this agent's
// current epoch and the placement it was started for (a slice spanning
// agents: while this agent's part, under its epoch, is listed in the job's
// allocation). A copy whose job moved on (requeued, cancelled, released,
// failed elsewhere, placed again, here or as another slice) stops without
// writing; a cancel or a preemption stops the first
// part only, which closes the collective so the other parts end on that.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/job_repository.h"

namespace tpujobs::service {

// This agent's part of a slice spanning agents (allocation.slice, written by
// the scheduler leader).
struct SliceRole {
  std::int64_t placement = 0;
  int rank = 0;
  int first_host = 0;
  int hosts = 0;
  std::vector<int> hosts_per_rank;
};

// The part of `row`'s slice that `agent` runs under `epoch`; nullopt when
// the job is not a slice spanning agents, or no part is this agent's.
std::optional<SliceRole> slice_role(const db::JobRow& row, const std::string& agent,
                                    std::int64_t epoch);

// Why a copy stops. kPreempted: the leader marked the job preempted_by a
// waiting job of higher priority; it stops at a checkpoint and is requeued.
enum class RunStop { kNone, kUserCancel, kMovedOn, kShutdown, kPreempted };

// A fence no placement has (JobRow::placement is NULL, or a number of the
// placements sequence, or minus an agent epoch: db/migrations/041).
inline constexpr std::int64_t kNoPlacement = std::numeric_limits<std::int64_t>::min();

// What the supervisor knows of a copy the agent runs.
struct RunningCopy {
  std::int64_t epoch = 0;
  std::int64_t placement = kNoPlacement;  // JobRow::placement it was started for
  std::optional<SliceRole> slice;
  // Handed over by the leader in the agent's process since the read being
  // planned began (service/local_agent.h): the read may predate its
  // placement, so the plan neither stops it nor starts another copy.
  bool handed_since_read = false;
  // The reason an earlier look stopped it for (kNone: none): a look names
  // a stopping copy again only with another reason.
  RunStop named = RunStop::kNone;
};

struct StartRun {
  db::JobRow row;
  std::optional<SliceRole> slice;
  // Already cancelled or preempted when first seen: it starts only to
  // write that end (kUserCancel, kPreempted), or kNone.
  RunStop stop = RunStop::kNone;
  std::int64_t preempted_by = 0;
};

struct StopRun {
  std::int64_t job = 0;
  RunStop why = RunStop::kMovedOn;
  std::int64_t preempted_by = 0;  // kPreempted
};

struct SupervisionPlan {
  std::vector<StartRun> start;
  std::vector<StopRun> stop;
  // The slice placements whose part here has ended and that are still
  // listed (never started again; the others are forgotten).
  std::set<std::int64_t> ended_slice_placements;
};

// `placed`: the jobs placed on `agent` (STARTING or RUNNING, any epoch);
// `parts`: the jobs whose spanning slice has a part here; `runs`: the
// copies running now, by job; `ended_slice_placements`: placements whose
// part here has ended.
SupervisionPlan plan_supervision(const std::string& agent, std::int64_t epoch,
                                 const std::vector<db::JobRow>& placed,
                                 const std::vector<db::JobRow>& parts,
                                 const std::map<std::int64_t, RunningCopy>& runs,
                                 const std::set<std::int64_t>& ended_slice_placements);

// How a copy of `row` (with this agent's part of its slice, if any) starts:
// already cancelled or preempted when first seen, it starts only to write
// that end (a part other than the first writes nothing).
StartRun start_of(const db::JobRow& row, std::optional<SliceRole> slice);

// A job an agent that stops leaves behind, with the placement that fences
// its requeue.
struct LeftBehind {
  std::int64_t job = 0;
  std::int64_t fence = 0;
};

// After a clean stop's copies have ended: the jobs still placed on `agent`
// under `epoch` (never started, or whose end could not be written), and the
// slices with a part here under `epoch`. Each is requeued without spending
// a retry: the job did nothing wrong.
std::vector<LeftBehind> left_behind(const std::string& agent, std::int64_t epoch,
                                    const std::vector<db::JobRow>& placed,
                                    const std::vector<db::JobRow>& parts);

}  // namespace tpujobs::service
