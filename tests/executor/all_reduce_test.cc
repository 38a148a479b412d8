#include "executor/all_reduce.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
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

}  // namespace
}  // namespace tpujobs::executor
