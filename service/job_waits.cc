#include "service/job_waits.h"

#include <algorithm>

#include "base/job_state.h"

namespace tpujobs::service {

struct JobWaits::Pending {
  std::int64_t id = 0;
  std::string tenant;
  base::Clock::time_point deadline;
  Done done;
  bool answered = false;  // read and written on the timer thread only
};

JobWaits::JobWaits(TimerQueue& timers, base::Clock& clock, Read read,
                   std::chrono::milliseconds poll)
    : timers_(timers), clock_(clock), read_(std::move(read)), poll_(poll) {}

void JobWaits::wait(std::int64_t id, std::string tenant, base::Clock::time_point deadline,
                    Done done) {
  // The first look on the caller's thread: an ended job is answered at once.
  base::Result<nlohmann::json> current = read_(id, tenant);
  if (over(current, deadline)) return done(std::move(current));
  auto pending = std::make_shared<Pending>();
  pending->id = id;
  pending->tenant = std::move(tenant);
  pending->deadline = deadline;
  pending->done = std::move(done);
  {
    // From here every look is on the timer thread, one at a time, so the
    // wait is answered once. An end announced before this is found by the
    // poll.
    base::MutexLock lock(mutex_);
    pending_.emplace(id, pending);
  }
  schedule(pending);
}

bool JobWaits::over(const base::Result<nlohmann::json>& current,
                    base::Clock::time_point deadline) const {
  const std::optional<base::JobState> state =
      current.ok() ? base::parse_job_state(current->value("state", "")) : std::nullopt;
  return !state || base::is_terminal(*state) || clock_.now() >= deadline;
}

void JobWaits::wake(const std::vector<std::int64_t>& ids) {
  std::vector<std::shared_ptr<Pending>> woken;
  {
    base::MutexLock lock(mutex_);
    for (std::int64_t id : ids) {
      const auto [first, last] = pending_.equal_range(id);
      for (auto it = first; it != last; ++it) woken.push_back(it->second);
    }
  }
  for (std::shared_ptr<Pending>& pending : woken) {
    timers_.schedule(clock_.now(),
                     [this, pending = std::move(pending)] { look(pending, /*from_timer=*/false); });
  }
}

void JobWaits::look(const std::shared_ptr<Pending>& pending, bool from_timer) {
  if (pending->answered) return;
  base::Result<nlohmann::json> current = read_(pending->id, pending->tenant);
  if (!over(current, pending->deadline)) {
    if (from_timer) schedule(pending);
    return;
  }
  pending->answered = true;
  {
    base::MutexLock lock(mutex_);
    const auto [first, last] = pending_.equal_range(pending->id);
    for (auto it = first; it != last; ++it) {
      if (it->second == pending) {
        pending_.erase(it);
        break;
      }
    }
  }
  pending->done(std::move(current));
}

void JobWaits::schedule(const std::shared_ptr<Pending>& pending) {
  const base::Clock::time_point next = std::min(pending->deadline, clock_.now() + poll_);
  timers_.schedule(next, [this, pending] { look(pending, /*from_timer=*/true); });
}

}  // namespace tpujobs::service
