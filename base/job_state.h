// A job's state and its names: the one list, used by the database rows, the
// API's filters and views, and the command-line client.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace tpujobs::base {

// QUEUED -> STARTING -> RUNNING -> SUCCEEDED | FAILED | CANCELLED (DESIGN §5).
enum class JobState { kQueued, kStarting, kRunning, kSucceeded, kFailed, kCancelled };

// Every state's name, in the order of the enum: "QUEUED", "STARTING", ...
inline constexpr std::array<std::string_view, 6> kJobStateNames = {
    "QUEUED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"};

std::string_view to_string(JobState state);
// nullopt when `text` is not exactly one of kJobStateNames.
std::optional<JobState> parse_job_state(std::string_view text);
// SUCCEEDED, FAILED and CANCELLED never change (DESIGN §5).
bool is_terminal(JobState state);

}  // namespace tpujobs::base
