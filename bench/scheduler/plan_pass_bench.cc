// scheduler::plan_pass over 100,000 waiting jobs (issue 29's budget: a
// scheduling pass at most 50 ms), on a v3-2048 pool (256 hosts x 8 cores)
// either full (every host held by running jobs) or idle. See RESULTS.md.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "scheduler/pass.h"
#include "scheduler/pool.h"

namespace tpujobs::scheduler {
namespace {

constexpr int kHosts = 256;
constexpr int kTenants = 8;
const PassTime kNow = PassTime{} + std::chrono::hours(500000);

// The request shapes of a busy shared pool: single cores (some pinned),
// whole hosts, v3-32..v3-512 slices.
std::vector<ResourceRequest> shapes() {
  std::vector<ResourceRequest> out;
  out.push_back(ResourceRequest{RequestKind::kSingleCore, Generation::kV3, 1, 1, {}, ""});
  for (int core = 0; core < 8; ++core) {
    out.push_back(ResourceRequest{RequestKind::kSingleCore, Generation::kV3, 1, 1, core, ""});
  }
  out.push_back(ResourceRequest{RequestKind::kHost, Generation::kV3, 8, 1, {}, "v3-8"});
  for (int hosts : {4, 8, 16, 32, 64}) {
    out.push_back(ResourceRequest{
        RequestKind::kSlice, Generation::kV3, 8, hosts, {}, "v3-" + std::to_string(hosts * 8)});
  }
  return out;
}

// `waiting` jobs: half single cores (a tenth of those pinned), a quarter
// whole hosts, a quarter slices (smaller more often); priorities 0-3; 80%
// state a time limit; one job in fifty depends on an earlier one; with
// `full`, every host is held by a running whole-host job ending within an
// hour.
PassSnapshot snapshot(int waiting, bool full) {
  std::mt19937_64 random(42);
  PassSnapshot s;
  s.now = kNow;
  s.agents.push_back(PassAgent{"solo", 2, true});
  for (int t = 0; t < kTenants; ++t) {
    s.tenants.push_back(PassTenant{"team-" + std::to_string(t), std::nullopt, 0, 1.0 - t * 0.1});
  }
  s.shapes = shapes();
  for (int h = 0; h < kHosts; ++h) {
    PassHost host;
    host.cores.assign(8, full ? JobId{1000000 + h} : 0);
    s.hosts.push_back(host);
    if (full) {
      const auto end = kNow + std::chrono::minutes(1 + random() % 60);
      s.running.push_back(
          RunningEntry{1000000 + h, static_cast<int>(random() % 4), true, false, end, h});
      s.tenants[h % kTenants].used_cores += 8;
    }
  }
  static constexpr int kSliceShapes[] = {10, 10, 10, 11, 11, 12, 12, 13, 14};
  for (int i = 1; i <= waiting; ++i) {
    WaitingEntry entry;
    entry.id = i;
    entry.order = i;
    entry.priority = static_cast<int>(random() % 4);
    entry.tenant = static_cast<int>(random() % kTenants);
    const int pick = static_cast<int>(random() % 100);
    entry.shape = pick < 45   ? 0
                  : pick < 50 ? 1 + static_cast<int>(random() % 8)
                  : pick < 75 ? 9
                              : kSliceShapes[random() % std::size(kSliceShapes)];
    if (random() % 100 < 80) entry.timeout = std::chrono::minutes(1 + random() % 60);
    if (i > 1 && random() % 50 == 0) {
      entry.dependencies = static_cast<int>(s.dependencies.size());
      const JobId target = 1 + static_cast<JobId>(random() % (i - 1));
      s.dependencies.push_back({Dependency{target, DependencyCondition::kSucceeded}});
      s.dependency_states[target] = base::JobState::kQueued;
    }
    s.waiting.push_back(entry);
  }
  return s;
}

void BM_PlanPass(benchmark::State& state) {
  const PassSnapshot s = snapshot(static_cast<int>(state.range(0)), state.range(1) != 0);
  std::size_t started = 0;
  std::size_t left = 0;
  for (auto _ : state) {
    const PassPlan plan = plan_pass(s);
    started = plan.starts.size();
    left = plan.waiting.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["started"] = static_cast<double>(started);
  state.counters["waiting"] = static_cast<double>(left);
  state.counters["entry_bytes"] = sizeof(WaitingEntry);
}
BENCHMARK(BM_PlanPass)
    ->ArgNames({"waiting", "full"})
    ->Args({10000, 1})
    ->Args({100000, 1})
    ->Args({100000, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpujobs::scheduler

BENCHMARK_MAIN();
