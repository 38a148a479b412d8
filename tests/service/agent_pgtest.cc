// The agent's membership over real tables (DESIGN §9): its heartbeat does
// not depend on the connections its jobs use, and an agent declared lost
// registers again under a new epoch. And a job's end waits for its own
// output, not for another job's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/thread_priority.h"
#include "db/listener.h"
#include "db/migrate.h"
#include "db/repositories.h"
#include "scheduler/pool.h"
#include "service/agent.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::service {
namespace {

// A number for a placement a test makes itself (JobRow::placement): no
// block the placements sequence reserves in a test's database reaches it.
std::int64_t test_placement() {
  static std::atomic<std::int64_t> next{1'000'000'000'000};
  return next++;
}

using std::chrono::milliseconds;
using std::chrono::seconds;

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conninfo = db::testing::create_schema();
    ASSERT_TRUE(conninfo.ok()) << conninfo.error().message;
    conninfo_ = *conninfo;
    auto pool = db::ConnectionPool::create(conninfo_, 1);  // the agent's: one connection
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    ASSERT_TRUE(db::migrate(*pool_).ok());
    auto observer = db::ConnectionPool::create(conninfo_, 1);
    ASSERT_TRUE(observer.ok());
    observer_ = std::move(*observer);
    cluster_ = std::make_unique<db::ClusterRepository>(*observer_);
  }

  std::unique_ptr<Agent> start_agent() { return start_agent(*pool_); }
  std::unique_ptr<Agent> start_agent(
      db::ConnectionPool& pool, base::Clock& clock = base::real_clock(),
      milliseconds heartbeat_interval = milliseconds(50), WakeBus* wake_bus = nullptr,
      WrittenViews* written_views = nullptr, milliseconds poll_interval = milliseconds(500),
      const std::string& name = "a", const char* pool_spec = "v3-8") {
    AgentOptions options;
    options.poll_interval = poll_interval;
    options.clock = &clock;
    options.wake_bus = wake_bus;
    options.written_views = written_views;
    options.name = name;
    options.conninfo = conninfo_;
    auto layout = scheduler::parse_pool(pool_spec);
    EXPECT_TRUE(layout.ok());
    options.layout = *layout;
    for (std::size_t i = 0; i < options.layout.hosts.size(); ++i) {
      options.layout.hosts[i].name = name + "-h" + std::to_string(i);
    }
    options.heartbeat_interval = heartbeat_interval;
    auto agent = std::make_unique<Agent>(pool, options);
    EXPECT_TRUE(agent->start().ok());
    return agent;
  }

  // As a standalone serve's agent: woken through `bus` only (no LISTEN, a
  // poll of an hour), it looks at its work when it starts and when woken.
  std::unique_ptr<Agent> start_woken_agent(WakeBus& bus) {
    auto pool = db::ConnectionPool::create(conninfo_, 4);
    EXPECT_TRUE(pool.ok());
    woken_pool_ = std::move(*pool);
    return start_agent(*woken_pool_, base::real_clock(), milliseconds(50), &bus, nullptr,
                       std::chrono::hours(1));
  }

  std::optional<db::AgentRow> agent_row() {
    auto agents = cluster_->list_agents();
    if (!agents.ok()) return std::nullopt;
    for (const db::AgentRow& row : *agents) {
      if (row.name == "a") return row;
    }
    return std::nullopt;
  }

  // What job `id`'s end comes to when the database refuses it `refusals`
  // times first (defined below).
  std::string end_after_refusals(std::int64_t id, int refusals);

  // Polls `done` until it holds or the (generous) deadline passes.
  template <class Done>
  bool eventually(Done done, seconds within = seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  std::string conninfo_;
  std::unique_ptr<db::ConnectionPool> pool_;
  std::unique_ptr<db::ConnectionPool> woken_pool_;  // start_woken_agent's
  std::unique_ptr<db::ConnectionPool> observer_;
  std::unique_ptr<db::ClusterRepository> cluster_;
};

TEST_F(AgentTest, HeartbeatsWhileItsJobsHoldEveryPooledConnection) {
  std::unique_ptr<Agent> agent = start_agent();
  std::optional<db::AgentRow> before = agent_row();
  ASSERT_TRUE(before);
  {
    // Runners and telemetry hold the shared pool's only connection (a
    // long write, a database that answers slowly): the heartbeat still
    // reaches the table, so the leader does not declare the agent lost.
    auto held = pool_->acquire(seconds(5));
    ASSERT_TRUE(held.ok());
    EXPECT_TRUE(eventually([&] {
      std::optional<db::AgentRow> now = agent_row();
      return now && now->last_heartbeat > before->last_heartbeat;
    })) << "the heartbeat waited for a pooled connection";
  }
  EXPECT_EQ("alive", agent_row()->state);
  agent->stop();
  EXPECT_EQ("lost", agent_row()->state) << "a clean stop leaves the pool at once";
}

// The heartbeat waits its interval on the agent's clock: with a FakeClock,
// an interval of an hour passes at once and the next heartbeat is sent.
TEST_F(AgentTest, HeartbeatsOnceAnIntervalOfItsClockHasPassed) {
  base::FakeClock clock;
  std::unique_ptr<Agent> agent = start_agent(*pool_, clock, std::chrono::hours(1));
  std::optional<db::AgentRow> before = agent_row();
  ASSERT_TRUE(before);
  EXPECT_TRUE(eventually([&] {
    std::optional<db::AgentRow> now = agent_row();
    return now && now->last_heartbeat > before->last_heartbeat;
  })) << "the heartbeat waited an hour of real time";
  agent->stop();
}

TEST_F(AgentTest, DeclaredLostItRegistersAgainUnderANewEpoch) {
  std::unique_ptr<Agent> agent = start_agent();
  const std::int64_t first = agent->epoch();
  ASSERT_GT(first, 0);
  // The leader declares it lost (as if its heartbeats had stopped arriving).
  auto lost = cluster_->mark_lost(milliseconds(0), std::chrono::minutes(1));
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(std::vector<std::string>{"a"}, *lost);
  ASSERT_TRUE(eventually([&] {
    std::optional<db::AgentRow> row = agent_row();
    return agent->epoch() != first && row && row->state == "alive" && row->epoch == agent->epoch();
  })) << "epoch "
      << agent->epoch() << ", first " << first;
  EXPECT_GT(agent->epoch(), first);
  // And it stays: one rejoin, not one per heartbeat that was under way.
  const std::int64_t second = agent->epoch();
  for (int beat = 0; beat < 3; ++beat) {
    const auto last = agent_row()->last_heartbeat;
    ASSERT_TRUE(eventually([&] { return agent_row()->last_heartbeat > last; }));
  }
  EXPECT_EQ(second, agent->epoch());
  EXPECT_EQ(second, agent_row()->epoch);
}

