// The embedded server's life cycle, crash leftovers, running as root, and a
// pool living through a server restart. Each test uses a private state dir.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "db/cluster_repository.h"
#include "db/connection_pool.h"
#include "db/embedded_postgres.h"
#include "db/job_output_repository.h"
#include "db/job_repository.h"
#include "db/migrate.h"
#include "db/scheduling_read.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class EmbeddedPostgresTest : public ::testing::Test {
 protected:
  // One cluster directory for the suite: initdb runs once, each test starts
  // and stops its own server on it.
  static void SetUpTestSuite() { directory_ = testing::make_temp_dir("tpujobs-embedded-"); }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(directory_, ignored);
  }

  static EmbeddedPostgres::Options options() {
    EmbeddedPostgres::Options options;
    options.state_dir = directory_;
    options.sync_initdb = false;
    options.wait_for_previous_server = std::chrono::seconds(0);
    return options;
  }

  static std::unique_ptr<EmbeddedPostgres> start_server() {
    auto server = EmbeddedPostgres::start(options());
    EXPECT_TRUE(server.ok()) << server.error().message;
    return server.ok() ? std::move(*server) : nullptr;
  }

  // A pool of one connection to `server`, its schema migrated, and the WAL
  // writer flushing at most every 10 s (wal_writer_delay; the caller resets
  // it): what reaches the disk in the meantime is the synchronous commits'.
  static std::unique_ptr<ConnectionPool> pool_with_a_lazy_wal_writer(EmbeddedPostgres& server) {
    auto pool = ConnectionPool::create(server.conninfo(), 1);
    EXPECT_TRUE(pool.ok()) << pool.error().message;
    if (!pool.ok()) return nullptr;
    EXPECT_TRUE(migrate(**pool).ok());
    EXPECT_EQ("", testing::first_value(**pool, "ALTER SYSTEM SET wal_writer_delay = '10s'"));
    EXPECT_EQ("true", testing::first_value(**pool, "SELECT pg_reload_conf()::text"));
    return std::move(*pool);
  }

  static std::string directory_;
};

std::string EmbeddedPostgresTest::directory_;

TEST_F(EmbeddedPostgresTest, StartStopAndStartAgainKeepsData) {
  auto server = start_server();
  ASSERT_TRUE(server);
  EXPECT_TRUE(server->running());
  EXPECT_TRUE(fs::exists(server->data_dir() / "PG_VERSION"));
  EXPECT_TRUE(fs::exists(fs::path(directory_) / ".s.PGSQL.5432"));
  EXPECT_NE(std::string::npos, server->conninfo().find("dbname='tpujobs'"));
  {
    auto pool = ConnectionPool::create(server->conninfo(), 1);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    EXPECT_EQ("UTF8", testing::first_value(**pool, "SHOW server_encoding"));
    EXPECT_EQ("on", testing::first_value(**pool, "SHOW fsync"));
    EXPECT_EQ("on", testing::first_value(**pool, "SHOW synchronous_commit"));
    EXPECT_EQ("", testing::first_value(**pool, "SHOW listen_addresses"));
    EXPECT_EQ("100", testing::first_value(**pool, "SHOW max_connections"));
  }
  {
    auto pool = ConnectionPool::create(server->conninfo(), 1);
    ASSERT_TRUE(pool.ok());
    auto connection = (*pool)->acquire(milliseconds(1000));
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE((*connection)->execute_script("DROP TABLE IF EXISTS kept").ok());
    ASSERT_TRUE((*connection)->execute_script("CREATE TABLE kept (v text)").ok());
    ASSERT_TRUE((*connection)->execute("INSERT INTO kept VALUES ($1::text)", {"survives"}).ok());
  }
  const pid_t pid = server->postmaster_pid();
  ASSERT_TRUE(server->stop().ok());
  EXPECT_FALSE(server->running());
  EXPECT_NE(0, kill(pid, 0));  // the postmaster is gone
  EXPECT_FALSE(fs::exists(server->data_dir() / "postmaster.pid"));
  EXPECT_TRUE(server->stop().ok());  // idempotent

  const auto version_written = fs::last_write_time(server->data_dir() / "PG_VERSION");
  server.reset();
  auto again = start_server();
  ASSERT_TRUE(again);
  EXPECT_EQ(version_written, fs::last_write_time(again->data_dir() / "PG_VERSION"));  // no initdb
  auto pool = ConnectionPool::create(again->conninfo(), 1);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ("survives", testing::first_value(**pool, "SELECT v FROM kept"));
  EXPECT_TRUE(fs::file_size(again->log_file()) > 0);
}

