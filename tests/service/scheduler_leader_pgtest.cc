// The scheduler leader's passes over real tables (DESIGN §9): placements
// carry the agent's epoch, a lost agent's jobs are requeued or fail, and
// a cancel of a queued job is honoured; and its own loop through a crash of
// the server.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/job_spec.h"
#include "api/usage.h"
#include "base/thread_priority.h"
#include "db/embedded_postgres.h"
#include "db/migrate.h"
#include "scheduler/pool.h"
#include "service/job_lifecycle.h"
#include "service/job_manager.h"
#include "service/scheduler_leader.h"
#include "service/wake_bus.h"
#include "tests/support/kept_plans.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::service {
namespace {

using nlohmann::json;

class SchedulerLeaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conninfo = db::testing::create_schema();
    ASSERT_TRUE(conninfo.ok()) << conninfo.error().message;
    conninfo_ = *conninfo;
    auto pool = db::ConnectionPool::create(*conninfo, 3);
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    ASSERT_TRUE(db::migrate(*pool_).ok());
    repo_ = std::make_unique<db::Repositories>(*pool_);
    cluster_ = std::make_unique<db::ClusterRepository>(*pool_);
    SchedulerLeaderOptions options;
    options.conninfo = *conninfo;
    options.agent_silence = std::chrono::seconds(60);
    leader_ = std::make_unique<SchedulerLeader>(*pool_, options);
    options.agent_silence = std::chrono::milliseconds(0);  // every agent is silent too long
    // A stall is only an answer slower than this (a quarter of no silence
    // at all would make every answer of a millisecond one).
    options.late_answer = std::chrono::seconds(30);
    impatient_ = std::make_unique<SchedulerLeader>(*pool_, options);
  }

  std::int64_t submit(int devices, int max_retries = 0) {
    return submit_spec({{"name", "j"},
                        {"max_retries", max_retries},
                        {"trainer", {{"devices", devices}, {"max_epochs", 1}}},
                        {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                        {"data", {{"dataset", "iris"}}}});
  }

  std::int64_t submit_spec(const json& spec) {
    db::NewJob job;
    job.tenant = "t";
    job.spec_json = spec.dump();
    auto inserted = repo_->jobs.insert_jobs({job});
    EXPECT_TRUE(inserted.ok());
    return (*inserted)[0].row.id;
  }

  db::JobRow row(std::int64_t id) { return **repo_->jobs.get_job(id); }

  void expect_kept_plans_by_key(db::testing::Statistics statistics, int finished);

  // A pass that fails says why.
  static ::testing::AssertionResult passes(SchedulerLeader& leader) {
    const base::Status s = leader.run_pass();
    if (s.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the pass failed: " << s.error().message;
  }

  // What the agent does first with a job placed on it.
  void start(std::int64_t id) {
    const std::optional<std::int64_t> placement = row(id).placement;
    ASSERT_TRUE(placement.has_value());
    auto started = repo_->jobs.transition(lifecycle::run(id, "Training started", *placement));
    ASSERT_TRUE(started.ok() && *started);
  }

  // The API service of a standalone serve on this schema, told through
  // `bus`, started; null (the test failed, saying why) when it could not
  // start. Once a test: it must be destroyed before the fixture, whose pool
  // it uses.
  std::unique_ptr<JobManager> started_manager(WakeBus& bus, base::Clock* clock = nullptr) {
    auto pool = db::ConnectionPool::create(conninfo_, 2);
    if (!pool.ok()) {
      ADD_FAILURE() << "the manager's pool: " << pool.error().message;
      return nullptr;
    }
    manager_pool_ = std::move(*pool);
    JobManagerOptions options;
    options.wake_bus = &bus;
    options.clock = clock;
    auto manager =
        std::make_unique<JobManager>(*manager_pool_, *scheduler::parse_pool("v3-8"), options);
    if (base::Status started = manager->start(); !started.ok()) {
      ADD_FAILURE() << "the manager did not start: " << started.error().message;
      return nullptr;
    }
    return manager;
  }

  std::string conninfo_;
  std::unique_ptr<db::ConnectionPool> pool_;
  std::unique_ptr<db::ConnectionPool> manager_pool_;
  std::unique_ptr<db::Repositories> repo_;
  std::unique_ptr<db::ClusterRepository> cluster_;
  std::unique_ptr<SchedulerLeader> leader_;
  std::unique_ptr<SchedulerLeader> impatient_;
};

// Whether `done` answered true within 60 s, `between` run after each no.
bool eventually(
    const std::function<bool()>& done, const std::function<void()>& between = [] {}) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    between();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The number of passes `leader` has made, from its metrics.
std::int64_t passes_made(const SchedulerLeader& leader) {
  const std::string metrics = leader.prometheus_metrics();
  const std::string name = "tpujobs_scheduler_pass_seconds_count ";
  const std::size_t at = metrics.find(name);
  return at == std::string::npos ? -1 : std::stoll(metrics.substr(at + name.size()));
}

// Unwoken, the leader passes again after its poll interval of its clock:
// with a FakeClock, an interval of an hour passes at once.
TEST_F(SchedulerLeaderTest, UnwokenItPassesAgainOnceAPollIntervalOfItsClockHasPassed) {
  base::FakeClock clock;
  WakeBus bus;  // nothing publishes on it: no pass is woken
  SchedulerLeaderOptions options;
  options.conninfo = conninfo_;
  options.clock = &clock;
  options.wake_bus = &bus;
  options.poll_interval = std::chrono::hours(1);
  SchedulerLeader leader(*pool_, options);
  const auto before = clock.now();
  leader.start();
  const bool passed_again = eventually([&] { return passes_made(leader) >= 2; });
  leader.stop();
  EXPECT_TRUE(passed_again) << "the leader waited an hour of real time";
  EXPECT_GE(clock.now() - before, std::chrono::hours(1));
}

// This process's threads at nice `nice` (/proc/self/task/*/stat, field 19).
int threads_at_nice(int nice) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t end_of_name = stat.rfind(')');
    if (end_of_name == std::string::npos) continue;
    std::istringstream fields(stat.substr(end_of_name + 2));  // from field 3, the state
    std::string field;
    for (int at = 3; at <= 19 && fields >> field; ++at) {
      if (at == 19 && std::stoi(field) == nice) ++count;
    }
  }
  return count;
}

