#include "base/job_state.h"

#include <cstddef>

namespace tpujobs::base {

std::string_view to_string(JobState state) {
  return kJobStateNames[static_cast<std::size_t>(state)];
}

std::optional<JobState> parse_job_state(std::string_view text) {
  for (std::size_t i = 0; i < kJobStateNames.size(); ++i) {
    if (kJobStateNames[i] == text) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

bool is_terminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

}  // namespace tpujobs::base
