#include "base/clock.h"

#include <time.h>

#include <thread>

namespace tpujobs::base {
namespace {

class RealClock final : public Clock {
 public:
  time_point now() override { return std::chrono::steady_clock::now(); }
  wall_time_point wall_now() override { return std::chrono::system_clock::now(); }
  void sleep_for(std::chrono::nanoseconds duration) override {
    std::this_thread::sleep_for(duration);
  }
  bool wait_for(MutexLock& lock, std::condition_variable& cv, std::chrono::nanoseconds timeout,
                const std::function<bool()>& done) override {
    return lock.wait_for(cv, timeout, done);
  }
};

}  // namespace

std::chrono::nanoseconds this_thread_cpu_time() {
  timespec used{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
  return std::chrono::seconds(used.tv_sec) + std::chrono::nanoseconds(used.tv_nsec);
}

Clock& real_clock() {
  static RealClock clock;
  return clock;
}

FakeClock::FakeClock(std::chrono::nanoseconds advance_per_read)
    : advance_per_read_(advance_per_read) {}

// Both start at a fixed, non-zero point, so a test's times are the same on
// every run and differ from a default-constructed time_point.
Clock::time_point FakeClock::now() {
  base::MutexLock lock(mutex_);
  elapsed_ += advance_per_read_;
  return time_point{} + std::chrono::hours(1) + elapsed_;
}

Clock::wall_time_point FakeClock::wall_now() {
  base::MutexLock lock(mutex_);
  // 2026-01-01T00:00:00Z
  return wall_time_point{} + std::chrono::seconds(1767225600) +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
}

void FakeClock::sleep_for(std::chrono::nanoseconds duration) { advance(duration); }

bool FakeClock::wait_for(MutexLock&, std::condition_variable&, std::chrono::nanoseconds timeout,
                         const std::function<bool()>& done) {
  if (done()) return true;
  advance(timeout);
  return done();
}

void FakeClock::advance(std::chrono::nanoseconds duration) {
  base::MutexLock lock(mutex_);
  if (duration.count() > 0) elapsed_ += duration;
}

}  // namespace tpujobs::base