// The thread that makes the passes runs at the nice it is given (serve
// --leader-nice; 19 here, which any process may set).
TEST_F(SchedulerLeaderTest, ItsPassesRunAtTheNiceItIsGiven) {
  // Every thread started here starts at this one's nice.
  if (base::this_thread_nice() == 19) GTEST_SKIP() << "this process already runs at nice 19";
  WakeBus bus;
  SchedulerLeaderOptions options;
  options.conninfo = conninfo_;
  options.wake_bus = &bus;
  options.thread_nice = 19;
  SchedulerLeader leader(*pool_, options);
  const int before = threads_at_nice(19);
  leader.start();
  const bool lowered = eventually([&] { return passes_made(leader) >= 1; }) &&
                       eventually([&] { return threads_at_nice(19) == before + 1; });
  leader.stop();
  EXPECT_TRUE(lowered) << "threads at nice 19: " << threads_at_nice(19) << ", before " << before;
  EXPECT_EQ(before, threads_at_nice(19)) << "its thread ended with it";
}

TEST_F(SchedulerLeaderTest, PlacesUnderTheAgentsEpochAndRequeuesWhenTheAgentIsLost) {
  auto epoch = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(epoch.ok());
  const std::int64_t whole_host = submit(8, /*max_retries=*/1);
  const std::int64_t single = submit(1);  // no core left: waits
  ASSERT_TRUE(passes(*leader_));
  db::JobRow placed = row(whole_host);
  EXPECT_EQ(db::JobState::kStarting, placed.state);
  EXPECT_EQ("a", placed.agent.value_or(""));
  EXPECT_EQ(*epoch, placed.placement_epoch.value_or(0));
  EXPECT_EQ("a", json::parse(placed.allocation_json.value_or("{}")).value("agent", ""));
  db::JobRow waiting = row(single);
  EXPECT_EQ(db::JobState::kQueued, waiting.state);
  EXPECT_EQ("Resources", json::parse(waiting.pending_json.value_or("{}")).value("reason", ""));
  start(whole_host);

  // The agent falls silent: the next pass requeues its job (a retry left)
  // and the waiting one still waits, now for a lost agent's host.
  ASSERT_TRUE(passes(*impatient_));
  db::JobRow requeued = row(whole_host);
  EXPECT_EQ(db::JobState::kQueued, requeued.state);
  EXPECT_EQ(1, requeued.attempt);
  EXPECT_FALSE(requeued.agent.has_value());
  EXPECT_EQ("HostUnhealthy",
            json::parse(row(single).pending_json.value_or("{}")).value("reason", ""));

  // It rejoins under a new epoch; the job is placed again, under that one.
  auto again = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(passes(*leader_));
  EXPECT_EQ(*again, row(whole_host).placement_epoch.value_or(0));
}

