// When a job held by its dependencies, or by its start deadline, may go to the
// queue (DESIGN §3 workload fields). Slurm's afterok / afternotok / afterany:
//   - kSucceeded: the job it depends on ended SUCCEEDED;
//   - kFailed: it ended FAILED or CANCELLED (Slurm's afternotok counts
//     every end but a clean exit, a cancel included);
//   - kFinished: it ended, however.
// A job may depend only on jobs submitted before it, so dependencies form no
// cycle. A dependency whose job ended the other way can never be satisfied:
// the held job ends CANCELLED, reason DependencyNeverSatisfied, as in Slurm
// (kill_invalid_depend).
//
// Pure functions: states and times are passed in; no clocks, no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/job_state.h"

namespace tpujobs::scheduler {

enum class DependencyCondition { kSucceeded, kFailed, kFinished };

// "succeeded", "failed", "finished".
std::string_view condition_name(DependencyCondition condition);
// nullopt for any other text.
std::optional<DependencyCondition> parse_condition(std::string_view text);

struct Dependency {
  std::int64_t job = 0;
  DependencyCondition condition = DependencyCondition::kSucceeded;
  friend bool operator==(const Dependency&, const Dependency&) = default;
};

enum class DependencyVerdict {
  kSatisfied,       // every dependency is met: the job may be queued
  kWaiting,         // some job it depends on has not ended yet
  kNeverSatisfied,  // some job it depends on ended the other way (or is gone)
};

// "Satisfied", "Waiting", "NeverSatisfied".
std::string_view verdict_name(DependencyVerdict verdict);

struct DependencyCheck {
  DependencyVerdict verdict = DependencyVerdict::kSatisfied;
  // The dependency that decided a kWaiting or kNeverSatisfied verdict (the
  // first never-satisfiable one, else the first one still waiting).
  std::optional<Dependency> deciding;
  // Why, for a person: "job 12 has not finished (RUNNING); waits for it to
  // succeed", "job 12 ended FAILED; the job needed it to succeed".
  std::string detail;
};

// One dependency against the state of the job it names (nullopt: no such
// job, which never becomes satisfied).
DependencyVerdict judge_dependency(DependencyCondition condition,
                                   std::optional<base::JobState> state);

// All of them: kNeverSatisfied wins over kWaiting, which wins over
// kSatisfied. `state_of` answers the state of a job id (nullopt: unknown).
DependencyCheck check_dependencies(
    const std::vector<Dependency>& dependencies,
    const std::function<std::optional<base::JobState>(std::int64_t)>& state_of);

// True when a job submitted at `submitted` with `start_by` has not started by
// `now` and so must end CANCELLED, reason StartDeadlineExceeded (Cloud TPU
// queued resources' valid_until). No start_by: never.
bool start_deadline_passed(base::Clock::wall_time_point submitted,
                           std::optional<std::chrono::milliseconds> start_by,
                           base::Clock::wall_time_point now);

}  // namespace tpujobs::scheduler
