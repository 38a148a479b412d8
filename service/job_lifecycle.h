// The job lifecycle (DESIGN §5): every change of a job's state tpujobs
// makes, by name. The API service, the scheduler leader and the agents
// build their state writes here and nowhere else; the job
// repository applies each as one conditional update that records a
// job_events row (a job in none of the `from` states is left as it is).
//
//   QUEUED --place_on_agent--> STARTING --run--> RUNNING
//   QUEUED --place_started--> STARTING, RUNNING  (one statement, both events)
//   STARTING|RUNNING --requeue*--> QUEUED       (resumes from its checkpoint)
//   QUEUED|STARTING|RUNNING --finish / cancel* / reject / fail*--> terminal
//
// Terminal states (SUCCEEDED, FAILED, CANCELLED) are never a `from`: they
// never change. A cancel answered 202 is honoured: every end other than
// CANCELLED ends a job whose cancel is stored CANCELLED instead
// (Transition::if_cancel_requested), whichever end its agent or the leader
// decided from a read before the request. A transition about a placed job
// is fenced by its placement (JobRow::placement, DESIGN §9): it lands only
// while the job is still placed as the writer knew it, not merely on the same
// agent again.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/job_repository.h"

namespace tpujobs::service::lifecycle {

using JobStateSet = std::vector<db::JobState>;

// A job's `error` member: {type, message, hint} (DESIGN §5), and as text.
nlohmann::json error_json(std::string_view type, std::string_view message, std::string_view hint);
std::string error_text(std::string_view type, std::string_view message, std::string_view hint);

// QUEUED -> STARTING: the scheduler leader places the job on
// `agent`, whose registration is `epoch`, as placement number `placement`
// (ClusterRepository::reserve_placements); the pending reason is cleared. It
// lands only while that agent is alive under that epoch (not draining, not
// lost), or for a slice spanning agents every agent of `parts` (agent,
// epoch) is. It is committed without waiting for the disk: a database
// crash may undo it, and the job is then placed again.
db::Transition place_on_agent(std::int64_t job, std::string reason, std::string allocation_json,
                              std::string agent, std::int64_t epoch, std::int64_t placement,
                              const std::vector<std::pair<std::string, std::int64_t>>& parts = {});
// STARTING|RUNNING -> RUNNING, fenced by its placement (an agent that
// restarts its own copy finds it RUNNING already).
db::Transition run(std::int64_t job, std::string reason, std::int64_t fence);

// The reason of a job's RUNNING on `where` ("agent a", "agents of its
// slice"): whether it resumed, and from which step.
db::RunningReason running_reason(const std::string& where);
std::string running_text(const db::RunningReason& reason, std::optional<std::int64_t> step);

// QUEUED -> STARTING -> RUNNING: `placement` (place_on_agent, a job whose
// agent is in the leader's process and has promised to start it as it
// commits: service/local_agent.h) goes on to RUNNING in the same statement
// with running_reason(`where`)'s text for the newest checkpoint. It commits
// without waiting for the disk, as every placement does (a synchronous commit
// here was 0.5-1.3 ms of submit -> RUNNING: bench/RESULTS.md, session 45).
// A database crash may undo it, RUNNING included, while its copy trains.
// Every write of that copy commits synchronously, and WAL reaches the disk
// in order, so none outlives the placement; the agent's next look stops the
// copy (run_supervisor.h), and the job is placed again (docs/reliability.md).
db::Transition place_started(db::Transition placement, const std::string& where);

// `from` -> QUEUED: taken off its placement (its agent lost
// or stopping, its host failed, a peer of its slice unreachable), to resume
// from its checkpoint wherever the leader places it next; `retry` counts an
// attempt against max_retries. Fenced by the placement the decision was
// made about. Sets requeued_at: the leader places it next only on
// agents that heartbeated since (scheduler/pass.h). Clears a preemption's
// mark: the job was not requeued for that.
db::Transition requeue_elsewhere(std::int64_t job, std::string reason,
                                 std::optional<std::int64_t> fence, bool retry, JobStateSet from);

// STARTING -> QUEUED: its agent was lost before the job
// started there, so it never ran; requeued as requeue_elsewhere does, with
// no retry spent, and counted in unstarted_requeues (the caller allows a
// few: kFreeUnstartedRequeues).
db::Transition requeue_unstarted(std::int64_t job, std::string reason, std::int64_t fence);
inline constexpr int kFreeUnstartedRequeues = 3;

// RUNNING -> QUEUED: stopped at a checkpoint for `preemptor`, a job of
// higher priority (scheduler/preemption.h), and taken off its placement.
// Not an attempt of its own; the job keeps reading Preempted (preempted_by)
// until it is placed again. Fenced by its placement.
db::Transition preempt(std::int64_t job, std::int64_t preemptor, std::int64_t fence);
// RUNNING -> SUCCEEDED | FAILED | CANCELLED: the end of the run an agent
// started, fenced by its placement. `error_json` / `result_json` as
// the job's view shows them.
db::Transition finish(std::int64_t job, db::JobState to, std::string reason,
                      std::optional<std::string> error_json, std::optional<std::string> result_json,
                      std::int64_t fence);
// QUEUED -> CANCELLED: a cancel by request before the job started.
db::Transition cancel_queued(std::int64_t job);
// QUEUED -> CANCELLED: a job that can never start (its dependencies can
// never be met, or its start_by passed); `reason` is the job's
// `error.reason` (DependencyNeverSatisfied, StartDeadlineExceeded).
db::Transition cancel_unstartable(std::int64_t job, const std::string& reason,
                                  const std::string& detail, const std::string& hint);
// -> FAILED, INTERNAL: its stored spec no longer parses or resolves on this
// pool (read back after a restart, or by an agent).
db::Transition reject(std::int64_t job, JobStateSet from, const std::string& where,
                      const std::string& why, std::optional<std::int64_t> fence = std::nullopt);
// STARTING|RUNNING -> FAILED, UNAVAILABLE: its placement is gone and no
// retry is left (`hint` says why).
db::Transition fail_unavailable(std::int64_t job, const std::string& hint,
                                std::optional<std::int64_t> fence);
// STARTING|RUNNING -> CANCELLED: a job whose cancel was accepted (202)
// while its placement went away (its agent lost, its host failed) before
// the agent could stop it. Fenced by that placement.
db::Transition cancel_placed(std::int64_t job, std::optional<std::int64_t> fence);
// STARTING|RUNNING -> FAILED, UNAVAILABLE: an admin released its cores.
db::Transition release_lease(std::int64_t job);

}  // namespace tpujobs::service::lifecycle
