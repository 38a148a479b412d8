#include "executor/worker_pool.h"

#include <algorithm>

#include "executor/denormals.h"

namespace tpujobs::executor {
namespace {
// The pool whose worker_loop runs on this thread, if any.
thread_local const WorkerPool* current_pool = nullptr;
}  // namespace

WorkerPool::WorkerPool(int threads, std::function<void()> on_start) {
  const int count = std::max(1, threads);
  threads_.reserve(count);
  for (int i = 0; i < count; ++i) {
    threads_.emplace_back([this, on_start] {
      if (on_start) on_start();
      worker_loop();
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::run(int count, void (*invoke)(void*, int), void* context) {
  Group group;
  group.invoke = invoke;
  group.context = context;
  group.count = count;
  base::MutexLock lock(mutex_);
  queue_.push_back(&group);
  if (count == 1) {
    work_available_.notify_one();
  } else {
    work_available_.notify_all();
  }
  if (current_pool == this) {
    // A task waiting on its own sub-tasks: help instead of blocking a thread.
    while (group.next < group.count) {
      const int index = group.next++;
      if (group.next == group.count) queue_.erase(std::find(queue_.begin(), queue_.end(), &group));
      execute(group, index);
    }
  }
  lock.wait(group.done, [&] { return group.finished == group.count; });
  if (group.error) std::rethrow_exception(group.error);
}

void WorkerPool::execute(Group& group, int index) {
  mutex_.unlock();
  std::exception_ptr error;
  try {
    group.invoke(group.context, index);
  } catch (...) {
    error = std::current_exception();
  }
  mutex_.lock();
  if (error && !group.error) group.error = error;
  if (++group.finished == group.count) group.done.notify_all();
}

void WorkerPool::worker_loop() {
  current_pool = this;
  // Every task that trains runs here or on a thread inside train(): both
  // flush subnormals, as a TPU does (executor/denormals.h).
  flush_denormals_on_this_thread();
  base::MutexLock lock(mutex_);
  while (true) {
    lock.wait(work_available_, [&]() REQUIRES(mutex_) { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    Group& group = *queue_.front();
    const int index = group.next++;
    if (group.next == group.count) queue_.pop_front();
    execute(group, index);
  }
}

WorkerPool::JobShare::JobShare(WorkerPool& pool) : pool_(pool) {
  base::MutexLock lock(pool_.turns_mutex_);
  if (!pool_.shares_.empty()) {
    work_ = (*std::min_element(
                 pool_.shares_.begin(), pool_.shares_.end(),
                 [](const JobShare* a, const JobShare* b) { return a->work_ < b->work_; }))
                ->work_;
  }
  pool_.shares_.push_back(this);
}

WorkerPool::JobShare::~JobShare() {
  {
    base::MutexLock lock(pool_.turns_mutex_);
    pool_.shares_.erase(std::find(pool_.shares_.begin(), pool_.shares_.end(), this));
  }
  pool_.turn_changed_.notify_all();  // it may have held others back
}

bool WorkerPool::may_begin_turn(const JobShare& share) const {
  if (turns_running_ >= threads()) return false;
  for (const JobShare* other : shares_) {
    if (other->work_ < share.work_) return false;
    if (other->work_ == share.work_ && other->waiting_ != 0 && other->waiting_ < share.waiting_)
      return false;
  }
  return true;
}

WorkerPool::StepTurn::StepTurn(JobShare& share, std::int64_t work) : pool_(&share.pool_) {
  base::MutexLock lock(pool_->turns_mutex_);
  share.waiting_ = pool_->next_ticket_++;
  lock.wait(pool_->turn_changed_,
            [&]() REQUIRES(pool_->turns_mutex_) { return pool_->may_begin_turn(share); });
  share.waiting_ = 0;
  share.work_ += std::max<std::int64_t>(1, work);
  ++pool_->turns_running_;
  // It may release jobs it held back, or the next in line may be free to
  // begin as well.
  pool_->turn_changed_.notify_all();
}

void WorkerPool::StepTurn::end() {
  if (pool_ == nullptr) return;
  {
    base::MutexLock lock(pool_->turns_mutex_);
    --pool_->turns_running_;
  }
  pool_->turn_changed_.notify_all();
  pool_ = nullptr;
}

}  // namespace tpujobs::executor