// A clean stop (DESIGN §9): a job the leader placed here a moment before
// the stop, that no copy started, is requeued without spending an attempt,
// not left on the agent for the leader to find lost after the leave (a
// retry spent, or FAILED without one).
TEST_F(AgentTest, AJobPlacedButNotStartedWhenItStopsIsRequeuedWithoutARetry) {
  auto pool = db::ConnectionPool::create(conninfo_, 3);
  ASSERT_TRUE(pool.ok());
  std::unique_ptr<Agent> agent = start_agent(**pool);
  db::Repositories repo(*observer_);
  db::NewJob job;
  job.tenant = "t";
  job.spec_json = "{}";
  auto inserted = repo.jobs.insert_jobs({job});
  ASSERT_TRUE(inserted.ok());
  const std::int64_t id = (*inserted)[0].row.id;

  // Placed in a transaction that also keeps the jobs table from the
  // agent's supervisor until the stop has begun: no copy of it starts.
  auto placer_pool = db::ConnectionPool::create(conninfo_, 1);
  ASSERT_TRUE(placer_pool.ok());
  auto connection = (*placer_pool)->acquire(seconds(5));
  ASSERT_TRUE(connection.ok());
  auto placement = db::Transaction::begin(**connection);
  ASSERT_TRUE(placement.ok());
  ASSERT_TRUE(placement->execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE").ok());
  ASSERT_TRUE(placement
                  ->execute("UPDATE jobs SET state = 'STARTING', agent = 'a',"
                            " placement_epoch = $2::bigint, placement = $3::bigint"
                            " WHERE id = $1::bigint",
                            {id, agent->epoch(), test_placement()})
                  .ok());
  std::thread stopper([&] { agent->stop(); });
  const bool drained = eventually([&] {
    std::optional<db::AgentRow> row = agent_row();
    return row && row->state == "draining";
  });
  ASSERT_TRUE(placement->commit().ok());
  stopper.join();
  EXPECT_TRUE(drained) << "the agent drains first, still registered";

  auto row = repo.jobs.get_job(id);
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(db::JobState::kQueued, (*row)->state);
  EXPECT_EQ(0, (*row)->attempt) << "no retry spent";
  EXPECT_FALSE((*row)->agent.has_value());
  auto events = repo.jobs.list_events(id);
  ASSERT_TRUE(events.ok() && !events->empty());
  EXPECT_EQ("Agent a stopping; requeued to resume from its last checkpoint", events->back().reason);
  EXPECT_EQ("lost", agent_row()->state) << "and then it left";
}

// A job trained for `epochs` (-1: until stopped) on digits, logging every
// `log_every` steps.
std::string digits_job(int epochs, int log_every) {
  return R"({"name": "j", "trainer": {"accelerator": "tpu", "devices": 1, "max_epochs": )" +
         std::to_string(epochs) + R"(, "log_every_n_steps": )" + std::to_string(log_every) +
         R"(}, "model": {"layers": [{"type": "linear", "out": 32}, {"type": "relu"},
         {"type": "linear", "out": 10}], "loss": "cross_entropy"},
         "data": {"dataset": "digits", "batch_size": 64}})";
}

// Queued job `id` placed on core `core` of agent "a"'s first host under
// `epoch`, as a new placement; whether that applied.
bool place_on_core(db::Repositories& repo, std::int64_t id, std::int64_t epoch, int core) {
  auto placed = repo.jobs.transition(lifecycle::place_on_agent(
      id, "test",
      R"({"generation": "v3", "accelerator_type": null, "hosts": ["a-h0"], "agent": "a",
          "cores": [{"host": "a-h0", "core": )" +
          std::to_string(core) + "}]}",
      "a", epoch, test_placement()));
  return placed.ok() && *placed;
}

// Stores a job of `max_epochs` (-1: it trains until it is stopped) and
// places it on core `core` of agent "a"'s first host under `epoch`; its id
// (0: it could not).
std::int64_t place_digits_job(db::Repositories& repo, std::int64_t epoch, int core,
                              int max_epochs) {
  db::NewJob job;
  job.tenant = "t";
  job.spec_json = digits_job(max_epochs, 1000);
  auto inserted = repo.jobs.insert_jobs({job});
  if (!inserted.ok()) return 0;
  const std::int64_t id = (*inserted)[0].row.id;
  return place_on_core(repo, id, epoch, core) ? id : 0;
}

std::int64_t place_endless_job(db::Repositories& repo, std::int64_t epoch, int core = 0) {
  return place_digits_job(repo, epoch, core, -1);
}

// Whether job `id` is RUNNING and has stored progress.
bool trains_now(db::Repositories& repo, std::int64_t id) {
  auto row = repo.jobs.get_job(id);
  return row.ok() && *row && (**row).state == db::JobState::kRunning && (**row).progress_json;
}

// A job that trains until stopped, queued (0: the insert failed).
std::int64_t insert_endless_job(db::Repositories& repo) {
  db::NewJob job;
  job.tenant = "t";
  job.spec_json = digits_job(-1, 1000);
  auto inserted = repo.jobs.insert_jobs({job});
  return inserted.ok() ? (*inserted)[0].row.id : 0;
}

// Job `id` placed as the scheduler leader places one on the agent in its
// own process, started (lifecycle::place_started) or not: the placement
// answers the row and where it resumes (nullopt: it could not be placed).
std::optional<db::PlacedWork> place_with_work(db::Repositories& repo, std::int64_t id,
                                              std::int64_t epoch, bool started) {
  db::Transition t = lifecycle::place_on_agent(
      id, "test",
      R"({"generation": "v3", "accelerator_type": null, "hosts": ["a-h0"], "agent": "a",
          "cores": [{"host": "a-h0", "core": 0}]})",
      "a", epoch, test_placement());
  if (started) t = lifecycle::place_started(std::move(t), "agent a");
  auto placed = repo.jobs.transition_with_work(t);
  if (!placed.ok()) return std::nullopt;
  return *placed;
}

