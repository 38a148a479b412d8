#include "executor/hbm.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpujobs::executor {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

LayerSpec linear(int out) { return LayerSpec{LayerType::kLinear, out, true, 0.5, std::nullopt}; }
LayerSpec relu() { return LayerSpec{LayerType::kRelu, 0, true, 0.5, std::nullopt}; }

// A classifier: linear(width) + relu for each hidden width, then linear(classes).
TrainingSpec classifier(std::vector<int> hidden, int classes, int batch_size) {
  TrainingSpec spec;
  for (int width : hidden) {
    spec.model.layers.push_back(linear(width));
    spec.model.layers.push_back(relu());
  }
  spec.model.layers.push_back(linear(classes));
  spec.data.batch_size = batch_size;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.precision = Precision::kFp32;
  return spec;
}

ModelShape shape_of(const TrainingSpec& spec, int input_features) {
  base::Result<ModelShape> shape = infer_shape(spec.model, input_features);
  EXPECT_TRUE(shape.ok()) << shape.error().message;
  return shape.ok() ? *shape : ModelShape{};
}

DeviceFacts v3() { return DeviceFacts{"v3", 16 * kGiB, 123e12, 128}; }

TEST(HbmTest, UsableCapacityIsWhatRealTpusReport) {
  EXPECT_EQ(format_gib(16 * kGiB - kHbmRuntimeReservedBytes), "15.48G");  // v3
  EXPECT_EQ(format_gib(8 * kGiB - kHbmRuntimeReservedBytes), "7.48G");    // v2
  const TrainingSpec spec = classifier({128}, 10, 64);
  EXPECT_EQ(estimate_hbm(spec, shape_of(spec, 64), v3()).capacity,
            16 * kGiB - kHbmRuntimeReservedBytes);
}

