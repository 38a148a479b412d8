// One copy of a job running on an agent: shared by the agent's supervision
// (agent.cc) and the run itself (agent_run.cc). Only those two include it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "api/job_spec.h"
#include "db/job_output_repository.h"
#include "db/job_rows.h"
#include "executor/executor.h"
#include "service/agent.h"
#include "service/run_supervisor.h"

namespace tpujobs::service {

// One copy of a job running here, under the agent's epoch and the
// placement it was given.
struct Agent::Run {
  db::JobRow row;
  std::int64_t epoch = 0;
  std::atomic<bool> cancel{false};
  std::atomic<bool> checkpoint_on_cancel{false};
  std::atomic<StopReason> stop_reason{StopReason::kNone};
  std::atomic<std::int64_t> preempted_by{0};  // kPreempted: by which job
  // The thread that trains it, once its start is written (Agent::start_run).
  std::thread thread;
  // What its start resolved, for that thread.
  std::optional<api::JobSpec> spec;
  std::optional<executor::Checkpoint> resume;
  // The runner thread's own.
  std::int64_t next_log_seq = 1;
  std::int64_t next_metric_seq = 1;
  std::int64_t skip_metric_points = 0;
  std::map<std::string, double> latest_metrics;
  std::optional<executor::Progress> progress;
  // Where it resumes, when read with the work that started it (or with
  // its placement, handed over).
  std::optional<db::JobOutputRepository::ResumePoint> resume_point;
  // Handed over by the leader in this process (Agent::take_placed) when
  // this many looks at the work had begun: the last of them may have read
  // the work before the placement committed, so it neither stops the copy
  // for a job it did not see nor starts another. None: started by a look.
  std::optional<std::uint64_t> handed_after;
  // Its RUNNING was committed with its placement (lifecycle::place_started):
  // its start writes none.
  bool running_written = false;
  // The reason the last look that stopped it gave (kNone: none); under the
  // agent's mutex.
  StopReason named = StopReason::kNone;
  // Its end is being written (Agent::write_viewed, which hands the view the
  // write answered to this process's API service, or makes it forget the
  // job's view when the write does not apply); under the agent's mutex. A
  // look that finds the job gone from its work before the copy is
  // forgotten leaves that view alone: it is the finished one.
  bool ending = false;
  // A look or a rejoin found its job moved on (whatever reason it was
  // stopped for first): no write of this copy lands; under the agent's mutex.
  bool moved_on = false;
  // A slice spanning agents: this agent's part. A part other than the
  // first (rank > 0) writes nothing about the job.
  std::optional<SliceRole> slice;
  bool peer() const { return slice && slice->rank > 0; }
  // The fence of every write of this copy: its row's placement
  // (JobRow::placement; kNoPlacement when the row has none, which no write
  // matches).
  std::int64_t fence() const { return row.placement.value_or(kNoPlacement); }

  // Asks the copy to stop at its next step boundary; the first reason given
  // is the one it ends with. A shutdown or a preemption (`by`: the
  // preemptor) stops at a checkpoint.
  void stop(StopReason why, std::int64_t by = 0) {
    // Set before the reason is published; read only when it is kPreempted.
    if (why == StopReason::kPreempted && stop_reason == StopReason::kNone) preempted_by = by;
    StopReason none = StopReason::kNone;
    const bool first = stop_reason.compare_exchange_strong(none, why);
    if (why == StopReason::kPreempted && !first) return;
    if (why == StopReason::kShutdown || why == StopReason::kPreempted) checkpoint_on_cancel = true;
    cancel = true;
  }
};

}  // namespace tpujobs::service
