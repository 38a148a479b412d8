#include "service/telemetry_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace tpujobs::service {
namespace {

using base::ErrorCode;

// Records every write in order; each kind of write fails with the code at
// the front of its queue (ok when empty).
class FakeStore final : public TelemetryStore {
 public:
  std::vector<std::string> writes;  // "log 7:1", "metric 7:1", "checkpoint 7@40", ...
  std::vector<std::string> texts;   // of the log lines stored
  std::deque<std::optional<ErrorCode>> log_failures, metric_failures, checkpoint_failures,
      progress_failures;
  std::vector<std::set<std::int64_t>> notified;

  base::Status append_logs(const std::vector<db::LogLine>& lines) override {
    if (while_storing_logs) while_storing_logs(lines);
    if (auto e = take(log_failures)) return base::make_error(*e, "no");
    for (const db::LogLine& l : lines) {
      writes.push_back("log " + std::to_string(l.job_id) + ":" + std::to_string(l.seq));
      texts.push_back(l.line);
    }
    return base::Status::Ok();
  }
  base::Status append_metrics(const std::vector<db::MetricPoint>& points) override {
    if (auto e = take(metric_failures)) return base::make_error(*e, "no");
    for (const db::MetricPoint& p : points)
      writes.push_back("metric " + std::to_string(p.job_id) + ":" + std::to_string(p.seq));
    return base::Status::Ok();
  }
  base::Status save_checkpoint(std::int64_t job, const executor::Checkpoint& c,
                               std::int64_t fence) override {
    if (while_storing_checkpoint) while_storing_checkpoint();
    if (auto e = take(checkpoint_failures)) return base::make_error(*e, "no");
    writes.push_back("checkpoint " + std::to_string(job) + "@" + std::to_string(c.step) +
                     " fence " + std::to_string(fence));
    return base::Status::Ok();
  }
  base::Status update_progress(std::int64_t job, const std::string& progress, const std::string&,
                               std::int64_t) override {
    if (auto e = take(progress_failures)) return base::make_error(*e, "no");
    writes.push_back("progress " + std::to_string(job) + " " + progress);
    return base::Status::Ok();
  }
  void logs_stored(const std::set<std::int64_t>& jobs) override { notified.push_back(jobs); }
  std::function<void()> while_storing_checkpoint;  // called inside save_checkpoint
  std::function<void(const std::vector<db::LogLine>&)> while_storing_logs;

 private:
  static std::optional<ErrorCode> take(std::deque<std::optional<ErrorCode>>& q) {
    if (q.empty()) return std::nullopt;
    auto e = q.front();
    q.pop_front();
    return e;
  }
};

db::LogLine line(std::int64_t job, std::int64_t seq) { return {job, seq, {}, "line", 0}; }
db::MetricPoint point(std::int64_t job, std::int64_t seq) {
  return {job, seq, seq, 0, {}, "{}", 0};
}
std::shared_ptr<const executor::Checkpoint> checkpoint_at(std::int64_t step) {
  return std::make_shared<executor::Checkpoint>(executor::Checkpoint{step, 0, "bytes"});
}

struct Fixture {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriter writer{store, {std::chrono::milliseconds(200), &clock}};
};

TEST(TelemetryWriter, AJobsFlushStoresItsOwnOutputAndLeavesTheOthersQueued) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.writer.log(line(8, 1));
  f.writer.metric(point(7, 1));
  f.writer.metric(point(8, 1));
  f.writer.log(line(8, 2));
  f.writer.checkpoint(8, 3, checkpoint_at(40));
  f.writer.progress(7, 0, "p7", "{}");
  f.writer.progress(8, 0, "p8", "{}");
  ASSERT_TRUE(f.writer.flush_job(8));
  const std::vector<std::string> job8{"log 8:1", "log 8:2", "metric 8:1", "checkpoint 8@40 fence 3",
                                      "progress 8 p8"};
  EXPECT_EQ(job8, f.store.writes);
  EXPECT_EQ(3u, f.writer.queued()) << "job 7's line, point and progress";
  ASSERT_TRUE(f.writer.flush());
  const std::vector<std::string> job7{"log 7:1", "metric 7:1", "progress 7 p7"};
  EXPECT_EQ(job7, std::vector<std::string>(f.store.writes.begin() + 5, f.store.writes.end()));
}

