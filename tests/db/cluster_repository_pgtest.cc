// Agents, epochs, fencing, the leader lock and NOTIFY (DESIGN §9), against a
// real server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "db/cluster_repository.h"
#include "db/listener.h"
#include "db/migrate.h"
#include "db/repositories.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

class ClusterRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conninfo = testing::create_schema();
    ASSERT_TRUE(conninfo.ok()) << conninfo.error().message;
    conninfo_ = *conninfo;
    auto pool = ConnectionPool::create(conninfo_, 3);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    ASSERT_TRUE(migrate(*pool_).ok());
    repositories_ = std::make_unique<Repositories>(*pool_);
    cluster_ = std::make_unique<ClusterRepository>(*pool_);
    NewJob job;
    job.tenant = "team-a";
    job.spec_json = "{}";
    auto inserted = repositories_->jobs.insert_jobs({job});
    ASSERT_TRUE(inserted.ok()) << inserted.error().message;
    job_ = (*inserted)[0].row.id;
  }

  // The job's placement on `agent` under `epoch`, as the leader makes it:
  // its number is the epoch's unless given.
  Transition placement_on(const std::string& agent, std::int64_t epoch,
                          JobState from = JobState::kQueued,
                          std::optional<std::int64_t> placement = std::nullopt) {
    Transition t;
    t.job_id = job_;
    t.from = {from};
    t.to = JobState::kStarting;
    t.reason = "placed";
    t.agent = agent;
    t.placement_epoch = epoch;
    t.placement = placement.value_or(epoch);
    return t;
  }
  bool place(const std::string& agent, std::int64_t epoch, JobState from = JobState::kQueued,
             std::optional<std::int64_t> placement = std::nullopt) {
    auto moved = repositories_->jobs.transition(placement_on(agent, epoch, from, placement));
    return moved.ok() && *moved;
  }

  // Waits (30 s at most) until a session of the server matches `where`,
  // a condition on pg_stat_activity; false if none did.
  bool wait_for_session(const std::string& where) {
    auto observer = ConnectionPool::create(conninfo_, 1);
    if (!observer.ok()) return false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto connection = (*observer)->acquire(std::chrono::seconds(5));
      if (!connection.ok()) return false;
      auto rows = (*connection)->execute("SELECT count(*) FROM pg_stat_activity WHERE " + where);
      if (rows.ok() && rows->int64(0, 0) > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Places it as the leader does: only while `agent` is alive under `epoch`.
  bool place_on_alive(const std::string& agent, std::int64_t epoch) {
    Transition t = placement_on(agent, epoch);
    t.require_alive = {{agent, epoch}};
    auto moved = repositories_->jobs.transition(t);
    return moved.ok() && *moved;
  }

  // Fenced by placement `fence`; `after_failure`: stamps requeued_at, as a
  // retry after a failure does.
  bool requeue(std::int64_t fence, bool after_failure = false) {
    Transition t;
    t.job_id = job_;
    t.from = {JobState::kStarting, JobState::kRunning};
    t.to = JobState::kQueued;
    t.reason = "agent lost";
    t.require_placement = fence;
    t.clear_placement = true;
    t.set_requeued_at = after_failure;
    auto moved = repositories_->jobs.transition(t);
    return moved.ok() && *moved;
  }

  std::string logs() {
    auto lines = repositories_->outputs.list_logs(job_, 0, 100);
    EXPECT_TRUE(lines.ok());
    std::string out;
    for (const LogLine& l : *lines) out += std::to_string(l.seq) + ":" + l.line + " ";
    return out;
  }

  std::string conninfo_;
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Repositories> repositories_;
  std::unique_ptr<ClusterRepository> cluster_;
  std::int64_t job_ = 0;
};

TEST_F(ClusterRepositoryTest, RejoiningAgentGetsANewEpochAndTheOldOneStopsHeartbeating) {
  auto first = cluster_->register_agent("a", {{"a-h0", "v3"}, {"a-h1", "v3"}}, 1);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto beat = cluster_->heartbeat("a", *first);
  ASSERT_TRUE(beat.ok());
  EXPECT_TRUE(*beat);
  auto second = cluster_->register_agent("a", {{"a-h0", "v3"}}, 2);
  ASSERT_TRUE(second.ok());
  EXPECT_GT(*second, *first);
  EXPECT_FALSE(*cluster_->heartbeat("a", *first));  // the old life must stop
  EXPECT_TRUE(*cluster_->heartbeat("a", *second));
  auto hosts = cluster_->list_hosts();
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(1u, hosts->size());
  EXPECT_EQ("a-h0", (*hosts)[0].name);
  EXPECT_EQ("alive", (*hosts)[0].agent_state);
}

TEST_F(ClusterRepositoryTest, AHostOfAnAliveAgentCannotBeClaimedByAnother) {
  ASSERT_TRUE(cluster_->register_agent("a", {{"shared-h0", "v3"}}, 1).ok());
  auto clash = cluster_->register_agent("b", {{"shared-h0", "v3"}}, 1);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(base::ErrorCode::kConflict, clash.code());
}

TEST_F(ClusterRepositoryTest, SilentAgentIsMarkedLostAndItsJobsAreOrphans) {
  auto epoch = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(epoch.ok());
  ASSERT_TRUE(place("a", *epoch));
  auto orphans = repositories_->jobs.orphaned_jobs();
  ASSERT_TRUE(orphans.ok());
  EXPECT_TRUE(orphans->empty());
  auto none = cluster_->mark_lost(std::chrono::seconds(60), std::chrono::minutes(1));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto lost = cluster_->mark_lost(std::chrono::milliseconds(0), std::chrono::minutes(1));
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(std::vector<std::string>{"a"}, *lost);
  EXPECT_FALSE(*cluster_->heartbeat("a", *epoch));
  orphans = repositories_->jobs.orphaned_jobs();
  ASSERT_TRUE(orphans.ok());
  ASSERT_EQ(1u, orphans->size());
  EXPECT_EQ(job_, (*orphans)[0].id);
  EXPECT_EQ(*epoch, (*orphans)[0].placement_epoch.value_or(0));
}

TEST_F(ClusterRepositoryTest, WritesOfAStaleEpochDoNotLand) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  auto b = cluster_->register_agent("b", {{"b-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(place("a", *a));
  JobOutputRepository& outputs = repositories_->outputs;
  ASSERT_TRUE(outputs.append_logs({{job_, 1, {}, "a: step 1", *a}}).ok());
  ASSERT_TRUE(outputs.save_checkpoint(job_, 10, 0, "ckpt-a", *a).ok());
  // The leader moves the job to b; a, paused meanwhile, writes on.
  ASSERT_TRUE(requeue(*a));
  ASSERT_TRUE(place("b", *b));
  ASSERT_TRUE(
      outputs.append_logs({{job_, 2, {}, "a: stale", *a}, {job_, 2, {}, "b: resumed", *b}}).ok());
  ASSERT_TRUE(outputs.append_metrics({{job_, 1, 20, 0, {}, R"({"loss": 9})", *a}}).ok());
  EXPECT_EQ(base::ErrorCode::kConflict,
            outputs.save_checkpoint(job_, 20, 0, "ckpt-stale", *a).code());
  EXPECT_FALSE(repositories_->jobs.update_progress(job_, R"({"step": 99})", std::nullopt, *a).ok());
  EXPECT_EQ("1:a: step 1 2:b: resumed ", logs());
  auto metrics = outputs.list_metrics(job_, 0, 10);
  ASSERT_TRUE(metrics.ok());
  EXPECT_TRUE(metrics->empty());
  auto checkpoint = outputs.latest_checkpoint(job_);
  ASSERT_TRUE(checkpoint.ok() && *checkpoint);
  EXPECT_EQ("ckpt-a", (*checkpoint)->bytes);
  {
    // The stale checkpoint's chunks, copied in before its fence failed, went
    // with its transaction.
    auto connection = pool_->acquire(std::chrono::seconds(1));
    ASSERT_TRUE(connection.ok());
    auto chunks = (*connection)
                      ->execute(
                          "SELECT count(*) FROM job_checkpoint_chunks WHERE job_id = $1::bigint"
                          " AND step = 20",
                          {job_});
    ASSERT_TRUE(chunks.ok());
    EXPECT_EQ(0, chunks->int64(0, 0));
  }
  // A transition of the stale agent is refused; b's is applied.
  Transition stale;
  stale.job_id = job_;
  stale.from = {JobState::kStarting};
  stale.to = JobState::kSucceeded;
  stale.require_placement = *a;
  EXPECT_FALSE(*repositories_->jobs.transition(stale));
  Transition running = stale;
  running.to = JobState::kRunning;
  running.require_placement = *b;
  EXPECT_TRUE(*repositories_->jobs.transition(running));
  ASSERT_TRUE(repositories_->jobs.update_progress(job_, R"({"step": 21})", std::nullopt, *b).ok());
}

// A job placed again on the same registration of the same agent (requeued
// while its copy was still stopping, or its placement undone by a database
// crash) is placed under a new number: the earlier placement's copy, which
// runs under the same epoch, lands nothing more about the job, neither its
// output nor a transition, and the new copy's lines take the sequence
// numbers it left.
TEST_F(ClusterRepositoryTest, WritesOfAnEarlierPlacementUnderTheSameEpochDoNotLand) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  auto block = cluster_->reserve_placements();
  ASSERT_TRUE(block.ok()) << block.error().message;
  const std::int64_t first = *block, second = *block + 1;
  ASSERT_TRUE(place("a", *a, JobState::kQueued, first));
  JobOutputRepository& outputs = repositories_->outputs;
  ASSERT_TRUE(outputs.append_logs({{job_, 1, {}, "first: step 1", first}}).ok());
  ASSERT_TRUE(outputs.save_checkpoint(job_, 10, 0, "ckpt-first", first).ok());
  ASSERT_TRUE(requeue(first));
  auto requeued = repositories_->jobs.get_job(job_);
  ASSERT_TRUE(requeued.ok() && *requeued);
  EXPECT_FALSE((**requeued).placement) << "the requeue took the placement off";
  ASSERT_TRUE(place("a", *a, JobState::kQueued, second));

  ASSERT_TRUE(outputs.append_logs({{job_, 2, {}, "first: stale", first}}).ok());
  ASSERT_TRUE(outputs.append_metrics({{job_, 1, 20, 0, {}, R"({"loss": 9})", first}}).ok());
  EXPECT_EQ(base::ErrorCode::kConflict,
            outputs.save_checkpoint(job_, 20, 0, "ckpt-stale", first).code());
  EXPECT_FALSE(
      repositories_->jobs.update_progress(job_, R"({"step": 99})", std::nullopt, first).ok());
  Transition stale_start;
  stale_start.job_id = job_;
  stale_start.from = {JobState::kStarting};
  stale_start.to = JobState::kRunning;
  stale_start.require_placement = first;
  EXPECT_FALSE(*repositories_->jobs.transition(stale_start));
  // A preemption decided from a read of the first placement marks nothing.
  EXPECT_FALSE(*repositories_->jobs.request_preemption(job_, first, job_ + 1, "", "{}"));

  ASSERT_TRUE(outputs.append_logs({{job_, 2, {}, "second: resumed", second}}).ok());
  EXPECT_EQ("1:first: step 1 2:second: resumed ", logs());
  auto metrics = outputs.list_metrics(job_, 0, 10);
  ASSERT_TRUE(metrics.ok());
  EXPECT_TRUE(metrics->empty());
  Transition start = stale_start;
  start.require_placement = second;
  EXPECT_TRUE(*repositories_->jobs.transition(start));
  EXPECT_TRUE(*repositories_->jobs.request_preemption(job_, second, job_ + 1, "", "{}"));
  // The copy that ends the job may store its last progress after the end
  // (its flush waited out an outage): it is still that placement's.
  Transition end = start;
  end.from = {JobState::kRunning};
  end.to = JobState::kSucceeded;
  ASSERT_TRUE(*repositories_->jobs.transition(end));
  EXPECT_TRUE(
      repositories_->jobs.update_progress(job_, R"({"step": 30})", std::nullopt, second).ok());
  EXPECT_FALSE(
      repositories_->jobs.update_progress(job_, R"({"step": 99})", std::nullopt, first).ok());
}

// Placement numbers come in blocks that never overlap, whoever reserves
// them (a leader, the next leader after a failover).
TEST_F(ClusterRepositoryTest, PlacementNumbersComeInBlocksThatNeverOverlap) {
  auto first = cluster_->reserve_placements();
  ClusterRepository other(*pool_);
  auto second = other.reserve_placements();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_GE(*first, 1);
  EXPECT_GE(*second, *first + ClusterRepository::kPlacementBlock);
}

// Preemption (issue 17): the leader's mark lands only under the victim's
// current epoch, once, with the preemptor's event; it stays while the
// victim waits and is cleared when the victim is placed again.
TEST_F(ClusterRepositoryTest, PreemptionMarkIsFencedRecordedAndClearedOnPlacement) {
  NewJob preemptor_job;
  preemptor_job.tenant = "team-a";
  preemptor_job.spec_json = "{}";
  auto inserted = repositories_->jobs.insert_jobs({preemptor_job});
  ASSERT_TRUE(inserted.ok()) << inserted.error().message;
  const std::int64_t preemptor = (*inserted)[0].row.id;
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(place("a", *a));
  JobRepository& jobs = repositories_->jobs;
  // A stale epoch does not mark it.
  auto stale = jobs.request_preemption(job_, *a + 1, preemptor, "Preempted job", "{}");
  ASSERT_TRUE(stale.ok()) << stale.error().message;
  EXPECT_FALSE(*stale);
  auto marked = jobs.request_preemption(job_, *a, preemptor, "Preempted job 1 to start",
                                        R"({"preempted": [1]})");
  ASSERT_TRUE(marked.ok() && *marked);
  auto again = jobs.request_preemption(job_, *a, preemptor, "twice", "{}");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again) << "marked once";
  EXPECT_EQ(preemptor, (*jobs.get_job(job_))->preempted_by);
  auto events = jobs.list_events(preemptor);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(2u, events->size());  // submitted, then the preemption
  EXPECT_EQ("Preempted job 1 to start", events->back().reason);
  EXPECT_EQ(JobState::kQueued, events->back().to_state);
  // The agent requeues it: still marked while it waits; placed: cleared.
  ASSERT_TRUE(requeue(*a));
  EXPECT_EQ(preemptor, (*jobs.get_job(job_))->preempted_by);
  Transition placed = placement_on("a", *a);
  placed.clear_preempted_by = true;
  ASSERT_TRUE(*jobs.transition(placed));
  EXPECT_FALSE((*jobs.get_job(job_))->preempted_by.has_value());
}

// A retry is placed only on agents heard from since its failure (issue
// 12): requeued_at and the heartbeats are stamped by the same clock.
TEST_F(ClusterRepositoryTest, ARequeueAfterAFailureRecordsItsTimeAgainstTheHeartbeats) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  JobRepository& jobs = repositories_->jobs;
  EXPECT_FALSE((*jobs.get_job(job_))->requeued_at.has_value()) << "never requeued";
  ASSERT_TRUE(place("a", *a));
  ASSERT_TRUE(requeue(*a, /*after_failure=*/true));
  const std::optional<TimePoint> requeued = (*jobs.get_job(job_))->requeued_at;
  ASSERT_TRUE(requeued.has_value());
  auto heard = [&] { return (*cluster_->list_agents())[0].last_heartbeat; };
  EXPECT_LT(heard(), *requeued) << "the registration came before the failure";
  ASSERT_TRUE(*cluster_->heartbeat("a", *a));
  EXPECT_GT(heard(), *requeued) << "a heartbeat after the failure";
  // A requeue that is not a failure's leaves the time alone.
  ASSERT_TRUE(place("a", *a));
  ASSERT_TRUE(requeue(*a));
  EXPECT_EQ(requeued, (*jobs.get_job(job_))->requeued_at);
}

