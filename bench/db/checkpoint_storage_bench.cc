// What storing one large checkpoint costs PostgreSQL and the client, stored
// the two ways tpujobs has: as one bytea parameter of an INSERT (before
// migration 009) and as JobOutputRepository::save_checkpoint stores it now
// (rows streamed by COPY: of 8,096 bytes since migration 013, of 1 MiB
// before). Runs on the test server of tests/support/test_cluster.h (an embedded
// PostgreSQL in a temporary directory, fsync off, so the figures are CPU,
// not disk).
//
//   checkpoint_storage_bench [MiB] [rounds]
//
// Default 252 MiB: the parameters and both Adam moments of the
// 1024-4096-4096-10 MLP of issue 14 (3 x 21.0 M floats). For each round and
// way it prints the CPU-seconds of the server process that served the
// statement (its /proc/PID/stat), of this process, and the wall time.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "db/job_output_repository.h"
#include "db/repositories.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

// utime + stime of a process, in seconds.
double process_cpu_seconds(long pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long user = 0, system = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14) user = std::atoll(field.c_str());
    if (index == 15) {
      system = std::atoll(field.c_str());
      break;
    }
  }
  return static_cast<double>(user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double own_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct Cost {
  double server = 0, client = 0, wall = 0;
};

template <typename Store>
Cost measure(long backend, Store&& store) {
  const double server = process_cpu_seconds(backend);
  const double client = own_cpu_seconds();
  const auto begin = std::chrono::steady_clock::now();
  store();
  return {process_cpu_seconds(backend) - server, own_cpu_seconds() - client,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count()};
}

int run(std::size_t mib, int rounds) {
  // One connection: the statements of both ways run on the same backend.
  auto pool = testing::fresh_migrated_pool(1);
  if (!pool.ok()) {
    std::fprintf(stderr, "no test server: %s\n", pool.error().message.c_str());
    return 1;
  }
  Repositories repositories(**pool);
  NewJob job;
  job.tenant = "bench";
  job.spec_json = "{}";
  auto inserted = repositories.jobs.insert_jobs({job});
  if (!inserted.ok()) {
    std::fprintf(stderr, "%s\n", inserted.error().message.c_str());
    return 1;
  }
  const std::int64_t id = (*inserted)[0].row.id;
  long backend = 0;
  {
    auto connection = (*pool)->acquire(std::chrono::seconds(5));
    if (!connection.ok()) return 1;
    backend = static_cast<long>((*connection)->execute("SELECT pg_backend_pid()")->int64(0, 0));
  }
  std::string bytes(mib << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>((i * 131 + i / 977) & 0xff);

  std::printf(
      "checkpoint of %zu MiB, %d rounds; CPU-seconds of the server backend and of this "
      "process, and wall seconds\n",
      mib, rounds);
  std::int64_t step = 0;
  for (int round = 1; round <= rounds; ++round) {
    const Cost one = measure(backend, [&] {
      auto connection = (*pool)->acquire(std::chrono::seconds(5));
      auto stored = (*connection)
                        ->execute(
                            "INSERT INTO job_checkpoints (job_id, step, epoch, bytes)"
                            " VALUES ($1::bigint, $2::bigint, 0, $3::bytea)",
                            {id, ++step, Param::bytes(bytes)});
      if (!stored.ok()) std::fprintf(stderr, "%s\n", stored.error().message.c_str());
    });
    const Cost rows = measure(backend, [&] {
      auto stored = repositories.outputs.save_checkpoint(id, ++step, 0, bytes);
      if (!stored.ok()) std::fprintf(stderr, "%s\n", stored.error().message.c_str());
    });
    std::printf(
        "round %d: one bytea value: server %.2f, client %.2f, wall %.2f | save_checkpoint (rows by "
        "COPY): "
        "server %.2f, client %.2f, wall %.2f\n",
        round, one.server, one.client, one.wall, rows.server, rows.client, rows.wall);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tpujobs::db

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 252;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  return tpujobs::db::run(mib, rounds);
}