// Job `id` as a database crash leaves it when it undid the job's
// placement: QUEUED, placed nowhere, its placement's events gone.
bool lose_placement(db::ConnectionPool& pool, std::int64_t id) {
  auto connection = pool.acquire(seconds(5));
  if (!connection.ok()) return false;
  const std::string job = std::to_string(id);
  return (*connection)
             ->execute(
                 "UPDATE jobs SET state = 'QUEUED', agent = NULL, placement_epoch = NULL,"
                 " placement = NULL, allocation = NULL, started_at = NULL WHERE id = " +
                 job)
             .ok() &&
         (*connection)
             ->execute("DELETE FROM job_events WHERE to_state <> 'QUEUED' AND job_id = " + job)
             .ok();
}

// A new endless job (its id in `id`), promised by `agent`, placed started
// on it, and that placement then undone as a database crash undoes it: what
// the placement answered, for the hand-over (nullopt: a step failed).
std::optional<db::PlacedWork> placed_started_then_lost(db::Repositories& repo,
                                                       db::ConnectionPool& pool, Agent& agent,
                                                       std::int64_t& id) {
  id = insert_endless_job(repo);
  if (id == 0 || !agent.promise_start(id, agent.epoch())) return std::nullopt;
  std::optional<db::PlacedWork> work = place_with_work(repo, id, agent.epoch(), /*started=*/true);
  if (!work || !lose_placement(pool, id)) return std::nullopt;
  return work;
}

// The cluster soak's jobs barely finished: every job's end flushed the
// agent's whole telemetry queue, one end at a time, behind a job that logs
// faster than the database stores. Here the writer's store of one job's
// output cannot finish at all (the test holds that job's row): another job
// still ends, its own output stored first.
// The nice value of each of this process's threads.
std::vector<int> thread_nices() {
  std::vector<int> nices;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // After the command's closing parenthesis: state (field 3) ... nice (19).
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
      if (i == 19) nices.push_back(std::stoi(field));
    }
  }
  return nices;
}

// A standalone serve's API service keeps the views of placed jobs in
// memory (service/view_cache.h): the agent in the same process names every
// job whose row it changes (its start, its progress, its requeue), so that
// such a view is read again.
TEST_F(AgentTest, WithAWakeBusItNamesEachJobWhoseRowItChanges) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::mutex mutex;
  // The job's row as read each time the bus named it: the write is done.
  std::vector<db::JobRow> named;
  bus.subscribe(kJobsChangedChannel, [&](const std::string& payload) {
    for (std::int64_t id : parse_job_ids(payload)) {
      auto row = repo.jobs.get_job(id);
      std::lock_guard<std::mutex> lock(mutex);
      if (row.ok() && *row) named.push_back(**row);
    }
  });
  const auto named_with = [&](auto predicate) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::any_of(named.begin(), named.end(), predicate);
  };
  std::unique_ptr<Agent> agent = start_agent(**pool, base::real_clock(), milliseconds(50), &bus);
  const std::int64_t id = place_endless_job(repo, agent->epoch());
  ASSERT_NE(0, id);
  bus.publish(db::kAgentChannel, "a");  // as the leader wakes it
  EXPECT_TRUE(eventually([&] {
    return named_with([](const db::JobRow& r) { return r.state == db::JobState::kRunning; });
  })) << "its start";
  EXPECT_TRUE(eventually([&] {
    return named_with([](const db::JobRow& r) { return r.progress_json.has_value(); });
  })) << "its progress";
  agent->stop();
  EXPECT_TRUE(named_with([](const db::JobRow& r) { return r.state == db::JobState::kQueued; }))
      << "its requeue by the stop";
}

// A standalone serve's agent wakes the log followers and waits of the API
// service in its process through the wake bus: as it stores a job's lines
// and once its end is stored. It sends no NOTIFY tpujobs_logs.
TEST_F(AgentTest, WithAWakeBusItWakesLogFollowersThroughItNotByNotify) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  db::Repositories repo(*observer_);
  db::Listener listener(conninfo_, db::kLogChannel);
  ASSERT_TRUE(listener.wait(milliseconds(0)).ok()) << "listening from here on";
  WakeBus bus;
  std::mutex mutex;
  // The job's state as read each time the bus named it.
  std::vector<db::JobState> woken;
  bus.subscribe(db::kLogChannel, [&](const std::string& payload) {
    for (std::int64_t id : parse_job_ids(payload)) {
      auto row = repo.jobs.get_job(id);
      std::lock_guard<std::mutex> lock(mutex);
      if (row.ok() && *row) woken.push_back((**row).state);
    }
  });
  const auto woken_in = [&](db::JobState state) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::count(woken.begin(), woken.end(), state);
  };
  std::unique_ptr<Agent> agent = start_agent(**pool, base::real_clock(), milliseconds(50), &bus);
  const std::int64_t id = place_digits_job(repo, agent->epoch(), 0, /*max_epochs=*/1);
  ASSERT_NE(0, id);
  bus.publish(db::kAgentChannel, "a");  // as the leader wakes it
  EXPECT_TRUE(eventually([&] { return woken_in(db::JobState::kSucceeded) > 0; }))
      << "its end, once stored";
  EXPECT_GT(woken_in(db::JobState::kRunning), 0) << "its lines, as they were stored";
  agent->stop();
  auto notes = listener.wait(milliseconds(500));
  ASSERT_TRUE(notes.ok());
  for (const db::Notification& note : *notes)
    EXPECT_NE(note.channel, db::kLogChannel) << "NOTIFY tpujobs_logs " << note.payload;
}

