#include "service/job_lifecycle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

bool terminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

// Every named transition, as the job manager, the leader and the agents make them.
std::vector<db::Transition> every_transition() {
  return {
      lifecycle::place_on_agent(1, "Placed on agent a", "{}", "a", 3, 11),
      lifecycle::run(1, "Training started on agent a", 11),
      lifecycle::requeue_unstarted(1, "Agent a lost before the job started", 11),
      lifecycle::preempt(1, 2, 11),
      lifecycle::cancel_placed(1, 11),
      lifecycle::requeue_elsewhere(1, "Agent a lost", 11, true,
                                   {JobState::kStarting, JobState::kRunning}),
      lifecycle::finish(1, JobState::kSucceeded, "Training finished", std::nullopt, "{}", 11),
      lifecycle::finish(1, JobState::kFailed, "X", lifecycle::error_text("X", "m", "h"), "{}", 11),
      lifecycle::cancel_queued(1),
      lifecycle::cancel_unstartable(1, "StartDeadlineExceeded", "not started in 30m", "h"),
      lifecycle::reject(1, {JobState::kQueued}, "on restart", "spec no longer valid"),
      lifecycle::reject(1, {JobState::kStarting, JobState::kRunning}, "by agent a",
                        "spec no longer valid", 11),
      lifecycle::fail_unavailable(1, "a host failed", 11),
      lifecycle::release_lease(1),
      lifecycle::place_started(lifecycle::place_on_agent(1, "Placed on agent a", "{}", "a", 3, 11),
                               "agent a"),
  };
}

TEST(JobLifecycle, NoTransitionLeavesATerminalState) {
  for (const db::Transition& t : every_transition()) {
    ASSERT_FALSE(t.from.empty()) << t.reason;
    for (JobState from : t.from) EXPECT_FALSE(terminal(from)) << t.reason;
  }
}

TEST(JobLifecycle, EveryTransitionToATerminalStateSetsFinishedAtAndNoOtherDoes) {
  for (const db::Transition& t : every_transition()) {
    EXPECT_EQ(t.set_finished_at, terminal(t.to)) << t.reason;
    EXPECT_FALSE(t.reason.empty());
  }
}

TEST(JobLifecycle, FailedAndCancelledCarryAnErrorWithTypeMessageAndHint) {
  for (const db::Transition& t : every_transition()) {
    if (t.to != JobState::kFailed && t.to != JobState::kCancelled) continue;
    ASSERT_TRUE(t.error_json) << t.reason;
    json error = json::parse(*t.error_json);
    EXPECT_TRUE(error.contains("type") && error.contains("message") && error.contains("hint"))
        << *t.error_json;
  }
}

// A cancel answered 202 is honoured: every end but CANCELLED names the
// CANCELLED end the database writes instead when the job's cancel is stored
// (the agent's SUCCEEDED or FAILED, the leader's UNAVAILABLE, a rejection,
// an admin's release); no other transition does.
TEST(JobLifecycle, EveryEndButCancelledEndsAJobWhoseCancelIsStoredCancelledInstead) {
  for (const db::Transition& t : every_transition()) {
    if (!terminal(t.to) || t.to == JobState::kCancelled) {
      EXPECT_FALSE(t.if_cancel_requested) << t.reason;
      continue;
    }
    ASSERT_TRUE(t.if_cancel_requested) << t.reason;
    EXPECT_EQ("Cancelled by request as it ended (" + t.reason + ")", t.if_cancel_requested->reason);
    const json error = json::parse(t.if_cancel_requested->error_json);
    EXPECT_EQ("CANCELLED", error["type"]);
    EXPECT_EQ("the job was cancelled", error["message"]);
  }
}

// A placement is the one write a database crash may undo: the job is placed
// again. Every other transition, the agent's own RUNNING included, waits for
// the disk, and with it every placement before it. A placement started (its
// RUNNING in the same statement) is a placement too.
TEST(JobLifecycle, OnlyAPlacementCommitsWithoutWaitingForTheDisk) {
  for (const db::Transition& t : every_transition()) {
    EXPECT_EQ(t.asynchronous_commit, t.to == JobState::kStarting) << t.reason;
  }
}

TEST(JobLifecycle, OnlyAQueuedJobIsPlaced) {
  db::Transition placed = lifecycle::place_on_agent(1, "r", "{}", "a", 7, 70);
  EXPECT_EQ(placed.from, std::vector{JobState::kQueued});
  EXPECT_EQ(placed.agent, "a");
  EXPECT_EQ(placed.placement_epoch, 7);
  EXPECT_EQ(placed.placement, 70);
  EXPECT_TRUE(placed.clear_preempted_by);
}

// A job reads Preempted from its victim's mark until it is placed again,
// and only when its preemption requeued it: a victim requeued for another
// reason first (its agent lost or stopping, a service restart) does not.
TEST(JobLifecycle, OnlyThePreemptionsOwnRequeueKeepsTheVictimsMark) {
  EXPECT_EQ(lifecycle::preempt(1, 2, 11).preempted_by, 2);
  EXPECT_FALSE(lifecycle::preempt(1, 2, 11).clear_preempted_by);
  for (const db::Transition& t :
       {lifecycle::requeue_elsewhere(1, "Agent a lost", 11, true,
                                     {JobState::kStarting, JobState::kRunning}),
        lifecycle::requeue_unstarted(1, "Agent a lost before the job started", 11)}) {
    EXPECT_TRUE(t.clear_preempted_by) << t.reason;
  }
}

