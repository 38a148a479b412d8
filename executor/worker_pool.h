// The fixed set of compute threads that every running job shares: replicas'
// forward/backward passes, the parts of large matrix products, all-reduce
// chunks. Jobs do not own threads; they hand the pool groups of tasks.
// The threads flush subnormals to zero, as a TPU does (executor/denormals.h).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace tpujobs::executor {

class WorkerPool {
 public:
  // Starts `threads` threads (at least one). They live until destruction.
  explicit WorkerPool(int threads);
  // Joins the threads. No parallel_for may be running.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }

  // Runs task(i) for every i in [0, count), each exactly once, on the pool's
  // threads, and returns when all have finished. Groups from different
  // callers are served first come, first served. Safe to call from several
  // threads at once and from inside a task: a pool thread that waits runs the
  // remaining tasks of its own group itself, so nesting cannot deadlock.
  // If a task throws, the others still run and the first exception is
  // rethrown here. `task` is not copied; it must be callable concurrently.
  template <typename Task>
  void parallel_for(int count, Task&& task) {
    if (count <= 0) return;
    run(
        count,
        [](void* context, int index) {
          (*static_cast<std::remove_reference_t<Task>*>(context))(index);
        },
        const_cast<void*>(static_cast<const void*>(&task)));
  }

 private:
  struct Group {
    void (*invoke)(void*, int) = nullptr;
    void* context = nullptr;
    int count = 0;
    int next = 0;      // next index to hand out (guarded by mutex_)
    int finished = 0;  // guarded by mutex_
    std::exception_ptr error;
    std::condition_variable done;
  };

  void run(int count, void (*invoke)(void*, int), void* context);
  void worker_loop();
  // Runs index `index` of `group` and records its completion.
  void execute(Group& group, int index, std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable work_available_;
  std::deque<Group*> queue_;  // groups with indices still to hand out
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tpujobs::executor
