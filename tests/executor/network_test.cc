#include "executor/network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "executor/random.h"
#include "executor/worker_pool.h"
#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

using fakes::activation;
using fakes::linear;
using fakes::tied_linear;

constexpr int kFeatures = 4;
constexpr int kRows = 6;

struct Fixture {
  ModelSpec model;
  ModelShape shape;
  std::unique_ptr<Network> network;
  std::unique_ptr<Replica> replica;
};

Fixture build(std::vector<LayerSpec> layers, Loss loss, ComputeSplit split = {},
              Precision precision = Precision::kFp32) {
  Fixture f;
  f.model.layers = std::move(layers);
  f.model.loss = loss;
  base::Result<ModelShape> shape = infer_shape(f.model, kFeatures);
  EXPECT_TRUE(shape.ok()) << shape.error().message;
  if (shape.ok()) f.shape = std::move(*shape);
  f.network = std::make_unique<Network>(f.model, f.shape, precision, 7);
  f.replica = std::make_unique<Replica>(*f.network, kRows, split);
  Rng rng(99);
  for (int i = 0; i < kRows * kFeatures; ++i)
    f.replica->input()[i] = static_cast<float>(rng.normal());
  for (int r = 0; r < kRows; ++r) {
    f.replica->labels()[r] =
        loss == Loss::kMse ? static_cast<float>(rng.normal()) : static_cast<float>(r % 3);
  }
  return f;
}

// Mean training-mode loss (dropout masks from a fixed seed) at the current parameters.
double mean_loss(Fixture& f) {
  std::vector<float> input(f.replica->input(), f.replica->input() + kRows * kFeatures);
  const BatchLoss loss = f.replica->train_batch(kRows, 1.0f, 1234);
  std::copy(input.begin(), input.end(), f.replica->input());
  return loss.loss_sum / kRows;
}

// Compares backward's gradients with central finite differences for every parameter.
void expect_gradients_match_finite_differences(Fixture& f) {
  f.replica->zero_gradients();
  mean_loss(f);
  const FloatBuffer analytic = f.replica->gradients();
  FloatBuffer& parameters = f.network->parameters();
  ASSERT_EQ(parameters.size(), static_cast<std::size_t>(f.shape.parameters));
  const float h = 1e-2f;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const float original = parameters[i];
    parameters[i] = original + h;
    f.network->parameters_changed();
    const double up = mean_loss(f);
    parameters[i] = original - h;
    f.network->parameters_changed();
    const double down = mean_loss(f);
    parameters[i] = original;
    f.network->parameters_changed();
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::abs(numeric)) << "parameter " << i;
  }
}

