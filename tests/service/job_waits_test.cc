#include "service/job_waits.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>

namespace tpujobs::service {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The jobs' states as a read gives them, and the reads counted.
struct FakeJobs {
  base::Mutex mutex;
  std::map<std::int64_t, std::string> states GUARDED_BY(mutex);
  std::atomic<int> reads{0};

  void set(std::int64_t id, std::string state) {
    base::MutexLock lock(mutex);
    states[id] = std::move(state);
  }
  JobWaits::Read read() {
    return [this](std::int64_t id, const std::string&) -> base::Result<json> {
      ++reads;
      base::MutexLock lock(mutex);
      const auto it = states.find(id);
      if (it == states.end()) return base::make_error(base::ErrorCode::kNotFound, "no job");
      return json{{"id", id}, {"state", it->second}};
    };
  }
};

// Every wait looks again only every hour unless woken: an answer within the
// test's deadline came from wake(), not from the poll.
struct Fixture {
  FakeJobs jobs;
  TimerQueue timers;
  JobWaits waits{timers, base::real_clock(), jobs.read(), std::chrono::hours(1)};
  base::Clock::time_point in_an_hour() { return base::real_clock().now() + 1h; }
  // Until the waits' first looks (a wait's first read) have been made.
  bool reads_reach(int n) {
    for (auto until = std::chrono::steady_clock::now() + 30s;
         jobs.reads < n && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(1ms);
    return jobs.reads >= n;
  }
};

// A promise of the wait's answer: its state, or the error's message.
std::future<std::string> answer_of(JobWaits& waits, std::int64_t id,
                                   base::Clock::time_point deadline) {
  auto promise = std::make_shared<std::promise<std::string>>();
  std::future<std::string> answer = promise->get_future();
  waits.wait(id, "t", deadline, [promise](base::Result<json> view) {
    promise->set_value(view.ok() ? (*view)["state"].get<std::string>() : view.error().message);
  });
  return answer;
}

// The wait's answer once given, within the test's deadline.
std::string answered(std::future<std::string>& answer) {
  if (answer.wait_for(30s) != std::future_status::ready) return "(not answered)";
  return answer.get();
}

TEST(JobWaits, AWaitIsAnsweredWhenItsJobsEndIsAnnouncedNotAtTheNextPoll) {
  Fixture f;
  f.jobs.set(1, "RUNNING");
  f.jobs.set(2, "RUNNING");
  std::future<std::string> one = answer_of(f.waits, 1, f.in_an_hour());
  std::future<std::string> two = answer_of(f.waits, 2, f.in_an_hour());
  ASSERT_TRUE(f.reads_reach(2));
  f.jobs.set(1, "SUCCEEDED");
  f.jobs.set(2, "SUCCEEDED");  // ended too, but not announced
  f.waits.wake({1});
  EXPECT_EQ(answered(one), "SUCCEEDED");
  EXPECT_EQ(two.wait_for(200ms), std::future_status::timeout);
  f.waits.wake({2});
  EXPECT_EQ(answered(two), "SUCCEEDED");
}

TEST(JobWaits, AWakeBeforeTheEndLeavesTheWaitWaiting) {
  Fixture f;
  f.jobs.set(1, "STARTING");
  std::future<std::string> one = answer_of(f.waits, 1, f.in_an_hour());
  ASSERT_TRUE(f.reads_reach(1));
  f.jobs.set(1, "RUNNING");
  f.waits.wake({1});
  EXPECT_EQ(one.wait_for(200ms), std::future_status::timeout);
  f.jobs.set(1, "CANCELLED");
  f.waits.wake({1});
  f.waits.wake({1});  // announced twice: answered once (a second answer would throw)
  EXPECT_EQ(answered(one), "CANCELLED");
}

TEST(JobWaits, AnEndedJobOrAFailedReadIsAnsweredAtOnceAndAWaitEndsAtItsDeadline) {
  Fixture f;
  f.jobs.set(1, "FAILED");
  std::future<std::string> ended = answer_of(f.waits, 1, f.in_an_hour());
  std::future<std::string> unknown = answer_of(f.waits, 9, f.in_an_hour());
  f.jobs.set(2, "QUEUED");
  std::future<std::string> due = answer_of(f.waits, 2, base::real_clock().now() + 50ms);
  EXPECT_EQ(answered(ended), "FAILED");
  EXPECT_EQ(answered(unknown), "no job");
  EXPECT_EQ(answered(due), "QUEUED");
}

// A stopping service answers its open waits (the HTTP server is destroyed
// after, and an answer left pending would write to a connection it no
// longer has), and each wait begun after: unavailable, so a client waits
// again on the restarted service. The answers hold nothing afterwards.
TEST(JobWaits, ClosingAnswersEveryOpenWaitAndEachOneAfterAsUnavailable) {
  Fixture f;
  f.jobs.set(1, "RUNNING");
  f.jobs.set(2, "QUEUED");
  auto connection = std::make_shared<int>(0);  // what an answer holds
  std::promise<base::ErrorCode> first;
  f.waits.wait(1, "t", f.in_an_hour(), [&first, connection](base::Result<json> view) {
    first.set_value(view.ok() ? base::ErrorCode::kInternal : view.error().code);
  });
  std::future<std::string> second = answer_of(f.waits, 2, f.in_an_hour());
  ASSERT_TRUE(f.reads_reach(2));
  std::weak_ptr<int> held = connection;
  connection.reset();
  EXPECT_FALSE(held.expired()) << "an open wait holds its answer";

  f.waits.close();
  std::future<base::ErrorCode> code = first.get_future();
  ASSERT_EQ(code.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(code.get(), base::ErrorCode::kUnavailable);
  EXPECT_EQ(answered(second), "the service is stopping; wait again once it is back");
  EXPECT_TRUE(held.expired()) << "an answered wait still holds its connection";

  f.jobs.set(1, "SUCCEEDED");
  f.waits.wake({1, 2});  // answered already: nothing more
  std::future<std::string> later = answer_of(f.waits, 2, f.in_an_hour());
  EXPECT_EQ(answered(later), "the service is stopping; wait again once it is back");
  std::future<std::string> ended = answer_of(f.waits, 1, f.in_an_hour());
  EXPECT_EQ(answered(ended), "SUCCEEDED") << "an ended job is still answered with its view";
}

}  // namespace
}  // namespace tpujobs::service
