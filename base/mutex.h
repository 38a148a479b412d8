// Locks the compiler checks. Every mutex of the project is a base::Mutex, and
// what it guards is written on the members (GUARDED_BY) and on the functions
// that expect it held (REQUIRES), so that clang's -Wthread-safety analysis
// (the `thread_safety` test) proves each access is made under its lock,
// instead of a comment asking the reader to.
//
//   class Queue {
//    public:
//     void push(int v) EXCLUDES(mutex_) {
//       base::MutexLock lock(mutex_);
//       items_.push_back(v);
//       ready_.notify_one();
//     }
//     int pop() EXCLUDES(mutex_) {
//       base::MutexLock lock(mutex_);
//       lock.wait(ready_, [&]() REQUIRES(mutex_) { return !items_.empty(); });
//       return take_locked();
//     }
//    private:
//     int take_locked() REQUIRES(mutex_);
//     base::Mutex mutex_;
//     std::condition_variable ready_;
//     std::deque<int> items_ GUARDED_BY(mutex_);
//   };
//
// GCC ignores the attributes; clang checks them. What they cannot say: the
// members of a nested struct guarded by the enclosing object's mutex
// (JobManager::LiveJob, WorkerPool::Group) have no name for that mutex, so
// their comments still say it.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TPUJOBS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TPUJOBS_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) TPUJOBS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY TPUJOBS_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) TPUJOBS_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) TPUJOBS_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) TPUJOBS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) TPUJOBS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) TPUJOBS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) TPUJOBS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) TPUJOBS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TPUJOBS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) TPUJOBS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) TPUJOBS_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS TPUJOBS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tpujobs::base {

// A std::mutex the analysis knows as a capability.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mutex_;
};

// Holds a Mutex for its scope (std::unique_lock underneath, so it can wait on
// a std::condition_variable). While wait() blocks the mutex is released, as
// with std::condition_variable::wait; whenever the caller's code runs, it is
// held, which is what the analysis assumes.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets go of the mutex before the scope ends (for a call that must not run
  // under it), and takes it back.
  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class Predicate>
  void wait(std::condition_variable& cv, Predicate done) {
    cv.wait(lock_, std::move(done));
  }
  // Returns done() at the end: false when the deadline passed first.
  template <class Clock, class Duration, class Predicate>
  bool wait_until(std::condition_variable& cv,
                  const std::chrono::time_point<Clock, Duration>& deadline, Predicate done) {
    return cv.wait_until(lock_, deadline, std::move(done));
  }
  template <class Rep, class Period, class Predicate>
  bool wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
                Predicate done) {
    return cv.wait_for(lock_, timeout, std::move(done));
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(std::condition_variable& cv,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::condition_variable& cv,
                          const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace tpujobs::base
