// The agent's run supervisor (service/run_supervisor.h): which copies an
// agent starts and stops after one read of the jobs placed on it.
#include "service/run_supervisor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpujobs::service {
namespace {

using nlohmann::json;

constexpr std::int64_t kEpoch = 5;

db::JobRow placed_here(std::int64_t id, std::int64_t epoch = kEpoch) {
  db::JobRow row;
  row.id = id;
  row.state = db::JobState::kRunning;
  row.agent = "a";
  row.placement_epoch = epoch;
  row.placement = 100 + id;  // its placement's number
  row.allocation_json = R"({"agent": "a"})";
  return row;
}

// A slice spanning agents a (rank 0) and b (rank 1), placement `placement`.
db::JobRow spanning(std::int64_t id, std::int64_t placement, std::int64_t b_epoch = kEpoch) {
  db::JobRow row = placed_here(id, /*epoch=*/9);
  row.agent = "a";
  row.placement = placement;
  row.allocation_json =
      json{{"slice",
            {{"placement", placement},
             {"parts",
              {{{"agent", "a"}, {"epoch", 9}, {"first_host", 0}, {"hosts", 2}},
               {{"agent", "b"}, {"epoch", b_epoch}, {"first_host", 2}, {"hosts", 2}}}}}}}
          .dump();
  return row;
}

// The copy of `row`'s placement this agent runs under `epoch`.
RunningCopy copy_of(const db::JobRow& row, std::int64_t epoch,
                    std::optional<SliceRole> slice = std::nullopt, bool handed = false) {
  return {epoch, row.placement.value_or(kNoPlacement), std::move(slice), handed};
}

std::vector<std::int64_t> started(const SupervisionPlan& plan) {
  std::vector<std::int64_t> ids;
  for (const StartRun& s : plan.start) ids.push_back(s.row.id);
  return ids;
}

TEST(RunSupervisor, StartsTheJobsPlacedUnderItsCurrentEpochOnly) {
  const std::vector<db::JobRow> placed{placed_here(1), placed_here(2, /*epoch=*/4)};
  const SupervisionPlan plan = plan_supervision("a", kEpoch, placed, {}, {}, {});
  EXPECT_EQ(std::vector<std::int64_t>{1}, started(plan)) << "job 2 was placed on a lost epoch";
  EXPECT_TRUE(plan.stop.empty());
  EXPECT_EQ(RunStop::kNone, plan.start[0].stop);
  EXPECT_FALSE(plan.start[0].slice);
}

TEST(RunSupervisor, ACopyWhoseJobMovedOnStopsWithoutWriting) {
  const std::map<std::int64_t, RunningCopy> runs{
      {1, copy_of(placed_here(1), kEpoch)},  // no longer listed: requeued or ended
      {2, copy_of(placed_here(2), 4)},       // started under an older epoch
      {3, copy_of(placed_here(3), kEpoch)},  // still here
  };
  const std::vector<db::JobRow> placed{placed_here(2), placed_here(3)};
  const SupervisionPlan plan = plan_supervision("a", kEpoch, placed, {}, runs, {});
  ASSERT_EQ(2u, plan.stop.size());
  EXPECT_EQ(1, plan.stop[0].job);
  EXPECT_EQ(RunStop::kMovedOn, plan.stop[0].why);
  EXPECT_EQ(2, plan.stop[1].job);
  EXPECT_EQ(RunStop::kMovedOn, plan.stop[1].why);
  EXPECT_TRUE(plan.start.empty()) << "a job with a copy is not started twice";
}

// A copy stops at its next step boundary, or later when its thread waits
// (on a store): the looks meanwhile do not name it again for the reason it
// was given (the agent would tell its API service again that the job moved
// on), but do for another.
TEST(RunSupervisor, ACopyStoppingForTheReasonItWasGivenIsNotNamedAgain) {
  auto copy = [](std::int64_t id, RunStop named) {
    RunningCopy run = copy_of(placed_here(id), kEpoch);
    run.named = named;
    return run;
  };
  db::JobRow cancelled = placed_here(3);
  cancelled.cancel_requested = true;
  db::JobRow cancelled_too = placed_here(4);
  cancelled_too.cancel_requested = true;
  const std::map<std::int64_t, RunningCopy> runs{
      {1, copy(1, RunStop::kMovedOn)},     // moved on, and told so
      {2, copy(2, RunStop::kUserCancel)},  // told to cancel, and moved on since
      {3, copy(3, RunStop::kUserCancel)},  // told to cancel
      {4, copy(4, RunStop::kNone)},        // not told yet
  };
  const SupervisionPlan plan =
      plan_supervision("a", kEpoch, {cancelled, cancelled_too}, {}, runs, {});
  ASSERT_EQ(2u, plan.stop.size());
  EXPECT_EQ(2, plan.stop[0].job);
  EXPECT_EQ(RunStop::kMovedOn, plan.stop[0].why);
  EXPECT_EQ(4, plan.stop[1].job);
  EXPECT_EQ(RunStop::kUserCancel, plan.stop[1].why);
  EXPECT_TRUE(plan.start.empty());
}

// The leader in the agent's process hands it a placement as it commits
// (service/local_agent.h), maybe while the agent's read is under way: that
// read may or may not show the placement, so the copy is the next read's to
// judge. Neither stopped as moved on nor started a second time.
TEST(RunSupervisor, ACopyHandedOverSinceTheReadBeganIsLeftToTheNextRead) {
  const std::map<std::int64_t, RunningCopy> handed{
      {1, copy_of(placed_here(1), kEpoch, std::nullopt, /*handed=*/true)}};
  SupervisionPlan plan = plan_supervision("a", kEpoch, {}, {}, handed, {});
  EXPECT_TRUE(plan.stop.empty()) << "a read from before the placement";
  EXPECT_TRUE(plan.start.empty());
  db::JobRow cancelled = placed_here(1);
  cancelled.cancel_requested = true;
  plan = plan_supervision("a", kEpoch, {cancelled}, {}, handed, {});
  EXPECT_TRUE(plan.stop.empty()) << "judged by the next read";
  EXPECT_TRUE(plan.start.empty()) << "a job with a copy is not started twice";

  const std::map<std::int64_t, RunningCopy> judged{{1, copy_of(placed_here(1), kEpoch)}};
  plan = plan_supervision("a", kEpoch, {}, {}, judged, {});
  ASSERT_EQ(1u, plan.stop.size()) << "the next read: gone from it, the copy stops";
  plan = plan_supervision("a", kEpoch, {cancelled}, {}, judged, {});
  ASSERT_EQ(1u, plan.stop.size());
  EXPECT_EQ(RunStop::kUserCancel, plan.stop[0].why);
}

// A job placed again on the same agent's registration is placed under a new
// number (JobRow::placement): after a requeue while its copy was still
// stopping, or after a database crash undid the placement the copy started
// with (a placement commits without waiting for the disk). The copy of the
// earlier placement is stale, whether the row reads STARTING or, placed
// started, RUNNING; the next look starts the new placement's once it ends.
// A copy of the row's own placement is kept, STARTING (before its RUNNING)
// or RUNNING.
TEST(RunSupervisor, ACopyOfAnEarlierPlacementOnTheSameEpochIsStale) {
  const db::JobRow first = placed_here(1);
  db::JobRow again = placed_here(1);
  again.placement = *first.placement + 1;
  const std::map<std::int64_t, RunningCopy> runs{{1, copy_of(first, kEpoch)}};
  for (db::JobState state : {db::JobState::kStarting, db::JobState::kRunning}) {
    again.state = state;
    const SupervisionPlan plan = plan_supervision("a", kEpoch, {again}, {}, runs, {});
    ASSERT_EQ(1u, plan.stop.size()) << db::to_string(state);
    EXPECT_EQ(RunStop::kMovedOn, plan.stop[0].why);
    EXPECT_TRUE(plan.start.empty()) << "started by a later look, once this copy ended";
  }
  db::JobRow starting = first;
  starting.state = db::JobState::kStarting;
  for (const db::JobRow& own : {first, starting}) {
    const SupervisionPlan plan = plan_supervision("a", kEpoch, {own}, {}, runs, {});
    EXPECT_TRUE(plan.stop.empty()) << db::to_string(own.state);
    EXPECT_TRUE(plan.start.empty());
  }
}

TEST(RunSupervisor, ACancelOrAPreemptionStopsTheFirstPartOnly) {
  db::JobRow cancelled = spanning(1, /*placement=*/30);
  cancelled.cancel_requested = true;
  db::JobRow preempted = placed_here(2);
  preempted.preempted_by = 7;
  const std::map<std::int64_t, RunningCopy> first_part{
      {1, copy_of(cancelled, 9, slice_role(cancelled, "a", 9))}};
  SupervisionPlan plan = plan_supervision("a", 9, {cancelled}, {}, first_part, {});
  ASSERT_EQ(1u, plan.stop.size());
  EXPECT_EQ(RunStop::kUserCancel, plan.stop[0].why);
  const std::map<std::int64_t, RunningCopy> whole{{2, copy_of(preempted, kEpoch)}};
  plan = plan_supervision("a", kEpoch, {preempted}, {}, whole, {});
  ASSERT_EQ(1u, plan.stop.size());
  EXPECT_EQ(RunStop::kPreempted, plan.stop[0].why);
  EXPECT_EQ(7, plan.stop[0].preempted_by);

  // b, a later part: it ends when the first part closes the collective.
  const std::map<std::int64_t, RunningCopy> on_b{
      {1, copy_of(cancelled, kEpoch, slice_role(cancelled, "b", kEpoch))}};
  plan = plan_supervision("b", kEpoch, {}, {cancelled}, on_b, {});
  EXPECT_TRUE(plan.stop.empty());
}

TEST(RunSupervisor, AJobCancelledOrPreemptedBeforeItsCopyStartedStartsOnlyToEnd) {
  db::JobRow cancelled = placed_here(1);
  cancelled.cancel_requested = true;
  db::JobRow preempted = placed_here(2);
  preempted.preempted_by = 7;
  const SupervisionPlan plan = plan_supervision("a", kEpoch, {cancelled, preempted}, {}, {}, {});
  ASSERT_EQ(2u, plan.start.size());
  EXPECT_EQ(RunStop::kUserCancel, plan.start[0].stop);
  EXPECT_EQ(RunStop::kPreempted, plan.start[1].stop);
  EXPECT_EQ(7, plan.start[1].preempted_by);
}

TEST(RunSupervisor, APartOfASpanningSliceStartsOnceAndItsEndedPlacementIsForgottenWhenUnlisted) {
  const db::JobRow job = spanning(1, /*placement=*/30);
  SupervisionPlan plan = plan_supervision("b", kEpoch, {}, {job}, {}, {});
  ASSERT_EQ(std::vector<std::int64_t>{1}, started(plan));
  ASSERT_TRUE(plan.start[0].slice);
  EXPECT_EQ(1, plan.start[0].slice->rank);
  EXPECT_EQ(2, plan.start[0].slice->first_host);
  EXPECT_EQ((std::vector<int>{2, 2}), plan.start[0].slice->hosts_per_rank);
  // Its part here ended (the runner finished) while the job is still listed:
  // not started again.
  plan = plan_supervision("b", kEpoch, {}, {job}, {}, {30});
  EXPECT_TRUE(plan.start.empty());
  EXPECT_EQ(std::set<std::int64_t>{30}, plan.ended_slice_placements);
  // No longer listed: forgotten.
  plan = plan_supervision("b", kEpoch, {}, {}, {}, {30});
  EXPECT_TRUE(plan.ended_slice_placements.empty());
  // A part for another epoch of b (b was lost and rejoined): not b's now.
  plan = plan_supervision("b", kEpoch + 1, {}, {spanning(2, 31)}, {}, {});
  EXPECT_TRUE(plan.start.empty());
}

TEST(RunSupervisor, ACopyOfAnotherSlicePlacementOfTheSameJobStops) {
  const db::JobRow old_slice = spanning(1, /*placement=*/30);
  const db::JobRow new_slice = spanning(1, /*placement=*/31);
  const std::map<std::int64_t, RunningCopy> runs{
      {1, copy_of(old_slice, kEpoch, slice_role(old_slice, "b", kEpoch))}};
  SupervisionPlan plan = plan_supervision("b", kEpoch, {}, {new_slice}, runs, {});
  ASSERT_EQ(1u, plan.stop.size());
  EXPECT_EQ(RunStop::kMovedOn, plan.stop[0].why);
  EXPECT_TRUE(plan.start.empty()) << "started by the next look, once the old copy is gone";
  // Placed whole here now, where it ran as a part: stale too.
  db::JobRow whole = placed_here(1);
  whole.agent = "b";
  plan = plan_supervision("b", kEpoch, {whole}, {}, runs, {});
  ASSERT_EQ(1u, plan.stop.size());
}

// A clean stop: what is still placed here under this epoch, and the slices
// with a part here under it, is left behind to requeue, each fenced by its
// placement; a placement of an earlier epoch, or another agent's
// part, is not this agent's to requeue.
TEST(RunSupervisor, WhatAStoppingAgentLeavesBehindIsWhatIsPlacedOnItsEpoch) {
  const std::vector<db::JobRow> placed{placed_here(1), placed_here(2, /*epoch=*/4)};
  const std::vector<db::JobRow> parts{spanning(3, 30), spanning(4, 40, /*b_epoch=*/4)};
  std::vector<std::pair<std::int64_t, std::int64_t>> got;
  for (const LeftBehind& job : left_behind("b", kEpoch, {}, parts))
    got.emplace_back(job.job, job.fence);
  EXPECT_EQ((std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 30}}), got);
  got.clear();
  for (const LeftBehind& job : left_behind("a", kEpoch, placed, {}))
    got.emplace_back(job.job, job.fence);
  EXPECT_EQ((std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 101}}), got);
}

}  // namespace
}  // namespace tpujobs::service
