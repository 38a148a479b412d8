#include "scheduler/dependencies.h"

namespace tpujobs::scheduler {

std::string_view condition_name(DependencyCondition condition) {
  switch (condition) {
    case DependencyCondition::kSucceeded:
      return "succeeded";
    case DependencyCondition::kFailed:
      return "failed";
    case DependencyCondition::kFinished:
      return "finished";
  }
  return "succeeded";
}

std::optional<DependencyCondition> parse_condition(std::string_view text) {
  for (DependencyCondition c : {DependencyCondition::kSucceeded, DependencyCondition::kFailed,
                                DependencyCondition::kFinished}) {
    if (text == condition_name(c)) return c;
  }
  return std::nullopt;
}

std::string_view verdict_name(DependencyVerdict verdict) {
  switch (verdict) {
    case DependencyVerdict::kSatisfied:
      return "Satisfied";
    case DependencyVerdict::kWaiting:
      return "Waiting";
    case DependencyVerdict::kNeverSatisfied:
      return "NeverSatisfied";
  }
  return "Waiting";
}

DependencyVerdict judge_dependency(DependencyCondition condition,
                                   std::optional<base::JobState> state) {
  if (!state) return DependencyVerdict::kNeverSatisfied;
  if (!base::is_terminal(*state)) return DependencyVerdict::kWaiting;
  const bool succeeded = *state == base::JobState::kSucceeded;
  switch (condition) {
    case DependencyCondition::kSucceeded:
      return succeeded ? DependencyVerdict::kSatisfied : DependencyVerdict::kNeverSatisfied;
    case DependencyCondition::kFailed:
      return succeeded ? DependencyVerdict::kNeverSatisfied : DependencyVerdict::kSatisfied;
    case DependencyCondition::kFinished:
      return DependencyVerdict::kSatisfied;
  }
  return DependencyVerdict::kWaiting;
}

DependencyCheck check_dependencies(
    const std::vector<Dependency>& dependencies,
    const std::function<std::optional<base::JobState>(std::int64_t)>& state_of) {
  DependencyCheck check;
  for (const Dependency& d : dependencies) {
    const std::optional<base::JobState> state = state_of(d.job);
    const DependencyVerdict verdict = judge_dependency(d.condition, state);
    const std::string job = "job " + std::to_string(d.job);
    const std::string wanted =
        d.condition == DependencyCondition::kFinished
            ? "to finish"
            : "to " +
                  std::string(d.condition == DependencyCondition::kSucceeded ? "succeed" : "fail");
    if (verdict == DependencyVerdict::kNeverSatisfied) {
      check.verdict = verdict;
      check.deciding = d;
      check.detail = state ? job + " ended " + std::string(base::to_string(*state)) +
                                 "; the job needed it " + wanted
                           : job + " does not exist; the job needed it " + wanted;
      return check;
    }
    if (verdict == DependencyVerdict::kWaiting && check.verdict == DependencyVerdict::kSatisfied) {
      check.verdict = verdict;
      check.deciding = d;
      check.detail = job + " has not finished (" + std::string(base::to_string(*state)) +
                     "); waits for it " + wanted;
    }
  }
  return check;
}

bool start_deadline_passed(base::Clock::wall_time_point submitted,
                           std::optional<std::chrono::milliseconds> start_by,
                           base::Clock::wall_time_point now) {
  return start_by && now - submitted >= *start_by;
}

}  // namespace tpujobs::scheduler
