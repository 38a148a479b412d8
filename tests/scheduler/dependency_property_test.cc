// Dependencies under randomized events: plan_pass judges them (held,
// unstartable, queued) over a pool the test's PassDriver keeps, against the
// test's own reading of Slurm's afterok / afternotok / afterany, with
// preemption sending running jobs back to the queue. After every pass: no
// job placed while a job it depends on had not ended the way it needed (a
// preempted one has not), no job ended as never satisfiable while its
// dependencies could still be met, and no job left held once they are all
// met.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/scheduler/pass_driver.h"

namespace tpujobs::scheduler {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kEvents = 2000;
#else
constexpr int kEvents = 3000;
#endif

using States = std::map<JobId, base::JobState>;

class DependencyRun {
 public:
  explicit DependencyRun(std::uint64_t seed) : driver_("v3-32"), random_(seed) {}

  void run(int events) {
    for (int event = 0; event < events && !::testing::Test::HasFailure(); ++event) {
      const int kind = pick(100);
      if (kind < 45) {
        submit_new();
      } else if (kind < 90) {
        end_running();
      } else {
        cancel_queued();
      }
      const States before = states();
      const PassPlan& plan = driver_.pass();
      check(plan, before);
      // A preempted job stops at once and waits again (its dependencies were
      // met once and stay met): the jobs depending on it wait on.
      if (plan.preemption) {
        for (JobId victim : plan.preemption->victims) {
          ASSERT_EQ(base::JobState::kRunning, driver_.job(victim)->state);
          driver_.stop_preempted(victim);
          ++preempted_;
        }
      }
      driver_.advance(std::chrono::seconds(1));
    }
    EXPECT_GT(preempted_, 0) << "no job was ever preempted";
    EXPECT_GT(released_, events / 20) << "the run should start dependent jobs";
    EXPECT_GT(never_, 0) << "no dependency was ever unsatisfiable";
    EXPECT_GT(held_seen_, 0) << "no job ever waited for a dependency";
  }

 private:
  int pick(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }

  States states() const {
    States out;
    for (const auto& [id, job] : driver_.jobs()) out[id] = job.state;
    return out;
  }

  // The test's own rule: met when the job ended the way the condition names.
  static bool met(DependencyCondition condition, base::JobState state) {
    switch (condition) {
      case DependencyCondition::kSucceeded:
        return state == base::JobState::kSucceeded;
      case DependencyCondition::kFailed:
        return state == base::JobState::kFailed || state == base::JobState::kCancelled;
      case DependencyCondition::kFinished:
        return base::is_terminal(state);
    }
    return false;
  }

  const std::vector<Dependency>& dependencies(JobId id) const {
    return driver_.job(id)->spec.depends_on;
  }

  void check(const PassPlan& plan, const States& before) {
    for (const PlannedStart& start : plan.starts) {
      if (dependencies(start.job).empty()) continue;
      ++released_;
      for (const Dependency& d : dependencies(start.job)) {
        EXPECT_TRUE(met(d.condition, before.at(d.job)))
            << "job " << start.job << " placed while job " << d.job << " is "
            << base::to_string(before.at(d.job)) << " and it needed "
            << condition_name(d.condition);
      }
    }
    // This pass ends a chain at once: a job it ends counts as CANCELLED for
    // the jobs that depend on it.
    States after = before;
    std::set<JobId> ending;
    for (const Ended& ended : plan.unstartable) {
      after[ended.job] = base::JobState::kCancelled;
      ending.insert(ended.job);
    }
    for (const Ended& ended : plan.unstartable) {
      ASSERT_EQ(Unstartable::kDependencyNeverSatisfied, ended.why);
      ++never_;
      const std::vector<Dependency>& list = dependencies(ended.job);
      const bool impossible = std::any_of(list.begin(), list.end(), [&](const Dependency& d) {
        return base::is_terminal(after.at(d.job)) && !met(d.condition, after.at(d.job));
      });
      EXPECT_TRUE(impossible) << "job " << ended.job
                              << " ended as never satisfiable: " << ended.detail;
    }
    // Liveness: a held job has a dependency that has not ended (or that this
    // pass ends: it is judged again once that end is stored).
    for (const Held& held : plan.held) {
      ++held_seen_;
      const std::vector<Dependency>& list = dependencies(held.job);
      const bool waits = std::any_of(list.begin(), list.end(), [&](const Dependency& d) {
        return !base::is_terminal(before.at(d.job)) || ending.contains(d.job);
      });
      EXPECT_TRUE(waits) << "job " << held.job << " held although every job it depends on ended";
    }
  }

  void submit_new() {
    JobSpec spec;
    spec.id = ++last_id_;
    const int count = spec.id > 1 ? pick(3) : 0;
    for (int i = 0; i < count; ++i) {
      // Only earlier jobs, as the API allows; recent ones are likelier unfinished.
      const JobId target = std::max<JobId>(
          1, spec.id - 1 - pick(static_cast<int>(std::min<JobId>(spec.id - 1, 12))));
      spec.depends_on.push_back({target, static_cast<DependencyCondition>(pick(3))});
    }
    spec.priority = pick(3);
    spec.tenant = "t";
    spec.request.kind = RequestKind::kSingleCore;
    spec.request.devices_per_host = 1;
    spec.request.hosts = 1;
    if (pick(3) == 0) {
      spec.request.kind = RequestKind::kHost;
      spec.request.devices_per_host = 8;
    }
    ASSERT_TRUE(driver_.submit(std::move(spec)));
  }

  std::vector<JobId> in_state(base::JobState state) const {
    std::vector<JobId> ids;
    for (const auto& [id, job] : driver_.jobs()) {
      if (job.state == state) ids.push_back(id);
    }
    return ids;
  }

  void end_running() {
    const std::vector<JobId> running = in_state(base::JobState::kRunning);
    if (running.empty()) return;
    const base::JobState ends[] = {base::JobState::kSucceeded, base::JobState::kSucceeded,
                                   base::JobState::kFailed, base::JobState::kCancelled};
    driver_.end(running[pick(static_cast<int>(running.size()))], ends[pick(4)]);
  }

  void cancel_queued() {
    const std::vector<JobId> queued = in_state(base::JobState::kQueued);
    if (queued.empty()) return;
    driver_.end(queued[pick(static_cast<int>(queued.size()))], base::JobState::kCancelled);
  }

  PassDriver driver_;
  std::mt19937_64 random_;
  JobId last_id_ = 0;
  int released_ = 0;
  int preempted_ = 0;
  int never_ = 0;
  int held_seen_ = 0;
};

TEST(DependencyProperty, NoDependencyIsReleasedEarlyOrEndedWhileItCouldBeMet) {
  for (std::uint64_t seed : {11, 12, 13}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    DependencyRun run(seed);
    run.run(kEvents);
  }
}

}  // namespace
}  // namespace tpujobs::scheduler
