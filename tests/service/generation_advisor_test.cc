// The advisor and the step-time estimate on each generation (issue 30): the
// device facts are service::device_facts, from scheduler/generation.cc's
// cited table, as the service gives them at validation and on an agent, so
// a v6e job is advised for its 256x256 MXU (128 on v5e and v4) and its step
// time is estimated at its own peak bf16 FLOP/s.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "executor/advisor.h"
#include "scheduler/generation.h"
#include "service/device_facts.h"

namespace tpujobs::executor {
namespace {

using scheduler::Generation;

DeviceFacts device_of(Generation generation) { return service::device_facts(generation); }

LayerSpec linear(int out) { return LayerSpec{LayerType::kLinear, out, true, 0.5, std::nullopt}; }
LayerSpec relu() { return LayerSpec{LayerType::kRelu, 0, true, 0.5, std::nullopt}; }

// `widths` linears with ReLUs between, 1,024 input features, 8,192 samples
// on one core, drop_last (no recompiles), logging every 50 steps.
TrainingSpec spec_of(const std::vector<int>& widths, int batch) {
  TrainingSpec spec;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) spec.model.layers.push_back(relu());
    spec.model.layers.push_back(linear(widths[i]));
  }
  spec.data.batch_size = batch;
  spec.data.drop_last = true;
  spec.max_epochs = 2;
  spec.log_every_n_steps = 50;
  return spec;
}

struct Job {
  TrainingSpec spec;
  ModelShape shape;
  DeviceFacts device;
  static constexpr std::int64_t kSamples = 8192;

  Job(TrainingSpec training, Generation generation)
      : spec(std::move(training)), device(device_of(generation)) {
    base::Result<ModelShape> inferred = infer_shape(spec.model, 1024);
    EXPECT_TRUE(inferred.ok()) << inferred.error().message;
    if (inferred.ok()) shape = std::move(*inferred);
  }
  AdvisorInput input() const {
    return AdvisorInput{spec, shape, device, kSamples, kSamples / spec.data.batch_size};
  }
  std::vector<Advice> advice() const { return advise(input()); }
  StepTimeEstimate step_time() const { return estimate_step_time(input()); }
};

std::vector<std::string> codes(const std::vector<Advice>& advice) {
  std::vector<std::string> out;
  for (const Advice& item : advice) out.push_back(item.code);
  return out;
}

TEST(GenerationAdvisor, TheFactsTheServiceCopiesAreTheIssues) {
  EXPECT_EQ(device_of(Generation::kV6e).mxu_dim, 256);
  EXPECT_EQ(device_of(Generation::kV5e).mxu_dim, 128);
  EXPECT_EQ(device_of(Generation::kV4).mxu_dim, 128);
  EXPECT_DOUBLE_EQ(device_of(Generation::kV6e).peak_flops, 918e12);
  EXPECT_DOUBLE_EQ(device_of(Generation::kV5e).peak_flops, 197e12);
  EXPECT_DOUBLE_EQ(device_of(Generation::kV4).peak_flops, 275e12);
}

// A per-core batch of 128 fills a 128-wide MXU but half of v6e's.
TEST(GenerationAdvisor, SmallBatchIsMeasuredAgainstV6esMxuOf256) {
  const TrainingSpec spec = spec_of({1024, 1024, 256}, 128);
  const std::vector<Advice> v6e = Job(spec, Generation::kV6e).advice();
  ASSERT_EQ(codes(v6e), std::vector<std::string>{"SMALL_BATCH"});
  EXPECT_NE(v6e[0].message.find("The per-core batch_size 128 is small for a TPU: the MXU is a "
                                "256x256 systolic array and every weight tile it loads is reused "
                                "only by the 128 rows of the batch"),
            std::string::npos)
      << v6e[0].message;
  EXPECT_NE(v6e[0].message.find("ideally 256 or more. Each core reads 8192 samples per epoch, so "
                                "batch_size 256 fits;"),
            std::string::npos)
      << v6e[0].message;
  EXPECT_TRUE(Job(spec, Generation::kV5e).advice().empty());
  EXPECT_TRUE(Job(spec, Generation::kV4).advice().empty());
}