TEST_F(EmbeddedPostgresTest, StalePostmasterPidFromACrashIsIgnored) {
  auto first = start_server();  // makes sure the cluster exists
  ASSERT_TRUE(first);
  first.reset();
  const fs::path pid_file = fs::path(directory_) / "pgdata" / "postmaster.pid";

  // A PID that no longer exists: a child that has exited and been reaped.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  std::ofstream(pid_file) << gone << "\n" << directory_ << "/pgdata\n";
  auto after_crash = start_server();
  ASSERT_TRUE(after_crash);
  EXPECT_NE(gone, after_crash->postmaster_pid());
  after_crash.reset();

  // A PID reused by a live process that is not PostgreSQL (this test).
  std::ofstream(pid_file) << getpid() << "\n" << directory_ << "/pgdata\n";
  auto after_reuse = start_server();
  ASSERT_TRUE(after_reuse);
  auto pool = ConnectionPool::create(after_reuse->conninfo(), 1);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ("1", testing::first_value(**pool, "SELECT 1"));
  pool->reset();
  after_reuse.reset();

  // A PID reused by another cluster's PostgreSQL (say, the system's).
  auto other_cluster = testing::shared_cluster();
  ASSERT_TRUE(other_cluster.ok()) << other_cluster.error().message;
  std::ofstream(pid_file) << (*other_cluster)->postmaster_pid() << "\n"
                          << directory_ << "/pgdata\n";
  auto beside_other = start_server();
  ASSERT_TRUE(beside_other);
  EXPECT_TRUE((*other_cluster)->running());
}

