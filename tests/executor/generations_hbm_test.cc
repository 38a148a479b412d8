// HBM on today's generations: the capacity XLA reports comes in through
// DeviceFacts (the service fills it from scheduler/generation.cc's table,
// which cites it); a model that fits a v6e chip's 31.25G does not fit a v5e
// chip's 15.75G, and the hint names v5e's slices by their own names.
#include <gtest/gtest.h>

#include <string>

#include "executor/hbm.h"
#include "executor/model_shape.h"

namespace tpujobs::executor {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

DeviceFacts device(std::string generation, std::int64_t hbm, std::int64_t capacity) {
  DeviceFacts d;
  d.generation = std::move(generation);
  d.hbm_bytes = hbm;
  d.hbm_capacity_bytes = capacity;
  return d;
}

// About 20 GiB per core in fp32 with Adam: a [16384 -> 81920 -> 10] classifier.
TrainingSpec twenty_gib() {
  TrainingSpec spec;
  spec.model.layers = {LayerSpec{LayerType::kLinear, 81920, true, 0.5, std::nullopt},
                       LayerSpec{LayerType::kRelu, 0, true, 0.5, std::nullopt},
                       LayerSpec{LayerType::kLinear, 10, true, 0.5, std::nullopt}};
  spec.data.batch_size = 8;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.precision = Precision::kFp32;
  spec.world_size = 8;
  return spec;
}

TEST(GenerationsHbm, FitsV6eButNotV5e) {
  const TrainingSpec spec = twenty_gib();
  const ModelShape shape = *infer_shape(spec.model, 16384);
  const HbmUsage v6e = estimate_hbm(spec, shape, device("v6e", 32 * kGiB, 31 * kGiB + 256 * kMiB));
  const HbmUsage v5e = estimate_hbm(spec, shape, device("v5e", 16 * kGiB, 16 * kGiB - 256 * kMiB));
  EXPECT_TRUE(v6e.fits) << v6e.summary();
  EXPECT_FALSE(v5e.fits) << v5e.summary();
  EXPECT_EQ("15.75G", format_gib(v5e.capacity));
  EXPECT_EQ("31.25G", format_gib(v6e.capacity));
  EXPECT_NE(std::string::npos, v5e.message().find("G of 15.75G hbm. Exceeded hbm capacity by"))
      << v5e.message();
  EXPECT_NE(std::string::npos, v5e.message().find("reserved        256.00M")) << v5e.message();
}

TEST(GenerationsHbm, HintNamesSlicesAsCloudTpuDoes) {
  TrainingSpec spec;
  spec.model.layers = {LayerSpec{LayerType::kLinear, 4096, true, 0.5, std::nullopt},
                       LayerSpec{LayerType::kLinear, 10, true, 0.5, std::nullopt}};
  spec.data.batch_size = 524288;  // activations, not the model, overflow
  spec.optimizer.type = OptimizerType::kSgd;
  spec.world_size = 8;
  const ModelShape shape = *infer_shape(spec.model, 4096);
  const HbmUsage v5e = estimate_hbm(spec, shape, device("v5e", 16 * kGiB, 16 * kGiB - 256 * kMiB));
  ASSERT_FALSE(v5e.fits) << v5e.summary();
  EXPECT_NE(std::string::npos, v5e.hint().find("chips (a v5litepod-")) << v5e.hint();
}

TEST(GenerationsHbm, OlderGenerationsKeepTheRuntimeReservation) {
  const TrainingSpec spec = twenty_gib();
  const ModelShape shape = *infer_shape(spec.model, 4096);
  EXPECT_EQ("15.48G", format_gib(estimate_hbm(spec, shape, device("v3", 16 * kGiB, 0)).capacity));
  EXPECT_EQ("30.75G", format_gib(estimate_hbm(spec, shape, device("v4", 32 * kGiB, 0)).capacity));
}

}  // namespace
}  // namespace tpujobs::executor
