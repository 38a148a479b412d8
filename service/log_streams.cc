#include "service/log_streams.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tpujobs::service {

using nlohmann::json;

LogStreams::LogStreams(LogSource& source, TimerQueue& timers, LogStreamsOptions options)
    : source_(source), timers_(timers), options_(options) {}

void LogStreams::follow(std::int64_t job, std::int64_t after, api::ResponseWriterPtr writer) {
  writer->write("retry: 1000\n\n");
  tick(job, after, std::move(writer), 0);
}

void LogStreams::wake(const std::vector<std::int64_t>& jobs) {
  std::vector<std::function<void()>> ticks;
  {
    base::MutexLock lock(mutex_);
    for (std::int64_t id : jobs) {
      auto it = followers_.find(id);
      if (it == followers_.end()) continue;
      for (Follower& f : it->second) ticks.push_back(std::move(f.tick));
      followers_.erase(it);
    }
  }
  // Ticked on the timer thread, as every stream's tick.
  for (auto& t : ticks) timers_.schedule_after(std::chrono::milliseconds(0), std::move(t));
}

void LogStreams::close() {
  std::map<std::int64_t, std::vector<Follower>> followers;  // released outside the lock
  base::MutexLock lock(mutex_);
  followers.swap(followers_);
}

void LogStreams::tick(std::int64_t job, std::int64_t after, api::ResponseWriterPtr writer,
                      int idle_ticks) {
  if (writer->closed()) return;
  // A failed read sends nothing; the next tick reads again.
  std::vector<db::LogLine> lines;
  if (auto stored = source_.stored_lines(job, after, options_.batch); stored.ok())
    lines = std::move(*stored);
  std::string chunk;
  for (const db::LogLine& l : lines) {
    chunk += "id: " + std::to_string(l.seq) +
             "\nevent: log\ndata: " + json{{"seq", l.seq}, {"line", l.line}}.dump() + "\n\n";
    after = l.seq;
  }
  if (!chunk.empty()) {
    if (!writer->write(std::move(chunk))) return;
    idle_ticks = 0;
  } else {
    ++idle_ticks;
  }
  if (lines.empty()) {
    // Everything stored has been sent; is the job over?
    auto state = source_.stored_state(job);
    if (state.ok() && *state && db::is_terminal(**state)) {
      writer->write("event: end\ndata: " +
                    json{{"state", std::string(db::to_string(**state))}}.dump() + "\n\n");
      writer->end();
      return;
    }
  }
  const std::chrono::milliseconds interval = options_.fallback;
  const int keep_alive_ticks = std::max<int>(
      1, static_cast<int>(options_.keep_alive / std::max(interval, std::chrono::milliseconds(1))));
  if (idle_ticks > 0 && idle_ticks % keep_alive_ticks == 0) {
    if (!writer->write(": keep-alive\n\n")) return;
  }
  auto next = [this, job, after, writer, idle_ticks] { tick(job, after, writer, idle_ticks); };
  // Whichever comes first, the notification or the fallback, ticks.
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto once = [fired, next = std::move(next)] {
    if (!fired->exchange(true)) next();
  };
  {
    base::MutexLock lock(mutex_);
    auto& waiting = followers_[job];
    std::erase_if(waiting, [](const Follower& f) { return f.fired->load(); });
    waiting.push_back({fired, once});
  }
  timers_.schedule_after(interval, once);
}

}  // namespace tpujobs::service