TEST_F(EmbeddedPostgresTest, LiveServerOnTheSameDirectoryIsAConflict) {
  auto running = start_server();
  ASSERT_TRUE(running);
  auto second = EmbeddedPostgres::start(options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(base::ErrorCode::kConflict, second.code());
  EXPECT_NE(std::string::npos, second.error().message.find("already running"))
      << second.error().message;
  // The first server is unharmed.
  auto pool = ConnectionPool::create(running->conninfo(), 1);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ("1", testing::first_value(**pool, "SELECT 1"));
}

TEST_F(EmbeddedPostgresTest, AsRootTheServerRunsUnprivileged) {
  if (geteuid() != 0) GTEST_SKIP() << "only meaningful when the tests run as root";
  auto server = start_server();
  ASSERT_TRUE(server);
  const passwd* postgres = getpwnam("postgres");
  if (postgres == nullptr) postgres = getpwnam("nobody");
  ASSERT_NE(nullptr, postgres);
  struct stat process;
  ASSERT_EQ(0, stat(("/proc/" + std::to_string(server->postmaster_pid())).c_str(), &process));
  EXPECT_EQ(postgres->pw_uid, process.st_uid);
  struct stat data;
  ASSERT_EQ(0, stat(server->data_dir().c_str(), &data));
  EXPECT_EQ(postgres->pw_uid, data.st_uid);
  // The root-owned service still connects through the socket.
  auto pool = ConnectionPool::create(server->conninfo(), 1);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  EXPECT_EQ("tpujobs", testing::first_value(**pool, "SELECT current_user"));
}

// With the production settings (fsync and synchronous_commit on), a
// placement, a pending reason and a judgement of silence commit without
// waiting for a WAL sync, and the agent's RUNNING waits for one.
TEST_F(EmbeddedPostgresTest, AnAsynchronousTransitionCommitsWithoutWaitingForAWalSync) {
  auto server = start_server();
  ASSERT_TRUE(server);
  // One connection: the statistics flushed before each count are its own.
  // The WAL writer flushes at most every 10 s, so however slowly the
  // placements run, their count is the commits' alone.
  std::unique_ptr<ConnectionPool> pool = pool_with_a_lazy_wal_writer(*server);
  ASSERT_TRUE(pool);
  JobRepository jobs(*pool);
  constexpr int kJobs = 20;
  // kJobs queued jobs named `prefix` and a number: their ids.
  auto queue_jobs = [&](const std::string& prefix) {
    std::vector<std::int64_t> queued;
    for (int i = 0; i < kJobs; ++i) {
      NewJob job;
      job.tenant = "team-a";
      job.name = prefix + std::to_string(i);
      job.spec_json = "{}";
      job.spec_hash = job.name;
      auto inserted = jobs.insert_jobs({job});
      EXPECT_TRUE(inserted.ok()) << inserted.error().message;
      if (inserted.ok()) queued.push_back((*inserted)[0].row.id);
    }
    return queued;
  };
  const std::vector<std::int64_t> ids = queue_jobs("j");
  ASSERT_EQ(static_cast<std::size_t>(kJobs), ids.size());
  auto wal_syncs = [&] {
    EXPECT_EQ("", testing::first_value(*pool, "SELECT ''::text FROM pg_stat_force_next_flush()"));
    return std::stoll(testing::first_value(*pool, "SELECT wal_sync FROM pg_stat_wal"));
  };
  auto transitions = [&](JobState from, JobState to, bool asynchronous) {
    const std::int64_t before = wal_syncs();
    for (std::int64_t id : ids) {
      auto moved = jobs.transition({.job_id = id,
                                    .from = {from},
                                    .to = to,
                                    .reason = "t",
                                    .asynchronous_commit = asynchronous});
      EXPECT_TRUE(moved.ok() && *moved);
    }
    return wal_syncs() - before;
  };
  // The scheduler leader's pending reasons, a statement each: no sync either.
  const std::int64_t before = wal_syncs();
  for (std::int64_t id : ids) {
    ASSERT_TRUE(jobs.set_pending({{id, R"({"reason": "Resources"})"}}).ok());
  }
  const std::int64_t reasons = wal_syncs() - before;
  EXPECT_LT(reasons, kJobs / 2);
  EXPECT_EQ(std::to_string(kJobs),
            testing::first_value(
                *pool, "SELECT count(*)::text FROM job_pending WHERE pending IS NOT NULL"));
  EXPECT_EQ("on", testing::first_value(*pool, "SHOW synchronous_commit"));
  // The leader's judgements of silence, here each declaring an agent lost.
  ClusterRepository cluster(*pool);
  std::int64_t judgements = 0;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(cluster.register_agent("a" + std::to_string(i), {}, 1).ok());
    const std::int64_t before_judgement = wal_syncs();
    auto lost = cluster.mark_lost(std::chrono::milliseconds(0), std::chrono::minutes(1));
    ASSERT_TRUE(lost.ok()) << lost.error().message;
    EXPECT_EQ(std::vector<std::string>{"a" + std::to_string(i)}, *lost);
    judgements += wal_syncs() - before_judgement;
  }
  EXPECT_LT(judgements, kJobs / 2);
  EXPECT_EQ("on", testing::first_value(*pool, "SHOW synchronous_commit"));
  const std::int64_t placements = transitions(JobState::kQueued, JobState::kStarting, true);
  const std::int64_t starts = transitions(JobState::kStarting, JobState::kRunning, false);
  EXPECT_GE(starts, kJobs);
  // The WAL writer may sync once or twice meanwhile, never once a commit.
  EXPECT_LT(placements, kJobs / 2);
  // Both committed, and the connection's own setting is as it was.
  EXPECT_EQ(std::to_string(kJobs),
            testing::first_value(*pool, "SELECT count(*)::text FROM jobs WHERE state = 'RUNNING'"));
  EXPECT_EQ("on", testing::first_value(*pool, "SHOW synchronous_commit"));

  // Placements started (the agent in the leader's process trains each as it
  // commits, and each of the copy's writes waits for a sync): no sync either.
  const std::vector<std::int64_t> started = queue_jobs("s");
  ASSERT_EQ(static_cast<std::size_t>(kJobs), started.size());
  const std::int64_t before_started = wal_syncs();
  for (std::int64_t id : started) {
    auto placed = jobs.transition_with_work(
        {.job_id = id,
         .from = {JobState::kQueued},
         .to = JobState::kStarting,
         .reason = "Placed on agent local",
         .agent = "local",
         .placement_epoch = 1,
         .asynchronous_commit = true,
         .then_running = RunningReason{"Training started on agent local", "Resumed at ", "."}});
    ASSERT_TRUE(placed.ok()) << placed.error().message;
    ASSERT_TRUE(*placed);
    EXPECT_EQ(JobState::kRunning, (*placed)->row.state);
  }
  EXPECT_LT(wal_syncs() - before_started, kJobs / 2);
  EXPECT_EQ("", testing::first_value(
                    *pool, "ALTER SYSTEM RESET wal_writer_delay"));  // the suite's directory
}

