// The one source of time. Every part that reads the time or waits takes a
// Clock&, so a test can pass a FakeClock and step time instead of sleeping
// (Envoy's TimeSource). Steady time orders and measures; wall time is only
// for what a person reads (timestamps in logs and views).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>

#include "base/mutex.h"

namespace tpujobs::base {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using wall_time_point = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic: never goes back.
  virtual time_point now() = 0;
  virtual wall_time_point wall_now() = 0;
  // Blocks the calling thread for `duration` of this clock's time.
  virtual void sleep_for(std::chrono::nanoseconds duration) = 0;
  // Blocks on `cv` until done() holds or `timeout` of this clock's time has
  // passed; `lock` is held on entry and exit and released while blocked, as
  // with std::condition_variable::wait_for. Returns done().
  virtual bool wait_for(MutexLock& lock, std::condition_variable& cv,
                        std::chrono::nanoseconds timeout, const std::function<bool()>& done) = 0;
};

// The CPU time the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID):
// a measure of work for metrics and tests, never a time a decision reads.
std::chrono::nanoseconds this_thread_cpu_time();

// std::chrono's steady and system clocks and std::this_thread::sleep_for.
// Stateless; lives for the whole program.
Clock& real_clock();

// A clock that moves only when told to: by advance(), by sleep_for (which
// returns at once, so code that sleeps between attempts runs its whole
// schedule instantly in a test), by a wait_for whose done() is false (it
// moves the clock past the timeout and returns at once), and by
// `advance_per_read` on every now(). Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::nanoseconds advance_per_read = std::chrono::nanoseconds(0));
  time_point now() override;
  wall_time_point wall_now() override;
  void sleep_for(std::chrono::nanoseconds duration) override;
  bool wait_for(MutexLock& lock, std::condition_variable& cv, std::chrono::nanoseconds timeout,
                const std::function<bool()>& done) override;
  void advance(std::chrono::nanoseconds duration);

 private:
  base::Mutex mutex_;
  const std::chrono::nanoseconds advance_per_read_;
  std::chrono::nanoseconds elapsed_ GUARDED_BY(mutex_){0};
};

}  // namespace tpujobs::base
