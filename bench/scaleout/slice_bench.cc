// Pod slices spanning agents (DESIGN §9), measured:
//   1. the Gloo all-gather between two ranks on loopback (each its own Gloo
//      context, device and TCP pairs; two threads of this process), against
//      a plain TCP copy of the same bytes both ways on a loopback socket,
//      measured in the same run;
//   2. the step time of a v3-32 digits job on one agent (`--pool v3-32`)
//      and across two (`--pool v3-8,v3-8` each), real processes on one
//      PostgreSQL, from the first part's samples/s.
// Usage: slice_bench [--mib 16] [--rounds 20] [--epochs 30] [--repeats 3]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/embedded_postgres.h"
#include "db/test_cluster.h"
#include "service/gloo_collective.h"
#include "service_process.h"

namespace {

using nlohmann::json;
using tpujobs::testing::ServiceProcess;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class MemoryKeys : public tpujobs::service::RendezvousKeys {
 public:
  bool set(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mutex_);
    values_[key] = value;
    return true;
  }
  std::optional<std::string> get(const std::string& key) override {
    std::lock_guard lock(mutex_);
    auto it = values_.find(key);
    return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> values_;
};

// Bytes per second each rank received, over `rounds` all-gathers of
// `floats` floats per rank.
double gloo_all_gather_rate(std::size_t floats, int rounds) {
  MemoryKeys keys;
  double seconds = 0;
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      tpujobs::service::GlooOptions options;
      options.host = "127.0.0.1";
      auto connected = tpujobs::service::GlooCollective::connect(keys, rank, 2, options);
      auto* collective = std::get_if<std::unique_ptr<tpujobs::service::GlooCollective>>(&connected);
      if (collective == nullptr) {
        std::fprintf(stderr, "rendezvous failed\n");
        std::exit(1);
      }
      std::vector<float> mine(floats, static_cast<float>(rank)), all(2 * floats);
      const std::vector<std::size_t> counts{floats, floats};
      (void)(*collective)->all_gather(mine.data(), all.data(), counts);  // warm-up
      const auto began = Clock::now();
      for (int r = 0; r < rounds; ++r) {
        if ((*collective)->all_gather(mine.data(), all.data(), counts)) {
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
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0 ||
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

struct Database {
  std::filesystem::path directory = tpujobs::db::testing::make_temp_dir("tpujobs-slice-bench-");
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

std::unique_ptr<ServiceProcess> start(const std::vector<std::string>& args, const std::string& command) {
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

// Seconds a step of a v3-32 digits job takes on `agents` agents (1: one
// agent with the four hosts; 2: two hosts each), from the samples/s the
// first part measured over the whole run.
double step_seconds(int agents, int epochs) {
  Database db;
  const std::string url = db.postgres->conninfo();
  auto api = start({"--database-url", url, "--name", "replica"}, "serve");
  std::vector<std::unique_ptr<ServiceProcess>> workers;
  for (int a = 0; a < agents; ++a) {
    workers.push_back(start({"--database-url", url, "--pool", agents == 1 ? "v3-32" : "v3-8,v3-8", "--name",
                             "agent-" + std::to_string(a), "--workers", "1", "--collective-address", "127.0.0.1"},
                            "agent"));
  }
  const int batch = 4;
  const json spec = {
      {"name", "slice-bench"},
      {"trainer", {{"accelerator", "tpu"}, {"devices", 8}, {"num_nodes", 4}, {"max_epochs", epochs},
                   {"log_every_n_steps", 50}, {"checkpoint_every_n_steps", 0}, {"seed", 5}}},
      {"resources", {{"accelerator_type", "v3-32"}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 128}}, {{"type", "relu"}},
                                         {{"type", "linear"}, {"out", 10}}})},
                 {"loss", "cross_entropy"}}},
      {"data", {{"dataset", "digits"}, {"batch_size", batch}, {"drop_last", true}}},
      {"optimizer", {{"type", "adam"}, {"lr", 0.01}}}};
  auto r = api->post("/v1/jobs", spec.dump());
  if (r.status != 201) {
    std::fprintf(stderr, "submit: %d %s\n", r.status, r.body.c_str());
    std::exit(1);
  }
  const json done = api->wait_terminal(r.json()["id"].get<std::int64_t>(), std::chrono::seconds(3600));
  if (done.value("state", "") != "SUCCEEDED") {
    std::fprintf(stderr, "job: %s\n", done.dump().c_str());
    std::exit(1);
  }
  const double samples_per_sec = done["result"]["metrics"].value("samples_per_sec", 0.0);
  return 32.0 * batch / samples_per_sec;
}

}  // namespace

int main(int argc, char** argv) {
  int mib = 16, rounds = 20, epochs = 30, repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--mib") mib = value;
    else if (flag == "--rounds") rounds = value;
    else if (flag == "--epochs") epochs = value;
    else if (flag == "--repeats") repeats = value;
  }
  const std::size_t floats = static_cast<std::size_t>(mib) << 18;  // MiB of floats per rank
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const double tcp = tcp_copy_rate(floats, rounds);
    const double gloo = gloo_all_gather_rate(floats, rounds);
    std::printf("all-gather of %d MiB a rank, 2 ranks on loopback: Gloo %.2f GB/s received a rank, plain TCP copy "
                "%.2f GB/s; Gloo/TCP %.2f\n",
                mib, gloo / 1e9, tcp / 1e9, gloo / tcp);
    std::fflush(stdout);
  }
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const double one = step_seconds(1, epochs);
    const double two = step_seconds(2, epochs);
    std::printf("v3-32 digits step (%d epochs): one agent %.3f ms, across two agents %.3f ms; two/one %.2f\n", epochs,
                one * 1e3, two * 1e3, two / one);
    std::fflush(stdout);
  }
  return 0;
}