// A clean stop (DESIGN §9): a draining agent gets no placement, keeps its
// placed jobs (they are not orphans) and its hosts, and heartbeats until it
// leaves; silent, it is lost like any other.
TEST_F(ClusterRepositoryTest, ADrainingAgentGetsNoPlacementButKeepsItsJobsAndItsHeartbeat) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  auto b = cluster_->register_agent("b", {{"b-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(place_on_alive("a", *a));
  ASSERT_TRUE(*cluster_->drain("a", *a));
  EXPECT_FALSE(*cluster_->drain("a", *a)) << "draining already";
  EXPECT_EQ("draining", (*cluster_->list_agents())[0].state);
  EXPECT_TRUE(*cluster_->heartbeat("a", *a));
  EXPECT_TRUE(repositories_->jobs.orphaned_jobs()->empty()) << "its job is still its own";
  auto taken = cluster_->register_agent("c", {{"a-h0", "v3"}}, 1);
  EXPECT_EQ(base::ErrorCode::kConflict, taken.code()) << "its host is still its own";

  // Requeued by it, the job is placed on b, not on the draining a.
  ASSERT_TRUE(requeue(*a));
  EXPECT_FALSE(place_on_alive("a", *a));
  EXPECT_EQ(JobState::kQueued, (*repositories_->jobs.get_job(job_))->state);
  EXPECT_TRUE(place_on_alive("b", *b));

  auto lost = cluster_->mark_lost(std::chrono::milliseconds(0), std::chrono::minutes(1));
  ASSERT_TRUE(lost.ok());
  std::sort(lost->begin(), lost->end());
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), *lost) << "a silent draining agent is lost";
}