// A placement commits without waiting for the disk, so a crash may undo it,
// and the job is placed again, maybe on the same agent under the same
// epoch. Its placement number tells the two placements apart: it comes from
// a block the leader reserved with a synchronous commit before the crash,
// so the next placement's number is another, and the first placement's
// copy can write nothing about the job any more (db/migrations/041).
TEST_F(EmbeddedPostgresTest, APlacementACrashUndidKeepsItsNumberToItself) {
  auto server = start_server();
  ASSERT_TRUE(server);
  // No WAL flush but the synchronous commits' for 10 s: the crash comes first.
  std::unique_ptr<ConnectionPool> pool = pool_with_a_lazy_wal_writer(*server);
  ASSERT_TRUE(pool);
  JobRepository jobs(*pool);
  ClusterRepository cluster(*pool);
  NewJob job;
  job.tenant = "team-a";
  job.spec_json = "{}";
  auto inserted = jobs.insert_jobs({job});
  ASSERT_TRUE(inserted.ok()) << inserted.error().message;
  const std::int64_t id = (*inserted)[0].row.id;
  auto epoch = cluster.register_agent("a", {{"a-h0", "v3"}}, 1);
  ASSERT_TRUE(epoch.ok()) << epoch.error().message;
  auto place = [&](std::int64_t placement) {
    auto placed = jobs.transition({.job_id = id,
                                   .from = {JobState::kQueued},
                                   .to = JobState::kStarting,
                                   .reason = "Placed on agent a",
                                   .agent = "a",
                                   .placement_epoch = *epoch,
                                   .placement = placement,
                                   .asynchronous_commit = true});
    return placed.ok() && *placed;
  };
  auto first_block = cluster.reserve_placements();
  ASSERT_TRUE(first_block.ok()) << first_block.error().message;
  ASSERT_TRUE(place(*first_block));

  ASSERT_TRUE(server->stop(EmbeddedPostgres::Shutdown::kImmediate).ok());
  ASSERT_TRUE(server->restart().ok());
  auto row = jobs.get_job(id);  // the pool's connection to the crashed server fails first
  for (int tries = 0; tries < 100 && !row.ok(); ++tries) {
    std::this_thread::sleep_for(milliseconds(100));
    row = jobs.get_job(id);
  }
  ASSERT_TRUE(row.ok() && *row) << (row.ok() ? "no job" : row.error().message);
  ASSERT_EQ(JobState::kQueued, (**row).state) << "the crash did not undo the placement";
  EXPECT_FALSE((**row).placement);

  auto second_block = cluster.reserve_placements();
  ASSERT_TRUE(second_block.ok()) << second_block.error().message;
  EXPECT_GE(*second_block, *first_block + ClusterRepository::kPlacementBlock)
      << "a number of the block reserved before the crash was handed out again";
  ASSERT_TRUE(place(*second_block));  // the same agent, the same epoch
  // The first placement's copy, training on, writes; only the second's lands.
  JobOutputRepository outputs(*pool);
  ASSERT_TRUE(outputs.append_logs({{id, 1, {}, "stale", *first_block}}).ok());
  ASSERT_TRUE(outputs.append_logs({{id, 1, {}, "placed again", *second_block}}).ok());
  auto lines = outputs.list_logs(id, 0, 10);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(1u, lines->size());
  EXPECT_EQ("placed again", (*lines)[0].line);
  EXPECT_EQ("", testing::first_value(
                    *pool, "ALTER SYSTEM RESET wal_writer_delay"));  // the suite's directory
}