TEST_F(SchedulerLeaderTest, AJobWithoutRetriesLeftEndsUnavailable) {
  ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  const std::int64_t id = submit(1, /*max_retries=*/0);
  ASSERT_TRUE(passes(*leader_));  // placed
  start(id);
  ASSERT_TRUE(passes(*impatient_));  // lost, no retry left
  db::JobRow failed = row(id);
  EXPECT_EQ(db::JobState::kFailed, failed.state);
  const json error = json::parse(failed.error_json.value_or("{}"));
  EXPECT_EQ("UNAVAILABLE", error.value("type", ""));
  EXPECT_EQ("failed to connect to all addresses", error.value("message", ""));
  EXPECT_NE(std::string::npos, error.value("hint", "").find("max_retries"));
}

// A job placed on an agent that died in the seconds before its loss was
// known never ran there: requeued without spending a retry, a few times.
TEST_F(SchedulerLeaderTest, AJobWhoseAgentWasLostBeforeItStartedSpendsNoRetryAFewTimes) {
  const std::int64_t id = submit(1, /*max_retries=*/0);
  for (int lost = 1; lost <= lifecycle::kFreeUnstartedRequeues; ++lost) {
    auto epoch = cluster_->register_agent("a", {{"a-h0", "v3"}}, 1);  // (again)
    ASSERT_TRUE(epoch.ok());
    ASSERT_TRUE(passes(*leader_));
    ASSERT_EQ(db::JobState::kStarting, row(id).state);
    ASSERT_EQ(*epoch, row(id).placement_epoch.value_or(0));
    ASSERT_TRUE(passes(*impatient_));  // lost before it started the job
    const db::JobRow requeued = row(id);
    EXPECT_EQ(db::JobState::kQueued, requeued.state) << "loss " << lost;
    EXPECT_EQ(0, requeued.attempt) << "no retry spent";
    EXPECT_EQ(lost, requeued.unstarted_requeues);
    EXPECT_FALSE(requeued.agent.has_value());
    auto events = repo_->jobs.list_events(id);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ("Agent a was lost before the job started on it; requeued without spending a retry",
              events->back().reason);
  }
  // Once more: the job may be what brings its agents down, so this loss
  // costs as any other (no retry left: it fails).
  ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  ASSERT_TRUE(passes(*leader_));
  ASSERT_EQ(db::JobState::kStarting, row(id).state);
  ASSERT_TRUE(passes(*impatient_));
  const db::JobRow failed = row(id);
  EXPECT_EQ(db::JobState::kFailed, failed.state);
  EXPECT_EQ("UNAVAILABLE", json::parse(failed.error_json.value_or("{}")).value("type", ""));
}