// A database that stalls (stopped, paused, or here: a session holding the
// agent's row) holds up the heartbeats with everything else. The leader's
// judgement, waiting in the same stall, finds the agent silent; once the
// stall ends it is answered first, before the heartbeat waiting behind it.
// Answered that late, it must not declare the agent lost: its silence is
// the stall's. Before, every agent of a cluster whose PostgreSQL paused
// longer than the silence could be declared lost at once, and every job
// requeued.
TEST_F(ClusterRepositoryTest, AJudgementTheDatabaseAnswersAfterAStallDeclaresNoAgentLost) {
  constexpr std::chrono::milliseconds kSilence{1000}, kMaxAnswer{500};
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  auto held = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(held.ok());
  auto stall = Transaction::begin(**held);
  ASSERT_TRUE(stall.ok());
  ASSERT_TRUE(stall->execute("SELECT 1 FROM agents WHERE name = 'a' FOR UPDATE").ok());
  // The stall outlasts the silence since the agent's last heartbeat.
  ASSERT_TRUE(
      wait_for_session("backend_type = 'client backend' AND EXISTS (SELECT 1 FROM agents"
                       " WHERE name = 'a' AND last_heartbeat < clock_timestamp() - "
                       "interval '1.2 seconds')"));
  std::optional<base::Result<std::vector<std::string>>> judged;
  std::thread leader([&] { judged = cluster_->mark_lost(kSilence, kMaxAnswer); });
  ASSERT_TRUE(
      wait_for_session("wait_event_type = 'Lock' AND query LIKE 'UPDATE agents SET state%'"));
  std::optional<base::Result<bool>> heard;
  std::thread agent([&] { heard = cluster_->heartbeat("a", *a); });
  ASSERT_TRUE(wait_for_session(
      "wait_event_type = 'Lock' AND query LIKE 'UPDATE agents SET last_heartbeat%'"));
  // Held past the answer the leader waits for.
  ASSERT_TRUE(
      wait_for_session("query LIKE 'UPDATE agents SET state%' AND clock_timestamp() - "
                       "query_start > interval '0.7 seconds'"));
  ASSERT_TRUE(stall->commit().ok());
  leader.join();
  agent.join();

  ASSERT_TRUE(judged.has_value());
  ASSERT_FALSE(judged->ok()) << "declared lost: " << ::testing::PrintToString(**judged);
  EXPECT_EQ(base::ErrorCode::kUnavailable, judged->code()) << judged->error().message;
  ASSERT_TRUE(heard.has_value() && heard->ok());
  EXPECT_TRUE(**heard) << "the agent is still alive under its epoch";
  auto agents = cluster_->list_agents();
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(1u, agents->size());
  EXPECT_EQ("alive", (*agents)[0].state);

  // Answered in time, the same judgement declares a silent agent lost.
  auto lost = cluster_->mark_lost(std::chrono::milliseconds(0), std::chrono::minutes(1));
  ASSERT_TRUE(lost.ok()) << lost.error().message;
  EXPECT_EQ(std::vector<std::string>{"a"}, *lost);
}

