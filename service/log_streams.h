// Log streams: GET /v1/jobs/{id}/logs?follow=1 as Server-Sent Events. Each
// stream is a chain of short ticks on the timer thread (no thread per
// client): a tick sends the lines after the last one sent (`id:` is the
// line's seq, so a client that reconnects with Last-Event-ID misses
// nothing), and ends the stream with `event: end` once the job is over and
// every stored line is sent.
//
// The agents (in this process or in others) store the lines; a tick reads
// the database, and the next one comes on the agents' notification (wake())
// or after `fallback`, whichever is first: a lost notification delays
// lines, never loses them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/http.h"
#include "base/mutex.h"
#include "base/result.h"
#include "db/job_output_repository.h"
#include "db/job_repository.h"
#include "service/timer_queue.h"

namespace tpujobs::service {

// Where streams read lines and learn that a job is over.
class LogSource {
 public:
  virtual ~LogSource() = default;
  virtual base::Result<std::vector<db::LogLine>> stored_lines(std::int64_t job, std::int64_t after,
                                                              int limit) = 0;
  // The job's state as stored; nullopt when there is no such job.
  virtual base::Result<std::optional<db::JobState>> stored_state(std::int64_t job) = 0;
};

struct LogStreamsOptions {
  std::chrono::milliseconds fallback{1000};  // see the top of this file
  // A keep-alive comment after this long without lines (proxies close idle
  // connections).
  std::chrono::milliseconds keep_alive{15000};
  int batch = 1000;  // most lines read from the database by one tick
};

class LogStreams {
 public:
  // The source and the timers must outlive the streams.
  LogStreams(LogSource& source, TimerQueue& timers, LogStreamsOptions options);

  // Streams the job's lines after `after` to `writer`, whose stream the
  // caller has started.
  void follow(std::int64_t job, std::int64_t after, api::ResponseWriterPtr writer);
  // Lines of these jobs were stored; their streams tick now
  // (on the timer thread).
  void wake(const std::vector<std::int64_t>& jobs);
  // The service is stopping and the timers have stopped: the streams'
  // writers are let go (the HTTP server closes their connections; a
  // client reconnects with Last-Event-ID).
  void close();

 private:
  struct Follower {
    std::shared_ptr<std::atomic<bool>> fired;  // ticked already (by the fallback)
    std::function<void()> tick;
  };
  void tick(std::int64_t job, std::int64_t after, api::ResponseWriterPtr writer, int idle_ticks);

  LogSource& source_;
  TimerQueue& timers_;
  const LogStreamsOptions options_;
  base::Mutex mutex_;
  std::map<std::int64_t, std::vector<Follower>> followers_ GUARDED_BY(mutex_);
};

}  // namespace tpujobs::service
