#include "executor/advisor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpujobs::executor {
namespace {

LayerSpec linear(int out) { return LayerSpec{LayerType::kLinear, out, true, 0.5, std::nullopt}; }
LayerSpec relu() { return LayerSpec{LayerType::kRelu, 0, true, 0.5, std::nullopt}; }

// The digits job: 64 -> 128 -> 10, Adam, batch 64 per core; 1797
// samples with 20% held out leave 1437 for training.
TrainingSpec digits_spec(int world_size = 1) {
  TrainingSpec spec;
  spec.model.layers = {linear(128), relu(), linear(10)};
  spec.data.batch_size = 64;
  spec.max_epochs = 20;
  spec.log_every_n_steps = 10;
  spec.world_size = world_size;
  return spec;
}

// The GEMM-bound benchmark model: 1024 -> 4096 -> 4096 -> 10, batch 256.
TrainingSpec gemm_spec() {
  TrainingSpec spec;
  spec.model.layers = {linear(4096), relu(), linear(4096), relu(), linear(10)};
  spec.data.batch_size = 256;
  spec.data.drop_last = true;
  spec.max_epochs = 2;
  spec.log_every_n_steps = 50;
  return spec;
}

struct Job {
  TrainingSpec spec;
  ModelShape shape;
  DeviceFacts device;  // v3: 16 GiB, 61.5 TFLOP/s per core, MXU 128
  std::int64_t train_samples = 0;