TEST(NetworkGradients, LinearWithAndWithoutBias) {
  Fixture f = build({linear(5), linear(3, false)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, Relu) {
  Fixture f = build({linear(5), activation(LayerType::kRelu), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, Gelu) {
  Fixture f = build({linear(5), activation(LayerType::kGelu), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, Tanh) {
  Fixture f = build({linear(5), activation(LayerType::kTanh), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, Sigmoid) {
  Fixture f = build({linear(5), activation(LayerType::kSigmoid), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, DropoutWithFixedMask) {
  Fixture f =
      build({linear(8), activation(LayerType::kDropout, 0.3), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, LayerNorm) {
  Fixture f = build({linear(5), activation(LayerType::kLayerNorm), linear(3)}, Loss::kCrossEntropy);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, TiedLinearAccumulatesBothUses) {
  // linear 4->5, tanh, tied 5->4 with the same weight (transposed).
  Fixture f = build({linear(5), activation(LayerType::kTanh), tied_linear(0)}, Loss::kCrossEntropy);
  EXPECT_EQ(f.network->layout()[2].weight, f.network->layout()[0].weight);
  EXPECT_EQ(f.network->parameters().size(), std::size_t{4 * 5 + 5 + 4});
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, MeanSquaredError) {
  Fixture f = build({linear(5), activation(LayerType::kTanh), linear(1)}, Loss::kMse);
  expect_gradients_match_finite_differences(f);
}

TEST(NetworkGradients, PanelsOnThePoolGiveIdenticalBits) {
  // Wide enough that every product except the last layer's is cut into panels.
  const std::vector<LayerSpec> layers = {linear(512),    activation(LayerType::kLayerNorm),
                                         linear(4096),   activation(LayerType::kGelu),
                                         tied_linear(2), linear(3)};
  ASSERT_GT(plan_gemm_panels(kRows, 4096, 512).count, 1);
  Fixture alone = build(layers, Loss::kCrossEntropy);
  alone.replica->zero_gradients();
  const BatchLoss expected = alone.replica->train_batch(kRows, 1.0f, 5);
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    Fixture pooled = build(layers, Loss::kCrossEntropy, ComputeSplit{&pool});
    pooled.replica->zero_gradients();
    const BatchLoss loss = pooled.replica->train_batch(kRows, 1.0f, 5);
    EXPECT_EQ(loss.loss_sum, expected.loss_sum) << threads << " threads";
    EXPECT_EQ(digest(pooled.replica->gradients()), digest(alone.replica->gradients()))
        << threads << " threads";
  }
}

TEST(NetworkBuffers, StartOnCacheLines) {
  // Vectorized reductions round according to where a buffer starts (see
  // float_buffer.h): every buffer must start on a 64-byte boundary.
  Fixture f = build({linear(5), activation(LayerType::kLayerNorm), linear(3)}, Loss::kCrossEntropy);
  auto offset = [](const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 64; };
  EXPECT_EQ(offset(f.network->parameters().data()), 0u);
  EXPECT_EQ(offset(f.replica->gradients().data()), 0u);
  EXPECT_EQ(offset(f.replica->input()), 0u);
  EXPECT_EQ(offset(f.replica->labels()), 0u);
}

TEST(NetworkGradients, OverwritingEqualsZeroingThenAccumulating) {
  Fixture f =
      build({linear(5), activation(LayerType::kLayerNorm), tied_linear(0)}, Loss::kCrossEntropy);
  f.replica->zero_gradients();
  f.replica->train_batch(kRows, 0.5f, 3);
  const FloatBuffer accumulated = f.replica->gradients();
  for (float& g : f.replica->gradients()) g = 123.0f;  // stale values from an earlier step
  f.replica->train_batch(kRows, 0.5f, 3, /*accumulate=*/false);
  // Equal up to rounding: Eigen may order a small product's sums differently for = and +=.
  for (std::size_t i = 0; i < accumulated.size(); ++i) {
    EXPECT_NEAR(f.replica->gradients()[i], accumulated[i], 1e-7 + 1e-5 * std::abs(accumulated[i]))
        << i;
  }
  f.replica->train_batch(kRows, 0.5f, 3, /*accumulate=*/true);
  for (std::size_t i = 0; i < accumulated.size(); ++i) {
    EXPECT_NEAR(f.replica->gradients()[i], 2 * accumulated[i],
                1e-7 + 1e-5 * std::abs(accumulated[i]));
  }
}

TEST(NetworkPrecision, Bf16RoundsMatmulInputsAndAccumulatesInFp32) {
  ModelSpec model;
  model.layers = {linear(1, false)};
  model.loss = Loss::kMse;
  base::Result<ModelShape> inferred = infer_shape(model, 3);
  ASSERT_TRUE(inferred.ok()) << inferred.error().message;
  const ModelShape& shape = *inferred;
  Network bf16(model, shape, Precision::kBf16, 1);
  Network fp32(model, shape, Precision::kFp32, 1);
  const float weights[3] = {1.0f + 0x1.0p-9f, -0.5f, 0.25f + 0x1.0p-12f};
  for (Network* network : {&bf16, &fp32}) {
    std::copy(weights, weights + 3, network->parameters().begin());
    network->parameters_changed();
  }
  const float x[3] = {3.0f + 0x1.0p-8f, 1.0f + 0x1.0p-10f, 2.0f};
  auto output_squared = [&](Network& network) {
    Replica replica(network, 1, {});
    std::copy(x, x + 3, replica.input());
    replica.labels()[0] = 0.0f;
    return replica.evaluate_batch(1).loss_sum;  // (y - 0)^2
  };
  // bf16 keeps 8 significant bits: 1+2^-9 -> 1, 3+2^-8 -> 3, 1+2^-10 -> 1, 0.25+2^-12 -> 0.25.
  const double expected_bf16 = 1.0 * 3.0 + (-0.5) * 1.0 + 0.25 * 2.0;
  const double expected_fp32 =
      double(weights[0]) * x[0] + double(weights[1]) * x[1] + double(weights[2]) * x[2];
  EXPECT_NEAR(std::sqrt(output_squared(bf16)), expected_bf16, 1e-6);
  EXPECT_NEAR(std::sqrt(output_squared(fp32)), expected_fp32, 1e-5);
  EXPECT_GT(std::abs(expected_bf16 - expected_fp32), 1e-3);
}

TEST(NetworkDigest, ChangesWithAnyBit) {
  std::vector<float> values = {1.0f, 2.0f, 3.0f};
  const std::string before = digest(values);
  EXPECT_EQ(before.rfind("hash64:", 0), 0u);
  values[1] = std::nextafter(values[1], 3.0f);
  EXPECT_NE(digest(values), before);
}

}  // namespace
}  // namespace tpujobs::executor
