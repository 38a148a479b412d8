// A database outage under load. The service runs against a PostgreSQL this
// test owns; while clients submit and poll and jobs train, the test stops
// PostgreSQL for several seconds and starts it again, without touching the
// service. During the outage /readyz says 503, every submit is a 503 with
// Retry-After (never a 201), and the running jobs keep training (their view
// is served from memory). Afterwards the service is ready again by itself,
// submits get 201, every 201 ever sent names a stored job, and the jobs
// (which train until the test cancels them) train on past the outage with
// gapless logs and metrics and their checkpoints stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "db/connection.h"
#include "db/embedded_postgres.h"
#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "tests/support/test_cluster.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kLongJobs = 3;
constexpr int kLogEvery = 100;
constexpr int kCheckpointEvery = 500;
constexpr int kSamples = 40000;
constexpr std::int64_t kStepsPerEpoch = blobs_steps_per_epoch(kSamples);

json long_spec(const std::string& name, int seed, int epochs) {
  return blobs_job_spec({.name = name,
                         .seed = seed,
                         .epochs = epochs,
                         .log_every_n_steps = kLogEvery,
                         .checkpoint_every_n_steps = kCheckpointEvery,
                         .samples = kSamples,
                         .features = 64,
                         .hidden = 256});
}

// What the load clients submit: tiny, and queued behind a drained pool.
const std::string& load_spec() {
  static const std::string spec = json{
      {"name", "load"},
      {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data", {{"dataset", "iris"}}}}.dump();
  return spec;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One request of the load clients and its answer.
struct Exchange {
  bool submit = false;
  Clock::time_point sent;
  Clock::time_point answered;
  int status = 0;
  bool retry_after = false;
  std::int64_t created = -1;  // the id of a 201
};

// Client threads that submit jobs and poll the service until stopped,
// recording every exchange.
class LoadClients {
 public:
  LoadClients(int port, std::vector<std::int64_t> polled)
      : port_(port), polled_(std::move(polled)) {}
  ~LoadClients() { stop(); }

  void start(int submitters, int pollers) {
    for (int i = 0; i < submitters; ++i) threads_.emplace_back([this] { submit_loop(); });
    for (int i = 0; i < pollers; ++i) threads_.emplace_back([this, i] { poll_loop(i); });
  }
  void stop() {
    stopping_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  std::vector<Exchange> exchanges() {
    std::lock_guard lock(mutex_);
    return exchanges_;
  }
  // Whether a submit sent after `since` was answered 201.
  bool created_since(Clock::time_point since) {
    return submits_since(since, /*created_only=*/true) > 0;
  }
  // Waits until `count` submits sent after `since` were answered (201s only
  // when `created_only`), however fast the machine answers; whether they were.
  bool wait_submits(Clock::time_point since, int count, bool created_only,
                    std::chrono::seconds timeout) {
    for (const auto deadline = Clock::now() + timeout; Clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
      if (submits_since(since, created_only) >= count) return true;
    }
    return false;
  }

 private:
  int submits_since(Clock::time_point since, bool created_only) {
    std::lock_guard lock(mutex_);
    return static_cast<int>(
        std::count_if(exchanges_.begin(), exchanges_.end(), [&](const Exchange& e) {
          return e.submit && e.sent >= since && (!created_only || e.status == 201);
        }));
  }
  void record(Exchange exchange) {
    std::lock_guard lock(mutex_);
    exchanges_.push_back(exchange);
  }
  void submit_loop() {
    while (!stopping_) {
      Exchange e;
      e.submit = true;
      e.sent = Clock::now();
      const HttpResponse r =
          http(port_, "POST", "/v1/jobs", load_spec(), {}, std::chrono::seconds(30));
      e.answered = Clock::now();
      e.status = r.status;
      e.retry_after = !r.header("retry-after").empty();
      if (r.status == 201) e.created = r.json()["id"].get<std::int64_t>();
      record(e);
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  void poll_loop(int index) {
    for (std::size_t n = 0; !stopping_; ++n) {
      Exchange e;
      e.sent = Clock::now();
      const std::string target = index % 2 == 0
                                     ? "/v1/jobs/" + std::to_string(polled_[n % polled_.size()])
                                     : "/v1/jobs?limit=5";
      e.status = http(port_, "GET", target, "", {}, std::chrono::seconds(30)).status;
      e.answered = Clock::now();
      record(e);
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }

  const int port_;
  const std::vector<std::int64_t> polled_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::vector<Exchange> exchanges_;
};

// The newest checkpoint stored for each job that has one (job id -> step),
// read from the database; empty when it cannot be read.
std::map<std::int64_t, std::int64_t> stored_checkpoint_steps(const std::string& conninfo) {
  std::map<std::int64_t, std::int64_t> steps;
  auto connection = db::Connection::open(conninfo);
  if (!connection.ok()) return steps;
  auto rows =
      (*connection)->execute("SELECT job_id, max(step) FROM job_checkpoints GROUP BY job_id");
  if (!rows.ok()) return steps;
  for (int row = 0; row < rows->rows(); ++row) steps[rows->int64(row, 0)] = rows->int64(row, 1);
  return steps;
}

// The training step of each job as GET /v1/jobs/{id} shows it; -1 for a
// job whose view is not a 200 of a RUNNING job.
std::vector<std::int64_t> running_steps(const ServiceProcess& service,
                                        const std::vector<std::int64_t>& ids) {
  std::vector<std::int64_t> steps;
  for (std::int64_t id : ids) {
    const HttpResponse r = service.get("/v1/jobs/" + std::to_string(id));
    const json job = r.json();
    const bool running = r.status == 200 && job.is_object() && job["state"] == "RUNNING" &&
                         job["progress"].is_object();
    steps.push_back(running ? job["progress"]["step"].get<std::int64_t>() : -1);
  }
  return steps;
}

// Polls GET /readyz until it answers `status`; the seconds that took, or -1.
double wait_readyz(const ServiceProcess& service, int status, Clock::time_point since,
                   std::chrono::seconds timeout) {
  while (Clock::now() - since < timeout) {
    const HttpResponse r = service.get("/readyz");
    if (r.status == status) {
      if (status == 503) {
        EXPECT_EQ(r.json()["ready"], false) << r.body;
        EXPECT_FALSE(r.header("retry-after").empty());
      }
      return seconds_between(since, Clock::now());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

TEST(DatabaseOutage, ServiceRidesOutAStoppedPostgres) {
  OwnPostgres postgres{"tpujobs-outage-"};
  ASSERT_EQ(postgres.error(), "");
  const std::string conninfo = postgres->conninfo();

  ServiceProcess::Options options;
  options.extra_args = {"--database-url", conninfo};
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");

  // A job that ends before the outage (one epoch), and the long ones, which
  // train until the test cancels them.
  const std::int64_t finished_id = submit(service, long_spec("finished", 2, 1));
  ASSERT_GT(finished_id, 0);
  ASSERT_EQ(service.wait_terminal(finished_id)["state"], "SUCCEEDED");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < kLongJobs; ++i) {
    HttpResponse created =
        service.post("/v1/jobs", long_spec("long-" + std::to_string(i), 200 + i, -1).dump());
    ASSERT_EQ(created.status, 201) << created.body;
    ids.push_back(created.json()["id"].get<std::int64_t>());
  }
  for (std::int64_t id : ids) {
    const json job = wait_for_step(service, id, 2 * kCheckpointEvery);
    ASSERT_EQ(job["state"], "RUNNING") << job.dump() << service.log();
  }
  // The pool drained: what the clients submit waits in the queue, and the
  // running jobs keep the CPU.
  const json pool = service.get("/v1/pool").json();
  ASSERT_TRUE(pool.is_object() && !pool["hosts"].empty()) << pool.dump();
  for (const json& host : pool["hosts"]) {
    ASSERT_EQ(service.post("/v1/pool/hosts/" + host["name"].get<std::string>() + ":drain").status,
              200);
  }

  LoadClients load(service.port(), ids);
  const auto load_started = Clock::now();
  load.start(/*submitters=*/3, /*pollers=*/2);
  // Some jobs are queued before the outage (one is cancelled in it).
  ASSERT_TRUE(load.wait_submits(load_started, 3, /*created_only=*/true, std::chrono::seconds(60)))
      << "the load clients got no 201s before the outage\n"
      << service.log();

  // ---- the outage
  ASSERT_TRUE(postgres->stop().ok());
  const auto stopped = Clock::now();
  const double unready_after = wait_readyz(service, 503, stopped, std::chrono::seconds(5));
  ASSERT_GE(unready_after, 0) << "/readyz did not turn false with the database stopped\n"
                              << service.log();

  // Training goes on, and the views of live jobs come from memory.
  // Every job takes a further step while the database is down: waited for
  // step by step, however fast the machine trains.
  const std::vector<std::int64_t> steps_before = running_steps(service, ids);
  std::vector<std::int64_t> steps_after = running_steps(service, ids);
  const auto all_moved = [&] {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (steps_before[i] < 0 || steps_after[i] <= steps_before[i]) return false;
    }
    return true;
  };
  for (const auto deadline = Clock::now() + std::chrono::seconds(60);
       !all_moved() && Clock::now() < deadline; steps_after = running_steps(service, ids)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_GE(steps_before[i], 0) << "job " << ids[i]
                                  << ": no 200 RUNNING view with the database down";
    EXPECT_GT(steps_after[i], steps_before[i])
        << "job " << ids[i] << " stopped training during the outage";
  }
  // A finished job reads as it ended, by GET and by `wait`, from memory.
  const std::string finished_path = "/v1/jobs/" + std::to_string(finished_id);
  for (const std::string& target : {finished_path, finished_path + "/wait?timeout=0"}) {
    const HttpResponse r = service.get(target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    if (r.status == 200) {
      EXPECT_EQ(r.json()["state"], "SUCCEEDED") << target << ": " << r.body;
    }
  }
  // A cancel of a queued job cannot be stored now: it answers 503 with
  // Retry-After at once (no I/O thread sits in the outage's back-off; a
  // cancel that waited would hold this thread, and the outage, forever),
  // and the job stays queued until a cancel is stored.
  std::int64_t queued_id = -1;
  for (const Exchange& e : load.exchanges()) {
    if (e.created > 0 && e.sent < stopped) {
      queued_id = e.created;
      break;
    }
  }
  ASSERT_GT(queued_id, 0) << "no job was submitted before the outage";
  const std::string cancel_path = "/v1/jobs/" + std::to_string(queued_id) + "/cancel";
  const auto cancel_sent = Clock::now();
  const HttpResponse refused = service.post(cancel_path);
  const double cancel_seconds = seconds_between(cancel_sent, Clock::now());
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_FALSE(refused.header("retry-after").empty());
  // Following its log cannot start either: 503 problem+json in the
  // service's words. Neither answer shows PostgreSQL's error text or where
  // its socket is (issue 34): those go to the service's log.
  const HttpResponse follow =
      http(service.port(), "GET", "/v1/jobs/" + std::to_string(queued_id) + "/logs", "",
           {{"Accept", "text/event-stream"}}, std::chrono::seconds(30));
  EXPECT_EQ(follow.status, 503) << follow.body;
  EXPECT_EQ(follow.header("content-type"), "application/problem+json") << follow.body;
  EXPECT_FALSE(follow.header("retry-after").empty());
  for (const HttpResponse* answer : {&refused, &follow}) {
    for (const std::string& internal :
         {postgres->state_dir().string(), std::string(".s.PGSQL"), std::string("PostgreSQL"),
          std::string("socket"), std::string("server")}) {
      EXPECT_EQ(answer->body.find(internal), std::string::npos)
          << "'" << internal << "' in " << answer->body;
    }
  }

  // An outage of some five seconds in all, and at least as long as the
  // clients take to have more than ten submits answered in it.
  std::this_thread::sleep_for(std::chrono::seconds(5) - (Clock::now() - stopped));
  EXPECT_TRUE(load.wait_submits(stopped, 11, /*created_only=*/false, std::chrono::seconds(60)))
      << "the clients had too few submits answered during the outage";

  // ---- the database returns; the service notices by itself
  const auto restarting = Clock::now();
  ASSERT_TRUE(postgres->restart().ok());
  const auto restarted = Clock::now();
  const double ready_after = wait_readyz(service, 200, restarted, std::chrono::seconds(30));
  ASSERT_GE(ready_after, 0) << "/readyz did not turn true again\n" << service.log();
  double created_after = -1;
  while (Clock::now() - restarted < std::chrono::seconds(30)) {
    if (load.created_since(restarted)) {
      created_after = seconds_between(restarted, Clock::now());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(created_after, 0) << "no submit got a 201 after the database came back";

  // Once it is back, the stored checkpoint of each job catches up with the
  // step it trained to during the outage (by the newest checkpoint queued
  // during it, or a later one: the table keeps the last two, so which one
  // is not told apart). An outage that crossed no checkpoint's step leaves
  // that to the next one, some hundreds of steps on: under the sanitizers
  // beside a busy core, this load and three jobs train about 2 steps a
  // second (a busy-core run, session 45), so the deadline is the later
  // wait's, not a guess of the machine's speed.
  double checkpoints_after = -1;
  while (Clock::now() - restarted < std::chrono::seconds(300)) {
    const std::map<std::int64_t, std::int64_t> stored = stored_checkpoint_steps(conninfo);
    bool caught_up = true;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      caught_up &= stored.count(ids[i]) > 0 && stored.at(ids[i]) >= steps_after[i];
    }
    if (caught_up) {
      checkpoints_after = seconds_between(restarted, Clock::now());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(checkpoints_after, 0)
      << "the stored checkpoints did not catch up with the training done during the outage";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  load.stop();

  // ---- what the clients saw
  int outage_submits = 0;
  int created = 0;
  std::map<int, int> statuses;
  for (const Exchange& e : load.exchanges()) {
    ++statuses[e.status];
    if (e.submit && e.status == 201) ++created;
    const bool in_outage = e.sent >= stopped && e.answered <= restarting;
    if (!in_outage) continue;
    if (e.submit) {
      ++outage_submits;
      EXPECT_EQ(e.status, 503) << "a submit during the outage";
      EXPECT_TRUE(e.retry_after) << "a 503 without Retry-After";
    } else {
      EXPECT_TRUE(e.status == 200 || e.status == 503)
          << "a read during the outage answered " << e.status;
    }
  }
  EXPECT_GT(outage_submits, 10) << "too few submits during the outage to say anything";
  for (const auto& [status, count] : statuses) {
    EXPECT_TRUE(status == 200 || status == 201 || status == 503)
        << count << " answers with status " << status;
  }
  // Every 201, whenever it was sent, names a stored job.
  for (const Exchange& e : load.exchanges()) {
    if (e.created < 0) continue;
    const HttpResponse r = service.get("/v1/jobs/" + std::to_string(e.created));
    ASSERT_EQ(r.status, 200) << "job " << e.created << " got a 201 but does not exist";
    EXPECT_EQ(r.json()["name"], "load");
  }

  // The refused cancel did not end the job; one sent now does.
  EXPECT_EQ(job_view(service, queued_id)["state"], "QUEUED");
  EXPECT_EQ(service.post(cancel_path).status, 202);
  EXPECT_EQ(job_view(service, queued_id)["state"], "CANCELLED");

  // ---- the running jobs train on as if nothing happened: past a further
  // checkpoint, stored; then the test ends them, with gapless records.
  std::int64_t total_steps = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t beyond = steps_after[i] + kCheckpointEvery;
    const json past = wait_until(
        service, ids[i],
        [beyond](const json& j) {
          return j["state"] == "RUNNING" && j["last_checkpoint"].is_object() &&
                 j["last_checkpoint"]["step"].get<std::int64_t>() >= beyond;
        },
        std::chrono::seconds(300));
    ASSERT_EQ(past["state"], "RUNNING") << past.dump(2) << service.log();
    ASSERT_GE(past["last_checkpoint"]["step"].get<std::int64_t>(), beyond) << past.dump(2);
  }
  for (std::int64_t id : ids) {
    const EndedJob ended = cancel_and_wait(service, id);
    total_steps += ended.steps;
    EXPECT_GT(expect_contiguous_logs(service, id), 10);
    expect_gapless_metric_steps(service, id, kLogEvery, kStepsPerEpoch, ended.steps, false);
  }

  std::printf(
      "%d jobs of %lld steps in all; database stopped for %.1f s under load: /readyz 503 after "
      "%.2f s; ",
      kLongJobs, static_cast<long long>(total_steps), seconds_between(stopped, restarting),
      unready_after);
  std::printf("%d submits during the outage, all 503 + Retry-After; a cancel 503 in %.3f s; ",
              outage_submits, cancel_seconds);
  std::printf("jobs trained on (steps %s -> %s during the outage); ", join(steps_before).c_str(),
              join(steps_after).c_str());
  std::printf("after the restart /readyz 200 after %.2f s, first 201 after %.2f s, ", ready_after,
              created_after);
  std::printf("checkpoints caught up after %.2f s; %d jobs created by the clients, all present\n",
              checkpoints_after, created);
  EXPECT_EQ(service.stop(), 0) << service.log();
}

// SIGTERM while the database is away: the service cannot store the
// shutdown checkpoint or requeue its job, retries for a bounded grace, and
// exits. The job stays RUNNING in PostgreSQL; the next start requeues it and
// it resumes from the last checkpoint it did store.
TEST(DatabaseOutage, ShutdownDuringAnOutageEndsAndTheJobResumesLater) {
  OwnPostgres postgres{"tpujobs-outage-"};
  ASSERT_EQ(postgres.error(), "");

  ServiceProcess::Options options;
  options.extra_args = {"--database-url", postgres->conninfo()};
  std::int64_t id = 0;
  std::int64_t stored_step = 0;
  {
    ServiceProcess service(options);
    ASSERT_EQ(service.start(), "");
    const HttpResponse created =
        service.post("/v1/jobs", long_spec("stopped-in-outage", 7, -1).dump());
    ASSERT_EQ(created.status, 201) << created.body;
    id = created.json()["id"].get<std::int64_t>();
    const json job = wait_for_step(service, id, 2 * kCheckpointEvery);
    ASSERT_EQ(job["state"], "RUNNING") << job.dump() << service.log();
    ASSERT_TRUE(job["last_checkpoint"].is_object()) << job.dump();
    stored_step = job["last_checkpoint"]["step"].get<std::int64_t>();

    ASSERT_TRUE(postgres->stop().ok());
    const auto stopping = Clock::now();
    EXPECT_NE(service.stop(std::chrono::seconds(60)), -1) << "SIGTERM did not end the service\n"
                                                          << service.log();
    const double took = seconds_between(stopping, Clock::now());
    // The grace for writes is 10 s; the rest is the job's last step and the
    // HTTP server's own drain.
    EXPECT_LT(took, 30.0) << service.log();
    std::printf("SIGTERM with the database stopped: the service exited after %.1f s\n", took);
  }

  ASSERT_TRUE(postgres->restart().ok());
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  const json resumed = wait_for_step(service, id, stored_step + kCheckpointEvery);
  EXPECT_EQ(resumed["state"], "RUNNING") << resumed.dump() << service.log();
  EXPECT_GE(resumed_from_step(service, id), stored_step)
      << "the job resumed from a checkpoint it had stored";
  EXPECT_EQ(service.post("/v1/jobs/" + std::to_string(id) + "/cancel").status, 202);
  EXPECT_EQ(service.wait_terminal(id)["state"], "CANCELLED");
  EXPECT_EQ(service.stop(), 0) << service.log();
}

}  // namespace
}  // namespace tpujobs::testing
