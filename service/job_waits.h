// Long-poll waits on jobs (GET /v1/jobs/{id}/wait): each answered once its
// job is terminal or at its deadline. A wait looks again when the job's end
// is announced (wake()), and every poll interval in case no one announces
// it (a job ended by another process's leader, a notification lost).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "service/timer_queue.h"

namespace tpujobs::service {

class JobWaits {
 public:
  // The job's view as a wait answers it (its "state" decides).
  using Read = std::function<base::Result<nlohmann::json>(std::int64_t id, const std::string&)>;
  using Done = std::function<void(base::Result<nlohmann::json>)>;

  // `timers` and `clock` must outlive this; a wait's first read runs on the
  // caller's thread, the others on the timer thread.
  JobWaits(TimerQueue& timers, base::Clock& clock, Read read,
           std::chrono::milliseconds poll = std::chrono::milliseconds(200));

  // Answers `done` with the job's view once it is terminal, or at `deadline`.
  void wait(std::int64_t id, std::string tenant, base::Clock::time_point deadline, Done done);
  // These jobs' states changed (an end was committed): their waits look now.
  void wake(const std::vector<std::int64_t>& ids);
  // The service is stopping: every open wait, and each one begun from now
  // on, is answered kUnavailable at once (a client waits again on the
  // restarted service), and no answer is left holding a connection.
  void close();

 private:
  struct Pending;
  // Reads the job and answers the wait if it is over; a look from the
  // timer reschedules itself, one from wake() leaves that timer as it is.
  void look(const std::shared_ptr<Pending>& pending, bool from_timer);
  void schedule(const std::shared_ptr<Pending>& pending);
  // Ended, gone, unreadable, or past the deadline: answered with `current`.
  bool over(const base::Result<nlohmann::json>& current, base::Clock::time_point deadline) const;

  TimerQueue& timers_;
  base::Clock& clock_;
  const Read read_;
  const std::chrono::milliseconds poll_;
  base::Mutex mutex_;
  std::multimap<std::int64_t, std::shared_ptr<Pending>> pending_ GUARDED_BY(mutex_);
  bool closed_ GUARDED_BY(mutex_) = false;
};

}  // namespace tpujobs::service
