#include "base/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tpujobs::base {
namespace {

// What the annotated classes of the project rely on: a MutexLock excludes
// other holders, waits release the mutex, and a timed wait reports whether
// its condition came true.
class Counter {
 public:
  void add() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    ++count_;
    changed_.notify_all();
  }
  bool wait_for_count(int n, std::chrono::milliseconds timeout) EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return lock.wait_for(changed_, timeout, [&]() REQUIRES(mutex_) { return count_ >= n; });
  }
  int count() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return count_;
  }
  bool try_hold() EXCLUDES(mutex_) {
    if (!mutex_.try_lock()) return false;
    mutex_.unlock();
    return true;
  }
  // Holds the mutex until `release` is set, letting go of it in between only
  // through unlock()/lock().
  void hold_while_unlocked_briefly(std::atomic<bool>& holding, std::atomic<bool>& release)
      EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    holding = true;
    while (!release) std::this_thread::yield();
    lock.unlock();
    lock.lock();
    ++count_;
  }

 private:
  Mutex mutex_;
  std::condition_variable changed_;
  int count_ GUARDED_BY(mutex_) = 0;
};

TEST(Mutex, ThreadsAddingUnderTheLockLoseNoIncrement) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) counter.add();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.count(), 40000);
}

TEST(Mutex, AWaitReleasesTheMutexAndWakesOnTheCondition) {
  Counter counter;
  std::thread adder([&] {
    for (int i = 0; i < 3; ++i) counter.add();
  });
  // The adder can only add while this thread waits: the wait let go.
  EXPECT_TRUE(counter.wait_for_count(3, std::chrono::minutes(1)));
  adder.join();
}

TEST(Mutex, ATimedWaitReportsAConditionThatNeverCameTrue) {
  Counter counter;
  EXPECT_FALSE(counter.wait_for_count(1, std::chrono::milliseconds(20)));
}

TEST(Mutex, AHeldMutexCannotBeTakenUntilItsLockEnds) {
  Counter counter;
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] { counter.hold_while_unlocked_briefly(holding, release); });
  while (!holding) std::this_thread::yield();
  EXPECT_FALSE(counter.try_hold());
  release = true;
  holder.join();
  EXPECT_TRUE(counter.try_hold());
  EXPECT_EQ(counter.count(), 1);
}

}  // namespace
}  // namespace tpujobs::base