TEST(TelemetryWriter, AJobsFlushLeavesItsOutputQueuedInOrderWhileTheDatabaseIsAway) {
  Fixture f;
  f.writer.log(line(8, 1));
  f.writer.log(line(7, 1));
  f.writer.log(line(8, 2));
  f.store.log_failures.push_back(ErrorCode::kUnavailable);
  EXPECT_FALSE(f.writer.flush_job(8));
  EXPECT_TRUE(f.store.writes.empty());
  ASSERT_TRUE(f.writer.flush());
  const std::vector<std::string> expected{"log 8:1", "log 8:2", "log 7:1"};
  EXPECT_EQ(expected, f.store.writes) << "job 8's lines back at the front, in order";
}

TEST(TelemetryWriter, OneFlushStoresLinesThenPointsThenCheckpointsThenProgress) {
  Fixture f;
  std::vector<std::int64_t> stored_checkpoints;
  f.writer.on_checkpoint_stored = [&](std::int64_t job, const executor::Checkpoint& c) {
    stored_checkpoints.push_back(job * 1000 + c.step);
  };
  f.writer.progress(7, 3, "p1", "{}");
  f.writer.checkpoint(7, 3, checkpoint_at(40));
  f.writer.metric(point(7, 1));
  f.writer.log(line(7, 1));
  f.writer.log(line(8, 1));
  f.writer.log(line(7, 2));
  EXPECT_EQ(f.writer.queued(), 6u);

  EXPECT_TRUE(f.writer.flush());

  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"log 7:1", "log 8:1", "log 7:2", "metric 7:1",
                                                      "checkpoint 7@40 fence 3", "progress 7 p1"}));
  ASSERT_EQ(f.store.notified.size(), 1u);
  EXPECT_EQ(f.store.notified[0], (std::set<std::int64_t>{7, 8}));
  EXPECT_EQ(stored_checkpoints, (std::vector<std::int64_t>{7040}));
  EXPECT_EQ(f.writer.queued(), 0u);
}

TEST(TelemetryWriter, AnUnreachableDatabaseLosesNothingAndStoresNoCheckpointAheadOfItsLines) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  f.store.log_failures = {ErrorCode::kUnavailable};

  EXPECT_FALSE(f.writer.flush());
  EXPECT_TRUE(f.store.writes.empty()) << "the checkpoint must wait for the line before it";
  EXPECT_TRUE(f.store.notified.empty());

  // More output meanwhile, then the database is back.
  f.writer.log(line(7, 2));
  f.writer.checkpoint(7, 0, checkpoint_at(20));
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes,
            (std::vector<std::string>{"log 7:1", "log 7:2", "checkpoint 7@20 fence 0"}));
}

TEST(TelemetryWriter, LinesStoredBeforeTheMetricsFailedAreNotStoredTwice) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.writer.metric(point(7, 1));
  f.store.metric_failures = {ErrorCode::kUnavailable};
  EXPECT_FALSE(f.writer.flush());
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"log 7:1"}));
  EXPECT_EQ(f.writer.queued(), 1u);
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"log 7:1", "metric 7:1"}));
}

TEST(TelemetryWriter, ANewerCheckpointOrProgressQueuedDuringAFailedFlushWins) {
  Fixture f;
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  f.writer.progress(7, 0, "old", "{}");
  f.store.checkpoint_failures = {ErrorCode::kUnavailable};
  f.store.progress_failures = {ErrorCode::kUnavailable};
  EXPECT_FALSE(f.writer.flush());
  f.writer.checkpoint(7, 0, checkpoint_at(20));
  f.writer.progress(7, 0, "new", "{}");
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes,
            (std::vector<std::string>{"checkpoint 7@20 fence 0", "progress 7 new"}));
}

// What the trainer asks before a checkpoint it may skip: not while the
// writer still has one of the job's, waiting or being stored.
TEST(TelemetryWriter, IsNotReadyForAJobsCheckpointFromQueuedUntilStored) {
  Fixture f;
  EXPECT_TRUE(f.writer.ready_for_checkpoint(7));
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  EXPECT_FALSE(f.writer.ready_for_checkpoint(7));
  EXPECT_TRUE(f.writer.ready_for_checkpoint(8));
  std::vector<bool> ready_while_storing;
  f.store.while_storing_checkpoint = [&] {
    ready_while_storing.push_back(f.writer.ready_for_checkpoint(7));
  };
  f.store.checkpoint_failures = {ErrorCode::kUnavailable};
  EXPECT_FALSE(f.writer.flush());
  EXPECT_FALSE(f.writer.ready_for_checkpoint(7)) << "not stored: it waits again";
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(ready_while_storing, (std::vector<bool>{false, false}));
  EXPECT_TRUE(f.writer.ready_for_checkpoint(7)) << "a store that took no time leaves no wait";
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"checkpoint 7@10 fence 0"}));
}