TEST(HbmTest, DigitsMlpBreakdownWithTilePadding) {
  // 64 -> 128 -> 10, batch 64, fp32, adam.
  const TrainingSpec spec = classifier({128}, 10, 64);
  const HbmUsage usage = estimate_hbm(spec, shape_of(spec, 64), v3());
  // Weights are [out, in] with `in` minor: [128, 64] pads to 128 x 128 and
  // [10, 128] to 16 x 128; biases pad to 128 each: 16384 + 128 + 2048 + 128.
  EXPECT_EQ(usage.parameters, 18'688 * 4);
  EXPECT_EQ(usage.gradients, usage.parameters);
  EXPECT_EQ(usage.optimizer_state, 2 * usage.parameters);  // adam: two slots
  // The input [64, 64] and the outputs of linear, relu, linear, each padded
  // to 128 columns: 64 rows x 4 x 128.
  EXPECT_EQ(usage.activations, 64 * 4 * 128 * 4);
  EXPECT_EQ(usage.total, 18'688 * 4 * 4 + 131'072);
  // Without padding: 9610 parameters, 64 x (64 + 128 + 128 + 10) activations.
  EXPECT_EQ(usage.lower_bound, 9'610 * 4 * 4 + 64 * 330 * 4);
  EXPECT_TRUE(usage.fits);
  EXPECT_FALSE(usage.certain);
  EXPECT_EQ(usage.message(), "");
  EXPECT_EQ(usage.hint(), "");
}

TEST(HbmTest, OptimizerSlotsAndPrecisionWidths) {
  TrainingSpec spec = classifier({256}, 128, 32);
  const ModelShape shape = shape_of(spec, 128);
  spec.optimizer.type = OptimizerType::kSgd;
  spec.optimizer.momentum = 0.0;
  const HbmUsage plain_sgd = estimate_hbm(spec, shape, v3());
  EXPECT_EQ(plain_sgd.optimizer_state, 0);
  spec.optimizer.momentum = 0.9;
  const HbmUsage momentum = estimate_hbm(spec, shape, v3());
  EXPECT_EQ(momentum.optimizer_state, momentum.parameters);
  spec.optimizer.type = OptimizerType::kAdamW;
  EXPECT_EQ(estimate_hbm(spec, shape, v3()).optimizer_state, 2 * momentum.parameters);

  spec.precision = Precision::kBf16;
  const HbmUsage bf16 = estimate_hbm(spec, shape, v3());
  spec.precision = Precision::kFp16;
  const HbmUsage fp16 = estimate_hbm(spec, shape, v3());
  EXPECT_EQ(2 * bf16.parameters, momentum.parameters);
  EXPECT_EQ(2 * bf16.activations, momentum.activations);
  EXPECT_EQ(fp16.total, bf16.total);
}

TEST(HbmTest, TiedWeightIsCountedOnce) {
  TrainingSpec spec;
  spec.model.layers = {linear(256), relu(), linear(0)};
  spec.model.layers[2].tie = 0;  // reuses [256, 128] transposed: 256 -> 128
  spec.data.batch_size = 8;
  const ModelShape shape = shape_of(spec, 128);
  const HbmUsage usage = estimate_hbm(spec, shape, v3());
  // One [256, 128] weight, biases of 256 and 128.
  EXPECT_EQ(usage.parameters, (256 * 128 + 256 + 128) * 4);
}

TEST(HbmTest, CertainOutOfMemoryHasExactMessageAndConcreteHint) {
  // 1024 -> 16384 -> 16384 -> 1000, fp32, adam, per-core batch 65536.
  const TrainingSpec spec = classifier({16384, 16384}, 1000, 65536);
  const HbmUsage usage = estimate_hbm(spec, shape_of(spec, 1024), v3());
  // Parameters (padded): 16384x1024 + 16384 + 16384x16384 + 16384 + 1000x16384
  // + 1024 = 301,630,464 elements, 4 bytes, x4 for gradients and adam's slots.
  EXPECT_EQ(usage.parameters, 1'206'521'856);
  EXPECT_EQ(usage.parameters + usage.gradients + usage.optimizer_state, 4'826'087'424);
  // Activations per row: 1024 + 4 x 16384 + 1024 (1000 padded) = 67,584 elements.
  EXPECT_EQ(usage.activations, std::int64_t{65536} * 67'584 * 4);
  EXPECT_EQ(usage.total, 22'542'827'520);
  EXPECT_FALSE(usage.fits);
  EXPECT_TRUE(usage.certain);  // the unpadded 20.99G is already too much
  // XLA's text, then its breakdown: parameters and adam's slots are the
  // arguments (1.12G + 2.25G), gradients and activations the program.
  EXPECT_EQ(usage.message(),
            "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
            "space hbm. Used 20.99G of 15.48G hbm. Exceeded hbm capacity by 5.51G.\n"
            "\n"
            "Total hbm usage >= 21.51G:\n"
            "    reserved        530.00M\n"
            "    program          17.62G\n"
            "    arguments         3.37G\n"
            "\n"
            "Output size 3.37G; shares 3.37G with arguments.\n"
            "\n"
            "Program hbm requirement 17.62G:\n"
            "    global               0B\n"
            "    scoped               0B\n"
            "    HLO temp         17.62G (100.0% utilization: Unpadded (17.62G) Padded (17.62G), "
            "0.0% fragmentation (0B))");
  // (15.48G - 4.49G of model state) / 270,336 bytes per row, in rows of 8.
  EXPECT_EQ(usage.max_fitting_batch, 43'640);
  const std::string hint = usage.hint();
  EXPECT_NE(hint.find("The largest per-core batch that fits is 43640: set data.batch_size to "
                      "43640 or less"),
            std::string::npos)
      << hint;
  EXPECT_NE(hint.find("or keep the global batch of 65536 on 8 cores (a v3-8 host) with "
                      "batch_size 8192"),
            std::string::npos)
      << hint;
  EXPECT_NE(hint.find("or precision \"bf16-true\", which needs 10.50G and fits"), std::string::npos)
      << hint;
}

TEST(HbmTest, PaddingCanTipAJobOverWithoutCertainty) {
  // Width 129 pads to 256: the padded estimate is about twice the lower bound.
  // Activations: 5,000,000 rows x 4 arrays x 256 columns x 4 bytes = 19.07G
  // (the lower bound: 4 x 129 columns, 9.61G); the parameters add about 1M.
  const TrainingSpec spec = classifier({129}, 129, 5'000'000);
  const HbmUsage usage = estimate_hbm(spec, shape_of(spec, 129), v3());
  EXPECT_FALSE(usage.fits);
  EXPECT_FALSE(usage.certain);
  EXPECT_LE(usage.lower_bound, usage.capacity);
  EXPECT_TRUE(usage.message().starts_with(
      "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
      "hbm. Used 19.07G of 15.48G hbm. Exceeded hbm capacity by 3.59G.\n"));
  // Tile padding doubles the temporaries: half of them are used.
  EXPECT_NE(usage.message().find("    HLO temp         19.07G (50.4% utilization: Unpadded (9.61G) "
                                 "Padded (19.07G), 0.0% fragmentation (0B))"),
            std::string::npos)
      << usage.message();
}

// The hint names only slices that exist: there is no v2-64, and 8 v4 chips
// are a v4-16 of two hosts.
TEST(HbmTest, HintNamesOnlySlicesThatExist) {
  // 32 v2 cores of 20,000 rows each do not fit; 64 would, but a v2-64 does not exist.
  TrainingSpec spec = classifier({16384, 16384}, 1000, 20'000);
  spec.world_size = 32;
  DeviceFacts v2{"v2", std::int64_t{8} << 30, 22.5e12, 128};
  HbmUsage usage = estimate_hbm(spec, shape_of(spec, 1024), v2);
  ASSERT_FALSE(usage.fits);
  EXPECT_EQ(usage.hint().find("v2-64"), std::string::npos) << usage.hint();
  EXPECT_NE(usage.hint().find("keep the global batch of 640000 on 128 cores (a v2-128 slice of 16 "
                              "hosts) with batch_size 5000"),
            std::string::npos)
      << usage.hint();
  spec.world_size = 4;
  spec.data.batch_size = 120'000;
  DeviceFacts v4{"v4", std::int64_t{32} << 30, 275e12, 128};
  usage = estimate_hbm(spec, shape_of(spec, 1024), v4);
  ASSERT_FALSE(usage.fits);
  EXPECT_NE(usage.message().find(" of 30.75G hbm."), std::string::npos) << usage.message();
  EXPECT_NE(usage.message().find("    reserved          1.25G\n"), std::string::npos);
  EXPECT_NE(usage.hint().find("on 8 chips (a v4-16 slice of 2 hosts) with batch_size 60000"),
            std::string::npos)
      << usage.hint();
}

TEST(HbmTest, ModelThatCannotFitAtAnyBatchSaysSo) {
  // 32768 x 32768 fp32 weights: 4 GiB each, x4 with gradients and adam.
  const TrainingSpec spec = classifier({32768}, 32768, 8);
  const HbmUsage usage = estimate_hbm(spec, shape_of(spec, 32768), v3());
  EXPECT_FALSE(usage.fits);
  EXPECT_TRUE(usage.certain);
  EXPECT_EQ(usage.max_fitting_batch, 0);
  const std::string hint = usage.hint();
  EXPECT_NE(hint.find("no batch size fits and more cores do not help"), std::string::npos) << hint;
  EXPECT_NE(hint.find("still too much"), std::string::npos) << hint;  // even bf16: 16G
  EXPECT_NE(hint.find("(sgd)"), std::string::npos) << hint;
}

TEST(HbmTest, SummaryNamesEveryPart) {
  const TrainingSpec spec = classifier({128}, 10, 64);
  EXPECT_EQ(estimate_hbm(spec, shape_of(spec, 64), v3()).summary(),
            "HBM per core: 420.00K of 15.48G (parameters 73.00K, gradients 73.00K, optimizer "
            "state 146.00K, activations for batch_size 64 128.00K)");
}

}  // namespace
}  // namespace tpujobs::executor
