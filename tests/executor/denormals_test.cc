#include "executor/denormals.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>

#include "executor/executor.h"
#include "executor/worker_pool.h"
#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

#if !defined(__SSE2__)
#define SKIP_WITHOUT_MXCSR() GTEST_SKIP() << "flushing subnormals is implemented for x86 only"
#else
#define SKIP_WITHOUT_MXCSR()
#endif

// What the FPU of the calling thread makes of subnormals: a product whose
// exact result is subnormal (FTZ) and a subnormal operand (DAZ).
struct SubnormalArithmetic {
  float subnormal_result;
  float subnormal_operand_times_one;
};
SubnormalArithmetic subnormal_arithmetic() {
  volatile float smallest_normal = std::numeric_limits<float>::min();
  volatile float half = 0.5f;
  volatile float subnormal = std::numeric_limits<float>::denorm_min() * 4;
  volatile float one = 1.0f;
  return {smallest_normal * half, subnormal * one};
}

TEST(Denormals, PoolThreadsComputeSubnormalsAsZero) {
  SKIP_WITHOUT_MXCSR();
  WorkerPool pool(2);
  std::atomic<int> flushed{0};
  std::atomic<int> zero_results{0};
  pool.parallel_for(8, [&](int) {
    if (denormals_flushed_on_this_thread()) ++flushed;
    const SubnormalArithmetic got = subnormal_arithmetic();
    if (got.subnormal_result == 0.0f && got.subnormal_operand_times_one == 0.0f) ++zero_results;
  });
  EXPECT_EQ(flushed.load(), 8);
  EXPECT_EQ(zero_results.load(), 8);
}

TEST(Denormals, ScopeFlushesAndRestoresTheThreadsMode) {
  SKIP_WITHOUT_MXCSR();
  ASSERT_FALSE(denormals_flushed_on_this_thread()) << "a test thread starts with IEEE subnormals";
  EXPECT_NE(subnormal_arithmetic().subnormal_result, 0.0f);
  {
    FlushDenormalsScope scope;
    EXPECT_TRUE(denormals_flushed_on_this_thread());
    EXPECT_EQ(subnormal_arithmetic().subnormal_result, 0.0f);
    EXPECT_EQ(subnormal_arithmetic().subnormal_operand_times_one, 0.0f);
  }
  EXPECT_FALSE(denormals_flushed_on_this_thread());
  EXPECT_NE(subnormal_arithmetic().subnormal_operand_times_one, 0.0f);
}

// The sink is called on the thread that runs train(): it sees that thread's mode.
class ModeRecordingSink : public fakes::RecordingSink {
 public:
  void progress(const Progress& progress) override {
    fakes::RecordingSink::progress(progress);
    if (!denormals_flushed_on_this_thread()) ++steps_without_flushing;
  }
  int steps_without_flushing = 0;
};

TEST(Denormals, TrainFlushesOnTheCallersThreadAndRestoresItsMode) {
  SKIP_WITHOUT_MXCSR();
  ASSERT_FALSE(denormals_flushed_on_this_thread());
  WorkerPool pool(2);
  fakes::MapDatasets datasets;
  ModeRecordingSink sink;
  const TrainingResult result =
      train(fakes::small_spec(), DeviceFacts{}, pool, datasets, sink, RunControl{});
  ASSERT_EQ(result.outcome, Outcome::kSucceeded);
  EXPECT_GT(sink.progress_calls, 0);
  EXPECT_EQ(sink.steps_without_flushing, 0);
  EXPECT_FALSE(denormals_flushed_on_this_thread());
}

}  // namespace
}  // namespace tpujobs::executor