TEST_F(EmbeddedPostgresTest, PoolReconnectsAfterTheServerRestarts) {
  auto server = start_server();
  ASSERT_TRUE(server);
  auto pool = ConnectionPool::create(server->conninfo(), 2);
  ASSERT_TRUE(pool.ok());
  ConnectionPool& connections = **pool;
  EXPECT_EQ("1", testing::first_value(connections, "SELECT 1"));
  auto held = connections.acquire(milliseconds(1000));  // in use across the restart
  ASSERT_TRUE(held.ok());

  ASSERT_TRUE(server->stop().ok());
  EXPECT_FALSE(connections.ping(milliseconds(200)));
  auto while_down = connections.acquire(milliseconds(200));
  if (while_down.ok()) {
    auto failed = (*while_down)->execute("SELECT 1");
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(base::ErrorCode::kUnavailable, failed.code());
  } else {
    EXPECT_EQ(base::ErrorCode::kUnavailable, while_down.code());
  }
  auto on_held = (*held)->execute("SELECT 1");
  ASSERT_FALSE(on_held.ok());
  EXPECT_EQ(base::ErrorCode::kUnavailable, on_held.code());

  ASSERT_TRUE(server->restart().ok());
  // Right after the restart, without any retry by the caller.
  EXPECT_EQ("1", testing::first_value(connections, "SELECT 1"));
  EXPECT_TRUE(connections.ping());
  {
    PooledConnection dropped = std::move(*held);  // broken: replaced, not reused
  }
  auto first = connections.acquire(milliseconds(1000));
  auto second = connections.acquire(milliseconds(1000));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE((*first)->execute("SELECT 1").ok());
  EXPECT_TRUE((*second)->execute("SELECT 1").ok());
}

// A scheduler term says whether the server recovered from a crash since the
// last term (ClusterRepository::SchedulerTerm): a recovery may have undone
// what was committed without waiting for the disk, and the leader then reads
// every job again. A clean restart loses nothing and does not change it; a
// backend's crash (the postmaster lives on and replays the WAL) and an
// immediate shutdown do.
TEST_F(EmbeddedPostgresTest, ASchedulerTermSaysWhetherTheServerRecoveredFromACrash) {
  auto server = start_server();
  ASSERT_TRUE(server);
  auto pool = ConnectionPool::create(server->conninfo(), 2);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  ASSERT_TRUE(migrate(**pool).ok());
  ClusterRepository cluster(**pool);
  // The next term whose mark `accepts` accepts, taken once the server
  // answers; nullopt after 60 s.
  auto term_where = [&](const std::function<bool(std::int64_t)>& accepts)
      -> std::optional<ClusterRepository::SchedulerTerm> {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto term = cluster.begin_scheduler_term("replica-1");
      if (term.ok() && accepts(term->recovered_at)) return *term;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return std::nullopt;
  };
  auto any = [](std::int64_t) { return true; };
  const auto first = term_where(any);
  ASSERT_TRUE(first);
  EXPECT_NE(0, first->recovered_at);
  // A term's transaction id is not below the low water of the leader's
  // read before it: without a recovery, the leader keeps what it read.
  auto read = read_for_scheduling(**pool, std::nullopt);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const auto second = term_where(any);
  ASSERT_TRUE(second);
  EXPECT_EQ(first->term + 1, second->term);
  EXPECT_EQ(first->recovered_at, second->recovered_at);
  EXPECT_GT(second->xid, first->xid);
  EXPECT_GE(second->xid, std::stoll(read->queue.low_water));

  ASSERT_TRUE(server->stop().ok());
  ASSERT_TRUE(server->restart().ok());
  const auto after_clean_restart = term_where(any);
  ASSERT_TRUE(after_clean_restart);
  EXPECT_EQ(second->recovered_at, after_clean_restart->recovered_at);

  // One backend killed: the postmaster ends every session and replays the WAL.
  const pid_t postmaster = server->postmaster_pid();
  const pid_t backend = std::stoi(testing::first_value(**pool, "SELECT pg_backend_pid()::text"));
  ASSERT_EQ(0, kill(backend, SIGKILL));
  const auto after_backend_crash =
      term_where([&](std::int64_t mark) { return mark != after_clean_restart->recovered_at; });
  ASSERT_TRUE(after_backend_crash) << "no term told of the recovery within 60 s";
  EXPECT_EQ(postmaster, server->postmaster_pid()) << "the postmaster lived on";

  ASSERT_TRUE(server->stop(EmbeddedPostgres::Shutdown::kImmediate).ok());
  ASSERT_TRUE(server->restart().ok());
  const auto after_immediate = term_where(any);
  ASSERT_TRUE(after_immediate);
  EXPECT_NE(after_backend_crash->recovered_at, after_immediate->recovered_at);
  EXPECT_GT(after_immediate->term, after_backend_crash->term) << "the term itself is kept";
}

