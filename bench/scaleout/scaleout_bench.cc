// Past one machine (DESIGN §9), measured with real processes on one
// PostgreSQL server this program starts (the e2e helpers run them):
//   1. makespan of the same 16 training jobs with one agent and with two,
//      each `--workers 1` (target: two take at most 0.55x the time of one);
//   2. submits per second through two `serve --pool none` replicas against
//      one (8 client threads, no agent: the jobs stay queued);
//   3. leader failover: kill -9 of the leader replica, until the other
//      replica has placed a job submitted right after;
//   4. pod slices spanning agents: the Gloo all-gather between two ranks on
//      loopback (each its own Gloo context, device and TCP pairs; two
//      threads of this process) against a plain TCP copy of the same bytes
//      both ways on one loopback connection, in the same run; and the step
//      time of a v3-32 digits job on one agent (`--pool v3-32`) and across
//      two (`--pool v3-8,v3-8` each), from the first part's samples/s.
// Usage: scaleout_bench [--jobs 16] [--steps 1500] [--submits 2000] [--failovers 3]
//                       [--slices-only 1] [--mib 16] [--rounds 20] [--epochs 30] [--repeats 3]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "db/embedded_postgres.h"
#include "service/gloo_collective.h"
#include "service_process.h"
#include "tests/support/test_cluster.h"
#include "training_jobs.h"

namespace {

using nlohmann::json;
using tpujobs::testing::HttpResponse;
using tpujobs::testing::ServiceProcess;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

std::unique_ptr<ServiceProcess> start(const std::vector<std::string>& args,
                                      const std::string& command = "serve") {
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
  return start({"--database-url", db.postgres->conninfo(), "--pool", "v3-8", "--name", name,
                "--workers", "1"},
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
  const std::string body = json{
      {"name", "queued"},
      {"trainer", {{"accelerator", "cpu"}, {"max_epochs", 1}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data",
       {{"dataset", "iris"}}}}.dump();
  std::atomic<int> next{0}, failed{0};
  const auto started = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      for (int i = next++; i < submits; i = next++) {
        const ServiceProcess& through = *apis[i % replicas];
        if (tpujobs::testing::http(through.port(), "POST", "/v1/jobs", body).status != 201)
          ++failed;
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
      return gained != std::string::npos &&
             log.find("no longer the scheduler leader", gained) == std::string::npos;
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

// Bytes per second each rank received, over `rounds` all-gathers of
// `floats` floats per rank.
double gloo_all_gather_rate(std::size_t floats, int rounds) {
  tpujobs::service::InProcessRendezvousKeys keys;
  double seconds = 0;
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      tpujobs::service::GlooOptions options;
      options.host = "127.0.0.1";
      auto connected = tpujobs::service::GlooCollective::connect(keys, rank, 2, options);
      if (!connected.ok()) {
        std::fprintf(stderr, "rendezvous failed\n");
        std::exit(1);
      }
      std::unique_ptr<tpujobs::service::GlooCollective>* collective = &*connected;
      std::vector<float> mine(floats, static_cast<float>(rank)), all(2 * floats);
      const std::vector<std::size_t> counts{floats, floats};
      (void)(*collective)->all_gather(mine.data(), all.data(), counts);  // warm-up
      const auto began = Clock::now();
      for (int r = 0; r < rounds; ++r) {
        if (!(*collective)->all_gather(mine.data(), all.data(), counts).ok()) {
          std::fprintf(stderr, "all-gather failed\n");
          std::exit(1);
        }
      }
      if (rank == 0) seconds = seconds_since(began);
    });
  }
  for (std::thread& t : ranks) t.join();
  return static_cast<double>(floats * sizeof(float)) * rounds / seconds;
}

void send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, 0);
    if (n <= 0) std::exit(1);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void receive_all(int fd, char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n <= 0) std::exit(1);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// The same exchange as a plain TCP copy: each side sends its buffer and
// receives the other's, concurrently, on one loopback connection.
double tcp_copy_rate(std::size_t floats, int rounds) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::exit(1);
  }
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) std::exit(1);
  const int server = ::accept(listener, nullptr, nullptr);
  const std::size_t bytes = floats * sizeof(float);
  double seconds = 0;
  auto side = [&](int fd, bool timed) {
    std::vector<char> out(bytes, 1), in(bytes);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const auto began = Clock::now();
    for (int r = 0; r < rounds + 1; ++r) {  // the first round warms up, as for Gloo
      if (r == 1 && timed) seconds = -seconds_since(began);
      std::thread sender([&] { send_all(fd, out.data(), bytes); });
      receive_all(fd, in.data(), bytes);
      sender.join();
    }
    if (timed) seconds += seconds_since(began);
  };
  std::thread other([&] { side(server, false); });
  side(client, true);
  other.join();
  ::close(client);
  ::close(server);
  ::close(listener);
  return static_cast<double>(bytes) * rounds / seconds;
}