// Storing a job's checkpoints takes at most a tenth of its time: after a
// store that took 300 ms, the job skips what it may skip for 2.7 s.
TEST(TelemetryWriter, AfterAStoreTheJobWaitsNineTimesAsLongBeforeItsNextCheckpoint) {
  Fixture f;
  auto store_takes = [&](std::chrono::milliseconds d) {
    f.store.while_storing_checkpoint = [&f, d] { f.clock.advance(d); };
  };
  store_takes(std::chrono::milliseconds(300));
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  EXPECT_TRUE(f.writer.flush());
  EXPECT_FALSE(f.writer.ready_for_checkpoint(7));
  EXPECT_TRUE(f.writer.ready_for_checkpoint(8)) << "another job's time is its own";
  f.clock.advance(std::chrono::milliseconds(2699));
  EXPECT_FALSE(f.writer.ready_for_checkpoint(7));
  f.clock.advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(f.writer.ready_for_checkpoint(7));

  // A checkpoint the trainer emits within the wait (its last, one on stop)
  // is stored at once, and the wait starts again from its store.
  store_takes(std::chrono::milliseconds(100));
  f.writer.checkpoint(7, 0, checkpoint_at(20));
  EXPECT_TRUE(f.writer.flush());
  EXPECT_FALSE(f.writer.ready_for_checkpoint(7)) << "900 ms from the store of step 20";
  f.clock.advance(std::chrono::milliseconds(10));
  store_takes(std::chrono::milliseconds(0));
  f.writer.checkpoint(7, 0, checkpoint_at(30));  // 10 ms into a 900 ms wait
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes,
            (std::vector<std::string>{"checkpoint 7@10 fence 0", "checkpoint 7@20 fence 0",
                                      "checkpoint 7@30 fence 0"}));
  EXPECT_TRUE(f.writer.ready_for_checkpoint(7)) << "the newest store took no time";
}

TEST(TelemetryWriter, WritesTheDatabaseRefusesForGoodAreDroppedNotRetriedForever) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  f.store.log_failures = {ErrorCode::kInvalid};
  EXPECT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"checkpoint 7@10 fence 0"}));
  EXPECT_EQ(f.writer.queued(), 0u);
}

TEST(TelemetryWriter, FlushUntilRetriesAnOutageUntilToldToGiveUp) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.store.log_failures = {ErrorCode::kUnavailable, ErrorCode::kUnavailable};
  int asked = 0;
  EXPECT_TRUE(f.writer.flush_until([&] {
    ++asked;
    return false;
  }));
  EXPECT_EQ(asked, 2);  // one question after each failed try
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"log 7:1"}));

  f.writer.log(line(7, 2));
  for (int i = 0; i < 10; ++i) f.store.log_failures.push_back(ErrorCode::kUnavailable);
  const auto before = f.clock.now();
  asked = 0;
  EXPECT_FALSE(f.writer.flush_until([&] { return ++asked == 3; }));
  EXPECT_EQ(f.writer.queued(), 1u) << "given up, the line is still queued for later";
  // It backed off between tries: 50 ms, then 100 ms.
  EXPECT_EQ(f.clock.now() - before, std::chrono::milliseconds(150));
}

TEST(TelemetryWriter, FlushLinesLeavesCheckpointsAndProgressToTheWriterThread) {
  Fixture f;
  f.writer.log(line(7, 1));
  f.writer.metric(point(7, 1));
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  f.writer.progress(7, 0, "p", "{}");
  f.writer.flush_lines();
  EXPECT_EQ(f.store.writes, (std::vector<std::string>{"log 7:1", "metric 7:1"}));
  EXPECT_EQ(f.writer.queued(), 2u);
}

