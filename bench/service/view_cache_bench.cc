// GET /v1/jobs/{id}'s lookup in the cache of rendered views
// (service/view_cache.h), alone: a queue of 200 or of 100,000 queued views,
// read at random by one thread or by two (the HTTP server's), as
// bench/service/big_queue.py reads them over HTTP. The process's allocator
// is the C library's (the service binary runs on jemalloc): this measures
// the cache's own structures.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "service/view_cache.h"

namespace {

using tpujobs::service::ViewCache;

// A queued job's view as render_row writes it (members in name order),
// and the pending reason the leader stored for it.
std::string queued_view(std::int64_t id) {
  nlohmann::json spec = {
      {"name", "queued"},
      {"trainer", {{"accelerator", "tpu"}, {"devices", 1}, {"max_epochs", 1}, {"seed", id}}},
      {"model", {{"layers", {{{"type", "linear"}, {"out", 3}}}}, {"loss", "cross_entropy"}}},
      {"data", {{"dataset", "iris"}, {"batch_size", 16}}},
      {"optimizer", {{"type", "sgd"}, {"lr", 0.1}}}};
  nlohmann::json view = {{"id", id},
                         {"name", "queued"},
                         {"state", "QUEUED"},
                         {"tenant", "default"},
                         {"priority", 0},
                         {"attempt", 0},
                         {"created_at", "2026-11-30T15:00:00.123456Z"},
                         {"labels", nlohmann::json::object()},
                         {"warnings", nlohmann::json::array()},
                         {"resolved", {{"accelerator_type", "v3"}, {"devices", 1}, {"hosts", 1}}},
                         {"spec", spec},
                         {"estimated_start", nullptr},
                         {"pending_reason", nullptr},
                         {"priority_parts", nullptr},
                         {"queue_position", nullptr}};
  return view.dump();
}

std::string pending(std::int64_t position) {
  return nlohmann::json{{"reason", "HostUnhealthy"},
                        {"queue_position", position},
                        {"fair_share", 1.0},
                        {"detail", "its hosts belong to a lost agent or are drained or failed"}}
      .dump();
}

std::unique_ptr<ViewCache> fill(std::int64_t views) {
  auto cache = std::make_unique<ViewCache>(std::size_t{1} << 30);
  for (std::int64_t id = 1; id <= views; ++id) {
    cache->put_if_current(cache->generation(), id, "default", queued_view(id), 0, pending(id));
  }
  while (cache->render_ahead(1024) > 0) {
  }
  return cache;
}

// The two caches, filled once (a function's statics: the benchmark's
// threads wait for the first to fill them).
ViewCache& filled(std::int64_t views) {
  static const std::unique_ptr<ViewCache> small = fill(200);
  static const std::unique_ptr<ViewCache> large = fill(100000);
  return views == 200 ? *small : *large;
}

void BM_FindQueuedView(benchmark::State& state) {
  const std::int64_t views = state.range(0);
  ViewCache& cache = filled(views);
  std::mt19937_64 random(static_cast<std::uint64_t>(state.thread_index()) + 1);
  std::uniform_int_distribution<std::int64_t> id(1, views);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::optional<ViewCache::Entry> hit = cache.find(id(random));
    bytes += hit->body.size();
    benchmark::DoNotOptimize(hit);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_FindQueuedView)->Arg(200)->Arg(100000)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
