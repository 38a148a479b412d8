// One thread that runs callbacks at given times: long-poll timeouts and
// log-stream ticks, without a thread per waiting client.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"

namespace tpujobs::service {

class TimerQueue {
 public:
  using Clock = base::Clock;
  // `clock` must outlive the queue; tasks run when it reads `when` or later.
  explicit TimerQueue(Clock& clock = base::real_clock());
  ~TimerQueue();  // runs nothing more; pending callbacks are dropped

  // Runs `task` on the timer thread at `when` (or soon after). Tasks must be
  // short; a task may schedule further tasks.
  void schedule(Clock::time_point when, std::function<void()> task);
  void schedule_after(std::chrono::milliseconds delay, std::function<void()> task) {
    schedule(clock_.now() + delay, std::move(task));
  }
  void stop();

 private:
  void run();
  Clock& clock_;
  base::Mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::function<void()>> tasks_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tpujobs::service