// The race of a placement with a drain: the placement share-locks the
// agent's row, so one that reads the agent alive while a drain is being
// committed waits for that commit, then finds the agent draining and
// places nothing.
TEST_F(ClusterRepositoryTest, APlacementRacingADrainWaitsForItAndPlacesNothing) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  auto held = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(held.ok());
  auto drain = Transaction::begin(**held);
  ASSERT_TRUE(drain.ok());
  ASSERT_TRUE(drain->execute("UPDATE agents SET state = 'draining' WHERE name = 'a'").ok());
  std::optional<bool> placed;
  std::thread placer([&] { placed = place_on_alive("a", *a); });
  // Until the placement waits on the agent's row lock.
  ASSERT_TRUE(wait_for_session("wait_event_type = 'Lock' AND query LIKE '%FOR SHARE OF a%'"));
  ASSERT_TRUE(drain->commit().ok());
  placer.join();
  ASSERT_TRUE(placed.has_value());
  EXPECT_FALSE(*placed);
  EXPECT_EQ(JobState::kQueued, (*repositories_->jobs.get_job(job_))->state);
}

// The scheduler leader's term: a replica that takes the lead raises it, and
// the writes of the leader before (a placement, a requeue, a preemption
// mark), fenced by its own term, no longer land.
TEST_F(ClusterRepositoryTest, AFormerLeadersWritesDoNotLandOnceAnotherTookTheLead) {
  auto a = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(a.ok());
  auto first = cluster_->begin_scheduler_term("replica-1");
  ASSERT_TRUE(first.ok()) << first.error().message;
  Transition placement = placement_on("a", *a);
  placement.require_leader_term = first->term;
  ASSERT_TRUE(*repositories_->jobs.transition(placement)) << "its own term";
  ASSERT_TRUE(requeue(*a));

  auto second = cluster_->begin_scheduler_term("replica-2");
  ASSERT_TRUE(second.ok());
  EXPECT_GT(second->term, first->term);
  EXPECT_EQ(first->recovered_at, second->recovered_at) << "the server has not crashed since";
  EXPECT_FALSE(*repositories_->jobs.transition(placement)) << "the former leader's";
  EXPECT_EQ(JobState::kQueued, (*repositories_->jobs.get_job(job_))->state);
  const base::Status stale_reason =
      repositories_->jobs.set_pending({{job_, R"({"reason": "Resources"})"}}, first->term);
  ASSERT_FALSE(stale_reason.ok()) << "the former leader's reason";
  EXPECT_EQ(base::ErrorCode::kConflict, stale_reason.code());
  EXPECT_FALSE((*repositories_->jobs.get_job(job_))->pending_json.has_value());
  ASSERT_TRUE(
      repositories_->jobs.set_pending({{job_, R"({"reason": "Priority"})"}}, second->term).ok());
  EXPECT_EQ(R"({"reason": "Priority"})", (*repositories_->jobs.get_job(job_))->pending_json);
  placement.require_leader_term = second->term;
  ASSERT_TRUE(*repositories_->jobs.transition(placement));
  auto stale_mark =
      repositories_->jobs.request_preemption(job_, *a, job_ + 1, "", "{}", first->term);
  ASSERT_TRUE(stale_mark.ok()) << stale_mark.error().message;
  EXPECT_FALSE(*stale_mark);
  EXPECT_FALSE((*repositories_->jobs.get_job(job_))->preempted_by.has_value());
}

