// A database that hangs rather than goes away: the service's embedded
// PostgreSQL (the postmaster and its backends) is stopped with SIGSTOP, so
// its sockets stay open and the kernel still takes what is sent, but nothing
// answers. The service runs with --db-timeout 2. While the database hangs
// and several requests that need it are waiting, /healthz answers 200 at
// once, /readyz turns 503 `database: unreachable`, a GET /v1/jobs and a
// submit are answered 503 problem+json with Retry-After after the deadline
// (the submit's detail says the job may or may not be stored when its
// insert was sent, and that it was not stored when no connection could be
// opened to send it; the retry then checks that claim). After
// SIGCONT everything answers again without a restart: the submit retried
// with its Idempotency-Key finds one job, a new submit gets 201 and runs,
// and the job that ran before the hang is intact.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "db/connection.h"
#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kDbTimeoutSeconds = 2;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const json& tiny_spec() {
  static const json spec = {
      {"name", "tiny"},
      {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data", {{"dataset", "iris"}}}};
  return spec;
}

// Stops a process this test started and every process descended from it
// (a postmaster and its backends: each backend has a session of its own,
// so its process group is not the postmaster's), and always lets them go
// again, even when an assertion ends the test early.
class StoppedTree {
 public:
  explicit StoppedTree(pid_t root) {
    if (root <= 0 || kill(root, SIGSTOP) != 0) return;
    // Stopped first, the root forks no new child while the rest are listed.
    stopped_ = process_tree(root);
    for (pid_t pid : stopped_) {
      if (pid != root) kill(pid, SIGSTOP);
    }
  }
  ~StoppedTree() { resume(); }
  StoppedTree(const StoppedTree&) = delete;
  StoppedTree& operator=(const StoppedTree&) = delete;

  // How many processes it stopped (the root, its backends and helpers).
  std::size_t stopped() const { return stopped_.size(); }
  void resume() {
    for (pid_t pid : stopped_) kill(pid, SIGCONT);
    stopped_.clear();
  }

 private:
  std::vector<pid_t> stopped_;
};

struct Timed {
  HttpResponse response;
  double seconds = 0;
};

Timed timed_get(int port, const std::string& target, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  HttpResponse response = http(port, "GET", target, "", {}, timeout);
  return {std::move(response), seconds_since(start)};
}

void expect_database_problem(const Timed& answer, const std::string& what) {
  EXPECT_EQ(answer.response.status, 503) << what << ": " << answer.response.body;
  EXPECT_EQ(answer.response.header("content-type"), "application/problem+json") << what;
  EXPECT_FALSE(answer.response.header("retry-after").empty()) << what;
  const json problem = answer.response.json();
  ASSERT_TRUE(problem.is_object()) << what << ": " << answer.response.body;
  EXPECT_EQ(problem["status"], 503) << what;
  EXPECT_NE(problem.value("detail", "").find("did not answer within 2 s"), std::string::npos)
      << what << ": " << answer.response.body;
  // The deadline plus the time to get a connection (the pool's 5 s at
  // most), with room for a loaded machine: never the whole hang.
  EXPECT_LT(answer.seconds, 30.0) << what;
}

// A single-process service (a v3-8 host) whose API waits on each database
// statement at most kDbTimeoutSeconds.
ServiceProcess::Options with_db_timeout() {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  options.extra_args = {"--db-timeout", std::to_string(kDbTimeoutSeconds)};
  return options;
}

TEST(DatabaseHang, ProbesAnswerRequestsFailBoundedAndAllRecovers) {
  ServiceProcess service(with_db_timeout());
  ASSERT_EQ(service.start(), "");

  const std::int64_t before = submit(service, tiny_spec());
  ASSERT_GT(before, 0);
  const json finished = service.wait_terminal(before);
  ASSERT_EQ(finished["state"], "SUCCEEDED") << finished.dump() << service.log();
  ASSERT_EQ(service.get("/readyz").status, 200);

  const pid_t postmaster = service.embedded_postmaster_pid();
  ASSERT_GT(postmaster, 0) << "no embedded PostgreSQL in " << service.state_dir();
  StoppedTree hang(postmaster);
  ASSERT_GT(hang.stopped(), 1u) << "the postmaster and its backends";
  const auto hung = Clock::now();

  // More requests waiting on the database than the service has I/O threads.
  const int port = service.port();
  std::vector<std::future<Timed>> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::async(std::launch::async, [port] {
      return timed_get(port, "/v1/jobs", std::chrono::seconds(60));
    }));
  }
  auto submitted = std::async(std::launch::async, [port] {
    const auto start = Clock::now();
    HttpResponse response =
        http(port, "POST", "/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "during-the-hang"}},
             std::chrono::seconds(60));
    return Timed{std::move(response), seconds_since(start)};
  });
  auto all_answered = [&] {
    for (auto& request : waiting) {
      if (request.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    }
    return submitted.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  };

  // While they wait: liveness never touches the database (200 at once,
  // every time), and readiness turns 503 within a few seconds, each answer
  // coming at once.
  int health_checks = 0;
  double unready_after = -1;
  Timed ready;
  while (seconds_since(hung) < 60 && (!all_answered() || unready_after < 0)) {
    const Timed health = timed_get(port, "/healthz", std::chrono::seconds(2));
    EXPECT_EQ(health.response.status, 200) << "GET /healthz while the database hangs";
    EXPECT_LT(health.seconds, 2.0);
    ++health_checks;
    if (unready_after < 0) {
      ready = timed_get(port, "/readyz", std::chrono::seconds(2));
      EXPECT_LT(ready.seconds, 2.0) << "GET /readyz waited on the database";
      if (ready.response.status == 503) unready_after = seconds_since(hung);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(health_checks, 1);
  ASSERT_GE(unready_after, 0) << ready.response.status << " " << ready.response.body
                              << service.log();
  EXPECT_EQ(ready.response.json()["database"], "unreachable");
  EXPECT_FALSE(ready.response.header("retry-after").empty());

  for (auto& request : waiting) expect_database_problem(request.get(), "GET /v1/jobs");
  const Timed submit_answer = submitted.get();
  expect_database_problem(submit_answer, "POST /v1/jobs");
  // Either the insert was sent and its answer never came (it may have been
  // stored), or no connection could be opened to send it (it was not).
  const bool maybe_stored =
      submit_answer.response.body.find("may or may not have been stored") != std::string::npos;
  const bool not_stored =
      submit_answer.response.body.find("the job was not stored") != std::string::npos;
  EXPECT_TRUE(maybe_stored != not_stored) << submit_answer.response.body;
  // Still live after all that.
  EXPECT_EQ(timed_get(port, "/healthz", std::chrono::seconds(2)).response.status, 200);

  hang.resume();
  const auto resumed = Clock::now();

  // Back without a restart: the connections that timed out were closed and
  // new ones opened.
  const json ready_again = poll_until(
      [&] {
        const HttpResponse r = service.get("/readyz");
        return json{{"status", r.status}};
      },
      [](const json& r) { return r["status"] == 200; }, std::chrono::seconds(60));
  ASSERT_EQ(ready_again["status"], 200) << service.log();
  const double ready_after = seconds_since(resumed);
  const HttpResponse list = service.get("/v1/jobs");
  EXPECT_EQ(list.status, 200) << list.body;

  // The submit whose answer was lost: retried with its key, it is one job,
  // stored once (201 if the stopped server never ran the insert, 200 if it
  // ran it when it woke).
  const HttpResponse retried =
      service.post("/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "during-the-hang"}});
  ASSERT_TRUE(retried.status == 201 || retried.status == 200) << retried.body;
  if (not_stored) {
    EXPECT_EQ(retried.status, 201) << "the answer said it was not stored";
  }
  const HttpResponse again =
      service.post("/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "during-the-hang"}});
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["id"], retried.json()["id"]);

  const std::int64_t after = submit(service, tiny_spec());
  ASSERT_GT(after, 0);
  EXPECT_EQ(service.wait_terminal(after)["state"], "SUCCEEDED") << service.log();
  EXPECT_EQ(service.wait_terminal(retried.json()["id"].get<std::int64_t>())["state"], "SUCCEEDED");

  // The job from before the hang is as it was.
  const json intact = job_view(service, before);
  EXPECT_EQ(intact["state"], "SUCCEEDED") << intact.dump();
  EXPECT_EQ(intact["id"], finished["id"]);
  EXPECT_EQ(intact["progress"], finished["progress"]) << intact.dump();
  EXPECT_EQ(intact.value("finished_at", ""), finished.value("finished_at", ""));

  std::printf(
      "database hung (SIGSTOP) with --db-timeout %d: /readyz 503 after %.2f s, requests 503 "
      "after %.2f s, ready again %.2f s after SIGCONT; the submit retried with its key: %d\n",
      kDbTimeoutSeconds, unready_after, submit_answer.seconds, ready_after, retried.status);
  EXPECT_EQ(service.stop(), 0) << service.log();
}

// One job run to its end, then a session of the test (no idle timeout);
// "" when it could not.
std::string run_a_job_then_open_a_session(ServiceProcess& service, std::int64_t& first,
                                          std::unique_ptr<db::Connection>& session) {
  first = submit(service, tiny_spec());
  if (first <= 0) return "the first submit failed";
  const json done = service.wait_terminal(first);
  if (done["state"] != "SUCCEEDED") return "the first job ended " + done.dump();
  auto opened = db::Connection::open("host=" + service.state_dir().string() +
                                     " port=5432 dbname=tpujobs user=tpujobs");
  if (!opened.ok()) return opened.error().message;
  session = std::move(*opened);
  base::Status set = session->execute_script("SET idle_in_transaction_session_timeout = 0");
  return set.ok() ? "" : set.error().message;
}

// The session stores a job under the Idempotency-Key `key` (a copy of job
// `first`) in a transaction it leaves open: a submit with that key then
// waits inside the server, on the unique key, until the transaction ends.
// (Its INSERT is prepared without waiting: no table is locked.)
std::string hold_a_key(db::Connection& session, std::int64_t first, const std::string& key) {
  base::Status began = session.execute_script("BEGIN");
  if (!began.ok()) return began.error().message;
  auto held = session.execute(
      "INSERT INTO jobs (tenant, name, spec, idempotency_key)"
      " SELECT tenant, 'holds-the-key', spec, $2::text FROM jobs WHERE id = $1::bigint",
      {first, key});
  return held.ok() ? "" : held.error().message;
}

// A submit whose INSERT is not answered in time: it waits inside the
// server (on the key a session of the test holds, which the server does
// not give up when its client leaves) and would commit once the session
// ends. The service answers 503 after its deadline and ends the server
// process left with the INSERT, so the job is stored once or never: the
// submit retried with its key answers 200 with the job if the INSERT landed
// first, 201 if it was ended first. Either way the job runs.
TEST(DatabaseHang, ASubmitWhoseInsertWasNotAnsweredInTimeIsStoredOnceWhenRetried) {
  ServiceProcess service(with_db_timeout());
  ASSERT_EQ(service.start(), "");
  std::int64_t first = 0;
  std::unique_ptr<db::Connection> holder;
  ASSERT_EQ(run_a_job_then_open_a_session(service, first, holder), "");
  ASSERT_EQ(hold_a_key(*holder, first, "lands-late"), "");

  const HttpResponse lost =
      service.post("/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "lands-late"}});
  EXPECT_EQ(lost.status, 503) << lost.body;
  EXPECT_NE(lost.body.find("may or may not have been stored"), std::string::npos) << lost.body;
  ASSERT_TRUE(holder->execute_script("ROLLBACK").ok());  // a waiting INSERT goes on

  // The same submit again: the job the late INSERT stored, or a new one.
  HttpResponse retried;
  poll_until(
      [&] {
        retried = service.post("/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "lands-late"}});
        return json{{"status", retried.status}};
      },
      [](const json& r) { return r["status"] == 200 || r["status"] == 201; },
      std::chrono::seconds(60));
  ASSERT_TRUE(retried.status == 200 || retried.status == 201) << retried.body;
  const std::int64_t id = retried.json()["id"].get<std::int64_t>();
  const json done = service.wait_terminal(id);
  EXPECT_EQ(done["state"], "SUCCEEDED") << done.dump() << service.log();
  const json list = service.get("/v1/jobs").json();
  EXPECT_EQ(list["jobs"].size(), 2u) << "the first job and this one, stored once: " << list.dump();
  EXPECT_EQ(service.stop(), 0) << service.log();
}

// An insert carried out with its answer lost stores a job the service never
// queued. Nobody retries it (a user gone, a pipeline that gave up on the
// 503), and it must still run, not wait for a restart. Here such a job is
// stored by a session of the test; then a submit's INSERT is not answered
// in time (it waits on a key the session holds), and the service, once it
// has ended that INSERT's server process, queues what it finds.
TEST(DatabaseHang, AJobStoredByAnInsertWhoseAnswerWasLostRunsWithoutARetry) {
  ServiceProcess service(with_db_timeout());
  ASSERT_EQ(service.start(), "");
  std::int64_t first = 0;
  std::unique_ptr<db::Connection> holder;
  ASSERT_EQ(run_a_job_then_open_a_session(service, first, holder), "");
  // Stored and committed, as the lost insert's job would be.
  auto stored = holder->execute(
      "INSERT INTO jobs (tenant, name, labels, priority, spec, resolved, warnings, spec_hash)"
      " SELECT tenant, 'answer-lost', labels, priority, spec, resolved, warnings, spec_hash"
      "   FROM jobs WHERE id = $1::bigint RETURNING id",
      {first});
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  const std::int64_t orphan = stored->int64(0, 0);
  ASSERT_EQ(hold_a_key(*holder, first, "never-answered"), "");
  // Served, in whatever state: the leader's next poll of the table may
  // place it at once (the pool is idle).
  const json found = job_view(service, orphan);
  EXPECT_EQ(found["name"], "answer-lost") << found.dump();

  const HttpResponse lost =
      service.post("/v1/jobs", tiny_spec().dump(), {{"Idempotency-Key", "never-answered"}});
  EXPECT_EQ(lost.status, 503) << lost.body;
  ASSERT_NE(lost.body.find("may or may not have been stored"), std::string::npos) << lost.body;

  const json done = service.wait_terminal(orphan);
  EXPECT_EQ(done["state"], "SUCCEEDED") << done.dump() << service.log();
  // (The scheduler leader reads the queue from the table: it placed the
  // job as it found it, with no adoption of its own.)
  // The INSERT left waiting was ended before the job was queued: it never
  // lands, even once the key is free.
  ASSERT_TRUE(holder->execute_script("ROLLBACK").ok());
  const json list = service.get("/v1/jobs").json();
  EXPECT_EQ(list["jobs"].size(), 2u) << "the first job and the one found: " << list.dump();
  EXPECT_EQ(service.stop(), 0) << service.log();
}

// A cluster whose PostgreSQL stalls for longer than an agent's silence
// (10 s): the agents' heartbeats wait in the stall with everything else.
// At the end of it the leader's judgement of silence, waiting too, may be
// answered before the heartbeats are written; it must not declare the agent
// lost (which requeues its running job from its last checkpoint, spending a
// retry). The job runs on, on the same agent, in its first attempt.
enum class Stall {
  kPause,      // the server stopped (SIGSTOP), as a host or VM paused
  kAgentsLock  // a session holding the agents table, as a migration's ALTER
};

void a_cluster_outlives_a_database_stall_longer_than_the_silence(Stall kind,
                                                                 std::chrono::seconds stall) {
  OwnPostgres database("tpujobs-stall-");
  ASSERT_EQ(database.error(), "");
  ServiceProcess replica(replica_options(database, "replica-a"));
  ASSERT_EQ(replica.start(), "");
  ServiceProcess agent(agent_options(database, "agent-1"));
  ASSERT_EQ(agent.start(), "");
  const std::int64_t id = submit(replica, long_job_spec("through-a-stall", 5));
  ASSERT_GT(id, 0);
  const json running = wait_for_step(replica, id, 50);
  ASSERT_EQ(running["state"], "RUNNING") << running.dump() << agent.log();

  // The stall itself, past the agents' silence (10 s) and the leader's
  // lock-idle timeout (6 s).
  const std::chrono::seconds kStall = stall;
  if (kind == Stall::kPause) {
    const pid_t postmaster = database->postmaster_pid();
    ASSERT_GT(postmaster, 0);
    StoppedTree pause(postmaster);
    ASSERT_GT(pause.stopped(), 1u) << "the postmaster and its backends";
    std::this_thread::sleep_for(kStall);
  } else {
    auto holder = db::Connection::open(database.url());
    ASSERT_TRUE(holder.ok()) << holder.error().message;
    ASSERT_TRUE((*holder)
                    ->execute_script("SET idle_in_transaction_session_timeout = 0; BEGIN; "
                                     "LOCK TABLE agents IN ACCESS EXCLUSIVE MODE")
                    .ok());
    std::this_thread::sleep_for(kStall);
    ASSERT_TRUE((*holder)->execute_script("COMMIT").ok());
  }
  // The replica's first answers after the stall may still be its own
  // deadline's 503s: the view is read until it answers.
  const json at_resume = wait_until(replica, id, [](const json& j) { return j.contains("state"); });
  ASSERT_EQ(at_resume["state"], "RUNNING") << at_resume.dump() << agent.log();
  const std::int64_t step = at_resume["progress"].value("step", std::int64_t{0});
  // Long enough after the stall that the leader has judged the silence
  // again: the job trains 100 more steps with a checkpoint stored.
  const json after = wait_for_step(replica, id, step + 100, std::chrono::seconds(120));
  const std::string story = "\nevents:\n" + event_reasons(replica, id) + "\nreplica:\n" +
                            replica.log() + "\nagent:\n" + agent.log();
  EXPECT_EQ(after["state"], "RUNNING") << after.dump() << story;
  EXPECT_GE(after["progress"].value("step", std::int64_t{0}), step + 100) << after.dump() << story;
  EXPECT_EQ(after["attempt"], 0) << "no retry spent" << story;
  EXPECT_EQ(after["allocation"].value("agent", ""), "agent-1") << story;
  EXPECT_EQ(event_reasons(replica, id).find("was lost"), std::string::npos) << story;
  EXPECT_EQ(agent.log().find("declared lost"), std::string::npos) << story;
  const json pool = replica.get("/v1/pool").json();
  ASSERT_TRUE(pool["agents"].is_array() && pool["agents"].size() == 1) << pool.dump();
  EXPECT_EQ(pool["agents"][0].value("state", ""), "alive") << pool.dump() << story;
  std::printf("PostgreSQL %s for %lld s under a cluster: the replica's log %s, %s\n",
              kind == Stall::kPause ? "paused" : "held the agents table",
              static_cast<long long>(kStall.count()),
              replica.log().find("to answer; agents are not judged") != std::string::npos
                  ? "shows a judgement of silence answered late and dropped"
                  : "shows no late judgement",
              replica.log().find("no longer the scheduler leader") != std::string::npos
                  ? "and the lead lost and taken again"
                  : "and the lead kept");

  ASSERT_EQ(replica.post("/v1/jobs/" + std::to_string(id) + "/cancel", "").status, 202);
  EXPECT_EQ(replica.wait_terminal(id)["state"], "CANCELLED");
  EXPECT_EQ(agent.stop(), 0) << agent.log();
  EXPECT_EQ(replica.stop(), 0) << replica.log();
}

// Paused: the leader's lock session is taken for idle at the end of it, so
// the lead passes (to the same replica) and the new leader waits out a
// full silence before judging.
TEST(DatabaseHang, AClusterWhosePostgresPausesLongerThanTheSilenceLosesNoAgent) {
  a_cluster_outlives_a_database_stall_longer_than_the_silence(Stall::kPause,
                                                              std::chrono::seconds(15));
}

// Held: the leader keeps the lead (its lock session answers throughout);
// only the late answer tells it that the silence is the stall's.
TEST(DatabaseHang, AClusterWhoseAgentsTableIsHeldLongerThanTheSilenceLosesNoAgent) {
  a_cluster_outlives_a_database_stall_longer_than_the_silence(Stall::kAgentsLock,
                                                              std::chrono::seconds(15));
}

// Issue 34's outage (finding 6), 80 s: past the agents' silence eight times
// over and past every statement deadline (--db-timeout 2). A standalone
// serve is a one-member cluster, its leader and agent the very classes a
// cluster runs (the pauses above run them in processes of their own): its
// embedded PostgreSQL paused while a job that trains until the test ends it
// runs. The agent's heartbeats wait in the pause with everything else; it
// is not declared lost, and the job trains on where it was, in its first
// attempt.
TEST(DatabaseHang, AStandaloneServiceWhosePostgresPausesFor80SecondsKeepsItsJob) {
  ServiceProcess service(with_db_timeout());
  ASSERT_EQ(service.start(), "");
  const std::int64_t id = submit(service, long_job_spec("through-a-pause", 7));
  ASSERT_GT(id, 0);
  const json running = wait_for_step(service, id, 50);
  ASSERT_EQ(running["state"], "RUNNING") << running.dump() << service.log();
  const std::string agent = running["allocation"].value("agent", "");
  ASSERT_NE(agent, "") << running.dump();
  {
    const pid_t postmaster = service.embedded_postmaster_pid();
    ASSERT_GT(postmaster, 0);
    StoppedTree pause(postmaster);
    ASSERT_GT(pause.stopped(), 1u) << "the postmaster and its backends";
    std::this_thread::sleep_for(std::chrono::seconds(80));
  }
  const json at_resume = wait_until(service, id, [](const json& j) { return j.contains("state"); });
  const std::int64_t step = at_resume["progress"].value("step", std::int64_t{0});
  // Past the leader's next judgement of silence: 100 more steps, stored.
  const json after = wait_for_step(service, id, step + 100, std::chrono::seconds(120));
  const std::string story = "\nevents:\n" + event_reasons(service, id) + "\n" + service.log();
  EXPECT_EQ(after["state"], "RUNNING") << after.dump() << story;
  EXPECT_EQ(after["attempt"], 0) << "no retry spent" << story;
  EXPECT_TRUE(after["error"].is_null()) << after.dump() << story;
  EXPECT_EQ(after["allocation"].value("agent", ""), agent) << story;
  EXPECT_EQ(event_reasons(service, id).find("was lost"), std::string::npos) << story;
  EXPECT_EQ(service.log().find("declared lost"), std::string::npos) << story;
  const json pool = service.get("/v1/pool").json();
  ASSERT_TRUE(pool["agents"].is_array() && pool["agents"].size() == 1) << pool.dump();
  EXPECT_EQ(pool["agents"][0].value("state", ""), "alive") << pool.dump() << story;
  // Right after the pause PostgreSQL stores the output held through it, and
  // with --db-timeout 2 on a loaded machine a cancel may be answered 503
  // (not taken): sent again, as a client does, until it is taken.
  HttpResponse cancelled;
  for (auto until = Clock::now() + std::chrono::seconds(120); Clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(500))) {
    cancelled = service.post("/v1/jobs/" + std::to_string(id) + "/cancel");
    if (cancelled.status != 503) break;
  }
  EXPECT_EQ(cancelled.status, 202) << cancelled.body << story;
  EXPECT_EQ(service.wait_terminal(id)["state"], "CANCELLED") << story;
  EXPECT_EQ(service.stop(), 0) << service.log();
}

}  // namespace
}  // namespace tpujobs::testing
