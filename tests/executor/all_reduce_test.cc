#include "executor/all_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

std::vector<std::vector<float>> gradients(int world, std::size_t count) {
  std::vector<std::vector<float>> buffers(world, std::vector<float>(count));
  for (int r = 0; r < world; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      // Magnitudes that make float addition order visible.
      buffers[r][i] = std::sin(float(i * 7 + r)) * std::pow(10.0f, float((r * 3 + i) % 7) - 3);
    }
  }
  return buffers;
}

std::vector<float> reduce(std::vector<std::vector<float>> buffers, float scale, WorkerPool* pool) {
  std::vector<float*> pointers;
  for (auto& buffer : buffers) pointers.push_back(buffer.data());
  ring_all_reduce(pointers, buffers[0].size(), scale, pool);
  return buffers[0];
}

TEST(RingAllReduce, SumsEveryChunkAlongTheRingInAFixedOrder) {
  const int world = 4;
  const std::size_t count = 10;  // chunks of 3, 3, 3, 1
  const auto input = gradients(world, count);
  const std::vector<float> result = reduce(input, 0.25f, nullptr);
  for (std::size_t i = 0; i < count; ++i) {
    const int chunk = static_cast<int>(i / 3);
    float sum = input[chunk % world][i];
    for (int hop = 1; hop < world; ++hop) sum += input[(chunk + hop) % world][i];
    EXPECT_EQ(result[i], sum * 0.25f) << i;  // bit-exact: the documented order
    double exact = 0;
    for (int r = 0; r < world; ++r) exact += input[r][i];
    EXPECT_NEAR(result[i], exact / world, 1e-3 * (1 + std::abs(exact)));
  }
}

TEST(RingAllReduce, DeterministicWithAndWithoutThePool) {
  WorkerPool pool(3);
  const auto input = gradients(8, 100'001);
  const std::vector<float> serial = reduce(input, 0.125f, nullptr);
  for (int run = 0; run < 3; ++run) EXPECT_EQ(reduce(input, 0.125f, &pool), serial);
}

TEST(RingAllReduce, SingleReplicaOnlyScales) {
  std::vector<float> only = {2.0f, 4.0f};
  ring_all_reduce({only.data()}, 2, 0.5f, nullptr);
  EXPECT_EQ(only, (std::vector<float>{1.0f, 2.0f}));
}

TEST(WorkerPool, RunsEveryIndexExactlyOnce) {
  WorkerPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(1000, [&](int i) { hits[i]++; });
  for (auto& hit : hits) EXPECT_EQ(hit.load(), 1);
}

TEST(WorkerPool, EveryThreadRunsItsStartHookOnItselfBeforeAnyTask) {
  std::mutex mutex;
  std::set<std::thread::id> started;
  {
    WorkerPool pool(3, [&] {
      std::lock_guard lock(mutex);
      started.insert(std::this_thread::get_id());
    });
    pool.parallel_for(64, [&](int) {
      std::lock_guard lock(mutex);
      EXPECT_EQ(started.count(std::this_thread::get_id()), 1u)
          << "a task ran on a pool thread before its start hook";
    });
  }  // joined: every thread has started
  EXPECT_EQ(started.size(), 3u);
  EXPECT_EQ(started.count(std::this_thread::get_id()), 0u);
}

TEST(WorkerPool, NestedGroupsAndConcurrentCallersFinish) {
  WorkerPool pool(2);
  std::atomic<int> total{0};
  auto job = [&] {
    pool.parallel_for(4, [&](int) { pool.parallel_for(5, [&](int) { total++; }); });
  };
  std::thread a(job), b(job);
  job();
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 3 * 4 * 5);
}