TEST_F(ClusterRepositoryTest, OneLeaderAtATimeAndTheLockFreesWhenItsSessionEnds) {
  LeaderLock first(conninfo_);
  LeaderLock second(conninfo_);
  // Each hold() answers: true, held; false, another holds it.
  auto holds = [](LeaderLock& lock) {
    base::Result<bool> held = lock.hold();
    EXPECT_TRUE(held.ok()) << held.error().message;
    return held.ok() && *held;
  };
  ASSERT_TRUE(holds(first));
  EXPECT_TRUE(holds(first));  // still held
  EXPECT_FALSE(holds(second));
  first.release();
  // The server frees the lock when the session's end reaches it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool taken = false;
  while (!taken && std::chrono::steady_clock::now() < deadline) {
    taken = holds(second);
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(taken);
  EXPECT_FALSE(holds(first));
}

// A server that cannot be reached is an error, not "another holds it": the
// caller tells the user so instead of naming a rival that is not there.
TEST_F(ClusterRepositoryTest, AnUnreachableServerIsAnErrorNotAnotherHolder) {
  LeaderLock lock("host=127.0.0.1 port=1 connect_timeout=5");
  const base::Result<bool> held = lock.hold();
  ASSERT_FALSE(held.ok()) << "held: " << *held;
  EXPECT_EQ(held.code(), base::ErrorCode::kUnavailable) << held.error().message;
  EXPECT_FALSE(lock.held());
}

// Waits for the next notification on `listener` (a generous deadline).
std::vector<Notification> next_notifications(Listener& listener) {
  std::vector<Notification> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.empty() && std::chrono::steady_clock::now() < deadline) {
    auto some = listener.wait(std::chrono::milliseconds(500));
    if (some.ok()) got = *some;
  }
  return got;
}

