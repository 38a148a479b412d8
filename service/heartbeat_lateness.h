// When an agent's heartbeats start being late, and when they are on time
// again: the two lines its log gets for a silence the scheduler leader may
// judge it lost on (service/agent.h). A heartbeat is late when it failed,
// went out more than two intervals after the one before (its thread was
// held up), or took more than two intervals to answer (the database was).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace tpujobs::service {

class HeartbeatLateness {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  // `start`: when the agent registered (its first heartbeat was on time).
  HeartbeatLateness(std::chrono::milliseconds interval, TimePoint start)
      : interval_(interval), on_time_(start) {}

  // One heartbeat, sent `gap` after the one before and answered at `now`,
  // `took` after it was sent; `error` is why it failed ("" when it did not).
  // Returns the line to log: at the first late one, and at the first on
  // time after them.
  std::optional<std::string> note(Duration gap, Duration took, const std::string& error,
                                  TimePoint now);

 private:
  const std::chrono::milliseconds interval_;
  TimePoint on_time_;  // the last heartbeat answered on time
  bool late_ = false;
};

}  // namespace tpujobs::service