// What a supervised server reported, for the test to wait on.
class ReportedLines {
 public:
  EmbeddedPostgres::Report recorder() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  bool any_contains(const std::string& text) {
    for (const std::string& line : lines()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Kills the postmaster with SIGKILL and waits until the supervisor reported
// another one and it answers queries; returns how long that took (or -1 ms).
milliseconds kill_and_wait_for_comeback(EmbeddedPostgres& server, ConnectionPool& pool,
                                        ReportedLines& reported) {
  const pid_t killed = server.postmaster_pid();
  const auto began = std::chrono::steady_clock::now();
  if (killed <= 0 || kill(killed, SIGKILL) != 0) return milliseconds(-1);
  const auto deadline = began + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t now_running = server.postmaster_pid();
    if (now_running > 0 && now_running != killed &&
        reported.any_contains("is back (pid " + std::to_string(now_running) + ")") &&
        pool.ping(milliseconds(500))) {
      return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began);
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return milliseconds(-1);
}

TEST_F(EmbeddedPostgresTest, SupervisedServerIsStartedAgainAfterKillNine) {
  auto server = start_server();
  ASSERT_TRUE(server);
  auto pool = ConnectionPool::create(server->conninfo(), 2);
  ASSERT_TRUE(pool.ok());
  ConnectionPool& connections = **pool;
  {
    auto connection = connections.acquire(milliseconds(1000));
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE((*connection)->execute_script("DROP TABLE IF EXISTS committed_before").ok());
    ASSERT_TRUE((*connection)->execute_script("CREATE TABLE committed_before (v text)").ok());
    ASSERT_TRUE(
        (*connection)->execute("INSERT INTO committed_before VALUES ($1::text)", {"kept"}).ok());
  }
  // Another child of this process, exited and not yet reaped: the
  // supervisor must leave it to its owner.
  const pid_t other_child = fork();
  if (other_child == 0) _exit(7);
  ASSERT_GT(other_child, 0);

  ReportedLines reported;
  server->supervise(reported.recorder());
  const pid_t first = server->postmaster_pid();
  const milliseconds took = kill_and_wait_for_comeback(*server, connections, reported);
  ASSERT_GE(took.count(), 0) << "no new postmaster answered within 60 s; reported:\n"
                             << ::testing::PrintToString(reported.lines());
  std::printf("postmaster killed with SIGKILL: answering again after %lld ms\n",
              static_cast<long long>(took.count()));
  EXPECT_NE(first, server->postmaster_pid());
  EXPECT_TRUE(server->running());
  EXPECT_EQ("kept", testing::first_value(connections, "SELECT v FROM committed_before"));
  EXPECT_TRUE(reported.any_contains("(pid " + std::to_string(first) + ") was killed by SIGKILL"))
      << ::testing::PrintToString(reported.lines());

  int status = 0;
  ASSERT_EQ(other_child, waitpid(other_child, &status, WNOHANG))
      << "the supervisor reaped a child not its own";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);

  // stop() is a stop, not a crash: nothing comes back.
  const pid_t second = server->postmaster_pid();
  const std::size_t lines_before_stop = reported.lines().size();
  ASSERT_TRUE(server->stop().ok());
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_FALSE(server->running());
  EXPECT_NE(0, kill(second, 0));
  EXPECT_FALSE(fs::exists(server->data_dir() / "postmaster.pid"));
  EXPECT_EQ(lines_before_stop, reported.lines().size())
      << ::testing::PrintToString(reported.lines());

  // restart() supervises again.
  ASSERT_TRUE(server->restart().ok());
  const milliseconds again = kill_and_wait_for_comeback(*server, connections, reported);
  EXPECT_GE(again.count(), 0) << ::testing::PrintToString(reported.lines());
  EXPECT_EQ("kept", testing::first_value(connections, "SELECT v FROM committed_before"));
}

TEST_F(EmbeddedPostgresTest, SupervisorRetriesUntilTheServerCanStart) {
  auto server = start_server();
  ASSERT_TRUE(server);
  auto pool = ConnectionPool::create(server->conninfo(), 1);
  ASSERT_TRUE(pool.ok());
  ReportedLines reported;
  server->supervise(reported.recorder());
  // Without PG_VERSION the directory is no cluster: starts fail until it is
  // back (the server read it at its own start, and does not miss it).
  const fs::path version = server->data_dir() / "PG_VERSION";
  const fs::path moved = server->data_dir() / "PG_VERSION.moved";
  fs::rename(version, moved);
  const pid_t killed = server->postmaster_pid();
  ASSERT_EQ(0, kill(killed, SIGKILL));
  for (int i = 0; i < 600 && !reported.any_contains("restart attempt 2 failed"); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  fs::rename(moved, version);
  ASSERT_TRUE(
      reported.any_contains("restart attempt 2 failed: " + server->data_dir().string() +
                            " exists but holds no PostgreSQL cluster; next attempt in 200 ms"))
      << ::testing::PrintToString(reported.lines());
  for (int i = 0; i < 600 && !reported.any_contains("is back"); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(reported.any_contains("is back")) << ::testing::PrintToString(reported.lines());
  EXPECT_TRUE(server->running());
  EXPECT_NE(killed, server->postmaster_pid());
  // The pool's connection died with the old server: the first use drops it.
  for (int i = 0; i < 100 && !(*pool)->ping(milliseconds(500)); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ("1", testing::first_value(**pool, "SELECT 1"));
}

// What the scheduling note says of PostgreSQL: each backend is a session
// of its own, whatever the postmaster's (InitPostmasterChild calls
// setsid), so Linux's autogroup makes each one a scheduling group.
TEST_F(EmbeddedPostgresTest, EachBackendIsASessionOfItsOwn) {
  auto server = start_server();
  ASSERT_TRUE(server);
  auto pool = ConnectionPool::create(server->conninfo(), 1);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  const pid_t backend = std::stoi(testing::first_value(**pool, "SELECT pg_backend_pid()"));
  EXPECT_EQ(backend, getsid(backend));
  EXPECT_NE(getsid(server->postmaster_pid()), getsid(backend));
}

TEST(EmbeddedPostgresSchedulingNote, SaidOnlyWhenAutogroupIsOn) {
  const fs::path dir = testing::make_temp_dir("tpujobs-sysctl-");
  auto note_for = [&](const std::string& contents) {
    std::ofstream(dir / "sched_autogroup_enabled") << contents;
    return EmbeddedPostgres::scheduling_note(dir / "sched_autogroup_enabled");
  };
  const std::string on = note_for("1\n");
  EXPECT_NE(std::string::npos, on.find("kernel.sched_autogroup_enabled = 1")) << on;
  EXPECT_NE(std::string::npos, on.find("docs/deploy.md")) << on;
  EXPECT_EQ("", note_for("0\n"));
  EXPECT_EQ("", EmbeddedPostgres::scheduling_note(dir / "absent")) << "a kernel without it";
  fs::remove_all(dir);
}

TEST(EmbeddedPostgresOptionsTest, UnusableOptionsAreClearErrors) {
  EmbeddedPostgres::Options no_binaries;
  no_binaries.state_dir = testing::make_temp_dir("tpujobs-options-");
  no_binaries.bin_dir = "/nonexistent/postgresql/bin";
  auto missing = EmbeddedPostgres::start(no_binaries);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, missing.code());
  EXPECT_NE(std::string::npos, missing.error().message.find("postgresql package"));
  fs::remove_all(no_binaries.state_dir);

  EmbeddedPostgres::Options long_path;
  long_path.state_dir = "/tmp/" + std::string(120, 'x');
  auto too_long = EmbeddedPostgres::start(long_path);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, too_long.code());
  EXPECT_FALSE(fs::exists(long_path.state_dir));
}

}  // namespace
}  // namespace tpujobs::db
