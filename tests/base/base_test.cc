#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

#include "base/clock.h"
#include "base/job_state.h"
#include "base/result.h"

namespace tpujobs::base {
namespace {

using std::chrono::milliseconds;

TEST(JobStateNames, EveryStateRoundTripsThroughItsName) {
  for (JobState state : {JobState::kQueued, JobState::kStarting, JobState::kRunning,
                         JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    ASSERT_EQ(state, parse_job_state(to_string(state)));
  }
  EXPECT_EQ("QUEUED", to_string(JobState::kQueued));
  EXPECT_EQ("CANCELLED", to_string(JobState::kCancelled));
}

TEST(JobStateNames, OnlyExactNamesParse) {
  EXPECT_FALSE(parse_job_state("queued"));
  EXPECT_FALSE(parse_job_state("QUEUED "));
  EXPECT_FALSE(parse_job_state(""));
}

TEST(JobStateNames, TerminalStatesAreTheThreeEnds) {
  EXPECT_FALSE(is_terminal(JobState::kQueued));
  EXPECT_FALSE(is_terminal(JobState::kStarting));
  EXPECT_FALSE(is_terminal(JobState::kRunning));
  EXPECT_TRUE(is_terminal(JobState::kSucceeded));
  EXPECT_TRUE(is_terminal(JobState::kFailed));
  EXPECT_TRUE(is_terminal(JobState::kCancelled));
}

TEST(FakeClock, MovesOnlyWhenToldAndSleepReturnsAtOnce) {
  FakeClock clock;
  const Clock::time_point start = clock.now();
  const Clock::wall_time_point wall_start = clock.wall_now();
  EXPECT_EQ(start, clock.now());
  clock.sleep_for(milliseconds(1500));
  EXPECT_EQ(start + milliseconds(1500), clock.now());
  EXPECT_EQ(wall_start + milliseconds(1500), clock.wall_now());
  clock.advance(milliseconds(-5));  // time never goes back
  EXPECT_EQ(start + milliseconds(1500), clock.now());
}

TEST(FakeClock, CanAdvanceOnEveryRead) {
  FakeClock clock(milliseconds(250));
  const Clock::time_point first = clock.now();
  EXPECT_EQ(first + milliseconds(250), clock.now());
}

TEST(FakeClock, ATimedWaitThatIsNotDoneMovesPastItsTimeoutAtOnce) {
  FakeClock clock;
  Mutex mutex;
  std::condition_variable cv;
  MutexLock lock(mutex);
  const Clock::time_point start = clock.now();
  bool ready = false;
  EXPECT_FALSE(clock.wait_for(lock, cv, milliseconds(700), [&] { return ready; }));
  EXPECT_EQ(start + milliseconds(700), clock.now());
  ready = true;
  EXPECT_TRUE(clock.wait_for(lock, cv, milliseconds(700), [&] { return ready; }));
  EXPECT_EQ(start + milliseconds(700), clock.now());  // done already: no time passes
}

TEST(RealClock, ATimedWaitEndsWhenDoneOrAtItsTimeout) {
  Clock& clock = real_clock();
  Mutex mutex;
  std::condition_variable cv;
  bool ready = false;
  std::thread notifier([&] {
    MutexLock lock(mutex);
    ready = true;
    cv.notify_all();
  });
  {
    MutexLock lock(mutex);
    EXPECT_TRUE(clock.wait_for(lock, cv, std::chrono::minutes(5), [&] { return ready; }));
  }
  notifier.join();
  MutexLock lock(mutex);
  const Clock::time_point before = clock.now();
  EXPECT_FALSE(clock.wait_for(lock, cv, milliseconds(5), [] { return false; }));
  EXPECT_GE(clock.now() - before, milliseconds(5));
}

TEST(RealClock, SteadyTimeDoesNotGoBack) {
  Clock& clock = real_clock();
  const Clock::time_point before = clock.now();
  clock.sleep_for(milliseconds(1));
  EXPECT_GE(clock.now() - before, milliseconds(1));
}

TEST(Result, HoldsAValueOrAnError) {
  Result<int> value = 7;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(7, *value);
  Result<int> error = make_error(ErrorCode::kNotFound, "no job 3");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(ErrorCode::kNotFound, error.code());
  EXPECT_EQ("NOT_FOUND", to_string(error.code()));
  EXPECT_EQ("no job 3", error.error().message);
  EXPECT_TRUE(Status::Ok().ok());
}

// A parser's errors: kInvalid with every field's problem, the first one
// as the message (for a log) and its hint.
TEST(Result, InvalidFieldsCarriesEveryFieldAndTheFirstAsTheMessage) {
  const Result<int> bad = invalid_fields({{"trainer.devices", "must be at least 1", "e.g. 8"},
                                          {"data.batch_size", "must be an integer", ""}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ErrorCode::kInvalid, bad.code());
  EXPECT_EQ("trainer.devices: must be at least 1", bad.error().message);
  EXPECT_EQ("e.g. 8", bad.error().hint);
  ASSERT_EQ(2u, bad.error().fields.size());
  EXPECT_EQ("data.batch_size", bad.error().fields[1].field);
  const Result<int> whole = invalid_fields({{"", "the job spec must be a JSON object", ""}});
  EXPECT_EQ("the job spec must be a JSON object", whole.error().message);
}

// Inside a module, errors that carry something else keep the same idiom
// with their own error type (module boundaries use Error).
TEST(Result, CarriesARicherErrorType) {
  struct FieldProblem {
    std::string field, message;
  };
  const Result<int, FieldProblem> bad = FieldProblem{"data.batch_size", "must be at least 1"};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "data.batch_size");
  const Result<int, FieldProblem> good = 32;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 32);
}

}  // namespace
}  // namespace tpujobs::base
