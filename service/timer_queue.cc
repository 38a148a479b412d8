#include "service/timer_queue.h"

namespace tpujobs::service {

TimerQueue::TimerQueue(Clock& clock) : clock_(clock), thread_([this] { run(); }) {}

TimerQueue::~TimerQueue() { stop(); }

void TimerQueue::stop() {
  {
    base::MutexLock lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void TimerQueue::schedule(Clock::time_point when, std::function<void()> task) {
  {
    base::MutexLock lock(mutex_);
    if (stopping_) return;
    tasks_.emplace(when, std::move(task));
  }
  wake_.notify_one();
}

void TimerQueue::run() {
  base::MutexLock lock(mutex_);
  while (!stopping_) {
    if (tasks_.empty()) {
      lock.wait(wake_);
      continue;
    }
    auto first = tasks_.begin();
    const Clock::time_point now = clock_.now();
    if (first->first > now) {
      // Waits in the clock's own terms (a fake clock's time points are not
      // steady_clock's, so only the distance to the task is meaningful),
      // until then or until an earlier task is scheduled.
      const Clock::time_point due = first->first;
      clock_.wait_for(lock, wake_, due - now, [this, due]() REQUIRES(mutex_) {
        return stopping_ || tasks_.begin()->first < due;
      });
      continue;
    }
    std::function<void()> task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    task();
    lock.lock();
  }
  tasks_.clear();
}

}  // namespace tpujobs::service
