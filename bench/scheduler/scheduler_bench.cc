// scheduler::plan_pass, the one placement policy, over 10,000 and 100,000
// waiting jobs on a v3-2048 pool (256 hosts x 8 cores) that is idle, full
// (every host held by running jobs), drained (no host takes work), or
// drained but for one recovered host with a priority-100 job waiting (issue
// 29's budgets: a scheduling pass at most 50 ms and memory per queued job at
// most 2 KB, with 100,000 queued on a drained pool). See bench/RESULTS.md.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "scheduler/pass.h"
#include "scheduler/pool.h"

// The heap this program holds, and its peak, counted at every operator new
// and delete (malloc_usable_size: what each block really takes).
namespace {
std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};
}  // namespace

void* operator new(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t live = g_live += malloc_usable_size(p);
  std::size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}
// GCC takes this replacement's free() of operator new's block for a
// mismatch; the block did come from malloc (above).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live -= malloc_usable_size(p);
  std::free(p);
}
#pragma GCC diagnostic pop
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace tpujobs::scheduler {
namespace {

constexpr int kHosts = 256;
constexpr int kTenants = 8;
const PassTime kNow = PassTime{} + std::chrono::hours(500000);

enum PoolState { kIdle = 0, kFull = 1, kDrained = 2, kRecovered = 3 };

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

void add_hosts(PassSnapshot& s, PoolState pool, std::mt19937_64& random) {
  for (int h = 0; h < kHosts; ++h) {
    PassHost host;
    host.cores.assign(8, pool == kFull ? JobId{1000000 + h} : 0);
    // Drained: no host takes work (a recovered pool: all but host 0).
    host.usable = pool != kDrained && (pool != kRecovered || h == 0);
    s.hosts.push_back(host);
    if (pool == kFull) {
      const auto end = kNow + std::chrono::minutes(1 + random() % 60);
      s.running.push_back(
          RunningEntry{1000000 + h, static_cast<int>(random() % 4), true, false, end, h});
      s.tenants[h % kTenants].used_cores += 8;
    }
  }
}

// `waiting` jobs: half single cores (a tenth of those pinned), a quarter
// whole hosts, a quarter slices (smaller more often); priorities 0-3; 80%
// state a time limit; one job in fifty depends on an earlier one. A
// recovered pool has one more job, of priority 100, that fits one host.
PassSnapshot snapshot(int waiting, PoolState pool) {
  std::mt19937_64 random(42);
  PassSnapshot s;
  s.now = kNow;
  s.agents.push_back(PassAgent{"solo", 2, true});
  for (int t = 0; t < kTenants; ++t) {
    s.tenants.push_back(PassTenant{"team-" + std::to_string(t), std::nullopt, 0, 1.0 - t * 0.1});
  }
  s.shapes = shapes();
  add_hosts(s, pool, random);
  static constexpr int kSliceShapes[] = {10, 10, 10, 11, 11, 12, 12, 13, 14};
  s.waiting.reserve(waiting + 1);
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
  if (pool == kRecovered) {
    WaitingEntry urgent;
    urgent.id = waiting + 1;
    urgent.order = waiting + 1;
    urgent.priority = 100;
    urgent.shape = 9;  // a whole host
    s.waiting.push_back(urgent);
  }
  return s;
}

void BM_PlanPass(benchmark::State& state) {
  const PassSnapshot s = snapshot(static_cast<int>(state.range(0)), PoolState(state.range(1)));
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
}
BENCHMARK(BM_PlanPass)
    ->ArgNames({"waiting", "pool"})
    ->Args({10000, kFull})
    ->Args({100000, kFull})
    ->Args({100000, kIdle})
    ->Args({100000, kDrained})
    ->Args({100000, kRecovered})
    ->Unit(benchmark::kMillisecond);

// A queue as bench/service/big_queue.py makes it: one priority and one
// tenant, so the entries come in the order the pass takes them (a leader
// adds each new job at the end of its entries).
PassSnapshot one_priority_queue(const benchmark::State& state) {
  PassSnapshot s = snapshot(static_cast<int>(state.range(0)), PoolState(state.range(1)));
  for (WaitingEntry& entry : s.waiting) {
    entry.priority = 0;
    entry.tenant = 0;
  }
  return s;
}

void BM_PlanPassInOrder(benchmark::State& state) {
  PassSnapshot s = one_priority_queue(state);
  for (auto _ : state) benchmark::DoNotOptimize(plan_pass(s));
}
BENCHMARK(BM_PlanPassInOrder)
    ->ArgNames({"waiting", "pool"})
    ->Args({100000, kDrained})
    ->Unit(benchmark::kMillisecond);

// The same with a priority-100 job added last, as big_queue.py submits
// one after its burst: the first in the queue, the last of the entries.
void BM_PlanPassInOrderButTheLast(benchmark::State& state) {
  PassSnapshot s = one_priority_queue(state);
  s.waiting.back().priority = 100;
  for (auto _ : state) benchmark::DoNotOptimize(plan_pass(s));
}
BENCHMARK(BM_PlanPassInOrderButTheLast)
    ->ArgNames({"waiting", "pool"})
    ->Args({100000, kDrained})
    ->Unit(benchmark::kMillisecond);

// The same after the pass before placed the first 8: a leader gives each
// placed job's entry to its last one, so the 8 last jobs are now first.
void BM_PlanPassAfterEightPlaced(benchmark::State& state) {
  PassSnapshot s = one_priority_queue(state);
  for (std::size_t placed = 0; placed < 8; ++placed) {
    s.waiting[placed] = s.waiting.back();
    s.waiting.pop_back();
  }
  for (auto _ : state) benchmark::DoNotOptimize(plan_pass(s));
}
BENCHMARK(BM_PlanPassAfterEightPlaced)
    ->ArgNames({"waiting", "pool"})
    ->Args({100000, kDrained})
    ->Unit(benchmark::kMillisecond);

// The same queue as a burst of submits leaves it: two committers commit
// their batches in either order, so the leader (which adds each read's new
// jobs at the end of its entries) has every other batch of 250 after the
// next one.
void BM_PlanPassNearlyInOrder(benchmark::State& state) {
  PassSnapshot s = one_priority_queue(state);
  constexpr std::size_t kBatch = 250;
  for (std::size_t at = 0; at + 2 * kBatch <= s.waiting.size(); at += 4 * kBatch) {
    std::rotate(s.waiting.begin() + static_cast<std::ptrdiff_t>(at),
                s.waiting.begin() + static_cast<std::ptrdiff_t>(at + kBatch),
                s.waiting.begin() + static_cast<std::ptrdiff_t>(at + 2 * kBatch));
  }
  for (auto _ : state) benchmark::DoNotOptimize(plan_pass(s));
}
BENCHMARK(BM_PlanPassNearlyInOrder)
    ->ArgNames({"waiting", "pool"})
    ->Args({100000, kDrained})
    ->Unit(benchmark::kMillisecond);

// big_queue.py's pool after its priority-100 step: 100,000 single-core
// jobs of one priority and tenant, without time limits, on four v3-8 hosts
// of which one took work again and runs 8 of them. The priority-100 job
// was added last and placed; then, in each of `passes` passes, the next 8
// jobs of the queue. The last entry took each one's place as the leader
// heard of them, the first of each pass's last (as a leader kept its
// entries in that run: service/scheduler_leader_queue.cc, bench/RESULTS.md).
void BM_PlanPassBigQueueRecovered(benchmark::State& state) {
  PassSnapshot s;
  s.now = kNow;
  s.agents.push_back(PassAgent{"solo", 2, true});
  s.tenants.push_back(PassTenant{"default", std::nullopt, 8, 1.0});
  s.shapes.push_back(ResourceRequest{RequestKind::kSingleCore, Generation::kV3, 1, 1, {}, ""});
  for (int h = 0; h < 4; ++h) {
    PassHost host;
    host.usable = h == 0;
    host.cores.assign(8, 0);
    if (h == 0) {
      for (int c = 0; c < 8; ++c) {
        host.cores[c] = 1000000 + c;
        s.running.push_back(RunningEntry{1000000 + c, 0, true, false, std::nullopt, c});
      }
    }
    s.hosts.push_back(host);
  }
  const int waiting = static_cast<int>(state.range(0));
  for (int i = 1; i <= waiting + 1; ++i) {
    WaitingEntry entry;
    entry.id = i;
    entry.order = i;
    entry.shape = 0;
    if (i == waiting + 1) entry.priority = 100;
    s.waiting.push_back(entry);
  }
  auto drop = [&](JobId id) {
    auto at = std::find_if(s.waiting.begin(), s.waiting.end(),
                           [&](const WaitingEntry& e) { return e.id == id; });
    *at = s.waiting.back();
    s.waiting.pop_back();
  };
  drop(waiting + 1);
  for (JobId first = 1; first <= 8 * state.range(1); first += 8) {
    for (JobId id = first + 1; id < first + 8; ++id) drop(id);
    drop(first);
  }
  for (auto _ : state) benchmark::DoNotOptimize(plan_pass(s));
}
BENCHMARK(BM_PlanPassBigQueueRecovered)
    ->ArgNames({"waiting", "passes"})
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Args({100000, 10})
    ->Unit(benchmark::kMillisecond);

// The heap per waiting job, 100,000 waiting on a drained pool: what the
// snapshot holds between passes (the waiting entries, the dependency lists
// and states), the peak a pass adds while it runs, and the plan it returns
// (every job's reason, position and estimated start). One iteration.
void BM_MemoryPerQueuedJob(benchmark::State& state) {
  constexpr int kWaiting = 100000;
  for (auto _ : state) {
    const std::size_t empty = g_live;
    const PassSnapshot s = snapshot(kWaiting, kDrained);
    const std::size_t with_snapshot = g_live;
    g_peak = with_snapshot;
    const PassPlan plan = plan_pass(s);
    const std::size_t with_plan = g_live;
    benchmark::DoNotOptimize(plan);
    state.counters["entry_bytes"] = sizeof(WaitingEntry);
    state.counters["snapshot_bytes_per_job"] =
        static_cast<double>(with_snapshot - empty) / kWaiting;
    state.counters["pass_peak_bytes_per_job"] =
        static_cast<double>(g_peak - with_snapshot) / kWaiting;
    state.counters["plan_bytes_per_job"] =
        static_cast<double>(with_plan - with_snapshot) / kWaiting;
  }
}
BENCHMARK(BM_MemoryPerQueuedJob)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpujobs::scheduler

BENCHMARK_MAIN();
