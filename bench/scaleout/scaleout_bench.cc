// Past one machine (DESIGN §9), measured with real processes on one
// PostgreSQL server this program starts (the e2e helpers run them):
//   1. makespan of the same 16 training jobs with one agent and with two,
//      each `--workers 1` (target: two take at most 0.55x the time of one);
//   2. submits per second through two `serve --pool none` replicas against
//      one (8 client threads, no agent: the jobs stay queued);
//   3. leader failover: kill -9 of the leader replica, until the other
//      replica has placed a job submitted right after.
// Usage: scaleout_bench [--jobs 16] [--steps 1500] [--submits 2000] [--failovers 3]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "db/embedded_postgres.h"
#include "db/test_cluster.h"
#include "service_process.h"
#include "training_jobs.h"

namespace {

using nlohmann::json;
using tpujobs::testing::HttpResponse;
using tpujobs::testing::ServiceProcess;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Database {
  std::filesystem::path directory = tpujobs::db::testing::make_temp_dir("tpujobs-scaleout-bench-");
  std::unique_ptr<tpujobs::db::EmbeddedPostgres> postgres;
  Database() {
    tpujobs::db::EmbeddedPostgres::Options options;
    options.state_dir = directory;
    options.sync_initdb = false;
    auto started = tpujobs::db::EmbeddedPostgres::start(options);
    if (!started.ok()) {
      std::fprintf(stderr, "PostgreSQL: %s\n", started.error().message.c_str());
      std::exit(1);
    }
    postgres = std::move(*started);
  }
  ~Database() {
    postgres.reset();
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
};

std::unique_ptr<ServiceProcess> start(const std::vector<std::string>& args, const std::string& command = "serve") {
  ServiceProcess::Options options;
  options.pool = "none";
  options.command = command;
  options.extra_args = args;
  auto process = std::make_unique<ServiceProcess>(options);
  if (std::string error = process->start(); !error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    std::exit(1);
  }
  return process;
}

std::unique_ptr<ServiceProcess> replica(const Database& db, const std::string& name) {
  return start({"--database-url", db.postgres->conninfo(), "--name", name});
}

std::unique_ptr<ServiceProcess> agent(const Database& db, const std::string& name) {
  return start({"--database-url", db.postgres->conninfo(), "--pool", "v3-8", "--name", name, "--workers", "1"},
               "agent");
}

std::int64_t submit(const ServiceProcess& through, const json& spec) {
  HttpResponse r = through.post("/v1/jobs", spec.dump());
  if (r.status != 201) {
    std::fprintf(stderr, "submit: %d %s\n", r.status, r.body.c_str());
    std::exit(1);
  }
  return r.json()["id"].get<std::int64_t>();
}

// Seconds from the first submit until all `jobs` succeeded.
double makespan(int agents, int jobs, int steps) {
  Database db;
  auto api = replica(db, "replica");
  std::vector<std::unique_ptr<ServiceProcess>> workers;
  for (int a = 0; a < agents; ++a) workers.push_back(agent(db, "agent-" + std::to_string(a)));
  const auto started = Clock::now();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < jobs; ++i) {
    tpujobs::testing::BlobsJob job;
    job.name = "makespan-" + std::to_string(i);
    job.seed = i;
    job.samples = 1000;  // 25 steps an epoch
    job.epochs = steps / 25;
    job.hidden = 1024;
    job.log_every_n_steps = 50;
    job.checkpoint_every_n_steps = 500;
    ids.push_back(submit(*api, tpujobs::testing::blobs_job_spec(job)));
  }
  for (std::int64_t id : ids) {
    const json done = api->wait_terminal(id, std::chrono::seconds(3600));
    if (done.value("state", "") != "SUCCEEDED") {
      std::fprintf(stderr, "job %lld: %s\n", static_cast<long long>(id), done.dump().c_str());
      std::exit(1);
    }
  }
  return seconds_since(started);
}

// Submits per second through `replicas` replicas (8 client threads,
// alternating between them).
double submit_rate(int replicas, int submits) {
  Database db;
  std::vector<std::unique_ptr<ServiceProcess>> apis;
  for (int r = 0; r < replicas; ++r) apis.push_back(replica(db, "replica-" + std::to_string(r)));
  const std::string body =
      json{{"name", "queued"},
           {"trainer", {{"accelerator", "cpu"}, {"max_epochs", 1}}},
           {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
           {"data", {{"dataset", "iris"}}}}
          .dump();
  std::atomic<int> next{0}, failed{0};
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      for (int i = next++; i < submits; i = next++) {
        const ServiceProcess& through = *apis[i % replicas];
        if (tpujobs::testing::http(through.port(), "POST", "/v1/jobs", body).status != 201) ++failed;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const double seconds = seconds_since(started);
  if (failed > 0) std::fprintf(stderr, "%d submits failed\n", failed.load());
  return submits / seconds;
}

// Seconds from kill -9 of the leader until the other replica placed a new job.
std::vector<double> failovers(int rounds) {
  Database db;
  auto worker = agent(db, "agent-0");
  std::unique_ptr<ServiceProcess> first = replica(db, "replica-0");
  std::unique_ptr<ServiceProcess> second = replica(db, "replica-1");
  const json spec = {{"name", "failover"},
                     {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
                     {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                     {"data", {{"dataset", "iris"}}}};
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    // A job placed proves a leader; its log names which.
    first->wait_terminal(submit(*first, spec));
    const std::string leader_line = "scheduler leader now";
    auto leads = [&](const ServiceProcess& p) {
      const std::string log = p.log();
      const std::size_t gained = log.rfind(leader_line);
      return gained != std::string::npos && log.find("no longer the scheduler leader", gained) == std::string::npos;
    };
    std::unique_ptr<ServiceProcess>& leader = leads(*first) ? first : second;
    std::unique_ptr<ServiceProcess>& survivor = leads(*first) ? second : first;
    leader->kill9();
    const auto killed = Clock::now();
    const std::int64_t id = submit(*survivor, spec);
    for (;;) {
      const json view = survivor->get("/v1/jobs/" + std::to_string(id)).json();
      if (view.is_object() && view["state"] != "QUEUED") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    times.push_back(seconds_since(killed));
    leader = replica(db, "replica-again-" + std::to_string(round));
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 16, steps = 1500, submits = 2000, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--jobs") jobs = value;
    else if (flag == "--steps") steps = value;
    else if (flag == "--submits") submits = value;
    else if (flag == "--failovers") rounds = value;
  }
  const double one = makespan(1, jobs, steps);
  const double two = makespan(2, jobs, steps);
  std::printf("makespan of %d jobs x %d steps: one agent %.2f s, two agents %.2f s, ratio %.3f (target <= 0.55)\n",
              jobs, steps, one, two, two / one);
  const double rate_one = submit_rate(1, submits);
  const double rate_two = submit_rate(2, submits);
  std::printf("submits/s (%d submits, 8 clients): one replica %.0f, two replicas %.0f, ratio %.2f\n", submits,
              rate_one, rate_two, rate_two / rate_one);
  std::printf("leader failover (kill -9 to the next placement):");
  for (double t : failovers(rounds)) std::printf(" %.3f s", t);
  std::printf("\n");
  return 0;
}