// What the API service keeps (service/view_cache.h, put_written): each view
// an agent's transition answered, with the view generation read before it
// and the view a read right after it renders.
struct RecordingViews final : WrittenViews {
  struct Handed {
    std::uint64_t seen = 0;
    std::string answered, read_after;
  };
  db::Repositories& repo;
  explicit RecordingViews(db::Repositories& r) : repo(r) {}
  std::uint64_t views_generation() override { return 42; }
  void written(std::uint64_t seen, const db::JobWithCheckpoint& job) override {
    // On the runner's thread, before it trains on or after it ended: nothing
    // else wrote since.
    auto read = repo.jobs.get_job_with_checkpoint(job.row.id);
    std::lock_guard<std::mutex> lock(mutex);
    handed.push_back(
        {seen, views::job_body(job), read.ok() && *read ? views::job_body(**read) : ""});
  }
  std::vector<Handed> taken() {
    std::lock_guard<std::mutex> lock(mutex);
    return handed;
  }
  std::mutex mutex;
  std::vector<Handed> handed;
};

// The views its RUNNING and its end transitions answered are the ones a
// read right after each renders, field for field. The end's too: a
// finished job's view is then kept from its end on (when only a read kept
// it, one that came between the end's commit and the forget told after it
// left nothing kept, and a GET of that job during a database outage
// answered 503).
TEST_F(AgentTest, ItHandsOverTheViewsOfAJobItStartsAndEndsAsAReadWouldRenderThem) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  db::Repositories repo(*observer_);
  RecordingViews views(repo);
  std::unique_ptr<Agent> agent =
      start_agent(**pool, base::real_clock(), milliseconds(50), nullptr, &views);
  const std::int64_t id = place_digits_job(repo, agent->epoch(), /*core=*/0, /*max_epochs=*/1);
  ASSERT_NE(0, id);
  ASSERT_TRUE(eventually([&] { return views.taken().size() >= 2; }));
  const std::vector<RecordingViews::Handed> handed = views.taken();
  ASSERT_EQ(2u, handed.size()) << "its start and its end";
  for (const RecordingViews::Handed& h : handed) {
    EXPECT_EQ(42u, h.seen) << "the generation read before the transition";
    EXPECT_EQ(h.read_after, h.answered);
    EXPECT_EQ(id, nlohmann::json::parse(h.answered)["id"]);
  }
  const auto start = nlohmann::json::parse(handed[0].answered);
  EXPECT_EQ("RUNNING", start["state"]);
  EXPECT_FALSE(start["started_at"].is_null());
  const auto end = nlohmann::json::parse(handed[1].answered);
  EXPECT_EQ("SUCCEEDED", end["state"]);
  EXPECT_FALSE(end["finished_at"].is_null());
  EXPECT_TRUE(end["result"].is_object()) << handed[1].answered;
}

// How many lines of the shared server's log hold `text`.
int server_log_lines_with(const std::string& text) {
  auto cluster = db::testing::shared_cluster();
  if (!cluster.ok()) return -1;
  std::ifstream log((*cluster)->log_file());
  int n = 0;
  for (std::string line; std::getline(log, line);) n += line.find(text) != std::string::npos;
  return n;
}

// What a job's end that the database refuses at first comes to: events
// table renamed away (in this test's own schema: every transition records
// an event, so none is stored), the job's cancel requested, the end
// refused `refusals` times (counted in the server's log), the table back;
// the job's states as its events give them once it is CANCELLED ("" if it
// never was).
std::string AgentTest::end_after_refusals(std::int64_t id, int refusals) {
  db::Repositories repo(*observer_);
  auto sql = [&](const char* text) {
    auto connection = observer_->acquire(seconds(5));
    return connection.ok() && (*connection)->execute(text).ok();
  };
  const std::string missing = "relation \"job_events\" does not exist";
  const int refused_before = server_log_lines_with(missing);
  EXPECT_TRUE(sql("ALTER TABLE job_events RENAME TO job_events_away"));
  EXPECT_TRUE(repo.jobs.request_cancel(id).ok());
  // The copy stops for the cancel; its end is refused, again and again.
  EXPECT_TRUE(eventually(
      [&] { return server_log_lines_with(missing) >= refused_before + refusals; }, seconds(60)))
      << "the end was not written again";
  EXPECT_EQ(db::JobState::kRunning, repo.jobs.get_job(id)->value().state);
  EXPECT_TRUE(sql("ALTER TABLE job_events_away RENAME TO job_events"));
  if (!eventually([&] {
        auto row = repo.jobs.get_job(id);
        return row.ok() && *row && (**row).state == db::JobState::kCancelled;
      }))
    return "";
  auto events = repo.jobs.list_events(id);
  std::string states;
  if (events.ok())
    for (const db::JobEventRow& e : *events) states += std::string(db::to_string(e.to_state)) + " ";
  return states;
}

// A job's end that the database does not store at first is written again
// until it is: the end its copy decided is the one stored, and no second
// copy trains meanwhile.
TEST_F(AgentTest, AnEndTheDatabaseRefusesIsWrittenAgainUntilItIsStored) {
  db::Repositories repo(*observer_);
  std::unique_ptr<Agent> agent = start_agent();
  const std::int64_t id = place_endless_job(repo, agent->epoch());
  ASSERT_NE(0, id);
  ASSERT_TRUE(eventually([&] { return trains_now(repo, id); }));
  EXPECT_EQ("QUEUED STARTING RUNNING CANCELLED ", end_after_refusals(id, 2))
      << "one copy, and the end it decided";
}