TEST_F(ClusterRepositoryTest, NotifyWakesAListener) {
  Listener listener(conninfo_, kAgentChannel);
  auto nothing = listener.wait(std::chrono::milliseconds(10));
  ASSERT_TRUE(nothing.ok()) << nothing.error().message;
  EXPECT_TRUE(nothing->empty());
  ASSERT_TRUE(cluster_->notify(kAgentChannel, "agent-b").ok());
  const std::vector<Notification> got = next_notifications(listener);
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ(kAgentChannel, got[0].channel);
  EXPECT_EQ("agent-b", got[0].payload);
}

TEST_F(ClusterRepositoryTest, AListenerWhoseConnectionWasLostListensAgainOnItsNextWait) {
  // A channel of this test's own, so the terminate below finds no one else's.
  const std::string channel = "tpujobs_listener_test_" + std::to_string(::getpid());
  Listener listener(conninfo_, channel);
  ASSERT_TRUE(listener.wait(std::chrono::milliseconds(10)).ok());
  auto admin = Connection::open(conninfo_);
  ASSERT_TRUE(admin.ok());
  auto killed = (*admin)->execute(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
      "WHERE query = $1::text AND pid <> pg_backend_pid()",
      {Param("LISTEN " + channel)});
  ASSERT_TRUE(killed.ok()) << killed.error().message;
  ASSERT_EQ(1, killed->int64(0, 0));
  // The loss shows on a wait (kUnavailable); a later wait opens a new
  // connection, LISTENs again and gets what is sent from then on.
  bool lost = false;
  for (int i = 0; i < 100 && !lost; ++i) lost = !listener.wait(std::chrono::milliseconds(100)).ok();
  EXPECT_TRUE(lost);
  ASSERT_TRUE(listener.wait(std::chrono::milliseconds(10)).ok());
  ASSERT_TRUE(cluster_->notify(channel.c_str(), "again").ok());
  const std::vector<Notification> got = next_notifications(listener);
  ASSERT_EQ(1u, got.size());
  EXPECT_EQ("again", got[0].payload);
}

TEST(Listener, AnUnreachableServerIsUnavailableAtOnce) {
  Listener listener("host=127.0.0.1 port=1 connect_timeout=5", kAgentChannel);
  auto got = listener.wait(std::chrono::seconds(30));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(base::ErrorCode::kUnavailable, got.code());
}

}  // namespace
}  // namespace tpujobs::db