TEST(TelemetryWriter, TheWriterThreadStoresACheckpointWithoutBeingAsked) {
  Fixture f;
  std::atomic<bool> stored{false};
  f.writer.on_checkpoint_stored = [&](std::int64_t, const executor::Checkpoint&) { stored = true; };
  f.writer.start();
  f.writer.checkpoint(7, 0, checkpoint_at(10));
  for (int i = 0; i < 3000 && !stored; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(stored);
  f.writer.log(line(7, 1));
  f.writer.stop();  // one last flush
  EXPECT_EQ(f.writer.queued(), 0u);
}

// Lines that wake nothing are stored once an interval of the writer's clock
// has passed: with a FakeClock, an interval of an hour passes at once.
TEST(TelemetryWriter, TheWriterThreadStoresLinesAfterAnIntervalOfItsClock) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriter writer(store, {std::chrono::hours(1), &clock});
  std::atomic<bool> storing{false};
  store.while_storing_logs = [&](const std::vector<db::LogLine>&) { storing = true; };
  const auto before = clock.now();
  writer.start();
  writer.log(line(7, 1));
  for (int i = 0; i < 3000 && !storing; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(storing) << "the writer waited an hour of real time";
  writer.stop();
  EXPECT_EQ(store.writes, (std::vector<std::string>{"log 7:1"}));
  EXPECT_GE(clock.now() - before, std::chrono::hours(1));
}

// A checkpoint held while the database is away is tried again once an
// interval of the writer's clock, not at once: each try costs a connection
// attempt and moves the held lines back (before, the service of
// e2e_output_bound_e2etest spent a core on it for the whole outage). With a
// FakeClock an interval passes at once, so the tries show in its time.
TEST(TelemetryWriter, WhileTheDatabaseIsAwayAHeldCheckpointIsTriedOnceAnInterval) {
  FakeStore store;
  base::FakeClock clock;
  const auto interval = std::chrono::milliseconds(200);
  TelemetryWriter writer(store, {interval, &clock});
  store.checkpoint_failures.assign(100000, ErrorCode::kUnavailable);
  std::atomic<int> tries{0};
  store.while_storing_checkpoint = [&] { ++tries; };
  const auto before = clock.now();
  writer.start();
  writer.checkpoint(7, 0, checkpoint_at(10));
  for (int i = 0; i < 3000 && tries.load() < 20; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  writer.stop();  // its last flush tries once more, at once
  const int seen = tries.load();
  ASSERT_GE(seen, 20);
  EXPECT_GE(clock.now() - before, (seen - 2) * interval) << seen << " tries";
  EXPECT_EQ(writer.queued(), 1u) << "the checkpoint is still held";
  EXPECT_TRUE(store.writes.empty());
}

// One line of `bytes` bytes as the writer counts it (the struct and its text).
db::LogLine line_of(std::int64_t seq, std::size_t text) {
  return {7, seq, {}, std::string(text, 'x'), 0};
}

TEST(TelemetryWriter, AProducerFasterThanTheDatabaseWaitsAtTheBoundInsteadOfGrowingWithoutEnd) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriterOptions options{std::chrono::milliseconds(200), &clock};
  const std::size_t per_line = sizeof(db::LogLine) + 1000;
  options.max_queued_line_bytes = 8 * per_line;
  TelemetryWriter writer(store, options);
  std::atomic<int> logged{0};
  std::thread producer([&] {
    for (int seq = 1; seq <= 100; ++seq) {
      writer.log(line_of(seq, 1000));
      ++logged;
    }
  });
  // Nothing drains the queue (no writer thread): the producer stops at the
  // bound, eight lines, and waits there.
  std::size_t most_queued = 0;
  while (logged.load() < 100) {
    const std::size_t queued = writer.queued();
    if (queued >= 8) {
      most_queued = std::max(most_queued, queued);
      EXPECT_LE(queued, 8u) << "the queue passed its bound";
      EXPECT_TRUE(writer.flush());  // taken: room for eight more
    }
    std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(writer.flush());
  EXPECT_EQ(most_queued, 8u);
  ASSERT_EQ(store.writes.size(), 100u);
  EXPECT_EQ(store.writes.front(), "log 7:1");
  EXPECT_EQ(store.writes.back(), "log 7:100");
}

TEST(TelemetryWriter, WhileTheDatabaseIsAwayOutputPastTheBoundIsDroppedCountedAndMarked) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriterOptions options{std::chrono::milliseconds(200), &clock};
  const std::size_t per_line = sizeof(db::LogLine) + 1000;
  options.max_queued_line_bytes = 4 * per_line;
  TelemetryWriter writer(store, options);
  for (int seq = 1; seq <= 4; ++seq) writer.log(line_of(seq, 1000));
  store.log_failures = {ErrorCode::kUnavailable};
  EXPECT_FALSE(writer.flush());  // the database is away
  // Past the bound, on this thread: it would never return if log() waited.
  for (int seq = 5; seq <= 40; ++seq) writer.log(line_of(seq, 1000));
  writer.metric(point(7, 1));
  EXPECT_EQ(writer.queued(), 4u) << "held past the bound while the database is away";
  EXPECT_LE(writer.queued_line_bytes(), options.max_queued_line_bytes);
  EXPECT_EQ(writer.dropped_lines(), 36u);
  EXPECT_EQ(writer.dropped_points(), 1u);
  EXPECT_TRUE(writer.flush());  // back: the held lines
  EXPECT_TRUE(writer.flush());  // then the marker, in the place of line 5
  ASSERT_EQ(store.writes.size(), 5u);
  EXPECT_EQ(store.writes[3], "log 7:4");
  EXPECT_EQ(store.writes[4], "log 7:5");
  EXPECT_EQ(store.texts[4],
            "tpujobs: 36 log lines and 1 metric points were dropped here while the database was "
            "unavailable (at most 0 MiB of output waits for it)");
  EXPECT_EQ(writer.queued_line_bytes(), 0u);
  // Stored again: nothing is dropped, the bound holds by waiting once more.
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (int seq = 41; seq <= 48; ++seq) writer.log(line_of(seq, 1000));
    done = true;
  });
  while (writer.queued() < 4 && !done.load()) std::this_thread::yield();
  EXPECT_FALSE(done.load()) << "four lines fill the bound: the fifth waits for a flush";
  while (!done.load()) {
    (void)writer.flush();
    std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(writer.flush());
  EXPECT_EQ(store.writes.size(), 13u);
  EXPECT_EQ(writer.dropped_lines(), 36u);
}

