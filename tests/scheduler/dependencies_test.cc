#include "scheduler/dependencies.h"

#include <gtest/gtest.h>

#include <map>

namespace tpujobs::scheduler {
namespace {

using base::JobState;
using std::chrono::minutes;
using std::chrono::seconds;

std::string verdict(DependencyCondition condition, std::optional<JobState> state) {
  return std::string(verdict_name(judge_dependency(condition, state)));
}

TEST(Dependencies, SucceededIsSlurmsAfterok) {
  EXPECT_EQ("Waiting", verdict(DependencyCondition::kSucceeded, JobState::kQueued));
  EXPECT_EQ("Waiting", verdict(DependencyCondition::kSucceeded, JobState::kStarting));
  EXPECT_EQ("Waiting", verdict(DependencyCondition::kSucceeded, JobState::kRunning));
  EXPECT_EQ("Satisfied", verdict(DependencyCondition::kSucceeded, JobState::kSucceeded));
  EXPECT_EQ("NeverSatisfied", verdict(DependencyCondition::kSucceeded, JobState::kFailed));
  EXPECT_EQ("NeverSatisfied", verdict(DependencyCondition::kSucceeded, JobState::kCancelled));
}

TEST(Dependencies, FailedIsSlurmsAfternotokCancelsIncluded) {
  EXPECT_EQ("Waiting", verdict(DependencyCondition::kFailed, JobState::kRunning));
  EXPECT_EQ("NeverSatisfied", verdict(DependencyCondition::kFailed, JobState::kSucceeded));
  EXPECT_EQ("Satisfied", verdict(DependencyCondition::kFailed, JobState::kFailed));
  EXPECT_EQ("Satisfied", verdict(DependencyCondition::kFailed, JobState::kCancelled));
}

TEST(Dependencies, FinishedIsSlurmsAfterany) {
  EXPECT_EQ("Waiting", verdict(DependencyCondition::kFinished, JobState::kQueued));
  for (JobState end : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_EQ("Satisfied", verdict(DependencyCondition::kFinished, end));
  }
}

TEST(Dependencies, AJobThatDoesNotExistNeverSatisfies) {
  EXPECT_EQ("NeverSatisfied", verdict(DependencyCondition::kFinished, std::nullopt));
}

TEST(Dependencies, NeverSatisfiedWinsOverWaitingAndSaysWhy) {
  const std::map<std::int64_t, JobState> states = {
      {1, JobState::kSucceeded}, {2, JobState::kRunning}, {3, JobState::kFailed}};
  auto state_of = [&](std::int64_t id) -> std::optional<JobState> {
    auto it = states.find(id);
    return it == states.end() ? std::nullopt : std::optional<JobState>(it->second);
  };
  DependencyCheck waiting = check_dependencies(
      {{1, DependencyCondition::kSucceeded}, {2, DependencyCondition::kSucceeded}}, state_of);
  EXPECT_EQ(DependencyVerdict::kWaiting, waiting.verdict);
  EXPECT_EQ(2, waiting.deciding->job);
  EXPECT_EQ("job 2 has not finished (RUNNING); waits for it to succeed", waiting.detail);

  DependencyCheck never = check_dependencies(
      {{2, DependencyCondition::kSucceeded}, {3, DependencyCondition::kSucceeded}}, state_of);
  EXPECT_EQ(DependencyVerdict::kNeverSatisfied, never.verdict);
  EXPECT_EQ("job 3 ended FAILED; the job needed it to succeed", never.detail);

  DependencyCheck met = check_dependencies(
      {{1, DependencyCondition::kFinished}, {3, DependencyCondition::kFailed}}, state_of);
  EXPECT_EQ(DependencyVerdict::kSatisfied, met.verdict);
  EXPECT_FALSE(met.deciding);
  EXPECT_EQ(DependencyVerdict::kSatisfied, check_dependencies({}, state_of).verdict);
}

TEST(Dependencies, ConditionNamesRoundTrip) {
  for (DependencyCondition c : {DependencyCondition::kSucceeded, DependencyCondition::kFailed,
                                DependencyCondition::kFinished}) {
    EXPECT_EQ(c, parse_condition(condition_name(c)));
  }
  EXPECT_FALSE(parse_condition("afterok"));
  EXPECT_FALSE(parse_condition("Succeeded"));
}

TEST(StartDeadline, PassesOnceTheDurationHasElapsed) {
  const base::Clock::wall_time_point submitted{std::chrono::hours(1000)};
  EXPECT_FALSE(start_deadline_passed(submitted, std::nullopt, submitted + std::chrono::hours(100)));
  EXPECT_FALSE(
      start_deadline_passed(submitted, minutes(30), submitted + minutes(29) + seconds(59)));
  EXPECT_TRUE(start_deadline_passed(submitted, minutes(30), submitted + minutes(30)));
  EXPECT_TRUE(start_deadline_passed(submitted, minutes(30), submitted + minutes(31)));
}

}  // namespace
}  // namespace tpujobs::scheduler
