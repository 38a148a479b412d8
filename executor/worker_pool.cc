#include "executor/worker_pool.h"

#include <algorithm>

#include "executor/denormals.h"

namespace tpujobs::executor {
namespace {
// The pool whose worker_loop runs on this thread, if any.
thread_local const WorkerPool* current_pool = nullptr;
}  // namespace

WorkerPool::WorkerPool(int threads) {
  const int count = std::max(1, threads);
  threads_.reserve(count);
  for (int i = 0; i < count; ++i) threads_.emplace_back([this] { worker_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
  std::unique_lock<std::mutex> lock(mutex_);
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
      execute(group, index, lock);
    }
  }
  group.done.wait(lock, [&] { return group.finished == group.count; });
  if (group.error) std::rethrow_exception(group.error);
}

void WorkerPool::execute(Group& group, int index, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::exception_ptr error;
  try {
    group.invoke(group.context, index);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (error && !group.error) group.error = error;
  if (++group.finished == group.count) group.done.notify_all();
}

void WorkerPool::worker_loop() {
  current_pool = this;
  // Every task that trains runs here or on a thread inside train(): both
  // flush subnormals, as a TPU does (executor/denormals.h).
  flush_denormals_on_this_thread();
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_available_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    Group& group = *queue_.front();
    const int index = group.next++;
    if (group.next == group.count) queue_.pop_front();
    execute(group, index, lock);
  }
}

}  // namespace tpujobs::executor
