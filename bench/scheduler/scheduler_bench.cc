// Scheduling cost on a v3-2048 pool (256 hosts x 8 cores) with 10,000 mixed
// waiting jobs. See RESULTS.md for figures and how they were taken.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>
#include <random>
#include <vector>

#include "scheduler/pool.h"
#include "scheduler/scheduler.h"

namespace tpujobs::scheduler {
namespace {

constexpr int kWaitingJobs = 10000;

// A mix like a busy shared pool: half single cores, a quarter whole hosts, a
// quarter v3-32..v3-512 slices (smaller ones more often); `known_runtime`
// percent of jobs say how long they run (80 unless told).
class JobMix {
 public:
  explicit JobMix(std::uint64_t seed, int known_runtime = 80)
      : random_(seed), known_runtime_(known_runtime) {}

  JobRequest next() {
    JobRequest job;
    job.id = ++last_id_;
    job.submit_order = job.id;
    job.priority = static_cast<int>(random_() % 4);
    job.tenant = "team-" + std::to_string(random_() % 8);
    ResourceRequest& request = job.request;
    request.generation = Generation::kV3;
    const int pick = static_cast<int>(random_() % 100);
    if (pick < 50) {
      request.kind = RequestKind::kSingleCore;
      request.devices_per_host = 1;
      request.hosts = 1;
      if (pick < 5) request.pinned_core = static_cast<int>(random_() % 8);
    } else if (pick < 75) {
      request.kind = RequestKind::kHost;
      request.devices_per_host = 8;
      request.hosts = 1;
      request.accelerator_type = "v3-8";
    } else {
      static constexpr int kSliceHosts[] = {4, 4, 4, 8, 8, 16, 16, 32, 64};
      request.kind = RequestKind::kSlice;
      request.devices_per_host = 8;
      request.hosts = kSliceHosts[random_() % std::size(kSliceHosts)];
      request.accelerator_type = "v3-" + std::to_string(request.hosts * 8);
    }
    if (static_cast<int>(random_() % 100) < known_runtime_) {
      job.expected_runtime = std::chrono::minutes(1 + random_() % 60);
    }
    return job;
  }

 private:
  std::mt19937_64 random_;
  int known_runtime_;
  JobId last_id_ = 0;
};

std::unique_ptr<Scheduler> make_scheduler() {
  base::Result<PoolLayout> layout = parse_pool("v3-2048");
  return std::make_unique<Scheduler>(std::move(*layout), SchedulerOptions{});
}

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1000);

// A loaded pool: the first pass filled it, kWaitingJobs still wait.
struct LoadedPool {
  std::unique_ptr<Scheduler> scheduler = make_scheduler();
  JobMix mix;
  std::vector<JobId> running;
  Clock::time_point now = kStart;

  explicit LoadedPool(int known_runtime = 80, int waiting = kWaitingJobs) : mix(42, known_runtime) {
    for (int i = 0; i < waiting; ++i) scheduler->submit(mix.next());
    track(scheduler->schedule(now));
    for (int queued = static_cast<int>(scheduler->queue().size()); queued < waiting; ++queued) {
      scheduler->submit(mix.next());
    }
    track(scheduler->schedule(now));
  }
  void track(const std::vector<Placement>& started) {
    for (const Placement& placement : started) running.push_back(placement.job);
  }
};

// One pass from an idle pool: places jobs until the pool is full, then
// classifies the rest.
void BM_FullPassIdlePool(benchmark::State& state) {
  std::size_t started = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Scheduler> scheduler = make_scheduler();
    JobMix mix(7);
    for (int i = 0; i < kWaitingJobs; ++i) scheduler->submit(mix.next());
    state.ResumeTiming();
    started = scheduler->schedule(kStart).size();
    benchmark::DoNotOptimize(started);
    state.PauseTiming();
    scheduler.reset();
    state.ResumeTiming();
  }
  state.counters["started"] = static_cast<double>(started);
}
BENCHMARK(BM_FullPassIdlePool)->Unit(benchmark::kMillisecond);

// The most placements one pass can make: 10,000 single-core jobs on an idle
// pool, 2,048 of which start, each packed by best fit.
void BM_FullPassIdlePoolSingleCores(benchmark::State& state) {
  std::size_t started = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Scheduler> scheduler = make_scheduler();
    JobMix mix(11);
    for (int i = 0; i < kWaitingJobs; ++i) {
      JobRequest job = mix.next();
      job.request = ResourceRequest{RequestKind::kSingleCore, Generation::kV3, 1, 1, {}, ""};
      scheduler->submit(std::move(job));
    }
    state.ResumeTiming();
    started = scheduler->schedule(kStart).size();
    benchmark::DoNotOptimize(started);
    state.PauseTiming();
    scheduler.reset();
    state.ResumeTiming();
  }
  state.counters["started"] = static_cast<double>(started);
}
BENCHMARK(BM_FullPassIdlePoolSingleCores)->Unit(benchmark::kMillisecond);

