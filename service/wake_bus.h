// Wake-ups inside one process (DESIGN §9: a standalone serve is a
// one-member cluster whose API service, scheduler leader and agent are woken
// by a direct call, not a NOTIFY round trip through PostgreSQL). Channels
// and payloads are those of db/listener.h's NOTIFY: a subscriber is woken by
// every publish on its channel and reads the tables itself.
//
// Thread-safe. Handlers run on the publishing thread and must not block.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::service {

// The ids of jobs whose stored row changed, so that the API service forgets
// their cached views (service/view_cache.h). In a process with a wake bus
// the leader and the agent publish it for every row they change (a
// placement, a start, an end; pending reasons whose write may or may not
// have landed); in a cluster the database sends it (NOTIFY) for a job that
// never started and leaves the queue (db/migrations/038). Payload: ids
// separated by ','.
inline constexpr char kJobsChangedChannel[] = "tpujobs_jobs_changed";

inline std::string format_job_ids(const std::vector<std::int64_t>& ids) {
  std::string text;
  for (std::int64_t id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  }
  return text;
}

// The ids of a payload of format_job_ids, or of NOTIFY tpujobs_logs ("12,15");
// an item that is not a whole number is skipped.
inline std::vector<std::int64_t> parse_job_ids(std::string_view text) {
  std::vector<std::int64_t> ids;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::int64_t id = 0;
    auto [ptr, ec] = std::from_chars(text.data() + start, text.data() + end, id);
    if (ec == std::errc() && ptr == text.data() + end) ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

// The pending reasons the leader just stored (the job_pending values), so
// that the API service's kept views of queued jobs take them without a
// read: published by the leader in a process with a wake bus, sent by the
// database (NOTIFY, some fifty jobs each) in a cluster (db/migrations/040).
// Payload: one line per job, its id, then a tab and the reason when it has
// one.
inline constexpr char kPendingWrittenChannel[] = "tpujobs_pending_written";

using PendingChanges = std::vector<std::pair<std::int64_t, std::optional<std::string>>>;

inline std::string format_pending_changes(const PendingChanges& changes) {
  std::string text;
  for (const auto& [id, pending] : changes) {
    text += std::to_string(id);
    if (pending) {
      text += '\t';
      text += *pending;  // JSON as written: no raw newline
    }
    text += '\n';
  }
  return text;
}

inline PendingChanges parse_pending_changes(std::string_view text) {
  PendingChanges changes;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    std::int64_t id = 0;
    auto [next, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
    if (ec != std::errc()) continue;
    std::optional<std::string> pending;
    if (next < line.data() + line.size() && *next == '\t')
      pending.emplace(next + 1, line.data() + line.size());
    changes.emplace_back(id, std::move(pending));
  }
  return changes;
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