// The same for a slice spanning two agents, whose first part writes the
// end: its end is written again while the looks go on (five refusals take
// 1.5 s of back-off: 0.1 + 0.2 + 0.4 + 0.8 s, three looks' poll intervals),
// and lands. When a look stopped that
// copy as moved on (its placement among the ended ones), the job stayed
// RUNNING with no copy anywhere.
TEST_F(AgentTest, ASlicesEndTheDatabaseRefusesIsWrittenAgainUntilItIsStored) {
  db::Repositories repo(*observer_);
  auto pool_b = db::ConnectionPool::create(conninfo_, 1);
  ASSERT_TRUE(pool_b.ok());
  std::unique_ptr<Agent> a = start_agent(*pool_, base::real_clock(), milliseconds(50), nullptr,
                                         nullptr, milliseconds(500), "a", "v4-8");
  std::unique_ptr<Agent> b = start_agent(**pool_b, base::real_clock(), milliseconds(50), nullptr,
                                         nullptr, milliseconds(500), "b", "v4-8");
  const std::int64_t placement = test_placement();
  db::NewJob job;
  job.tenant = "t";
  job.spec_json = R"({"name": "slice", "trainer": {"accelerator": "tpu", "devices": 4,
      "num_nodes": 2, "max_epochs": -1, "log_every_n_steps": 1000},
      "resources": {"accelerator_type": "v4-16"},
      "model": {"layers": [{"type": "linear", "out": 3}]}, "data": {"dataset": "iris"}})";
  auto inserted = repo.jobs.insert_jobs({job});
  ASSERT_TRUE(inserted.ok());
  const std::int64_t id = (*inserted)[0].row.id;
  nlohmann::json cores = nlohmann::json::array();
  for (const char* host : {"a-h0", "b-h0"})
    for (int core = 0; core < 4; ++core) cores.push_back({{"host", host}, {"core", core}});
  const nlohmann::json allocation = {
      {"generation", "v4"},
      {"accelerator_type", "v4-16"},
      {"hosts", {"a-h0", "b-h0"}},
      {"agent", "a"},
      {"cores", cores},
      {"slice",
       {{"placement", placement},
        {"parts",
         {{{"agent", "a"}, {"epoch", a->epoch()}, {"first_host", 0}, {"hosts", 1}},
          {{"agent", "b"}, {"epoch", b->epoch()}, {"first_host", 1}, {"hosts", 1}}}}}}};
  auto placed = repo.jobs.transition(
      lifecycle::place_on_agent(id, "test", allocation.dump(), "a", a->epoch(), placement,
                                {{"a", a->epoch()}, {"b", b->epoch()}}));
  ASSERT_TRUE(placed.ok() && *placed) << (placed.ok() ? "" : placed.error().message);
  ASSERT_TRUE(eventually([&] { return trains_now(repo, id); }, seconds(60)))
      << nlohmann::json::parse(repo.jobs.get_job(id)->value().error_json.value_or("{}")).dump()
      << " " << db::to_string(repo.jobs.get_job(id)->value().state);
  EXPECT_EQ("QUEUED STARTING RUNNING CANCELLED ", end_after_refusals(id, 5));
}

// Its jobs train below the service's priority. A job's start, up to the
// RUNNING a client waits on, runs at the service's, on one of a few threads
// that outlive it, not on a new thread of its own: on a new thread
// resolving the spec took 0.5 ms longer (bench/RESULTS.md, session 40).
TEST_F(AgentTest, ItTrainsBelowTheServicesPriorityAndStartsOnAFewLastingThreads) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  const int service_nice = base::this_thread_nice();
  ASSERT_LT(service_nice, 10) << "the test runs at nice 10 already";
  struct Views final : WrittenViews {
    std::uint64_t views_generation() override { return 0; }
    void written(std::uint64_t, const db::JobWithCheckpoint&) override {
      base::MutexLock lock(mutex);  // on the thread that wrote its RUNNING
      starters.insert(std::this_thread::get_id());
      nices.push_back(base::this_thread_nice());
    }
    base::Mutex mutex;
    std::set<std::thread::id> starters GUARDED_BY(mutex);
    std::vector<int> nices GUARDED_BY(mutex);
  } views;
  std::unique_ptr<Agent> agent = start_agent(**pool, base::real_clock(), milliseconds(50), nullptr,
                                             &views);  // training_nice: 10, 1 worker
  db::Repositories repo(*observer_);
  std::vector<std::int64_t> ids;
  for (int core = 0; core < 4; ++core) {
    // One after another: each starts once the one before trains.
    ids.push_back(place_endless_job(repo, agent->epoch(), core));
    ASSERT_NE(0, ids.back());
    ASSERT_TRUE(eventually([&] {
      auto row = repo.jobs.get_job(ids.back());
      return row.ok() && *row && (**row).state == db::JobState::kRunning && (**row).progress_json;
    }));
  }
  const std::vector<int> nices = thread_nices();
  // The worker pool's thread and the jobs' runners; the heartbeat, the
  // supervisor, the starters, the telemetry writer and this thread keep the
  // service's.
  EXPECT_GE(std::count(nices.begin(), nices.end(), 10), 5) << ::testing::PrintToString(nices);
  EXPECT_GE(std::count(nices.begin(), nices.end(), service_nice), 4)
      << ::testing::PrintToString(nices);
  EXPECT_EQ(base::this_thread_nice(), service_nice);
  {
    base::MutexLock lock(views.mutex);
    EXPECT_EQ(std::vector<int>(4, service_nice), views.nices);
    EXPECT_LE(views.starters.size(), 2u) << "four starts, on the agent's two starters";
  }
  agent->stop();
  for (std::int64_t id : ids) {
    auto row = repo.jobs.get_job(id);
    ASSERT_TRUE(row.ok() && *row);
    EXPECT_EQ(db::JobState::kQueued, (**row).state) << "requeued at the stop";
  }
}

