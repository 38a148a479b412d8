#include "api/fair_lane.h"

#include <algorithm>
#include <utility>

#include "base/thread_priority.h"

namespace tpujobs::api {

FairLane::FairLane(int threads, int nice) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this, nice] {
      // Refused (RLIMIT_NICE, a seccomp profile): the lane runs at the
      // process's priority, which only costs the others some latency.
      if (nice != 0) (void)base::set_this_thread_nice(nice);
      run();
    });
  }
}

FairLane::~FairLane() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void FairLane::post(const std::string& tenant, std::function<void()> work) {
  {
    base::MutexLock lock(mutex_);
    std::deque<std::function<void()>>& mine = queued_[tenant];
    if (mine.empty()) turns_.push_back(tenant);
    mine.push_back(std::move(work));
    ++waiting_;
  }
  ready_.notify_one();
}

std::size_t FairLane::waiting() const {
  base::MutexLock lock(mutex_);
  return waiting_;
}

void FairLane::run() {
  for (;;) {
    std::function<void()> work;
    {
      base::MutexLock lock(mutex_);
      lock.wait(ready_, [this]() REQUIRES(mutex_) { return stopping_ || !turns_.empty(); });
      if (turns_.empty()) return;  // stopping, and nothing is left
      const std::string tenant = std::move(turns_.front());
      turns_.pop_front();
      auto it = queued_.find(tenant);
      work = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) {
        queued_.erase(it);
      } else {
        turns_.push_back(tenant);  // its next item waits for the others' turns
      }
      --waiting_;
    }
    work();
  }
}

}  // namespace tpujobs::api