TEST(TelemetryWriter, EachOutageDropsOneRunOfLinesAndGetsAMarkerOfItsOwn) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriterOptions options{std::chrono::milliseconds(200), &clock};
  options.max_queued_line_bytes = 4 * (sizeof(db::LogLine) + 1000) + 500;
  TelemetryWriter writer(store, options);
  std::int64_t seq = 0;
  for (int outage = 0; outage < 2; ++outage) {
    for (int i = 0; i < 4; ++i) writer.log(line_of(++seq, 1000));
    store.log_failures = {ErrorCode::kUnavailable};
    EXPECT_FALSE(writer.flush());
    writer.log(line_of(++seq, 1000));  // past the bound: dropped
    writer.log(line_of(++seq, 10));    // would fit, but the run of dropped lines goes on
    EXPECT_TRUE(writer.flush());       // back
    writer.log(line_of(++seq, 10));    // stored after the marker
    EXPECT_TRUE(writer.flush());
  }
  const std::vector<std::string> expected = {"log 7:1",  "log 7:2",  "log 7:3",  "log 7:4",
                                             "log 7:5",  "log 7:7",  "log 7:8",  "log 7:9",
                                             "log 7:10", "log 7:11", "log 7:12", "log 7:14"};
  EXPECT_EQ(store.writes, expected);
  EXPECT_EQ(store.texts[4].rfind("tpujobs: 2 log lines and 0 metric points were dropped here", 0),
            0u)
      << store.texts[4];
  EXPECT_EQ(store.texts[10].rfind("tpujobs: 2 log lines", 0), 0u) << store.texts[10];
  EXPECT_EQ(writer.dropped_lines(), 4u);
}

TEST(TelemetryWriter, LinesBeingStoredStillCountAndAreStoredInBoundedBatches) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriterOptions options{std::chrono::milliseconds(200), &clock};
  const std::size_t per_line = sizeof(db::LogLine) + 100;
  options.max_queued_line_bytes = 100 * per_line;
  options.max_lines_per_store = 3;
  TelemetryWriter writer(store, options);
  for (int seq = 1; seq <= 7; ++seq) writer.log(line_of(seq, 100));
  std::vector<std::size_t> batches, held;
  store.while_storing_logs = [&](const std::vector<db::LogLine>& lines) {
    batches.push_back(lines.size());
    held.push_back(writer.queued_line_bytes());
  };
  EXPECT_TRUE(writer.flush());
  EXPECT_EQ(batches, (std::vector<std::size_t>{3, 3, 1}));
  // Taken by the flush, not yet stored: still held (a producer would wait
  // for them), released batch by batch.
  EXPECT_EQ(held, (std::vector<std::size_t>{7 * per_line, 4 * per_line, per_line}));
  EXPECT_EQ(writer.queued_line_bytes(), 0u);
  EXPECT_EQ(store.writes.size(), 7u);
}

