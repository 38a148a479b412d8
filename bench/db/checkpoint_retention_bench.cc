// What one long job's checkpoints leave on disk (issue 34: one long job grew
// the database to 1.7 GB, a 419 MB checkpoint table holding 425 kB of live
// checkpoints, and 1 GB of WAL). One job saves `count` checkpoints of `kib`
// KiB through JobOutputRepository::save_checkpoint, one every `pace_ms`,
// on its own embedded PostgreSQL with the settings `serve` gives it (fsync
// on: unlike the shared test server). Every `count / 10` saves it prints the
// database's size, the checkpoint tables' (with TOAST and indexes), the live
// checkpoint bytes, the WAL directory and the vacuums run so far.
//
//   checkpoint_retention_bench [kib] [count] [pace_ms]
//
// Default 212 KiB (two live checkpoints: the 425 kB of the issue), 2,000
// saves, no pause.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "db/embedded_postgres.h"
#include "db/migrate.h"
#include "db/repositories.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

constexpr const char* kSizes =
    "SELECT pg_database_size(current_database()),"
    " pg_total_relation_size('job_checkpoint_chunks') + pg_total_relation_size('job_checkpoints'),"
    " (SELECT coalesce(sum(octet_length(bytes)), 0) FROM job_checkpoint_chunks),"
    " (SELECT coalesce(sum(size), 0) FROM pg_ls_waldir()),"
    " (SELECT coalesce(sum(vacuum_count + autovacuum_count), 0) FROM pg_stat_user_tables"
    "  WHERE relname = 'job_checkpoint_chunks')";

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

bool report(ConnectionPool& pool, int saved, double seconds) {
  auto connection = pool.acquire(std::chrono::seconds(5));
  if (!connection.ok()) return false;
  auto sizes = (*connection)->execute(kSizes);
  if (!sizes.ok()) {
    std::fprintf(stderr, "%s\n", sizes.error().message.c_str());
    return false;
  }
  const std::int64_t tables = sizes->int64(0, 1), live = sizes->int64(0, 2);
  std::printf(
      "%6d saves %7.1f s: database %8.1f MiB, checkpoint tables %8.1f MiB, live %6.2f MiB "
      "(%.1fx), WAL %7.1f MiB, vacuums %lld\n",
      saved, seconds, mib(sizes->int64(0, 0)), mib(tables), mib(live),
      live > 0 ? static_cast<double>(tables) / static_cast<double>(live) : 0.0,
      mib(sizes->int64(0, 3)), static_cast<long long>(sizes->int64(0, 4)));
  std::fflush(stdout);
  return true;
}

int run(std::size_t kib, int count, int pace_ms) {
  const std::string directory = testing::make_temp_dir("tpujobs-retention-bench-");
  EmbeddedPostgres::Options options;
  options.state_dir = directory;
  options.sync_initdb = false;
  auto server = EmbeddedPostgres::start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.error().message.c_str());
    return 1;
  }
  auto pool = ConnectionPool::create((*server)->conninfo(), 2);
  if (!pool.ok() || !migrate(**pool).ok()) return 1;
  Repositories repositories(**pool);
  NewJob job;
  job.tenant = "bench";
  job.spec_json = "{}";
  auto inserted = repositories.jobs.insert_jobs({job});
  if (!inserted.ok()) return 1;
  const std::int64_t id = (*inserted)[0].row.id;
  std::string bytes(kib << 10, '\0');
  std::printf("one job, %d checkpoints of %zu KiB, one every %d ms\n", count, kib, pace_ms);
  const auto begin = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  };
  for (int step = 1; step <= count; ++step) {
    for (std::size_t i = 0; i < bytes.size(); i += 64) bytes[i] = static_cast<char>(step + i);
    auto saved = repositories.outputs.save_checkpoint(id, step, 0, bytes);
    if (!saved.ok()) {
      std::fprintf(stderr, "%s\n", saved.error().message.c_str());
      return 1;
    }
    if (step % std::max(1, count / 10) == 0 && !report(**pool, step, seconds())) return 1;
    if (pace_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pace_ms));
  }
  (*pool).reset();
  (void)(*server)->stop(EmbeddedPostgres::Shutdown::kFast);
  std::filesystem::remove_all(directory);
  return 0;
}

}  // namespace
}  // namespace tpujobs::db

int main(int argc, char** argv) {
  const std::size_t kib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 212;
  const int count = argc > 2 ? std::atoi(argv[2]) : 2000;
  const int pace_ms = argc > 3 ? std::atoi(argv[3]) : 0;
  return tpujobs::db::run(kib, count, pace_ms);
}