TEST_F(SchedulerLeaderTest, ASliceNoAgentHasAloneIsPlacedAcrossAgentsAndEachPartFindsIt) {
  auto epoch_a = cluster_->register_agent("a", {{"a-h0", "v3"}, {"a-h1", "v3"}}, 1);
  auto epoch_b = cluster_->register_agent("b", {{"b-h0", "v3"}, {"b-h1", "v3"}}, 1);
  ASSERT_TRUE(epoch_a.ok() && epoch_b.ok());
  const json spec = {
      {"name", "slice"},
      {"trainer", {{"accelerator", "tpu"}, {"devices", 8}, {"num_nodes", 4}, {"max_epochs", 1}}},
      {"resources", {{"accelerator_type", "v3-32"}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data", {{"dataset", "iris"}}}};
  const std::int64_t id = submit_spec(spec);
  ASSERT_TRUE(passes(*leader_));

  const db::JobRow placed = row(id);
  ASSERT_EQ(db::JobState::kStarting, placed.state) << placed.pending_json.value_or("");
  EXPECT_EQ("a", placed.agent.value_or(""));  // the first part writes the job
  EXPECT_EQ(*epoch_a, placed.placement_epoch.value_or(0));
  const json allocation = json::parse(placed.allocation_json.value_or("{}"));
  EXPECT_EQ(json::array({"a-h0", "a-h1", "b-h0", "b-h1"}), allocation["hosts"]);
  EXPECT_EQ(32u, allocation["cores"].size());
  const json& slice = allocation["slice"];
  EXPECT_GT(slice.value("placement", std::int64_t{0}), 0);
  EXPECT_EQ(json::parse(R"([{"agent":"a","epoch":)" + std::to_string(*epoch_a) +
                        R"(,"first_host":0,"hosts":2},{"agent":"b","epoch":)" +
                        std::to_string(*epoch_b) + R"(,"first_host":2,"hosts":2}])"),
            slice["parts"]);

  // Agent b finds its part; agent a finds the job as its own, not as a part.
  auto work_b = repo_->jobs.work_on_agent("b");
  ASSERT_TRUE(work_b.ok()) << work_b.error().message;
  EXPECT_TRUE(work_b->placed.empty());
  ASSERT_EQ(1u, work_b->slice_parts.size());
  EXPECT_EQ(id, work_b->slice_parts[0].id);
  auto work_a = repo_->jobs.work_on_agent("a");
  ASSERT_TRUE(work_a.ok()) << work_a.error().message;
  EXPECT_TRUE(work_a->slice_parts.empty());
  EXPECT_EQ(1u, work_a->placed.size());

  // The rendezvous keys are the placement's own.
  const std::int64_t placement = slice["placement"];
  ASSERT_TRUE(cluster_->set_rendezvous_key(placement, "0", std::string("addr\0ess", 7)).ok());
  EXPECT_EQ(std::string("addr\0ess", 7),
            cluster_->get_rendezvous_key(placement, "0")->value_or(""));
  EXPECT_FALSE(cluster_->get_rendezvous_key(placement + 1, "0")->has_value());
  EXPECT_FALSE(cluster_->get_rendezvous_key(placement, "1")->has_value());
}

TEST_F(SchedulerLeaderTest, TheHeadReservesCoresThatOnlyJobsEndingInTimeMayBorrow) {
  ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  auto spec = [](int devices, std::optional<std::string> timeout) {
    json s = {{"name", "j"},
              {"trainer", {{"devices", devices}, {"max_epochs", 1}}},
              {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
              {"data", {{"dataset", "iris"}}}};
    if (timeout) s["timeout"] = *timeout;
    return s;
  };
  const std::int64_t running = submit_spec(spec(1, "10m"));
  ASSERT_TRUE(passes(*leader_));
  const db::JobRow placed = row(running);
  ASSERT_EQ(db::JobState::kStarting, placed.state);
  ASSERT_TRUE(placed.started_at);

  const std::int64_t head = submit_spec(spec(8, std::nullopt));     // the whole host: waits
  const std::int64_t forever = submit_spec(spec(1, std::nullopt));  // would delay the head
  const std::int64_t long_one = submit_spec(spec(1, "20m"));        // would too
  const std::int64_t short_one = submit_spec(spec(1, "5m"));        // ends before it starts
  ASSERT_TRUE(passes(*leader_));
  EXPECT_EQ(db::JobState::kQueued, row(head).state);
  EXPECT_EQ(db::JobState::kQueued, row(forever).state);
  EXPECT_EQ(db::JobState::kQueued, row(long_one).state);
  EXPECT_EQ(db::JobState::kStarting, row(short_one).state) << "backfilled";
  const json pending = json::parse(row(head).pending_json.value_or("{}"));
  EXPECT_EQ("Resources", pending.value("reason", ""));
  // The running job's start plus its time limit.
  const auto expected = *placed.started_at + std::chrono::minutes(10);
  EXPECT_EQ(api::rfc3339(std::chrono::time_point_cast<std::chrono::milliseconds>(expected)),
            pending.value("estimated_start", ""))
      << pending.dump();
  EXPECT_FALSE(json::parse(row(forever).pending_json.value_or("{}")).contains("estimated_start"));
}

TEST_F(SchedulerLeaderTest, ACancelRequestedWhileQueuedEndsTheJob) {
  const std::int64_t id = submit(1);
  ASSERT_TRUE(repo_->jobs.request_cancel(id).ok());
  ASSERT_TRUE(passes(*leader_));
  EXPECT_EQ(db::JobState::kCancelled, row(id).state);
}

// A standalone serve's API service and leader share a wake bus: a queued
// job cancelled through the API leaves the leader's kept queue at once,
// not at its next poll, and the job behind it moves up in its view. The
// leader here polls once an hour, so only the cancel's wake-up can do it.
TEST_F(SchedulerLeaderTest, AQueuedJobCancelledThroughTheApiMovesTheOneBehindItUpAtOnce) {
  WakeBus bus;
  std::unique_ptr<JobManager> api = started_manager(bus);
  ASSERT_TRUE(api != nullptr);
  JobManager& manager = *api;
  // Declared after the manager: stopped (destroyed) before it, so nothing
  // it publishes reaches a manager that is gone.
  SchedulerLeaderOptions options;
  options.conninfo = conninfo_;
  options.wake_bus = &bus;
  options.poll_interval = std::chrono::hours(1);
  options.lock_idle_timeout = std::chrono::hours(1);  // its lock's session idles meanwhile
  SchedulerLeader leader(*pool_, options);

  // No agent: both wait, in submission order.
  const std::int64_t ahead = submit(1);
  const std::int64_t behind = submit(1);
  auto position = [&](std::int64_t id) {
    base::Result<json> view = manager.get_job(id, "t");
    return view.ok() ? view->value("queue_position", json())
                     : json("error: " + view.error().message);
  };
  leader.start();  // its first pass, unwoken, reads both
  ASSERT_TRUE(eventually([&] { return position(behind) == json(2); })) << position(behind);
  ASSERT_EQ(json(1), position(ahead));

  base::Result<json> cancelled = manager.cancel_job(ahead, "t");
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().message;
  EXPECT_EQ("CANCELLED", cancelled->value("state", ""));
  EXPECT_TRUE(eventually([&] { return position(behind) == json(1); }))
      << "the job behind the cancelled one still reads " << position(behind)
      << ": the leader was not woken";
}

// /metrics' jobs by state count the whole table: a scrape within a second
// of the last count answers it, unless this process committed submits
// since.
TEST_F(SchedulerLeaderTest, TheJobsByStateInMetricsAreCountedOnceASecondAndAfterASubmit) {
  WakeBus bus;
  base::FakeClock clock;
  std::unique_ptr<JobManager> api = started_manager(bus, &clock);
  ASSERT_TRUE(api != nullptr);
  JobManager& manager = *api;
  auto queued = [&] {
    const std::string metrics = manager.prometheus_metrics();
    const std::string name = "tpujobs_jobs{state=\"QUEUED\"} ";
    const std::size_t at = metrics.find(name);
    return at == std::string::npos ? -1 : std::stoll(metrics.substr(at + name.size()));
  };
  submit(1);  // by another replica
  EXPECT_EQ(1, queued());
  submit(1);
  EXPECT_EQ(1, queued()) << "counted less than a second ago";
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(2, queued());

  const json spec = {{"name", "j"},
                     {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
                     {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                     {"data", {{"dataset", "iris"}}}};
  base::Result<api::JobSpec> parsed = api::parse_job_spec(spec);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  api::SubmitRequest request;
  request.tenant = "t";
  request.spec = *parsed;
  request.spec_json = spec;
  request.spec_text = spec.dump();
  request.spec_hash = "h";
  std::promise<api::SubmitOutcome> answered;
  manager.submit(std::move(request), [&](api::SubmitOutcome o) { answered.set_value(o); });
  std::future<api::SubmitOutcome> outcome = answered.get_future();
  ASSERT_EQ(std::future_status::ready, outcome.wait_for(std::chrono::seconds(60)));
  ASSERT_EQ(api::SubmitOutcome::Kind::kCreated, outcome.get().kind);
  EXPECT_EQ(3, queued()) << "this process's own submit is counted at the next scrape";
}

// With a wake bus, the API service keeps a queued job's view, and only the
// bus tells it the row changed (the database's NOTIFY is not listened to):
// a row changed behind it keeps showing as it was until the bus names the
// job, and a name of another job leaves it as it is.
TEST_F(SchedulerLeaderTest, AKeptQueuedViewGoesWhenTheBusNamesItsJobAndOnlyThen) {
  WakeBus bus;
  std::unique_ptr<JobManager> api = started_manager(bus);
  ASSERT_TRUE(api != nullptr);
  JobManager& manager = *api;
  const std::int64_t id = submit(1);
  auto state = [&] {
    base::Result<json> view = manager.get_job(id, "t");
    return view.ok() ? view->value("state", "") : "error: " + view.error().message;
  };
  ASSERT_EQ("QUEUED", state());  // read, and kept

  ASSERT_TRUE(*repo_->jobs.transition(lifecycle::cancel_queued(id)));
  EXPECT_EQ("QUEUED", state()) << "no one told the service: its kept view answers";
  bus.publish(kJobsChangedChannel, format_job_ids({id + 1, id + 2}));
  EXPECT_EQ("QUEUED", state()) << "the bus named other jobs";
  bus.publish(kJobsChangedChannel, format_job_ids({id + 1, id}));
  EXPECT_EQ("CANCELLED", state()) << "the bus named it: its view is read again";
}

// Between passes the leader reads only the rows written since its last
// read (issue 29): what others wrote meanwhile (an end, a cancel, a new
// submit) must still reach its next pass, as if it had read every job.
TEST_F(SchedulerLeaderTest, BetweenPassesTheLeaderSeesWhatOthersWroteMeanwhile) {
  ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  const std::int64_t first = submit(8);  // the whole host
  const std::int64_t second = submit(8);
  const std::int64_t cancelled = submit(8);
  ASSERT_TRUE(passes(*leader_));
  ASSERT_EQ(db::JobState::kStarting, row(first).state);
  ASSERT_EQ(db::JobState::kQueued, row(second).state);

  // Elsewhere: the first job ends on its agent, the second's owner cancels
  // it, and a new job with a higher priority arrives.
  start(first);
  ASSERT_TRUE(*repo_->jobs.transition(lifecycle::finish(first, db::JobState::kSucceeded,
                                                        "Training finished", std::nullopt,
                                                        std::nullopt, *row(first).placement)));
  ASSERT_TRUE(*repo_->jobs.transition(lifecycle::cancel_queued(second)));
  db::NewJob urgent;
  urgent.tenant = "t";
  urgent.priority = 50;
  urgent.spec_json = json{{"name", "urgent"},
                          {"trainer", {{"devices", 8}, {"max_epochs", 1}}},
                          {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                          {"data", {{"dataset", "iris"}}}}
                         .dump();
  auto inserted = repo_->jobs.insert_jobs({urgent});
  ASSERT_TRUE(inserted.ok());
  const std::int64_t urgent_id = (*inserted)[0].row.id;

  ASSERT_TRUE(passes(*leader_));
  EXPECT_EQ(db::JobState::kStarting, row(urgent_id).state)
      << "the host the first job freed goes to the new, higher-priority job";
  EXPECT_EQ(db::JobState::kCancelled, row(second).state);
  EXPECT_EQ(db::JobState::kQueued, row(cancelled).state);
  const json pending = json::parse(row(cancelled).pending_json.value_or("{}"));
  EXPECT_EQ(1, pending.value("queue_position", -1)) << pending.dump();
}

// The leader's session makes its plans in its first passes, often while
// the tables are nearly empty, and keeps them while the queue grows to
// 100,000 until autovacuum analyzes the tables (tests/support/kept_plans.h;
// session 61 found the orphans' read planned so to scan every job). Here
// each statement of the leader's passes (placements, reasons,
// a lost agent's requeue and failure, cancels, the sweeps) is planned on
// tables with `statistics` holding `finished` jobs first; once 20,000
// queued jobs are added, no plan the session keeps walks a table that
// grows with the queue.
void SchedulerLeaderTest::expect_kept_plans_by_key(db::testing::Statistics statistics,
                                                   int finished) {
  auto one = db::ConnectionPool::create(conninfo_, 1);  // every statement on one session
  ASSERT_TRUE(one.ok()) << one.error().message;
  db::ConnectionPool& session = **one;
  base::Status quiet =
      db::testing::without_autovacuum(*pool_, db::testing::kQueueTables, statistics);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  base::Status history = db::testing::add_finished_jobs(*pool_, finished);
  ASSERT_TRUE(history.ok()) << history.error().message;
  base::FakeClock clock;  // a minute a round: the sweeps run too
  SchedulerLeaderOptions options;
  options.conninfo = conninfo_;
  options.clock = &clock;
  options.agent_silence = std::chrono::hours(1);
  SchedulerLeader leader(session, options);
  options.agent_silence = std::chrono::milliseconds(0);
  options.late_answer = std::chrono::seconds(30);
  SchedulerLeader impatient(session, options);
  for (int round = 0; round < 8; ++round) {  // past five custom plans of each
    ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
    const std::int64_t placed = submit(8, /*max_retries=*/round % 2);
    const std::int64_t waiting = submit(1);
    const std::int64_t cancelled = submit(1);
    ASSERT_TRUE(repo_->jobs.request_cancel(cancelled).ok());
    ASSERT_TRUE(passes(leader));
    ASSERT_EQ(db::JobState::kStarting, row(placed).state) << "round " << round;
    start(placed);
    ASSERT_TRUE(passes(impatient));  // the agent is lost: requeued, or failed
    if (round % 2 == 1) {            // requeued (a retry left), not failed
      ASSERT_TRUE(repo_->jobs.request_cancel(placed).ok());
    }
    ASSERT_TRUE(repo_->jobs.request_cancel(waiting).ok());
    ASSERT_TRUE(passes(leader));
    ASSERT_TRUE(passes(leader));
    ASSERT_EQ(db::JobState::kCancelled, row(waiting).state) << "round " << round;
    clock.advance(std::chrono::minutes(1));
  }
  base::Status filled = db::testing::add_queued_jobs(*pool_, 20000);
  ASSERT_TRUE(filled.ok()) << filled.error().message;
  EXPECT_EQ(std::vector<std::string>{},
            db::testing::kept_walks(session, db::testing::kQueueTables));
}

TEST_F(SchedulerLeaderTest, NoPlanItsSessionKeepsFromNearlyEmptyTablesWalksTheQueue) {
  expect_kept_plans_by_key(db::testing::Statistics::kAnalyzedEmpty, 0);
}

// A new deployment's tables stay unanalyzed until autovacuum's first
// analysis; meanwhile the planner guesses their rows from their pages, with
// default selectivities. So planned, the orphans' read was a BitmapAnd of
// every unfinished job (by the partial index, with no condition) with the
// running ones, guessed to find one row (bench/RESULTS.md, sessions 62 and 63).
TEST_F(SchedulerLeaderTest, NoPlanItsSessionKeepsFromUnanalyzedTablesWalksTheQueue) {
  expect_kept_plans_by_key(db::testing::Statistics::kNeverAnalyzed, 20000);
}

// A crash of the server ends every session, the lock's too, and the
// recovery may undo a placement committed without waiting for the disk: the
// row is QUEUED again with the transaction id it had before, which no read
// from the leader's low water returns. The leader's own pool replaces the
// dead connections without a word; its lock check finds the lock's session
// gone, it takes the lock again (a term that follows its own) and, told of
// the recovery, reads every job: the job is placed again at once, not after
// a sweep. The undone placement is written by hand (the trigger that marks
// a changed row off), as a recovery leaves it; then one backend is killed,
// and the postmaster ends every session and replays its log. The server is
// the test's own: a crash would end every other test's sessions.
TEST(SchedulerLeaderCrash, APlacementTheRecoveryUndidIsPlacedAgainThroughTheLeadersOwnLoop) {
  struct RemovedAtEnd {  // after the server, which is stopped first
    std::string path;
    ~RemovedAtEnd() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } directory{db::testing::make_temp_dir("tpujobs-leader-crash-")};
  db::EmbeddedPostgres::Options server_options;
  server_options.state_dir = directory.path;
  server_options.sync_initdb = false;
  auto server = db::EmbeddedPostgres::start(server_options);
  ASSERT_TRUE(server.ok()) << server.error().message;
  auto pool = db::ConnectionPool::create((*server)->conninfo(), 3);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  ASSERT_TRUE(db::migrate(**pool).ok());
  db::Repositories repo(**pool);
  db::ClusterRepository cluster(**pool);
  ASSERT_TRUE(cluster.register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  db::NewJob job;
  job.tenant = "t";
  job.spec_json = json{{"name", "j"},
                       {"trainer", {{"devices", 8}, {"max_epochs", 1}}},
                       {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                       {"data", {{"dataset", "iris"}}}}
                      .dump();
  auto inserted = repo.jobs.insert_jobs({job});
  ASSERT_TRUE(inserted.ok()) << inserted.error().message;
  const std::string id = std::to_string((*inserted)[0].row.id);
  auto query = [&](const std::string& sql) { return db::testing::first_value(**pool, sql); };
  const std::string inserted_xid = query("SELECT changed_xid::text FROM jobs WHERE id = " + id);
  // The leader passes only when the test wakes it (an hour's poll), so no
  // pass is under way when the backend is killed: a pass that failed there
  // would read every job again on its own, whatever the term said.
  WakeBus bus;
  auto wake = [&] { bus.publish(db::kSubmitChannel, "test"); };  // not only submits: housekeeping
  SchedulerLeaderOptions options;
  options.conninfo = (*server)->conninfo();
  options.wake_bus = &bus;
  options.poll_interval = std::chrono::hours(1);
  options.agent_silence = std::chrono::hours(1);   // the agent "a" is no process
  options.late_heartbeat = std::chrono::hours(1);  // and sends no heartbeat
  options.sweep_interval = std::chrono::hours(1);  // only a full read finds the job again
  SchedulerLeader leader(**pool, options);

  auto state = [&] { return query("SELECT state FROM jobs WHERE id = " + id); };
  // One more pass, woken for it. A wake-up sent after the last pass ended
  // makes exactly one: the leader's pass count says when it is over, and
  // the leader then waits for the next (its poll is an hour away).
  auto pass = [&] {
    const std::int64_t until = passes_made(leader) + 1;
    wake();
    return eventually([&] { return passes_made(leader) >= until; });
  };

  // The first pass, unwoken, takes the term and places the job; the next
  // reads the placement back (until then the leader counts the job as
  // waiting still, and would place it again itself).
  leader.start();
  ASSERT_TRUE(eventually([&] { return passes_made(leader) >= 1; }));
  ASSERT_EQ("STARTING", state());
  ASSERT_TRUE(pass());

  {
    auto connection = (*pool)->acquire(std::chrono::milliseconds(1000));
    ASSERT_TRUE(connection.ok()) << connection.error().message;
    const base::Status undone =
        (*connection)
            ->execute_script(
                "BEGIN; ALTER TABLE jobs DISABLE TRIGGER jobs_note_change; "
                "UPDATE jobs SET state = 'QUEUED', agent = NULL, placement_epoch = NULL, "
                "placement = NULL, allocation = NULL, changed_xid = '" +
                inserted_xid + "'::xid8 WHERE id = " + id +
                "; ALTER TABLE jobs ENABLE TRIGGER jobs_note_change; COMMIT");
    ASSERT_TRUE(undone.ok()) << undone.error().message;
  }
  // Passes go on from the old low water: none of them finds the job.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pass());
  ASSERT_EQ("QUEUED", state());

  // The leader is idle (no pass under way, none woken) when the backend is
  // killed, and is not woken until the recovery is over and every old
  // session ended, the lock's too: a pass under way or woken earlier could
  // fail on a connection closed under it, and a failed pass reads every job
  // again whatever the term says.
  const char* kRecoveredAt = "SELECT stats_reset::text FROM pg_stat_bgwriter";
  const std::string before_crash = query(kRecoveredAt);
  const std::string backend = query("SELECT pg_backend_pid()::text");
  ASSERT_EQ(0, kill(std::stoi(backend), SIGKILL));
  ASSERT_TRUE(eventually([&] {
    const std::string mark = query(kRecoveredAt);  // or why it was not read
    return !mark.empty() && mark != before_crash && mark.rfind("error: ", 0) != 0 &&
           mark.rfind("acquire: ", 0) != 0;
  })) << "the server did not recover within 60 s";
  EXPECT_TRUE(eventually([&] { return state() == "STARTING"; }, wake))
      << "the leader did not read every job again after the recovery: " << state();
  EXPECT_EQ("a", query("SELECT agent FROM jobs WHERE id = " + id));
}

}  // namespace
}  // namespace tpujobs::service
