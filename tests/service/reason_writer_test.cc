#include "service/reason_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace tpujobs::service {
namespace {

using Batch = ReasonWriter::Batch;

// What the writer stored, and what it told after.
struct Recorder {
  std::mutex mutex;
  std::vector<Batch> stored;              // the statements, in order
  std::vector<ReasonWriter::Term> terms;  // each statement's
  std::vector<Batch> told;                // handed to `stored` after a write that landed
  std::vector<Batch> unknown;
  bool refuse = false;

  ReasonWriter::Hooks hooks() {
    ReasonWriter::Hooks h;
    h.store = [this](const Batch& batch, ReasonWriter::Term term) {
      std::lock_guard lock(mutex);
      terms.push_back(term);
      if (refuse) return base::Status(base::make_error(base::ErrorCode::kUnavailable, "down"));
      stored.push_back(batch);
      return base::Status::Ok();
    };
    h.stored = [this](const Batch& batch) {
      std::lock_guard lock(mutex);
      told.push_back(batch);
    };
    h.unknown = [this](const Batch& batch) {
      std::lock_guard lock(mutex);
      unknown.push_back(batch);
    };
    return h;
  }
  std::size_t reasons_stored() {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const Batch& b : stored) n += b.size();
    return n;
  }
};

TEST(ReasonWriter, AJobsNewestReasonReplacesOneNotWrittenYet) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 100);
  writer.hand({{2, "old"}, {1, "a"}}, 1);
  writer.hand({{2, "new"}, {3, std::nullopt}}, 1);
  writer.flush();
  ASSERT_EQ(1u, r.stored.size());
  EXPECT_EQ((Batch{{1, "a"}, {2, "new"}, {3, std::nullopt}}), r.stored[0]);
  EXPECT_EQ(r.stored, r.told) << "the views are told what was stored";
  EXPECT_EQ(1, writer.writes());
  EXPECT_EQ(3, writer.reasons());
  writer.flush();
  EXPECT_EQ(1u, r.stored.size()) << "nothing left to write";
}

TEST(ReasonWriter, AStatementTakesAtMostItsBatch) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 2);
  writer.hand({{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}, {5, "e"}}, 1);
  writer.flush();
  ASSERT_EQ(3u, r.stored.size());
  EXPECT_EQ((Batch{{1, "a"}, {2, "b"}}), r.stored[0]);
  EXPECT_EQ((Batch{{5, "e"}}), r.stored[2]);
}

TEST(ReasonWriter, AFailedWriteIsToldOnceAndItsJobsAreForgottenByTheViews) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 100);
  r.refuse = true;
  writer.hand({{7, "a"}}, 1);
  writer.flush();
  EXPECT_TRUE(r.told.empty());
  ASSERT_EQ(1u, r.unknown.size()) << "it may have landed";
  EXPECT_EQ((Batch{{7, "a"}}), r.unknown[0]);
  EXPECT_TRUE(writer.take_failure());
  EXPECT_FALSE(writer.take_failure()) << "told once";
  EXPECT_EQ(0, writer.reasons());
}

TEST(ReasonWriter, ItsThreadWritesWhatIsHandedWithoutTheCallerWaiting) {
  Recorder r;
  // The first statement is held until the caller has handed more: a pass
  // never waits on a write.
  std::mutex gate;
  std::condition_variable opened;
  bool entered = false, open = false;
  ReasonWriter::Hooks hooks = r.hooks();
  hooks.store = [&, store = hooks.store](const Batch& batch, ReasonWriter::Term term) {
    {
      std::unique_lock lock(gate);
      entered = true;
      opened.notify_all();
      opened.wait(lock, [&] { return open; });
    }
    return store(batch, term);
  };
  ReasonWriter writer(hooks, base::real_clock(), 1000);
  writer.start();
  writer.hand({{1000, "first"}}, 1);
  {
    std::unique_lock lock(gate);
    EXPECT_TRUE(opened.wait_for(lock, std::chrono::seconds(30), [&] { return entered; }));
  }
  // Handed and flushed while the writer's statement is still held.
  auto handed = std::async(std::launch::async, [&] {
    writer.hand({{1001, "while the first is written"}}, 1);
    writer.flush();
  });
  EXPECT_EQ(std::future_status::ready, handed.wait_for(std::chrono::seconds(30)))
      << "the caller waited on the write under way";
  {
    std::lock_guard lock(gate);
    open = true;
  }
  opened.notify_all();
  handed.wait();
  for (std::int64_t job = 1; job <= 298; ++job) {
    writer.hand({{job, "reason " + std::to_string(job)}}, 1);
    writer.flush();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (r.reasons_stored() < 300 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  writer.stop();
  EXPECT_EQ(300u, r.reasons_stored());
  std::lock_guard lock(r.mutex);
  std::vector<std::int64_t> jobs;
  for (const Batch& b : r.stored) {
    for (const auto& [job, text] : b) jobs.push_back(job);
  }
  std::vector<std::int64_t> expected;
  for (std::int64_t job = 1; job <= 298; ++job) expected.push_back(job);
  expected.push_back(1000);
  expected.push_back(1001);
  std::sort(jobs.begin(), jobs.end());
  EXPECT_EQ(expected, jobs) << "each once";
}

TEST(ReasonWriter, WhatIsDroppedIsNotWrittenAndWhatIsHandedAfterIs) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 100);
  writer.hand({{1, "a"}, {2, "b"}}, 1);
  writer.drop();  // a leader that lost its lock
  writer.hand({{3, "c"}}, 1);
  writer.flush();
  ASSERT_EQ(1u, r.stored.size());
  EXPECT_EQ((Batch{{3, "c"}}), r.stored[0]);
}

// Each statement carries the leader's term its reasons were derived under
// (the store writes them only while it holds); reasons of a later term
// replace the earlier term's not written yet.
TEST(ReasonWriter, EachWriteCarriesItsReasonsTermAndANewTermDropsTheOld) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 100);
  writer.hand({{1, "a"}}, 4);
  writer.flush();
  writer.hand({{1, "b"}, {2, "c"}}, 4);
  writer.hand({{3, "d"}}, 5);  // the lead lost and taken again
  writer.flush();
  ASSERT_EQ(2u, r.stored.size());
  EXPECT_EQ((std::vector<ReasonWriter::Term>{4, 5}), r.terms);
  EXPECT_EQ((Batch{{3, "d"}}), r.stored[1]) << "the earlier term's reasons are not written";
}

TEST(ReasonWriter, StoppedItDropsWhatItHasNotWritten) {
  Recorder r;
  base::FakeClock clock;
  ReasonWriter writer(r.hooks(), clock, 100);
  writer.hand({{1, "a"}}, 1);
  writer.stop();
  writer.flush();
  EXPECT_TRUE(r.stored.empty()) << "the next leader writes every reason anew";
}

}  // namespace
}  // namespace tpujobs::service
