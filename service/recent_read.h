// A value read from the database and kept for a while, so that the many
// requests of a second share one read: the pool's capacity for submits, the
// tenants' quotas, the count of queued jobs every open web page polls (at
// 100,000 queued, a count that takes some 60 ms of a backend).
//
// A call within `max_age` of the last read that succeeded answers its copy.
// The first after reads again; while it does, the other calls answer the
// copy they have (a call with no copy yet reads too). A read that fails
// leaves the copy and its age as they were: the next call tries again, and
// the call that failed answers the last copy when there is one (a database
// that does not answer does not empty the pool), else the error.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"

namespace tpujobs::service {

template <typename T>
class RecentRead {
 public:
  // The clock must outlive the copy.
  RecentRead(base::Clock& clock, std::chrono::nanoseconds max_age)
      : clock_(clock), max_age_(max_age) {}
  RecentRead(const RecentRead&) = delete;
  RecentRead& operator=(const RecentRead&) = delete;

  // The copy, or what `read` (a callable answering base::Result<T>) reads
  // now when the copy is older than max_age, or when `now` is set. Shared,
  // not copied: a submit looks one tenant up in every tenant's quota.
  using Copy = std::shared_ptr<const T>;
  template <typename Read>
  base::Result<Copy> get(Read&& read, bool now = false) {
    const base::Clock::time_point began = clock_.now();
    {
      base::MutexLock lock(mutex_);
      if (copy_ && read_at_ && !now && (began - *read_at_ < max_age_ || readers_ > 0)) return copy_;
      ++readers_;
    }
    base::Result<T> value = read();
    base::MutexLock lock(mutex_);
    --readers_;
    // A copy is as old as the start of its read: one that began before a
    // newer copy's, or before forget(), is not kept.
    if (!value.ok()) {
      if (copy_) return copy_;
      return value.error();
    }
    auto fresh = std::make_shared<const T>(std::move(*value));
    if (began >= forgotten_at_ && (!read_at_ || began >= *read_at_)) {
      copy_ = fresh;
      read_at_ = began;
    }
    return Copy(fresh);
  }

  // The next call reads, and no read that began before is kept: what this
  // process just wrote changed the value.
  void forget() {
    base::MutexLock lock(mutex_);
    read_at_.reset();
    forgotten_at_ = clock_.now();
  }

 private:
  base::Clock& clock_;
  const std::chrono::nanoseconds max_age_;
  base::Mutex mutex_;
  Copy copy_ GUARDED_BY(mutex_);
  std::optional<base::Clock::time_point> read_at_ GUARDED_BY(mutex_);  // of the copy
  base::Clock::time_point forgotten_at_ GUARDED_BY(mutex_){};
  int readers_ GUARDED_BY(mutex_) = 0;
};

}  // namespace tpujobs::service