  Job(TrainingSpec training, int input_features, std::int64_t samples)
      : spec(std::move(training)), train_samples(samples) {
    base::Result<ModelShape> inferred = infer_shape(spec.model, input_features);
    EXPECT_TRUE(inferred.ok()) << inferred.error().message;
    if (inferred.ok()) shape = std::move(*inferred);
  }
  std::int64_t steps_per_epoch() const {
    const std::int64_t shard = (train_samples + spec.world_size - 1) / spec.world_size;
    const std::int64_t batch = spec.data.batch_size;
    return spec.data.drop_last ? shard / batch : (shard + batch - 1) / batch;
  }
  std::vector<Advice> advice() const {
    return advise(AdvisorInput{spec, shape, device, train_samples, steps_per_epoch()});
  }
  StepTimeEstimate step_time() const {
    return estimate_step_time(AdvisorInput{spec, shape, device, train_samples, steps_per_epoch()});
  }
};

std::vector<std::string> codes(const std::vector<Advice>& advice) {
  std::vector<std::string> out;
  for (const Advice& item : advice) out.push_back(item.code);
  return out;
}

const Advice& find(const std::vector<Advice>& advice, const std::string& code) {
  for (const Advice& item : advice) {
    if (item.code == code) return item;
  }
  static const Advice kMissing{"", ""};
  ADD_FAILURE() << "no " << code;
  return kMissing;
}

TEST(AdvisorTest, DigitsJobGetsBatchPaddingAndRecompileAdvice) {
  const Job job(digits_spec(), 64, 1437);
  const std::vector<Advice> advice = job.advice();
  EXPECT_EQ(codes(advice), (std::vector<std::string>{"SMALL_BATCH", "MXU_PADDING", "RECOMPILES"}));

  const std::string& small = find(advice, "SMALL_BATCH").message;
  EXPECT_NE(small.find("per-core batch_size 64 is small"), std::string::npos) << small;
  EXPECT_NE(small.find("Each core reads 1437 samples per epoch, so batch_size 128 fits"),
            std::string::npos)
      << small;

  // 64x128 fills half of the 128x128 tiles; 128x10 uses 10 of 128 columns.
  const std::string& mxu = find(advice, "MXU_PADDING").message;
  EXPECT_NE(mxu.find("layers[0] linear 64->128 runs at 50.0%; layers[2] linear 128->10 runs at "
                     "7.8%"),
            std::string::npos)
      << mxu;
  // (64*128 + 128*10) / (2 * 128*128) = 9472 / 32768.
  EXPECT_NE(mxu.find("the linears use 28.9% of the MXU work"), std::string::npos) << mxu;
  EXPECT_NE(mxu.find("which the data fixes"), std::string::npos) << mxu;

  // 1437 = 22 x 64 + 29.
  const std::string& recompile = find(advice, "RECOMPILES").message;
  EXPECT_NE(recompile.find("each core reads 1437 samples, that is 22 batches of 64 and one of 29"),
            std::string::npos)
      << recompile;
  EXPECT_NE(recompile.find("drop_last: true"), std::string::npos) << recompile;
}

TEST(AdvisorTest, WellShapedGemmJobGetsNoAdvice) {
  const Job job(gemm_spec(), 1024, 8192);
  EXPECT_EQ(codes(job.advice()), std::vector<std::string>{});
}

TEST(AdvisorTest, CpuJobsGetNoTpuAdvice) {
  TrainingSpec spec = digits_spec();
  spec.on_tpu = false;
  spec.log_every_n_steps = 1;
  const Job job(spec, 64, 1437);
  EXPECT_TRUE(job.advice().empty());
}

TEST(AdvisorTest, RecompilesFollowTheShardNotTheDataset) {
  // 8 replicas: ceil(1437 / 8) = 180 samples each; 180 = 2 x 64 + 52.
  const Job eight(digits_spec(8), 64, 1437);
  const std::vector<Advice> advice = eight.advice();
  const std::string& message = find(advice, "RECOMPILES").message;
  EXPECT_NE(message.find("each core reads 180 samples, that is 2 batches of 64 and one of 52"),
            std::string::npos)
      << message;
  // batch 60 divides the shard of 180: one shape.
  TrainingSpec divides = digits_spec(8);
  divides.data.batch_size = 60;
  EXPECT_EQ(codes(Job(divides, 64, 1437).advice()),
            (std::vector<std::string>{"SMALL_BATCH", "BATCH_PADDING", "MXU_PADDING"}));
  // drop_last keeps one shape too.
  TrainingSpec dropped = digits_spec();
  dropped.data.drop_last = true;
  EXPECT_EQ(codes(Job(dropped, 64, 1437).advice()),
            (std::vector<std::string>{"SMALL_BATCH", "MXU_PADDING"}));
}

TEST(AdvisorTest, RecompilesSuggestsANearbyBatchThatDividesTheShard) {
  TrainingSpec spec = gemm_spec();
  spec.data.drop_last = false;
  spec.data.batch_size = 200;
  // 1440 = 7 x 200 + 40; 160 and 240 divide 1440, 240 is the first at or above 200.
  const std::vector<Advice> advice = Job(spec, 1024, 1440).advice();
  const std::string& message = find(advice, "RECOMPILES").message;
  EXPECT_NE(message.find("one of 40."), std::string::npos) << message;
  EXPECT_NE(message.find("or batch_size 240, which divides the 1440 samples of each core."),
            std::string::npos)
      << message;
  // 1437 has no divisor that is a multiple of 8: no such suggestion.
  const std::vector<Advice> digits = Job(digits_spec(), 64, 1437).advice();
  EXPECT_EQ(find(digits, "RECOMPILES").message.find("divides"), std::string::npos);
}

TEST(AdvisorTest, SmallBatchOnlyWhenALargerBatchExists) {
  // Iris: 120 training samples cannot fill a batch of 128 on any core.
  TrainingSpec iris = digits_spec();
  iris.data.batch_size = 16;
  iris.data.drop_last = true;
  const Job job(iris, 4, 120);
  EXPECT_EQ(codes(job.advice()), (std::vector<std::string>{"MXU_PADDING"}));
}

TEST(AdvisorTest, BatchNotAMultipleOfEightIsPadded) {
  TrainingSpec spec = gemm_spec();
  spec.data.batch_size = 250;
  const Job job(spec, 1024, 8000);
  // 8000 = 32 x 250: no partial batch; 250 pads to 256.
  const std::vector<Advice> advice = job.advice();
  ASSERT_EQ(codes(advice), std::vector<std::string>{"BATCH_PADDING"});
  EXPECT_EQ(advice[0].message,
            "batch_size 250 is not a multiple of 8: XLA pads it to 256 rows in every matmul, so "
            "2.3% of that work is padding. Use 248 or 256.");
}

TEST(AdvisorTest, HiddenWidthsNotMultiplesOf128AreNamed) {
  TrainingSpec spec = gemm_spec();
  spec.model.layers = {linear(200), relu(), linear(200), relu(), linear(10)};
  const Job job(spec, 1024, 8192);
  const std::vector<Advice> advice = job.advice();
  const std::string& message = find(advice, "MXU_PADDING").message;
  // 200 pads to 256: 1024x200 runs at 78.1%, 200x200 at 61.0%, 200x10 at 6.1%.
  EXPECT_NE(message.find("layers[0] linear 1024->200 runs at 78.1%; layers[2] linear "
                         "200->200 runs at 61.0%; layers[4] linear 200->10 runs at 6.1%"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Round the hidden widths up to multiples of 128"), std::string::npos)
      << message;
}

TEST(AdvisorTest, FrequentHostSyncsOnlyWhenTheyAddUp) {
  TrainingSpec spec = digits_spec();  // 23 steps x 20 epochs = 460 steps
  spec.log_every_n_steps = 1;
  const std::vector<Advice> advice = Job(spec, 64, 1437).advice();
  const std::string& message = find(advice, "FREQUENT_HOST_SYNC").message;
  EXPECT_NE(message.find("log_every_n_steps 1 reads the logged values back to the host on every "
                         "step (.item(), counted as aten::_local_scalar_dense): at least 460 host "
                         "syncs in 460 steps"),
            std::string::npos)
      << message;
  // Every 10 steps is fine.
  spec.log_every_n_steps = 10;
  EXPECT_EQ(codes(Job(spec, 64, 1437).advice()).size(), 3u);
  // A 5-step job logging every step makes only 5 syncs.
  spec.log_every_n_steps = 1;
  spec.max_steps = 5;
  for (const Advice& advice : Job(spec, 64, 1437).advice()) {
    EXPECT_NE(advice.code, "FREQUENT_HOST_SYNC");
  }
}

TEST(AdvisorTest, PlannedStepsHonoursEpochsAndMaxSteps) {
  TrainingSpec spec;
  spec.max_epochs = 20;
  spec.max_steps = -1;
  EXPECT_EQ(planned_steps(spec, 23), 460);
  spec.max_steps = 100;
  EXPECT_EQ(planned_steps(spec, 23), 100);
  spec.max_steps = 1000;
  EXPECT_EQ(planned_steps(spec, 23), 460);
  spec.max_epochs = -1;
  EXPECT_EQ(planned_steps(spec, 23), 1000);
  spec.max_steps = -1;
  EXPECT_EQ(planned_steps(spec, 23), -1);
}

TEST(AdvisorTest, StepTimeIsAnEstimateFromFlopsAndUtilization) {
  const Job job(gemm_spec(), 1024, 8192);
  const StepTimeEstimate estimate = job.step_time();
  // 6 x (1024*4096 + 4096*4096 + 4096*10) MACs x 256 samples.
  EXPECT_DOUBLE_EQ(estimate.flops_per_step, 6.0 * 21'012'480 * 256);
  // 10 outputs pad to 128: 21,012,480 / 21,495,808 useful.
  EXPECT_NEAR(estimate.mxu_utilization, 21'012'480.0 / 21'495'808.0, 1e-12);
  EXPECT_NEAR(estimate.compute_seconds, 6.0 * 21'495'808 * 256 / 61.5e12, 1e-12);
  // Plus the published fixed cost of a step (pytorch/xla#3808).
  EXPECT_NEAR(estimate.seconds, estimate.compute_seconds + 1.397965e-3, 1e-12);
  EXPECT_NE(estimate.summary.find("Estimated step time on TPU v3: 1.93 ms (an estimate, not a "
                                  "measurement: 537 us of MXU work"),
            std::string::npos)
      << estimate.summary;
  EXPECT_NE(estimate.summary.find("plus 1.4 ms fixed per step"), std::string::npos)
      << estimate.summary;
  EXPECT_NE(estimate.summary.find("97.8% MXU utilisation"), std::string::npos) << estimate.summary;
}

TEST(AdvisorTest, StepTimeSplitsTheGlobalBatchOverReplicas) {
  TrainingSpec one = gemm_spec();
  TrainingSpec eight = gemm_spec();
  eight.world_size = 8;
  const StepTimeEstimate single = Job(one, 1024, 8192).step_time();
  const StepTimeEstimate replicated = Job(eight, 1024, 8192).step_time();
  // Same per-core batch: eight times the work per step, the same time.
  EXPECT_DOUBLE_EQ(replicated.flops_per_step, 8 * single.flops_per_step);
  EXPECT_DOUBLE_EQ(replicated.seconds, single.seconds);
  // Four times the per-core batch: four times the MXU work, the same fixed cost.
  TrainingSpec larger = gemm_spec();
  larger.data.batch_size = 1024;
  const StepTimeEstimate four = Job(larger, 1024, 8192).step_time();
  EXPECT_NEAR(four.compute_seconds, 4 * single.compute_seconds, 1e-12);
  EXPECT_NE(
      four.summary.find("TPU v3: 3.55 ms (an estimate, not a measurement: 2.15 ms of MXU work"),
      std::string::npos)
      << four.summary;
}

// A tiny model's step is the fixed cost, not nanoseconds of FLOPs.
TEST(AdvisorTest, TinyModelsStepTimeIsTheFixedCost) {
  TrainingSpec tiny = gemm_spec();
  tiny.model.layers = {linear(10)};
  tiny.data.batch_size = 8;
  const StepTimeEstimate estimate = Job(tiny, 64, 1797).step_time();
  EXPECT_LT(estimate.compute_seconds, 1e-6);
  EXPECT_GE(estimate.seconds, 1.397965e-3);
  EXPECT_NE(estimate.summary.find("Estimated step time on TPU v3: 1.4 ms"), std::string::npos)
      << estimate.summary;
}

}  // namespace
}  // namespace tpujobs::executor
