// Wake-ups inside one process (DESIGN §9: a standalone serve is a
// one-member cluster whose API service, scheduler leader and agent are woken
// by a direct call, not a NOTIFY round trip through PostgreSQL). Channels
// and payloads are those of db/listener.h's NOTIFY: a subscriber is woken by
// every publish on its channel and reads the tables itself.
//
// Thread-safe. Handlers run on the publishing thread and must not block.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::service {

// In-process only: the ids of jobs whose stored row the leader changed (a
// placement, an end, a pending reason), so that the API service forgets
// their cached views (service/view_cache.h). Payload: ids separated by ','.
inline constexpr char kJobsChangedChannel[] = "tpujobs_jobs_changed";

inline std::string format_job_ids(const std::vector<std::int64_t>& ids) {
  std::string text;
  for (std::int64_t id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  }
  return text;
}

inline std::vector<std::int64_t> parse_job_ids(std::string_view text) {
  std::vector<std::int64_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    std::int64_t id = 0;
    auto [next, ec] = std::from_chars(p, end, id);
    if (ec == std::errc()) ids.push_back(id);
    p = next;
    while (p < end && *p != ',') ++p;
    if (p < end) ++p;
  }
  return ids;
}

class WakeBus {
 public:
  using Handler = std::function<void(const std::string& payload)>;

  void subscribe(const std::string& channel, Handler handler) {
    base::MutexLock lock(mutex_);
    handlers_[channel].push_back(std::move(handler));
  }
  void publish(const std::string& channel, const std::string& payload) {
    std::vector<Handler> handlers;
    {
      base::MutexLock lock(mutex_);
      handlers = handlers_[channel];
    }
    for (const Handler& handler : handlers) handler(payload);
  }

 private:
  base::Mutex mutex_;
  std::map<std::string, std::vector<Handler>> handlers_ GUARDED_BY(mutex_);
};

}  // namespace tpujobs::service