// A job's runner as the agent's Sink drives the writer: each line takes
// the seq log() answered, each point the next seq whether stored or not.
struct ChattyJob {
  TelemetryWriter& writer;
  std::int64_t id;
  std::int64_t next_line = 1, next_point = 1;
  void output(int lines, int points) {
    for (int i = 0; i < lines; ++i) next_line = writer.log(line(id, next_line));
    for (int i = 0; i < points; ++i) writer.metric(point(id, next_point++));
  }
};

std::vector<std::string> writes_of(const FakeStore& store, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& w : store.writes)
    if (w.rfind(prefix, 0) == 0) out.push_back(w);
  return out;
}

TEST(TelemetryWriter, AJobPastItsOutputRateHasTheRestDroppedAndItsLogSaysHowManyWhere) {
  FakeStore store;
  base::FakeClock clock;
  TelemetryWriterOptions options{std::chrono::milliseconds(200), &clock};
  options.output_per_second = 10;  // a burst of 100
  TelemetryWriter writer(store, options);
  ChattyJob chatty{writer, 7};
  ChattyJob quiet{writer, 8};
  chatty.output(130, 150);
  quiet.output(5, 5);
  EXPECT_EQ(writer.limited_lines(), 30u);
  EXPECT_EQ(writer.limited_points(), 50u);
  EXPECT_EQ(chatty.next_line, 101) << "a dropped line takes no seq";
  ASSERT_TRUE(writer.flush());
  EXPECT_EQ(writes_of(store, "log 7:").size(), 100u);
  EXPECT_EQ(writes_of(store, "metric 7:").size(), 100u);
  EXPECT_EQ(writes_of(store, "log 8:").size(), 5u) << "another job's bound is its own";
  EXPECT_EQ(writes_of(store, "metric 8:").size(), 5u);

  // A second later: ten more of each. The first line is preceded by the
  // marker, in the place of the first dropped line; the points past the
  // dropped ones keep their seqs.
  clock.advance(std::chrono::seconds(1));
  chatty.output(1, 1);
  EXPECT_EQ(chatty.next_line, 103);
  store.writes.clear();
  store.texts.clear();
  ASSERT_TRUE(writer.flush());
  const std::vector<std::string> next{"log 7:101", "log 7:102", "metric 7:151"};
  EXPECT_EQ(store.writes, next);
  EXPECT_EQ(store.texts.front(),
            "tpujobs: 30 log lines and 50 metric points were dropped so far in this run: the "
            "job wrote more than 10 of each a second (--job-output-rate)");

  // Within ten seconds of that line, the next drops wait to be said: a job
  // just past its bound does not get a marker between every two lines.
  chatty.output(20, 0);
  EXPECT_EQ(chatty.next_line, 112);
  clock.advance(std::chrono::seconds(1));
  chatty.output(1, 0);
  EXPECT_EQ(chatty.next_line, 113) << "no marker before it";
  // What was not said yet is said at its end.
  store.writes.clear();
  store.texts.clear();
  ASSERT_TRUE(writer.flush_job(7));
  EXPECT_EQ(store.writes.size(), 11u);
  EXPECT_EQ(store.writes.back(), "log 7:113");
  EXPECT_EQ(store.texts.back(),
            "tpujobs: 11 log lines and 0 metric points were dropped since the previous line "
            "like this one: the job wrote more than 10 of each a second (--job-output-rate)");
  // A new run of the job starts with a whole burst.
  chatty.next_line = 114;
  chatty.output(100, 0);
  EXPECT_EQ(chatty.next_line, 214);
}

TEST(TelemetryWriter, WithoutAnOutputRateNothingIsDroppedAtAnySpeed) {
  Fixture f;  // output_per_second 0
  ChattyJob chatty{f.writer, 7};
  chatty.output(5000, 5000);
  EXPECT_EQ(chatty.next_line, 5001);
  ASSERT_TRUE(f.writer.flush());
  EXPECT_EQ(f.store.writes.size(), 10000u);
  EXPECT_EQ(f.writer.limited_lines() + f.writer.limited_points(), 0u);
}

TEST(TelemetryJson, MetricValuesLeaveOutWhatJsonCannotHold) {
  EXPECT_EQ(
      metric_values_json(
          {{"loss", 0.5}, {"nan", std::nan("")}, {"inf", std::numeric_limits<double>::infinity()}}),
      R"({"loss":0.5})");
}

}  // namespace
}  // namespace tpujobs::service
