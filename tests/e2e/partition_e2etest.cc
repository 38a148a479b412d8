// A network partition (DESIGN §9: "safe under crashes and partitions"). An
// agent runs in a network namespace of its own and reaches PostgreSQL over
// TCP through a veth pair; the test cuts that path with a blackhole route,
// so the agent's packets vanish without a reset or an error, as behind a
// failed switch or a firewall that drops. The agent itself runs on: its
// copy of the job trains, and its statements wait on a socket that never
// answers. The rest of the cluster (a replica and a second agent, on the
// database's Unix socket) must declare it lost and finish its job from the
// last checkpoint; once the path is back, the cut-off agent must find out,
// write nothing stale, stop its copy and rejoin. The job's record is then
// what an uninterrupted run of as many steps records, bit for bit.
//
// Needs root (a network namespace, a veth pair): CI runs as root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "db/connection.h"
#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// `ip` with these arguments; its exit status (its output goes to the test's).
int ip(const std::string& arguments) { return std::system(("ip " + arguments).c_str()); }

// A network namespace joined to this one by a veth pair on a /30 of its
// own: this side is host_address(), the namespace's side .2. Removed (with
// the pair) at the end.
class CutOffNamespace {
 public:
  CutOffNamespace() {
    const pid_t pid = getpid();
    name_ = "tpujobs-part-" + std::to_string(pid);
    outer_ = "tpjp" + std::to_string(pid % 1000000) + "o";
    inner_ = "tpjp" + std::to_string(pid % 1000000) + "i";
    // 10.213.X.Y/30 from the pid, so that runs side by side do not share one.
    const int block = pid % 16384;
    subnet_ = "10.213." + std::to_string(block / 64) + ".";
    const int base = (block % 64) * 4;
    host_ = subnet_ + std::to_string(base + 1);
    inside_ = subnet_ + std::to_string(base + 2);
    network_ = subnet_ + std::to_string(base);
    const std::string in_ns = "netns exec " + name_ + " ip ";
    ok_ = ip("netns add " + name_) == 0 &&
          ip("link add " + outer_ + " type veth peer name " + inner_) == 0 &&
          ip("link set " + inner_ + " netns " + name_) == 0 &&
          ip("addr add " + host_ + "/30 dev " + outer_) == 0 &&
          ip("link set " + outer_ + " up") == 0 &&
          ip(in_ns + "addr add " + inside_ + "/30 dev " + inner_) == 0 &&
          ip(in_ns + "link set " + inner_ + " up") == 0 && ip(in_ns + "link set lo up") == 0;
  }
  ~CutOffNamespace() {
    (void)ip("link del " + outer_ + " 2>/dev/null");  // and its peer
    (void)ip("netns del " + name_ + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  const std::string& host_address() const { return host_; }
  std::string network() const { return network_ + "/30"; }

  // What the namespace sends to this side is dropped on the way out.
  bool cut() { return ip("netns exec " + name_ + " ip route add blackhole " + host_ + "/32") == 0; }
  bool heal() {
    return ip("netns exec " + name_ + " ip route del blackhole " + host_ + "/32") == 0;
  }

 private:
  std::string name_, outer_, inner_, subnet_, host_, inside_, network_;
  bool ok_ = false;
};

// An hba_file that lets in the Unix socket, loopback and `network`, in a
// directory the server's unprivileged user can read.
class HbaFile {
 public:
  explicit HbaFile(const std::string& network)
      : directory_(db::testing::make_temp_dir("tpujobs-hba-")) {
    std::filesystem::permissions(
        directory_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                        std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                        std::filesystem::perms::others_exec);
    std::ofstream(path()) << "local all all trust\n"
                          << "host all all 127.0.0.1/32 trust\n"
                          << "host all all " << network << " trust\n";
    std::filesystem::permissions(
        path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                    std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  }
  ~HbaFile() {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  std::string path() const { return directory_ + "/pg_hba.conf"; }

 private:
  std::string directory_;
};

std::unique_ptr<ServiceProcess> started(ServiceProcess::Options options) {
  auto process = std::make_unique<ServiceProcess>(std::move(options));
  EXPECT_EQ(process->start(), "");
  return process;
}

// One core through a wide hidden layer until the test ends it, epochs of
// 100 steps, a log line and a checkpoint every 100 (a job with a line and a
// checkpoint every 25 wrote four times as much, and the tests beside it,
// each with its own PostgreSQL on the same disk, then timed out on theirs).
constexpr int kStepsPerEpoch = 100;
json long_job(const std::string& name) { return long_job_spec(name, 13, kStepsPerEpoch); }
constexpr std::chrono::seconds kJobDeadline{600};

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string agent_of(const json& view) {
  return view["allocation"].is_object() ? view["allocation"].value("agent", "") : "";
}

class Partition : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "a network namespace needs root";
    ns_ = std::make_unique<CutOffNamespace>();
    ASSERT_TRUE(ns_->ok()) << "could not set up the network namespace and its veth pair";
    hba_ = std::make_unique<HbaFile>(ns_->network());
    database_ = std::make_unique<OwnPostgres>(
        "tpujobs-partition-",
        std::vector<std::pair<std::string, std::string>>{{"listen_addresses", ns_->host_address()},
                                                         {"hba_file", hba_->path()}});
    ASSERT_EQ(database_->error(), "");
  }
  // The database as the namespace reaches it.
  std::string over_tcp() const {
    return "host=" + ns_->host_address() + " port=5432 dbname=tpujobs user=tpujobs";
  }

  std::unique_ptr<CutOffNamespace> ns_;
  std::unique_ptr<HbaFile> hba_;
  std::unique_ptr<OwnPostgres> database_;
};

// What a checkpoint's COPY leaves when its writer is cut off half-way: the
// server reads on, holding the rows it took, with nothing to send. It must
// give up on the client (the session's TCP keepalives) and free them, or a
// job resumed elsewhere would wait on them at that step.
TEST_F(Partition, AServerReadingACopyFromAClientCutOffHalfWayGivesUpAndFreesItsRows) {
  auto admin = db::Connection::open(database_->url(), std::chrono::seconds(120));
  ASSERT_TRUE(admin.ok()) << admin.error().message;
  // Each row takes the server 50 ms: the client is still sending when cut.
  ASSERT_TRUE((*admin)
                  ->execute_script("CREATE TABLE chunks (k integer PRIMARY KEY, v bytea);"
                                   "CREATE FUNCTION slowly() RETURNS trigger LANGUAGE plpgsql AS"
                                   " $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;"
                                   "CREATE TRIGGER slowly BEFORE INSERT ON chunks FOR EACH ROW"
                                   " EXECUTE FUNCTION slowly()")
                  .ok());
  const std::string chunk(std::size_t{1} << 20, 'x');
  std::vector<db::CopyRow> rows;
  for (int k = 1; k <= 64; ++k)
    rows.push_back({db::CopyField::int32(k), db::CopyField::bytes(chunk)});

  std::atomic<bool> copy_ended{false};
  std::string copy_outcome;
  // Joined on every way out of the test (its COPY fails once the path is cut).
  std::jthread writer([&] {
    // This thread alone joins the namespace: its socket is the cut-off one.
    const int fd = open(("/run/netns/" + ns_->name()).c_str(), O_RDONLY);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      copy_outcome = "could not join the namespace";
    } else {
      auto connection = db::Connection::open(over_tcp());
      if (!connection.ok()) {
        copy_outcome = "connect: " + connection.error().message;
      } else {
        auto copied = (*connection)->copy_in("COPY chunks (k, v) FROM STDIN (FORMAT binary)", rows);
        copy_outcome = copied.ok() ? "copied" : copied.error().message;
      }
    }
    if (fd >= 0) close(fd);
    copy_ended = true;
  });
  // Cut once the server has taken a few rows (uncommitted, their keys held).
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  bool reading = false;
  while (!reading && !copy_ended && Clock::now() < deadline) {
    auto progress =
        (*admin)->execute("SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy");
    reading = progress.ok() && progress->int64(0, 0) >= 2;
    if (!reading) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(reading) << "the COPY never got going: " << copy_outcome;
  ASSERT_TRUE(ns_->cut());
  const auto cut_at = Clock::now();

  // Row 1 is the cut-off COPY's until the server gives up on it.
  auto free_again = (*admin)->execute("INSERT INTO chunks (k, v) VALUES (1, 'mine')");
  const double waited = std::chrono::duration<double>(Clock::now() - cut_at).count();
  ASSERT_TRUE(free_again.ok()) << free_again.error().message
                               << " (the server still reads from the cut-off client)";
  EXPECT_LT(waited, 60.0);
  auto copies = (*admin)->execute("SELECT count(*) FROM pg_stat_progress_copy");
  ASSERT_TRUE(copies.ok());
  EXPECT_EQ(copies->int64(0, 0), 0) << "the cut-off COPY is still running";
  writer.join();
  EXPECT_NE(copy_outcome, "copied") << "the COPY cannot have finished over a cut path";
  std::printf(
      "a COPY cut off half-way: the server gave up on its client and freed its rows "
      "%.2f s after the cut (client: %s)\n",
      waited, copy_outcome.c_str());
}

TEST_F(Partition, AnAgentCutOffByTheNetworkLosesItsJobToAnotherAndRejoinsWritingNothingStale) {
  OwnPostgres& database = *database_;
  CutOffNamespace& ns = *ns_;
  auto replica = started(replica_options(database, "replica-a"));
  std::unique_ptr<ServiceProcess> near;  // started once the path is cut: the job goes to agent-far
  ServiceProcess::Options far_options = agent_options(database, "agent-far");
  far_options.extra_args[1] = over_tcp();  // --database-url
  far_options.network_namespace = ns.name();
  auto far = started(far_options);
  const std::int64_t id = submit(*replica, long_job("cut-off"));
  const json running = wait_for_step(*replica, id, 100);  // with a checkpoint stored
  ASSERT_EQ(running["state"], "RUNNING") << running.dump() << far->log();
  ASSERT_EQ(agent_of(running), "agent-far") << running.dump() << replica->log();

  ASSERT_TRUE(ns.cut());
  const auto cut_at = Clock::now();
  near = started(agent_options(database, "agent-near"));
  // Declared lost after its silence; the job resumes on agent-near.
  const json moved = wait_until(*replica, id, [](const json& j) {
    return j["state"] == "RUNNING" && agent_of(j) == "agent-near";
  });
  ASSERT_EQ(agent_of(moved), "agent-near")
      << moved.dump() << replica->log() << event_reasons(*replica, id) << near->log();
  const double moved_after = std::chrono::duration<double>(Clock::now() - cut_at).count();
  EXPECT_TRUE(far->alive()) << "the cut-off agent runs on, unaware";

  ASSERT_TRUE(ns.heal());
  // agent-far finds out once it can reach the database again, stops its
  // copy and joins again under a new epoch.
  const json rejoined = poll_until(
      [&] {
        // A poll left unanswered (the database stalled) is tried again.
        const json pool = replica->get("/v1/pool").json();
        if (!pool.is_object() || !pool.contains("agents")) return json::object();
        for (const json& agent : pool["agents"]) {
          if (agent["name"] == "agent-far") return agent;
        }
        return json::object();
      },
      [](const json& agent) { return agent.value("state", "") == "alive"; },
      std::chrono::seconds(120));
  EXPECT_EQ(rejoined.value("state", ""), "alive") << rejoined.dump() << far->log();
  EXPECT_NE(far->log().find("declared lost"), std::string::npos) << far->log();
  EXPECT_NE(far->log().find("rejoined"), std::string::npos) << far->log();

  // The job trains on on agent-near past where it resumed and past where
  // agent-far's recorded points got to (a resumed run rewrites those); then
  // the test ends it and trains its spec again for as many steps.
  const std::int64_t resumed_at = resumed_from_step(*replica, id);
  const std::int64_t far_got_to = std::max(resumed_at, last_metric_step(*replica, id));
  const json past = wait_for_running_step(*replica, id, far_got_to + kStepsPerEpoch, kJobDeadline);
  const EndedJob ended = cancel_and_wait(*replica, id, kJobDeadline);
  // What each side did, for any failure below.
  const std::string story = "\nevents:\n" + event_reasons(*replica, id) + "\nagent-far:\n" +
                            far->log() + "\nagent-near:\n" + near->log() +
                            "\nreplica-a (the leader):\n" + replica->log() + "\npostgres.log:\n" +
                            file_text(database->log_file());
  ASSERT_EQ(past["state"], "RUNNING") << past.dump() << story;
  const json done = job_view(*replica, id);
  EXPECT_EQ(agent_of(done), "agent-near") << story;
  EXPECT_EQ(done["attempt"], 1) << "the loss of a running job spends one retry" << story;
  EXPECT_GT(resumed_at, 0) << "it did not resume from a checkpoint" << story;
  // Stale lines, points or parameters from agent-far would break the
  // numbering, repeat a step or change the digest.
  expect_contiguous_logs(*replica, id);
  const std::int64_t reference =
      submit(*replica, bounded_to_steps(long_job("cut-off"), ended.steps));
  expect_same_as_reference(*replica, id, ended, reference, kStepsPerEpoch, kStepsPerEpoch,
                           kJobDeadline);
  std::printf("agent cut off by a blackhole route: its job resumed on another agent %.2f s later\n",
              moved_after);
  EXPECT_EQ(far->stop(), 0) << far->log();
  EXPECT_EQ(near->stop(), 0) << near->log();
}

}  // namespace
}  // namespace tpujobs::testing