// One pass over a full pool with 10,000 (or 100,000) waiting: nothing fits,
// every job is classified and positioned.
void BM_FullPassLoadedPool(benchmark::State& state) {
  LoadedPool pool(80, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    pool.now += std::chrono::seconds(1);
    benchmark::DoNotOptimize(pool.scheduler->schedule(pool.now));
  }
  state.counters["waiting"] = static_cast<double>(pool.scheduler->queue().size());
  state.counters["used_cores"] = pool.scheduler->view().used_cores;
}
BENCHMARK(BM_FullPassLoadedPool)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// A pass and every waiting job's reason, position and estimated start, as
// the views show them: what a one-member cluster's leader writes each pass.
void BM_PassAndEveryAnswer(benchmark::State& state) {
  LoadedPool pool(80, static_cast<int>(state.range(0)));
  const std::vector<JobId> waiting = pool.scheduler->queue();
  for (auto _ : state) {
    pool.now += std::chrono::seconds(1);
    pool.scheduler->schedule(pool.now);
    for (JobId id : waiting) benchmark::DoNotOptimize(pool.scheduler->pending(id));
  }
}
BENCHMARK(BM_PassAndEveryAnswer)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// submit() + schedule() in the loaded state. The new job is withdrawn again
// (untimed) when it waits, so every event sees 10,000 waiting jobs.
void BM_SubmitEvent(benchmark::State& state) {
  LoadedPool pool;
  for (auto _ : state) {
    const JobRequest job = pool.mix.next();
    pool.now += std::chrono::seconds(1);
    pool.scheduler->submit(job);
    const std::vector<Placement> placed = pool.scheduler->schedule(pool.now);
    state.PauseTiming();
    pool.track(placed);
    pool.scheduler->cancel(job.id);
    state.ResumeTiming();
  }
  state.counters["waiting"] = static_cast<double>(pool.scheduler->queue().size());
}
BENCHMARK(BM_SubmitEvent)->Unit(benchmark::kMicrosecond);

// finish() of a random running job + schedule() (which refills the freed
// cores) in the loaded state; a replacement job keeps 10,000 waiting.
void BM_FinishEvent(benchmark::State& state) {
  LoadedPool pool;
  std::mt19937_64 random(3);
  std::size_t started = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (pool.running.empty()) {
      state.SkipWithError("pool ran out of running jobs");
      break;
    }
    const std::size_t pick = random() % pool.running.size();
    const JobId victim = pool.running[pick];
    pool.running[pick] = pool.running.back();
    pool.running.pop_back();
    pool.scheduler->submit(pool.mix.next());
    pool.now += std::chrono::seconds(1);
    state.ResumeTiming();
    pool.scheduler->finish(victim);
    const std::vector<Placement> placed = pool.scheduler->schedule(pool.now);
    state.PauseTiming();
    started += placed.size();
    pool.track(placed);
    state.ResumeTiming();
  }
  state.counters["started_per_event"] =
      benchmark::Counter(static_cast<double>(started), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_FinishEvent)->Unit(benchmark::kMicrosecond);

// What the service does for each job submitted: submit(), a pass, and the
// new job's pending() for the 201 response, in the loaded state (the job is
// withdrawn again, untimed). Its estimated start is planned lazily: with
// arg 0 no job states a runtime (as the service submits them today), so the
// plan stops at the first job of each shape; with arg 80 it walks the whole
// queue to reach the new, last job.
void BM_SubmitAndAnswer(benchmark::State& state) {
  LoadedPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const JobRequest job = pool.mix.next();
    pool.now += std::chrono::seconds(1);
    pool.scheduler->submit(job);
    const std::vector<Placement> placed = pool.scheduler->schedule(pool.now);
    benchmark::DoNotOptimize(pool.scheduler->pending(job.id));
    state.PauseTiming();
    pool.track(placed);
    pool.scheduler->cancel(job.id);
    state.ResumeTiming();
  }
  state.counters["waiting"] = static_cast<double>(pool.scheduler->queue().size());
}
BENCHMARK(BM_SubmitAndAnswer)->Arg(0)->Arg(80)->Unit(benchmark::kMicrosecond);

// The first pending() after a change, for the last job: plans estimated
// starts for the whole queue.
void BM_EstimatePlan(benchmark::State& state) {
  LoadedPool pool;
  const JobId last = pool.scheduler->queue().back();
  for (auto _ : state) {
    pool.now += std::chrono::seconds(1);
    pool.scheduler->schedule(pool.now);
    benchmark::DoNotOptimize(pool.scheduler->pending(last));
  }
}
BENCHMARK(BM_EstimatePlan)->Unit(benchmark::kMillisecond);

// The heap a Scheduler holds per waiting job, with 100,000 waiting on a full
// pool (glibc's count of bytes in use, before and after; one iteration).
void BM_MemoryPerQueuedJob(benchmark::State& state) {
  for (auto _ : state) {
    const std::size_t before = mallinfo2().uordblks;
    LoadedPool pool(80, 100000);
    pool.scheduler->schedule(pool.now + std::chrono::seconds(1));
    const std::size_t after = mallinfo2().uordblks;
    state.counters["bytes_per_queued_job"] = static_cast<double>(after - before) / 100000.0;
  }
}
BENCHMARK(BM_MemoryPerQueuedJob)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpujobs::scheduler

BENCHMARK_MAIN();
