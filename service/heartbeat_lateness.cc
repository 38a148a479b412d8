#include "service/heartbeat_lateness.h"

namespace tpujobs::service {

namespace {

std::string milliseconds(HeartbeatLateness::Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

std::optional<std::string> HeartbeatLateness::note(Duration gap, Duration took,
                                                   const std::string& error, TimePoint now) {
  const bool late = !error.empty() || gap > 2 * interval_ || took > 2 * interval_;
  std::optional<std::string> line;
  if (late && !late_) {
    line = "late: sent " + milliseconds(gap) + " after the one before, " +
           (error.empty() ? "answered in " + milliseconds(took) : "failed: " + error);
  } else if (!late && late_) {
    line = "on time again, " + milliseconds(now - on_time_) + " after the last one on time";
  }
  late_ = late;
  if (!late) on_time_ = now;
  return line;
}

}  // namespace tpujobs::service
