// A depends_on chain ends in one scheduling pass once its root can never be
// met (issue 34: cancelling the root of a 10,000-deep chain took 157 s, one
// level a pass). plan_pass judges the verdicts transitively.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/pass.h"

namespace tpujobs::scheduler {
namespace {

// One host of 8 cores, one tenant, no waiting job yet.
PassSnapshot one_host() {
  PassSnapshot s;
  s.agents.push_back(PassAgent{"a", 0});
  PassHost host;
  host.agent = 0;
  host.cores.assign(8, 0);
  s.hosts.push_back(host);
  s.tenants.push_back(PassTenant{"t", std::nullopt, 0, 1.0});
  ResourceRequest core;  // a single core
  core.kind = RequestKind::kSingleCore;
  core.devices_per_host = core.hosts = 1;
  s.shapes.push_back(core);
  return s;
}

// Job `id` waits on `target` with `condition`; a waiting job's own state is
// QUEUED for the jobs that depend on it.
void add_dependent(PassSnapshot& s, JobId id, JobId target, DependencyCondition condition) {
  WaitingEntry entry;
  entry.id = id;
  entry.order = id;
  entry.shape = 0;
  entry.dependencies = static_cast<int>(s.dependencies.size());
  s.dependencies.push_back({{target, condition}});
  s.waiting.push_back(entry);
  s.dependency_states[id] = base::JobState::kQueued;
}

TEST(DependencyChain, CancellingTheRootOfADeepChainEndsEveryDependentInOnePass) {
  constexpr int kDepth = 10'000;
  PassSnapshot s = one_host();
  s.dependency_states[1] = base::JobState::kCancelled;  // the root, cancelled
  // Listed newest first: the verdicts must not depend on the snapshot's order.
  for (JobId id = kDepth + 1; id >= 2; --id) {
    add_dependent(s, id, id - 1, DependencyCondition::kSucceeded);
  }
  const PassPlan plan = plan_pass(s);
  EXPECT_TRUE(plan.held.empty()) << plan.held.size() << " still held, first " << plan.held[0].job;
  EXPECT_TRUE(plan.starts.empty());
  ASSERT_EQ(static_cast<std::size_t>(kDepth), plan.unstartable.size());
  for (const Ended& ended : plan.unstartable) {
    ASSERT_EQ(Unstartable::kDependencyNeverSatisfied, ended.why) << ended.job;
    ASSERT_EQ(
        "job " + std::to_string(ended.job - 1) + " ended CANCELLED; the job needed it to succeed",
        ended.detail);
  }
  EXPECT_EQ(kDepth + 1, plan.unstartable.front().job) << "kept in the snapshot's order";
}

TEST(DependencyChain, AChainWaitingOnARunningJobStaysHeldWhole) {
  PassSnapshot s = one_host();
  s.dependency_states[1] = base::JobState::kRunning;
  for (JobId id = 2; id <= 50; ++id) add_dependent(s, id, id - 1, DependencyCondition::kSucceeded);
  const PassPlan plan = plan_pass(s);
  EXPECT_TRUE(plan.unstartable.empty());
  EXPECT_EQ(49u, plan.held.size());
  EXPECT_TRUE(plan.starts.empty());
}

TEST(DependencyChain, AnEndThisPassSatisfiesAfterNotOkOnlyOnceItIsStored) {
  // 3 needs 2 to fail; 2 ends this pass (1 failed, 2 needed it to succeed).
  // 3 is not started beside that end: it waits for the next pass, which
  // reads 2 as CANCELLED and queues it.
  PassSnapshot s = one_host();
  s.dependency_states[1] = base::JobState::kFailed;
  add_dependent(s, 2, 1, DependencyCondition::kSucceeded);
  add_dependent(s, 3, 2, DependencyCondition::kFailed);
  add_dependent(s, 4, 3, DependencyCondition::kSucceeded);
  PassPlan plan = plan_pass(s);
  ASSERT_EQ(1u, plan.unstartable.size());
  EXPECT_EQ(2, plan.unstartable[0].job);
  ASSERT_EQ(2u, plan.held.size());
  EXPECT_EQ(3, plan.held[0].job);
  EXPECT_EQ("job 2 has not finished (QUEUED); waits for it to fail", plan.held[0].detail);
  EXPECT_EQ(4, plan.held[1].job);
  EXPECT_TRUE(plan.starts.empty());

  s.waiting.erase(s.waiting.begin());  // the next pass: 2 is stored CANCELLED
  s.dependency_states[2] = base::JobState::kCancelled;
  plan = plan_pass(s);
  EXPECT_TRUE(plan.unstartable.empty());
  ASSERT_EQ(1u, plan.starts.size());
  EXPECT_EQ(3, plan.starts[0].job);
  ASSERT_EQ(1u, plan.held.size());
  EXPECT_EQ(4, plan.held[0].job);
}

TEST(DependencyChain, AStartDeadlinePassedThisPassEndsItsDependents) {
  PassSnapshot s = one_host();
  s.dependency_states[1] = base::JobState::kSucceeded;
  add_dependent(s, 2, 1, DependencyCondition::kSucceeded);
  s.waiting.back().start_deadline = s.now;  // passed: 2 ends this pass
  add_dependent(s, 3, 2, DependencyCondition::kSucceeded);
  const PassPlan plan = plan_pass(s);
  ASSERT_EQ(2u, plan.unstartable.size());
  EXPECT_EQ(2, plan.unstartable[0].job);
  EXPECT_EQ(Unstartable::kStartDeadlineExceeded, plan.unstartable[0].why);
  EXPECT_EQ(3, plan.unstartable[1].job);
  EXPECT_EQ(Unstartable::kDependencyNeverSatisfied, plan.unstartable[1].why);
}

}  // namespace
}  // namespace tpujobs::scheduler