TEST(WorkerPool, RethrowsATaskException) {
  WorkerPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(8,
                                 [&](int i) {
                                   ran++;
                                   if (i == 3) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8);
}

// Jobs' step turns of equal work: in rounds (no job begins turn n+1 before
// every job has begun turn n), at most threads() at once, however the OS runs
// the threads.
TEST(WorkerPool, StepTurnsGoRoundRobinAtMostThreadsAtOnce) {
  WorkerPool pool(2);
  constexpr int kJobs = 5, kTurns = 40;
  std::vector<std::unique_ptr<WorkerPool::JobShare>> shares;
  for (int job = 0; job < kJobs; ++job)
    shares.push_back(std::make_unique<WorkerPool::JobShare>(pool));
  std::mutex mutex;
  std::vector<int> recorded(kJobs, 0);  // turns each job has recorded, inside them
  int most_ahead = 0;                   // of the job recording over the job least far
  int running = 0, most_running = 0;
  std::vector<std::thread> threads;
  for (int job = 0; job < kJobs; ++job) {
    threads.emplace_back([&, job] {
      for (int turn = 0; turn < kTurns; ++turn) {
        WorkerPool::StepTurn step(*shares[job]);
        {
          std::lock_guard lock(mutex);
          ++recorded[job];
          most_ahead = std::max(
              most_ahead, recorded[job] - *std::min_element(recorded.begin(), recorded.end()));
          most_running = std::max(most_running, ++running);
        }
        std::this_thread::yield();
        std::lock_guard lock(mutex);
        --running;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(recorded, std::vector<int>(kJobs, kTurns));
  EXPECT_LE(most_running, 2);
  // Turn n begins once every job has begun turn n-1, which it records after
  // it has recorded turn n-2: a job's count leads the least one's by at most 2.
  EXPECT_LE(most_ahead, 2);
}

// Turns are weighted by their work: a job whose steps are ten times cheaper
// takes ten steps per step of the other, and never fewer.
TEST(WorkerPool, CheaperStepsTakeProportionallyMoreTurns) {
  WorkerPool pool(1);
  WorkerPool::JobShare costly(pool), cheap(pool);
  std::mutex mutex;
  int cheap_begun = 0;
  std::vector<int> cheap_begun_at_costly_turn;
  std::thread cheap_job([&] {
    for (int turn = 0; turn < 50; ++turn) {
      WorkerPool::StepTurn step(cheap, 1);
      std::lock_guard lock(mutex);
      ++cheap_begun;
    }
  });
  for (int turn = 0; turn < 5; ++turn) {
    WorkerPool::StepTurn step(costly, 10);
    std::lock_guard lock(mutex);
    cheap_begun_at_costly_turn.push_back(cheap_begun);
  }
  cheap_job.join();
  ASSERT_EQ(cheap_begun_at_costly_turn.size(), 5u);
  for (int turn = 0; turn < 5; ++turn) {
    // The costly job's turn k begins once the cheap one has begun 10 k units.
    EXPECT_GE(cheap_begun_at_costly_turn[turn], 10 * turn) << "turn " << turn;
    // And the cheap one cannot run more than one costly step's work ahead.
    EXPECT_LE(cheap_begun_at_costly_turn[turn], 10 * turn + 10) << "turn " << turn;
  }
}

// A job joining starts level with the job that has taken the fewest turns:
// the jobs already running do not wait while it catches up.
TEST(WorkerPool, AJobJoiningLaterStartsLevel) {
  WorkerPool pool(1);
  WorkerPool::JobShare first(pool);
  for (int turn = 0; turn < 5; ++turn) WorkerPool::StepTurn step(first);
  std::optional<WorkerPool::JobShare> second;
  second.emplace(pool);
  // Level at 5 turns each, the first may begin its 6th at once. (Had the
  // second joined at 0 turns, the first would wait for 5 of its turns.)
  std::promise<void> began;
  std::future<void> sixth_turn = began.get_future();
  std::thread first_job([&] {
    WorkerPool::StepTurn step(first);
    began.set_value();
  });
  const std::future_status status = sixth_turn.wait_for(std::chrono::minutes(1));
  if (status != std::future_status::ready) second.reset();  // releases the first
  first_job.join();
  EXPECT_EQ(status, std::future_status::ready) << "the first job waited for the newcomer";
}

}  // namespace
}  // namespace tpujobs::executor
