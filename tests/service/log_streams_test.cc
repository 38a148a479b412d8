#include "service/log_streams.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service/wake_bus.h"

namespace tpujobs::service {
namespace {

using namespace std::chrono_literals;

// A stream's client: collects what is written, until end().
class FakeWriter final : public api::ResponseWriter {
 public:
  void respond(api::Response) override {}
  void start_stream(api::Response) override {}
  bool write(std::string data) override {
    base::MutexLock lock(mutex_);
    text_ += data;
    changed_.notify_all();
    return !gone_;
  }
  void end() override {
    base::MutexLock lock(mutex_);
    ended_ = true;
    changed_.notify_all();
  }
  bool closed() const override {
    base::MutexLock lock(mutex_);
    return gone_;
  }
  void go_away() {
    base::MutexLock lock(mutex_);
    gone_ = true;
  }
  // Waits until the text holds `what` (or the stream ended); the text then.
  std::string wait_for(const std::string& what) {
    base::MutexLock lock(mutex_);
    lock.wait_for(changed_, 30s, [&]() REQUIRES(mutex_) {
      return text_.find(what) != std::string::npos || ended_;
    });
    return text_;
  }
  bool ended() {
    base::MutexLock lock(mutex_);
    return ended_;
  }
  // Waits until the stream is ended (end() comes just after the last write).
  bool wait_ended() {
    base::MutexLock lock(mutex_);
    lock.wait_for(changed_, 30s, [&]() REQUIRES(mutex_) { return ended_; });
    return ended_;
  }

