#include "service/job_lifecycle.h"

#include "service/preemption_text.h"

namespace tpujobs::service::lifecycle {

using db::JobState;
using nlohmann::json;

json error_json(std::string_view type, std::string_view message, std::string_view hint) {
  return {{"type", type}, {"message", message}, {"hint", hint}};
}

std::string error_text(std::string_view type, std::string_view message, std::string_view hint) {
  return error_json(type, message, hint).dump();
}

namespace {

db::Transition make(std::int64_t job, JobStateSet from, JobState to, std::string reason) {
  db::Transition t;
  t.job_id = job;
  t.from = std::move(from);
  t.to = to;
  t.reason = std::move(reason);
  return t;
}

db::Transition ending(std::int64_t job, JobStateSet from, JobState to, std::string reason,
                      std::optional<std::string> error_json) {
  db::Transition t = make(job, std::move(from), to, std::move(reason));
  t.error_json = std::move(error_json);
  t.set_finished_at = true;
  if (to != JobState::kCancelled) {
    t.if_cancel_requested =
        db::Transition::CancelledInstead{"Cancelled by request as it ended (" + t.reason + ")",
                                         error_text("CANCELLED", "the job was cancelled", "")};
  }
  return t;
}

}  // namespace

db::Transition place_on_agent(std::int64_t job, std::string reason, std::string allocation_json,
                              std::string agent, std::int64_t epoch, std::int64_t placement,
                              const std::vector<std::pair<std::string, std::int64_t>>& parts) {
  db::Transition t = make(job, {JobState::kQueued}, JobState::kStarting, std::move(reason));
  t.allocation_json = std::move(allocation_json);
  t.set_started_at = true;
  t.clear_preempted_by = true;
  t.require_alive = parts;
  if (parts.empty()) t.require_alive.emplace_back(agent, epoch);
  t.agent = std::move(agent);
  t.placement_epoch = epoch;
  t.placement = placement;
  // A placement that a database crash undoes is placed again. What follows
  // it commits synchronously (the agent's RUNNING, or, placed started, each
  // write of its copy), and WAL reaches the disk in order, so nothing stored
  // of its run outlives it.
  t.asynchronous_commit = true;
  return t;
}

db::Transition run(std::int64_t job, std::string reason, std::int64_t fence) {
  db::Transition t =
      make(job, {JobState::kStarting, JobState::kRunning}, JobState::kRunning, std::move(reason));
  t.require_placement = fence;
  return t;
}

db::RunningReason running_reason(const std::string& where) {
  return {"Training started on " + where, "Resumed from the checkpoint at step ", " on " + where};
}

std::string running_text(const db::RunningReason& reason, std::optional<std::int64_t> step) {
  if (!step) return reason.started;
  return reason.resumed_before_step + std::to_string(*step) + reason.resumed_after_step;
}

db::Transition place_started(db::Transition placement, const std::string& where) {
  placement.then_running = running_reason(where);
  return placement;
}

db::Transition requeue_elsewhere(std::int64_t job, std::string reason,
                                 std::optional<std::int64_t> fence, bool retry, JobStateSet from) {
  db::Transition t = make(job, std::move(from), JobState::kQueued, std::move(reason));
  t.require_placement = fence;
  t.increment_attempt = retry;
  // A victim marked for a preemption and requeued for this reason instead
  // (its agent lost or stopping first) does not read Preempted.
  t.clear_preempted_by = true;
  t.clear_placement = true;
  t.clear_allocation = true;
  t.set_requeued_at = true;
  return t;
}

db::Transition requeue_unstarted(std::int64_t job, std::string reason, std::int64_t fence) {
  db::Transition t =
      requeue_elsewhere(job, std::move(reason), fence, /*retry=*/false, {JobState::kStarting});
  t.count_unstarted_requeue = true;
  return t;
}

db::Transition preempt(std::int64_t job, std::int64_t preemptor, std::int64_t fence) {
  db::Transition t =
      make(job, {JobState::kRunning}, JobState::kQueued, preempted_reason(preemptor));
  t.detail_json = preempted_detail(preemptor);
  t.preempted_by = preemptor;  // so it still reads Preempted after a restart
  t.require_placement = fence;
  t.clear_placement = true;
  t.clear_allocation = true;
  return t;
}

db::Transition finish(std::int64_t job, JobState to, std::string reason,
                      std::optional<std::string> error_json, std::optional<std::string> result_json,
                      std::int64_t fence) {
  db::Transition t =
      ending(job, {JobState::kRunning}, to, std::move(reason), std::move(error_json));
  t.result_json = std::move(result_json);
  t.require_placement = fence;
  return t;
}

db::Transition cancel_queued(std::int64_t job) {
  return ending(job, {JobState::kQueued}, JobState::kCancelled, "Cancelled by request while queued",
                error_text("CANCELLED", "the job was cancelled before it started", ""));
}

db::Transition cancel_unstartable(std::int64_t job, const std::string& reason,
                                  const std::string& detail, const std::string& hint) {
  const std::string message = reason + ": " + detail;
  json error = error_json("CANCELLED", message, hint);
  error["reason"] = reason;
  return ending(job, {JobState::kQueued}, JobState::kCancelled, message, error.dump());
}

db::Transition reject(std::int64_t job, JobStateSet from, const std::string& where,
                      const std::string& why, std::optional<std::int64_t> fence) {
  db::Transition t =
      ending(job, std::move(from), JobState::kFailed, "Rejected " + where + ": " + why,
             error_text("INTERNAL", why, "resubmit the job against the current pool"));
  t.require_placement = fence;
  return t;
}

db::Transition fail_unavailable(std::int64_t job, const std::string& hint,
                                std::optional<std::int64_t> fence) {
  db::Transition t = ending(job, {JobState::kStarting, JobState::kRunning}, JobState::kFailed,
                            "UNAVAILABLE: failed to connect to all addresses",
                            error_text("UNAVAILABLE", "failed to connect to all addresses", hint));
  t.require_placement = fence;
  t.clear_placement = true;
  t.clear_allocation = true;
  return t;
}

db::Transition cancel_placed(std::int64_t job, std::optional<std::int64_t> fence) {
  db::Transition t =
      ending(job, {JobState::kStarting, JobState::kRunning}, JobState::kCancelled,
             "Cancelled by request; its placement ended (its agent lost or a host failed) first",
             error_text("CANCELLED", "the job was cancelled", ""));
  t.require_placement = fence;
  t.clear_placement = true;
  t.clear_allocation = true;
  return t;
}

db::Transition release_lease(std::int64_t job) {
  db::Transition t = ending(
      job, {JobState::kStarting, JobState::kRunning}, JobState::kFailed, "Lease released",
      error_text("UNAVAILABLE", "the job's lease on its cores expired or was released",
                 "an admin released the cores, or the job stopped heartbeating; resubmit it"));
  // Its copy runs on until its agent looks: nothing it writes after lands
  // (a placement kept after the end is the ending copy's own).
  t.clear_placement = true;
  return t;
}

}  // namespace tpujobs::service::lifecycle