// Widths that are multiples of 128 but not of 256: whole tiles on v5e and
// v4, padded ones on v6e.
TEST(GenerationAdvisor, WidthsOf384PadV6esMxuOnly) {
  const TrainingSpec spec = spec_of({384, 384, 128}, 256);
  const std::vector<Advice> v6e = Job(spec, Generation::kV6e).advice();
  ASSERT_EQ(codes(v6e), std::vector<std::string>{"MXU_PADDING"});
  // 1024x384 pads to 1024x512 (75%), 384x384 to 512x512 (56.25%), 384x128
  // to 512x256 (37.5%); overall 589,824 of 917,504 multiply-adds per row.
  EXPECT_NE(v6e[0].message.find("Matrix dimensions that are not multiples of 256 leave the "
                                "256x256 MXU partly idle (XLA pads them with zeros): layers[0] "
                                "linear 1024->384 runs at 75.0%; layers[2] linear 384->384 runs "
                                "at 56.2%; layers[4] linear 384->128 runs at 37.5%. Overall the "
                                "linears use 64.3% of the MXU work they cost. Round the hidden "
                                "widths up to multiples of 256"),
            std::string::npos)
      << v6e[0].message;
  EXPECT_TRUE(Job(spec, Generation::kV5e).advice().empty());
  EXPECT_TRUE(Job(spec, Generation::kV4).advice().empty());
  EXPECT_DOUBLE_EQ(Job(spec, Generation::kV5e).step_time().mxu_utilization, 1.0);
  EXPECT_NEAR(Job(spec, Generation::kV6e).step_time().mxu_utilization, 589824.0 / 917504.0, 1e-12);
}

// Same shapes, whole tiles everywhere: the MXU work of a step is the padded
// FLOPs over the generation's peak, so the times go as 1/918 : 1/275 : 1/197.
TEST(GenerationAdvisor, StepTimeIsTheGenerationsPeakFlops) {
  const TrainingSpec spec = spec_of({4096, 4096, 256}, 256);
  // 6 x (1024*4096 + 4096*4096 + 4096*256) multiply-adds x 256 rows.
  const double flops = 6.0 * (1024.0 * 4096 + 4096.0 * 4096 + 4096.0 * 256) * 256;
  struct Case {
    Generation generation;
    double peak;
    const char* summary;
  };
  const Case cases[] = {{Generation::kV6e, 918e12, "Estimated step time on TPU v6e: "},
                        {Generation::kV4, 275e12, "Estimated step time on TPU v4: "},
                        {Generation::kV5e, 197e12, "Estimated step time on TPU v5e: "}};
  double previous = 0;
  for (const Case& c : cases) {
    const StepTimeEstimate estimate = Job(spec, c.generation).step_time();
    EXPECT_DOUBLE_EQ(estimate.flops_per_step, flops);
    EXPECT_DOUBLE_EQ(estimate.mxu_utilization, 1.0);
    EXPECT_NEAR(estimate.compute_seconds, flops / c.peak, 1e-15) << c.summary;
    EXPECT_NEAR(estimate.seconds, flops / c.peak + kStepFixedCostSeconds, 1e-15);
    EXPECT_EQ(estimate.summary.rfind(c.summary, 0), 0u) << estimate.summary;
    EXPECT_GT(estimate.compute_seconds, previous) << c.summary;  // slower generation, longer
    previous = estimate.compute_seconds;
  }
  const double v6e = Job(spec, Generation::kV6e).step_time().compute_seconds;
  const double v5e = Job(spec, Generation::kV5e).step_time().compute_seconds;
  EXPECT_NEAR(v5e / v6e, 918.0 / 197.0, 1e-9);
}

}  // namespace
}  // namespace tpujobs::executor