 private:
  mutable base::Mutex mutex_;
  std::condition_variable changed_;
  std::string text_ GUARDED_BY(mutex_);
  bool ended_ GUARDED_BY(mutex_) = false;
  bool gone_ GUARDED_BY(mutex_) = false;
};

class FakeSource final : public LogSource {
 public:
  base::Result<std::vector<db::LogLine>> stored_lines(std::int64_t, std::int64_t after,
                                                      int limit) override {
    base::MutexLock lock(mutex_);
    ++database_reads;
    std::vector<db::LogLine> out;
    for (const db::LogLine& l : stored)
      if (l.seq > after && static_cast<int>(out.size()) < limit) out.push_back(l);
    return out;
  }
  base::Result<std::optional<db::JobState>> stored_state(std::int64_t) override {
    base::MutexLock lock(mutex_);
    return std::optional(state);
  }
  void add(std::int64_t seq, std::string line) {
    base::MutexLock lock(mutex_);
    stored.push_back({7, seq, {}, std::move(line), 0});
  }
  void set_state(db::JobState s) {
    base::MutexLock lock(mutex_);
    state = s;
  }
  int reads() {
    base::MutexLock lock(mutex_);
    return database_reads;
  }
  base::Mutex mutex_;
  std::vector<db::LogLine> stored GUARDED_BY(mutex_);
  db::JobState state GUARDED_BY(mutex_) = db::JobState::kRunning;
  int database_reads GUARDED_BY(mutex_) = 0;
};

// Stops the timer thread before the streams its ticks use go away.
struct StopTimers {
  TimerQueue& timers;
  ~StopTimers() { timers.stop(); }
};

TEST(LogStreams, SendsTheLinesAfterTheOneAskedForThenEndsWithTheJobsState) {
  FakeSource source;
  source.add(1, "epoch 0");
  source.add(2, "epoch 1");
  source.add(3, "epoch 2");
  TimerQueue timers;
  // No notification comes: the fallback ticks.
  LogStreams streams(source, timers, {.fallback = 5ms});
  StopTimers stop{timers};
  auto writer = std::make_shared<FakeWriter>();
  streams.follow(7, /*after=*/1, writer);
  std::string text = writer->wait_for("id: 3");
  EXPECT_EQ(text.find("epoch 0"), std::string::npos) << text;
  EXPECT_NE(text.find("retry: 1000"), std::string::npos);
  EXPECT_NE(text.find("id: 2\nevent: log\ndata: {\"line\":\"epoch 1\",\"seq\":2}\n\n"),
            std::string::npos)
      << text;
  EXPECT_FALSE(writer->ended()) << "the job still runs";

  source.add(4, "done");
  source.set_state(db::JobState::kSucceeded);
  text = writer->wait_for("event: end");
  EXPECT_TRUE(writer->wait_ended());
  EXPECT_LT(text.find("id: 4"), text.find("event: end")) << "every line before the end: " << text;
  EXPECT_NE(text.find("event: end\ndata: {\"state\":\"SUCCEEDED\"}"), std::string::npos) << text;
}

TEST(LogStreams, NotifiedStreamsTickOnTheNotificationNotTheFallback) {
  FakeSource source;
  TimerQueue timers;
  // A fallback far longer than the test's deadline: only wake() can deliver.
  LogStreams streams(source, timers, {.fallback = 3600s});
  StopTimers stop{timers};
  auto writer = std::make_shared<FakeWriter>();
  streams.follow(7, 0, writer);
  // follow() made the first read on this thread; the stream now waits.
  ASSERT_EQ(source.reads(), 1);
  source.add(1, "stored by an agent");
  streams.wake(parse_job_ids("3,7"));
  EXPECT_NE(writer->wait_for("id: 1").find("stored by an agent"), std::string::npos);
}

// Runs a marker task on the timer thread and waits until it has run. Tasks
// due at the same time run in the order they were scheduled, so every task
// scheduled before the marker (such as the ticks wake() queues) has run by
// then. False when the marker did not run within the deadline.
bool run_queued_tasks(TimerQueue& timers) {
  auto ran = std::make_shared<std::promise<void>>();
  std::future<void> done = ran->get_future();
  timers.schedule_after(0ms, [ran] { ran->set_value(); });
  return done.wait_for(30s) == std::future_status::ready;
}

TEST(LogStreams, AClientThatLeftStopsItsStream) {
  FakeSource source;
  TimerQueue timers;
  // A fallback far longer than the test: only wake() makes a stream tick.
  LogStreams streams(source, timers, {.fallback = 3600s});
  StopTimers stop{timers};
  auto writer = std::make_shared<FakeWriter>();
  streams.follow(7, 0, writer);  // the first tick runs here, on this thread
  ASSERT_EQ(source.reads(), 1);
  // While the client is there, a wake makes the stream read.
  streams.wake({7});
  ASSERT_TRUE(run_queued_tasks(timers));
  ASSERT_EQ(source.reads(), 2) << "a wake ticks the stream once";

  writer->go_away();
  streams.wake({7});
  ASSERT_TRUE(run_queued_tasks(timers));
  EXPECT_EQ(source.reads(), 2) << "a tick after the client left read the database";
  streams.wake({7});
  ASSERT_TRUE(run_queued_tasks(timers));
  EXPECT_EQ(source.reads(), 2) << "the stream still reads after the client left";
}

TEST(LogStreams, KeepAlivesFlowWhileNothingIsLogged) {
  FakeSource source;
  TimerQueue timers;
  LogStreams streams(source, timers, {.fallback = 1ms, .keep_alive = 5ms});
  StopTimers stop{timers};
  auto writer = std::make_shared<FakeWriter>();
  streams.follow(7, 0, writer);
  EXPECT_NE(writer->wait_for(": keep-alive").find(": keep-alive\n\n"), std::string::npos);
}

// At a stop the streams let their writers go once the timers have stopped:
// the HTTP server is destroyed next, and a writer must not outlive it.
TEST(LogStreams, ClosingLetsGoOfEveryStreamsWriter) {
  FakeSource source;
  source.add(1, "epoch 0");
  TimerQueue timers;
  LogStreams streams(source, timers, {.fallback = 1h});  // only the first tick
  auto writer = std::make_shared<FakeWriter>();
  streams.follow(7, /*after=*/0, writer);
  writer->wait_for("id: 1");
  std::weak_ptr<FakeWriter> held = writer;
  writer.reset();
  EXPECT_FALSE(held.expired()) << "a stream that waits for lines holds its writer";
  timers.stop();
  streams.close();
  EXPECT_TRUE(held.expired()) << "a closed stream still holds its writer";
}

TEST(LogStreams, ParsesTheNotificationPayload) {
  EXPECT_EQ(parse_job_ids("12,15,3"), (std::vector<std::int64_t>{12, 15, 3}));
  EXPECT_EQ(parse_job_ids("12,x,3,4y"), (std::vector<std::int64_t>{12, 3}));
  EXPECT_TRUE(parse_job_ids("").empty());
  EXPECT_EQ(parse_job_ids(format_job_ids({7, 9})), (std::vector<std::int64_t>{7, 9}));
}

}  // namespace
}  // namespace tpujobs::service
