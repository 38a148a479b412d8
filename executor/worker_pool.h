// The fixed set of compute threads that every running job shares: replicas'
// forward/backward passes, the parts of large matrix products, all-reduce
// chunks. Jobs do not own threads; they hand the pool groups of tasks.
// The threads flush subnormals to zero, as a TPU does (executor/denormals.h).
//
// Fair shares: the jobs running at once take turns, round-robin weighted by
// work. A job holds a JobShare while it trains and runs each step's compute
// inside a StepTurn, which states the step's work (its multiply-adds). A job
// begins a turn only while no other job in the pool has begun less work,
// even one whose thread the OS has not run for a while, and at most
// threads() turns run at once (the longest waiting first among equals). Jobs
// with equal steps thus advance step for step, one job's cheap steps cannot
// run hundreds of times while another waits for its first, and a job with
// steps a thousand times cheaper than another's takes about a thousand steps
// per step of the other. The work a job does between its turns (setup,
// logging, checkpoints) must be bounded, as train()'s is: the others may
// wait for it. A job joining starts level with the job that has begun the
// least work: the others do not wait while it catches up.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::executor {

class WorkerPool {
 public:
  // Starts `threads` threads (at least one). They live until destruction.
  // Each runs `on_start` first, if given (the agent lowers their priority
  // there: base/thread_priority.h).
  explicit WorkerPool(int threads, std::function<void()> on_start = {});
  // Joins the threads. No parallel_for may be running.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }

  // A job's place among the jobs sharing the pool, from construction to
  // destruction. Not thread-safe itself: one thread runs the job's turns.
  class JobShare {
   public:
    explicit JobShare(WorkerPool& pool);
    ~JobShare();
    JobShare(const JobShare&) = delete;
    JobShare& operator=(const JobShare&) = delete;

   private:
    friend class WorkerPool;
    WorkerPool& pool_;
    std::int64_t work_ = 0;      // work of the turns begun; guarded by pool_.turns_mutex_
    std::uint64_t waiting_ = 0;  // the wait's ticket, 0 when not waiting; guarded likewise
  };

  // One step's compute of a job, of `work` units (at least 1): the
  // constructor blocks until it is the job's turn, the destructor (or end())
  // gives the turn back. A pool thread must not take a turn (the turns
  // running could be waiting on it).
  class StepTurn {
   public:
    explicit StepTurn(JobShare& share, std::int64_t work = 1);
    ~StepTurn() { end(); }
    StepTurn(const StepTurn&) = delete;
    StepTurn& operator=(const StepTurn&) = delete;
    void end();  // idempotent

   private:
    WorkerPool* pool_;
  };

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
  // Runs index `index` of `group` (with mutex_ let go meanwhile) and records
  // its completion.
  void execute(Group& group, int index) REQUIRES(mutex_);

  // True when `share` may begin a turn now: a turn is free, no job has
  // begun less work, and no job that has begun as much waits longer.
  bool may_begin_turn(const JobShare& share) const REQUIRES(turns_mutex_);

  base::Mutex turns_mutex_;
  std::condition_variable turn_changed_;
  std::vector<JobShare*> shares_ GUARDED_BY(turns_mutex_);
  int turns_running_ GUARDED_BY(turns_mutex_) = 0;
  std::uint64_t next_ticket_ GUARDED_BY(turns_mutex_) = 1;

  base::Mutex mutex_;
  std::condition_variable work_available_;
  std::deque<Group*> queue_ GUARDED_BY(mutex_);  // groups with indices still to hand out
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tpujobs::executor