// A standalone serve's leader places a job on the agent in its own process
// started, once that agent promised to start it (service/local_agent.h): the
// job trains without the agent looking at its work, and the agent's next
// look keeps that copy rather than starting or stopping one. A placement
// under another epoch, or of a job a copy runs, is not promised.
TEST_F(AgentTest, AJobPlacedStartedTrainsWithoutALookAndTheNextLookKeepsIt) {
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::unique_ptr<Agent> started = start_woken_agent(bus);
  Agent& agent = *started;
  const auto trains = [&](std::int64_t id) { return trains_now(repo, id); };
  const auto running_events = [&](std::int64_t id) {
    auto events = repo.jobs.list_events(id);
    std::vector<std::string> reasons;
    if (!events.ok()) return reasons;
    for (const db::JobEventRow& e : *events) {
      if (e.to_state == db::JobState::kRunning) reasons.push_back(e.reason);
    }
    return reasons;
  };

  const std::int64_t handed = insert_endless_job(repo);
  ASSERT_NE(0, handed);
  EXPECT_FALSE(agent.promise_start(handed, agent.epoch() + 1)) << "another epoch's placement";
  ASSERT_TRUE(agent.promise_start(handed, agent.epoch()));
  std::optional<db::PlacedWork> work =
      place_with_work(repo, handed, agent.epoch(), /*started=*/true);
  ASSERT_TRUE(work);
  EXPECT_EQ(db::JobState::kRunning, work->row.state);
  EXPECT_EQ("a", work->row.agent.value_or(""));
  EXPECT_FALSE(work->resume.checkpoint_step) << "a new job resumes from nothing";
  auto events = repo.jobs.list_events(handed);
  ASSERT_TRUE(events.ok());
  std::vector<std::pair<db::JobState, std::string>> steps;
  for (const db::JobEventRow& e : *events) steps.emplace_back(e.to_state, e.reason);
  const std::vector<std::pair<db::JobState, std::string>> expected{
      {db::JobState::kQueued, "Submitted"},
      {db::JobState::kStarting, "test"},
      {db::JobState::kRunning, "Training started on agent a"}};
  EXPECT_EQ(expected, steps) << "both events, in order, from the placement's statement";
  ASSERT_TRUE(agent.take_placed(*work));
  EXPECT_TRUE(eventually([&] { return trains(handed); })) << "started with no look";
  EXPECT_FALSE(agent.promise_start(handed, agent.epoch())) << "a copy runs it already";
  EXPECT_FALSE(agent.take_placed(*work)) << "not promised";

  // A job placed without a promise starts at the look the wake-up makes;
  // that look finds the handed job's copy running and leaves it so.
  const std::int64_t looked_for = place_endless_job(repo, agent.epoch(), 1);
  ASSERT_NE(0, looked_for);
  bus.publish(db::kAgentChannel, "a");
  EXPECT_TRUE(eventually([&] { return trains(looked_for); }));
  auto before = repo.jobs.get_job(handed);
  ASSERT_TRUE(before.ok() && *before);
  EXPECT_TRUE(eventually([&] {
    auto now = repo.jobs.get_job(handed);
    return now.ok() && *now && (**now).state == db::JobState::kRunning &&
           (**now).progress_json != (**before).progress_json;
  })) << "the look stopped or restarted the handed copy";
  EXPECT_EQ(1u, running_events(handed).size()) << "started once, by its placement";

  // Stopped, it is requeued at a checkpoint with its output: placed again,
  // started, the placement answers where it resumes as the agent's own read
  // would, and its RUNNING names the checkpoint.
  agent.stop();
  auto again = repo.jobs.transition_with_work(lifecycle::place_on_agent(
      handed, "test", R"({"hosts": ["a-h0"], "cores": []})", "a", agent.epoch(), test_placement()));
  ASSERT_TRUE(again.ok());
  ASSERT_FALSE(*again) << "the agent left: no placement on it applies";
  ASSERT_TRUE(cluster_->register_agent("a", {{"a-h0", "v3"}}, 1).ok());
  const auto epoch = agent_row()->epoch;
  again = place_with_work(repo, handed, epoch, /*started=*/true);
  ASSERT_TRUE(again.ok() && *again);
  auto read = repo.outputs.resume_point(handed);
  ASSERT_TRUE(read.ok());
  ASSERT_TRUE((**again).resume.checkpoint_step) << "stopped at a checkpoint";
  EXPECT_EQ(read->checkpoint_step, (**again).resume.checkpoint_step);
  EXPECT_GT((**again).resume.max_log_seq, 0);
  EXPECT_EQ(read->max_log_seq, (**again).resume.max_log_seq);
  EXPECT_EQ(read->max_metric_seq, (**again).resume.max_metric_seq);
  EXPECT_EQ(read->metrics_after_checkpoint, (**again).resume.metrics_after_checkpoint);
  auto checkpoint = repo.outputs.latest_checkpoint(handed);
  ASSERT_TRUE(checkpoint.ok() && *checkpoint);
  EXPECT_EQ((**checkpoint).epoch, (**again).checkpoint_epoch.value_or(-1));
  EXPECT_EQ(db::JobState::kRunning, (**again).row.state);
  const std::vector<std::string> reasons = running_events(handed);
  ASSERT_EQ(2u, reasons.size());
  EXPECT_EQ("Resumed from the checkpoint at step " +
                std::to_string(*(**again).resume.checkpoint_step) + " on agent a",
            reasons.back());
}

// A look that reads a job placed started before the leader hands it over
// leaves it to the hand-over: the job starts once, with one RUNNING event.
TEST_F(AgentTest, ALookLeavesAPromisedJobToItsHandOver) {
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::unique_ptr<Agent> started = start_woken_agent(bus);
  Agent& agent = *started;
  const auto trains = [&](std::int64_t id) { return trains_now(repo, id); };

  const std::int64_t promised = insert_endless_job(repo);
  ASSERT_NE(0, promised);
  ASSERT_TRUE(agent.promise_start(promised, agent.epoch()));
  std::optional<db::PlacedWork> work =
      place_with_work(repo, promised, agent.epoch(), /*started=*/true);
  ASSERT_TRUE(work);
  // Another job, placed STARTING, and a look: once that job trains, the
  // look has read the promised one too.
  const std::int64_t looked_for = place_endless_job(repo, agent.epoch(), 1);
  ASSERT_NE(0, looked_for);
  bus.publish(db::kAgentChannel, "a");
  ASSERT_TRUE(eventually([&] { return trains(looked_for); }));
  ASSERT_TRUE(agent.take_placed(*work)) << "the look started a copy of the promised job";
  EXPECT_TRUE(eventually([&] { return trains(promised); }));
  auto events = repo.jobs.list_events(promised);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(1, std::count_if(events->begin(), events->end(), [](const db::JobEventRow& e) {
              return e.to_state == db::JobState::kRunning;
            }));
}