// Every transition of a placed job but an admin's release is fenced: it
// lands only under the placement (number 11 here, of agent a's epoch 3) it
// was decided about. That the fence is the placement's number, not the
// epoch, is the database's to show
// (ClusterRepositoryTest.WritesOfAnEarlierPlacementUnderTheSameEpochDoNotLand).
TEST(JobLifecycle, EveryTransitionOfAPlacedJobIsFencedByItsPlacement) {
  int fenced = 0;
  for (const db::Transition& t : every_transition()) {
    const bool placed_only =
        std::find(t.from.begin(), t.from.end(), JobState::kQueued) == t.from.end();
    if (!placed_only || t.reason == "Lease released") continue;
    EXPECT_EQ(t.require_placement, 11) << t.reason;
    ++fenced;
  }
  EXPECT_EQ(9, fenced);
}

// An end that the job's own copy does not write (the leader's, an admin's
// release) takes the placement off, so that nothing the copy writes after
// (its progress, until its agent stops it) lands on the ended job; a
// placement kept after the end is the ending copy's own.
TEST(JobLifecycle, AnEndItsCopyDidNotWriteTakesThePlacementOff) {
  for (const db::Transition& t : {lifecycle::release_lease(1), lifecycle::cancel_placed(1, 11),
                                  lifecycle::fail_unavailable(1, "check the agent", 11)}) {
    EXPECT_TRUE(t.clear_placement) << t.reason;
  }
}

// A placement its agent starts as it commits goes on to RUNNING with the
// very reason the agent's own start writes. It does not wait for the disk:
// the copy's first write, synchronous, does.
TEST(JobLifecycle, APlacementStartedRunsWithTheAgentsReasonWithoutWaitingForTheDisk) {
  db::Transition placed = lifecycle::place_on_agent(1, "r", "{}", "a", 7, 70);
  db::Transition started = lifecycle::place_started(placed, "agent a");
  EXPECT_EQ(started.from, std::vector{JobState::kQueued});
  EXPECT_EQ(started.to, JobState::kStarting) << "the first of its two events";
  EXPECT_EQ(started.require_alive, placed.require_alive);
  EXPECT_TRUE(started.asynchronous_commit);
  ASSERT_TRUE(started.then_running);
  EXPECT_EQ("Training started on agent a",
            lifecycle::running_text(*started.then_running, std::nullopt));
  EXPECT_EQ("Resumed from the checkpoint at step 40 on agent a",
            lifecycle::running_text(*started.then_running, 40));
  EXPECT_EQ(
      started.then_running->resumed_before_step + "40" + started.then_running->resumed_after_step,
      lifecycle::running_text(*started.then_running, 40))
      << "the statement composes the same text";
  EXPECT_FALSE(placed.then_running);
}

TEST(JobLifecycle, AnAgentsWritesAreFencedByItsPlacementEpoch) {
  EXPECT_EQ(lifecycle::run(1, "r", 9).require_placement, 9);
  db::Transition end = lifecycle::finish(1, JobState::kSucceeded, "r", std::nullopt, "{}", 9);
  EXPECT_EQ(end.require_placement, 9);
  EXPECT_EQ(end.from, std::vector{JobState::kRunning}) << "an agent ends only the run it started";
  db::Transition preempted = lifecycle::preempt(1, 2, 9);
  EXPECT_EQ(preempted.require_placement, 9);
  EXPECT_TRUE(preempted.clear_placement && preempted.clear_allocation);
  db::Transition moved = lifecycle::requeue_elsewhere(1, "r", 9, true, {JobState::kRunning});
  EXPECT_EQ(moved.require_placement, 9);
  EXPECT_TRUE(moved.clear_placement && moved.clear_allocation);
  EXPECT_TRUE(moved.increment_attempt);
  EXPECT_FALSE(
      lifecycle::requeue_elsewhere(1, "r", 9, false, {JobState::kRunning}).increment_attempt);
  EXPECT_EQ(lifecycle::fail_unavailable(1, "h", 9).require_placement, 9);
}

TEST(JobLifecycle, AnUnstartedRequeueSpendsNoRetryAndIsCounted) {
  db::Transition t = lifecycle::requeue_unstarted(1, "lost", 4);
  EXPECT_EQ(t.from, std::vector{JobState::kStarting});
  EXPECT_FALSE(t.increment_attempt);
  EXPECT_TRUE(t.count_unstarted_requeue);
  EXPECT_EQ(t.require_placement, 4);
}

TEST(JobLifecycle, AJobThatCanNeverStartNamesWhyInItsError) {
  db::Transition t = lifecycle::cancel_unstartable(
      4, "DependencyNeverSatisfied", "job 3 ended FAILED", "resubmit without the dependency");
  EXPECT_EQ(t.from, std::vector{JobState::kQueued});
  EXPECT_EQ(t.to, JobState::kCancelled);
  EXPECT_EQ(t.reason, "DependencyNeverSatisfied: job 3 ended FAILED");
  json error = json::parse(*t.error_json);
  EXPECT_EQ(error["type"], "CANCELLED");
  EXPECT_EQ(error["reason"], "DependencyNeverSatisfied");
  EXPECT_EQ(error["hint"], "resubmit without the dependency");
}

TEST(JobLifecycle, ALostPlacementWithoutRetriesFailsWithTheUpstreamUnavailableText) {
  db::Transition t = lifecycle::fail_unavailable(5, "its agent was lost", 2);
  EXPECT_EQ(t.to, JobState::kFailed);
  json error = json::parse(*t.error_json);
  EXPECT_EQ(error["type"], "UNAVAILABLE");
  EXPECT_EQ(error["message"], "failed to connect to all addresses");
  EXPECT_EQ(error["hint"], "its agent was lost");
}

}  // namespace
}  // namespace tpujobs::service
