// Runs work on threads of its own, taking the tenants that have work in
// turn: one item of each in its turn, each tenant's own in the order they
// came. A tenant that queues many items delays its own, not the others'
// (a tenant's turn comes once per round, however many it queued).
//
// JobsApi runs its wide requests here (a list of hundreds of jobs), so that
// they never hold the HTTP I/O threads that read and answer everyone's
// cheap requests. How many may wait is bounded by the caller
// (api/stream_slots.h).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::api {

class FairLane {
 public:
  // `threads` at least 1. They run at `nice` (0-19, base/thread_priority.h)
  // above the process's priority when the system lets them, so that the
  // short requests answered on other threads take the CPU first.
  explicit FairLane(int threads, int nice = 0);
  // Runs what was queued, then joins the threads.
  ~FairLane();
  FairLane(const FairLane&) = delete;
  FairLane& operator=(const FairLane&) = delete;

  // Queues `work` for `tenant`. It runs on a lane thread; an exception it
  // throws is its own to catch (the lane ends the process on one, as a
  // thread would).
  void post(const std::string& tenant, std::function<void()> work) EXCLUDES(mutex_);
  // Items queued and not yet started.
  std::size_t waiting() const EXCLUDES(mutex_);

 private:
  void run() EXCLUDES(mutex_);

  mutable base::Mutex mutex_;
  std::condition_variable ready_;
  std::unordered_map<std::string, std::deque<std::function<void()>>> queued_ GUARDED_BY(mutex_);
  std::deque<std::string> turns_ GUARDED_BY(mutex_);  // tenants with work, next first
  std::size_t waiting_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tpujobs::api