// A placement started commits without waiting for the disk
// (lifecycle::place_started), so a database crash may undo one whose copy
// already trains. Here the crash's work is done by hand, right after the
// commit: the row back to QUEUED, its placement's events gone. The copy
// stores nothing of its run, this process's views of the job are
// forgotten, and the agent's next look stops it; placed again, the job
// starts from the beginning, once.
TEST_F(AgentTest, ACopyOfAPlacementStartedThatTheDatabaseLostStoresNothingAndIsStopped) {
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::unique_ptr<Agent> started = start_woken_agent(bus);
  Agent& agent = *started;
  std::int64_t id = 0;
  std::optional<db::PlacedWork> work = placed_started_then_lost(repo, *observer_, agent, id);
  ASSERT_TRUE(work);
  // What the API service in this process is told: the copy's refused
  // progress and checkpoint writes, and the look that stops it, name the job
  // on the bus by which that service forgets its views (none is wired here).
  std::atomic<int> told{0};
  bus.subscribe(kJobsChangedChannel, [&](const std::string& payload) {
    for (std::int64_t changed : parse_job_ids(payload)) told += changed == id ? 1 : 0;
  });
  ASSERT_TRUE(agent.take_placed(*work)) << "handed over as the statement answered";
  EXPECT_TRUE(eventually([&] { return agent.live_view(id).has_value(); }))
      << "the copy trains on the placement the database lost";
  bus.publish(db::kAgentChannel, "a");
  EXPECT_TRUE(eventually([&] { return !agent.live_view(id).has_value(); }))
      << "the look did not stop the copy of a job not placed here";
  EXPECT_TRUE(eventually([&] { return told > 0; })) << "the job was never named";
  auto row = repo.jobs.get_job(id);
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(db::JobState::kQueued, (**row).state);
  EXPECT_FALSE((**row).agent);
  EXPECT_FALSE((**row).progress_json) << "the copy's progress was stored";
  auto point = repo.outputs.resume_point(id);
  ASSERT_TRUE(point.ok());
  EXPECT_EQ(0, point->max_log_seq) << "the copy's log lines were stored";
  EXPECT_EQ(0, point->max_metric_seq) << "the copy's metric points were stored";
  EXPECT_FALSE(point->checkpoint_step) << "the copy's checkpoint was stored";

  // The copy's thread ends a moment after its live view goes.
  ASSERT_TRUE(eventually([&] { return agent.promise_start(id, agent.epoch()); }))
      << "a copy of it still runs";
  work = place_with_work(repo, id, agent.epoch(), /*started=*/true);
  ASSERT_TRUE(work);
  EXPECT_FALSE(work->resume.checkpoint_step);
  ASSERT_TRUE(agent.take_placed(*work));
  EXPECT_TRUE(eventually([&] { return trains_now(repo, id); }));
  auto events = repo.jobs.list_events(id);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> reasons;
  for (const db::JobEventRow& e : *events) reasons.push_back(e.reason);
  EXPECT_EQ((std::vector<std::string>{"Submitted", "test", "Training started on agent a"}),
            reasons);
}

// As above, but the leader places the job here again, under the same epoch,
// while the copy of the lost placement still trains: the agent does not
// promise it (a copy runs), so it is placed STARTING and the agent woken.
// That copy is stopped as the lost placement's, not taken for the new one's
// (which would leave the row STARTING for the copy's whole life), and a new
// copy starts the job and writes its RUNNING.
TEST_F(AgentTest, AJobPlacedAgainWhileACopyOfItsLostPlacementStartedRunsGetsANewCopy) {
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::unique_ptr<Agent> started = start_woken_agent(bus);
  Agent& agent = *started;
  std::int64_t id = 0;
  std::optional<db::PlacedWork> work = placed_started_then_lost(repo, *observer_, agent, id);
  ASSERT_TRUE(work);
  ASSERT_TRUE(agent.take_placed(*work));
  ASSERT_TRUE(eventually([&] { return agent.live_view(id).has_value(); }));

  EXPECT_FALSE(agent.promise_start(id, agent.epoch())) << "a copy of it runs";
  std::optional<db::PlacedWork> again = place_with_work(repo, id, agent.epoch(), /*started=*/false);
  ASSERT_TRUE(again);
  EXPECT_EQ(db::JobState::kStarting, again->row.state);
  bus.publish(db::kAgentChannel, "a");
  EXPECT_TRUE(eventually([&] { return !agent.live_view(id).has_value(); }))
      << "the copy of the lost placement was taken for the new placement";
  // A serve's agent also looks every poll interval: the look after the old
  // copy ended starts the new one.
  EXPECT_TRUE(eventually([&] {
    bus.publish(db::kAgentChannel, "a");
    return trains_now(repo, id);
  })) << "the job was left STARTING";
  auto events = repo.jobs.list_events(id);
  ASSERT_TRUE(events.ok());
  std::vector<db::JobState> states;
  for (const db::JobEventRow& e : *events) states.push_back(e.to_state);
  EXPECT_EQ((std::vector<db::JobState>{db::JobState::kQueued, db::JobState::kStarting,
                                       db::JobState::kRunning}),
            states);
}

// A job requeued and placed here again, under the same epoch, before the
// agent's next look (requeued for a lost peer, or preempted and fitting
// again at once): the copy of the first placement, still training, is
// stopped as stale, not kept as the second's (which left the row STARTING
// for the copy's whole life, its writes landing under the new placement),
// and a new copy resumes the job from its checkpoint. The log runs on, one
// line a number, with no gap.
TEST_F(AgentTest, AJobPlacedHereAgainUnderTheSameEpochGetsANewCopyThatResumes) {
  db::Repositories repo(*observer_);
  WakeBus bus;
  std::unique_ptr<Agent> started = start_woken_agent(bus);
  Agent& agent = *started;
  const std::int64_t id = place_endless_job(repo, agent.epoch());
  ASSERT_NE(0, id);
  bus.publish(db::kAgentChannel, "a");
  ASSERT_TRUE(eventually(
      [&] {
        auto point = repo.outputs.resume_point(id);
        return trains_now(repo, id) && point.ok() && point->checkpoint_step;
      },
      seconds(120)))
      << "no checkpoint stored";
  auto first = repo.jobs.get_job(id);
  ASSERT_TRUE(first.ok() && *first && (**first).placement);
  // Both before the agent looks again: it looks only when woken.
  ASSERT_TRUE(*repo.jobs.transition(
      lifecycle::requeue_elsewhere(id, "Requeued by the test", *(**first).placement,
                                   /*retry=*/false, {db::JobState::kRunning})));
  ASSERT_TRUE(place_on_core(repo, id, agent.epoch(), 0));
  auto second = repo.jobs.get_job(id);
  ASSERT_TRUE(second.ok() && *second && (**second).placement);
  ASSERT_NE(*(**first).placement, *(**second).placement);

  EXPECT_TRUE(eventually(
      [&] {
        bus.publish(db::kAgentChannel, "a");  // as a serve's agent looks every poll interval
        return trains_now(repo, id);
      },
      seconds(60)))
      << "the job was left STARTING";
  auto events = repo.jobs.list_events(id);
  ASSERT_TRUE(events.ok());
  std::vector<db::JobState> states;
  for (const db::JobEventRow& e : *events) states.push_back(e.to_state);
  using db::JobState;
  EXPECT_EQ((std::vector<JobState>{JobState::kQueued, JobState::kStarting, JobState::kRunning,
                                   JobState::kQueued, JobState::kStarting, JobState::kRunning}),
            states);
  EXPECT_EQ(0u, events->back().reason.find("Resumed from the checkpoint at step "))
      << events->back().reason;
  agent.stop();  // its last lines stored
  auto lines = repo.outputs.list_logs(id, 0, 100000);
  ASSERT_TRUE(lines.ok());
  ASSERT_FALSE(lines->empty());
  for (std::size_t i = 0; i < lines->size(); ++i)
    ASSERT_EQ(static_cast<std::int64_t>(i + 1), (*lines)[i].seq) << "a gap in the log";
}

