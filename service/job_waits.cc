#include "service/job_waits.h"

#include <algorithm>
#include <utility>

#include "base/job_state.h"

namespace tpujobs::service {

struct JobWaits::Pending {
  std::int64_t id = 0;
  std::string tenant;
  base::Clock::time_point deadline;
  Done done;
  // Set by whoever answers: a look on the timer thread, or close().
  std::atomic<bool> answered{false};
};

namespace {

base::Error stopping_error() {
  return base::make_error(base::ErrorCode::kUnavailable,
                          "the service is stopping; wait again once it is back");
}

}  // namespace

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
  bool closed = false;
  {
    // From here every look is on the timer thread, one at a time, and
    // `answered` keeps close() from answering a second time. An end
    // announced before this is found by the poll.
    base::MutexLock lock(mutex_);
    closed = closed_;
    if (!closed) pending_.emplace(id, pending);
  }
  if (closed) return pending->done(stopping_error());
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

void JobWaits::close() {
  std::multimap<std::int64_t, std::shared_ptr<Pending>> open;
  {
    base::MutexLock lock(mutex_);
    closed_ = true;
    open.swap(pending_);
  }
  for (auto& [id, pending] : open) {
    if (!pending->answered.exchange(true)) std::exchange(pending->done, nullptr)(stopping_error());
  }
}

void JobWaits::look(const std::shared_ptr<Pending>& pending, bool from_timer) {
  if (pending->answered) return;
  base::Result<nlohmann::json> current = read_(pending->id, pending->tenant);
  if (!over(current, pending->deadline)) {
    if (from_timer) schedule(pending);
    return;
  }
  if (pending->answered.exchange(true)) return;
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
  // Moved out: a timer task still holding `pending` holds no connection.
  std::exchange(pending->done, nullptr)(std::move(current));
}

void JobWaits::schedule(const std::shared_ptr<Pending>& pending) {
  const base::Clock::time_point next = std::min(pending->deadline, clock_.now() + poll_);
  timers_.schedule(next, [this, pending] { look(pending, /*from_timer=*/true); });
}

}  // namespace tpujobs::service
