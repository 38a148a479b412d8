// One thread that runs callbacks at given times: long-poll timeouts and
// log-stream ticks, without a thread per waiting client.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace tpujobs::service {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  TimerQueue();
  ~TimerQueue();  // runs nothing more; pending callbacks are dropped

  // Runs `task` on the timer thread at `when` (or soon after). Tasks must be
  // short; a task may schedule further tasks.
  void schedule(Clock::time_point when, std::function<void()> task);
  void schedule_after(std::chrono::milliseconds delay, std::function<void()> task) {
    schedule(Clock::now() + delay, std::move(task));
  }
  void stop();

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tpujobs::service