// A stop waits for a start the agent promised: the placement commits or is
// forgone within one round trip of the leader's. A copy handed over during
// the stop is stopped with the others, and its job requeued without
// spending an attempt.
TEST_F(AgentTest, AStopWaitsForAPromisedStartAndRequeuesItsCopy) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  db::Repositories repo(*observer_);
  std::unique_ptr<Agent> agent = start_agent(**pool);
  const std::int64_t epoch = agent->epoch();
  const std::int64_t job = insert_endless_job(repo);
  ASSERT_NE(0, job);
  ASSERT_TRUE(agent->promise_start(job, epoch));
  std::thread stopper([&] { agent->stop(); });
  // Stopping: it promises nothing more, and has not drained yet, so the
  // placement still applies (it requires its agent alive).
  const std::int64_t other = insert_endless_job(repo);
  const bool stopping = eventually([&] {
    const bool promised = agent->promise_start(other, epoch);
    if (promised) agent->forgo(other);
    return !promised;
  });
  std::optional<db::AgentRow> row = agent_row();
  std::optional<db::PlacedWork> work = place_with_work(repo, job, epoch, /*started=*/true);
  const bool taken = work && agent->take_placed(*work);
  if (!taken) agent->forgo(job);  // else the stop would wait for ever
  stopper.join();
  EXPECT_TRUE(stopping);
  EXPECT_EQ("alive", row ? row->state : "gone") << "the stop drained before the promise settled";
  ASSERT_TRUE(work) << "the placement did not apply";
  EXPECT_TRUE(taken);
  auto after = repo.jobs.get_job(job);
  ASSERT_TRUE(after.ok() && *after);
  EXPECT_EQ(db::JobState::kQueued, (**after).state) << "the stop requeues the copy it was handed";
  EXPECT_EQ(0, (**after).attempt);
}

TEST_F(AgentTest, AJobsEndStoresItsOwnOutputNotWaitingForAnotherJobsStore) {
  auto pool = db::ConnectionPool::create(conninfo_, 4);
  ASSERT_TRUE(pool.ok());
  std::unique_ptr<Agent> agent = start_agent(**pool);
  db::Repositories repo(*observer_);
  auto place = [&](const std::string& spec, int core) -> std::int64_t {
    db::NewJob job;
    job.tenant = "t";
    job.spec_json = spec;
    auto inserted = repo.jobs.insert_jobs({job});
    EXPECT_TRUE(inserted.ok());
    const std::int64_t id = (*inserted)[0].row.id;
    const std::string allocation =
        R"({"generation": "v3", "accelerator_type": null, "hosts": ["a-h0"], "agent": "a",
            "cores": [{"host": "a-h0", "core": )" +
        std::to_string(core) + "}]}";
    auto placed = repo.jobs.transition(
        lifecycle::place_on_agent(id, "test", allocation, "a", agent->epoch(), test_placement()));
    EXPECT_TRUE(placed.ok() && *placed);
    return id;
  };
  auto job = [&](std::int64_t id) {
    auto row = repo.jobs.get_job(id);
    return row.ok() && *row ? std::optional<db::JobRow>(**row) : std::nullopt;
  };
  const std::int64_t endless = place(digits_job(-1, 1000), 0);
  ASSERT_TRUE(eventually([&] {
    auto row = job(endless);
    return row && row->state == db::JobState::kRunning && row->progress_json;
  }));

  // The writer's next store of the endless job's output waits on its row,
  // locked by one statement that sleeps (an idle transaction would be ended
  // by idle_in_transaction_session_timeout) until the test cancels it.
  auto holder_pool = db::ConnectionPool::create(conninfo_, 1);
  ASSERT_TRUE(holder_pool.ok());
  std::thread holder([&] {
    auto connection = (*holder_pool)->acquire(seconds(5));
    ASSERT_TRUE(connection.ok());
    (void)(*connection)
        ->execute(
            "SELECT pg_sleep(600) FROM (SELECT id FROM jobs WHERE id = $1::bigint FOR UPDATE) j",
            {endless});
  });
  auto run_sql = [&](const char* sql) {
    auto connection = observer_->acquire(seconds(5));
    if (!connection.ok()) return std::string();
    auto result = (*connection)->execute(sql);
    return result.ok() && result->rows() > 0 ? result->string(0, 0) : std::string();
  };
  const bool stuck = eventually([&] {
    return run_sql(
               "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
               " AND datname = current_database()") != "0";
  });
  if (stuck) {
    const std::int64_t small = place(digits_job(1, 5), 1);
    EXPECT_TRUE(eventually(
        [&] {
          auto row = job(small);
          return row && row->state == db::JobState::kSucceeded;
        },
        seconds(120)))
        << "its end waited for the endless job's store";
    auto lines = repo.outputs.list_logs(small, -1, 1000);
    EXPECT_TRUE(lines.ok() && !lines->empty()) << "its lines were stored before it ended";
    EXPECT_EQ(db::JobState::kRunning, job(endless)->state);
  }
  run_sql(
      "SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
      " WHERE query LIKE 'SELECT pg_sleep(600)%'");
  holder.join();
  EXPECT_TRUE(stuck) << "the telemetry writer never waited on the held row";
  agent->stop();
}

}  // namespace
}  // namespace tpujobs::service