// Seconds a step of a v3-32 digits job takes on `agents` agents (1: one
// agent with the four hosts; 2: two hosts each), from the samples/s the
// first part measured over the whole run.
double step_seconds(int agents, int epochs) {
  Database db;
  const std::string url = db.postgres->conninfo();
  auto api = replica(db, "replica");
  std::vector<std::unique_ptr<ServiceProcess>> workers;
  for (int a = 0; a < agents; ++a) {
    workers.push_back(
        start({"--database-url", url, "--pool", agents == 1 ? "v3-32" : "v3-8,v3-8", "--name",
               "agent-" + std::to_string(a), "--workers", "1", "--collective-address", "127.0.0.1"},
              "agent"));
  }
  const int batch = 4;
  const json spec = {{"name", "slice-bench"},
                     {"trainer",
                      {{"accelerator", "tpu"},
                       {"devices", 8},
                       {"num_nodes", 4},
                       {"max_epochs", epochs},
                       {"log_every_n_steps", 50},
                       {"checkpoint_every_n_steps", 0},
                       {"seed", 5}}},
                     {"resources", {{"accelerator_type", "v3-32"}}},
                     {"model",
                      {{"layers", json::array({{{"type", "linear"}, {"out", 128}},
                                               {{"type", "relu"}},
                                               {{"type", "linear"}, {"out", 10}}})},
                       {"loss", "cross_entropy"}}},
                     {"data", {{"dataset", "digits"}, {"batch_size", batch}, {"drop_last", true}}},
                     {"optimizer", {{"type", "adam"}, {"lr", 0.01}}}};
  const json done = api->wait_terminal(submit(*api, spec), std::chrono::seconds(3600));
  if (done.value("state", "") != "SUCCEEDED") {
    std::fprintf(stderr, "job: %s\n", done.dump().c_str());
    std::exit(1);
  }
  const double samples_per_sec = done["result"]["metrics"].value("samples_per_sec", 0.0);
  return 32.0 * batch / samples_per_sec;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 16, steps = 1500, submits = 2000, rounds = 3;
  int slices_only = 0, mib = 16, gathers = 20, epochs = 30, repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--jobs")
      jobs = value;
    else if (flag == "--steps")
      steps = value;
    else if (flag == "--submits")
      submits = value;
    else if (flag == "--failovers")
      rounds = value;
    else if (flag == "--slices-only")
      slices_only = value;
    else if (flag == "--mib")
      mib = value;
    else if (flag == "--rounds")
      gathers = value;
    else if (flag == "--epochs")
      epochs = value;
    else if (flag == "--repeats")
      repeats = value;
  }
  const std::size_t floats = static_cast<std::size_t>(mib) << 18;  // MiB of floats per rank
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const double tcp = tcp_copy_rate(floats, gathers);
    const double gloo = gloo_all_gather_rate(floats, gathers);
    std::printf(
        "all-gather of %d MiB a rank, 2 ranks on loopback: Gloo %.2f GB/s received a rank, plain "
        "TCP copy "
        "%.2f GB/s; Gloo/TCP %.2f\n",
        mib, gloo / 1e9, tcp / 1e9, gloo / tcp);
    std::fflush(stdout);
  }
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const double one = step_seconds(1, epochs);
    const double two = step_seconds(2, epochs);
    std::printf(
        "v3-32 digits step (%d epochs): one agent %.3f ms, across two agents %.3f ms; two/one "
        "%.2f\n",
        epochs, one * 1e3, two * 1e3, two / one);
    std::fflush(stdout);
  }
  if (slices_only) return 0;
  const double one = makespan(1, jobs, steps);
  const double two = makespan(2, jobs, steps);
  std::printf(
      "makespan of %d jobs x %d steps: one agent %.2f s, two agents %.2f s, ratio %.3f (target <= "
      "0.55)\n",
      jobs, steps, one, two, two / one);
  const double rate_one = submit_rate(1, submits);
  const double rate_two = submit_rate(2, submits);
  std::printf(
      "submits/s (%d submits, 8 clients): one replica %.0f, two replicas %.0f, ratio %.2f\n",
      submits, rate_one, rate_two, rate_two / rate_one);
  std::printf("leader failover (kill -9 to the next placement):");
  for (double t : failovers(rounds)) std::printf(" %.3f s", t);
  std::printf("\n");
  return 0;
}
