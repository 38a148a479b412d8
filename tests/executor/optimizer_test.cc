#include "executor/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

using Floats = std::vector<float>;

OptimizerSpec sgd(double lr, double momentum = 0, bool nesterov = false, double decay = 0) {
  OptimizerSpec spec;
  spec.type = OptimizerType::kSgd;
  spec.lr = lr;
  spec.momentum = momentum;
  spec.nesterov = nesterov;
  spec.weight_decay = decay;
  return spec;
}

TEST(Sgd, PlainStep) {
  Optimizer optimizer(sgd(0.1), 2);
  std::vector<float> p = {1.0f, -2.0f};
  optimizer.step(p, Floats{0.5f, -1.0f}, nullptr);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -1.9f);
}

TEST(Sgd, MomentumStartsWithTheFirstGradient) {
  Optimizer optimizer(sgd(0.1, 0.9), 1);
  std::vector<float> p = {1.0f};
  optimizer.step(p, Floats{1.0f}, nullptr);  // buf = 1, p = 1 - 0.1
  EXPECT_FLOAT_EQ(p[0], 0.9f);
  optimizer.step(p, Floats{1.0f}, nullptr);  // buf = 0.9 + 1 = 1.9, p = 0.9 - 0.19
  EXPECT_FLOAT_EQ(p[0], 0.71f);
  EXPECT_FLOAT_EQ(optimizer.first_moment()[0], 1.9f);
}

TEST(Sgd, Nesterov) {
  Optimizer optimizer(sgd(0.1, 0.9, true), 1);
  std::vector<float> p = {1.0f};
  optimizer.step(p, Floats{1.0f}, nullptr);  // buf = 1, d = 1 + 0.9 * 1 = 1.9
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.19f);
  optimizer.step(p, Floats{1.0f}, nullptr);  // buf = 1.9, d = 1 + 0.9 * 1.9 = 2.71
  EXPECT_FLOAT_EQ(p[0], 0.81f - 0.271f);
}

TEST(Sgd, WeightDecayAddsToTheGradient) {
  Optimizer optimizer(sgd(0.1, 0, false, 0.5), 1);
  std::vector<float> p = {2.0f};
  optimizer.step(p, Floats{1.0f}, nullptr);  // d = 1 + 0.5 * 2 = 2
  EXPECT_FLOAT_EQ(p[0], 1.8f);
}

TEST(Adam, FirstTwoStepsByHand) {
  OptimizerSpec spec;
  spec.type = OptimizerType::kAdam;
  spec.lr = 0.01;
  Optimizer optimizer(spec, 1);
  std::vector<float> p = {1.0f};
  // Step 1: m = 0.1 g, v = 0.001 g^2; m_hat = g, v_hat = g^2 -> p -= lr * g / (|g| + eps).
  optimizer.step(p, Floats{0.5f}, nullptr);
  EXPECT_NEAR(p[0], 1.0 - 0.01 * 0.5 / (0.5 + 1e-8), 1e-7);
  // Step 2 with g = -1: m = 0.9*0.05 + 0.1*(-1) = -0.055; v = 0.999*0.00025 + 0.001*1 = 0.00124975.
  const double m = -0.055, v = 0.00124975;
  const double m_hat = m / (1 - 0.81), v_hat = v / (1 - 0.998001);
  const double expected = p[0] - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
  optimizer.step(p, Floats{-1.0f}, nullptr);
  EXPECT_NEAR(p[0], expected, 1e-6);
  EXPECT_EQ(optimizer.steps(), 2);
}

TEST(Adam, L2WeightDecayVersusDecoupledAdamW) {
  OptimizerSpec spec;
  spec.lr = 0.1;
  spec.weight_decay = 0.5;
  spec.type = OptimizerType::kAdam;
  Optimizer adam(spec, 1);
  spec.type = OptimizerType::kAdamW;
  Optimizer adamw(spec, 1);
  std::vector<float> p_adam = {2.0f}, p_adamw = {2.0f};
  // Adam: g' = 0 + 0.5 * 2 = 1 -> p = 2 - 0.1 * 1/1 = 1.9.
  adam.step(p_adam, Floats{0.0f}, nullptr);
  EXPECT_NEAR(p_adam[0], 1.9, 1e-6);
  // AdamW: p = 2 * (1 - 0.1 * 0.5) = 1.9, then the Adam step on g = 0 moves nothing.
  adamw.step(p_adamw, Floats{0.0f}, nullptr);
  EXPECT_NEAR(p_adamw[0], 1.9, 1e-6);
  // With a gradient they differ: AdamW's decay does not enter the moments.
  adam.step(p_adam, Floats{1.0f}, nullptr);
  adamw.step(p_adamw, Floats{1.0f}, nullptr);
  EXPECT_GT(std::abs(p_adam[0] - p_adamw[0]), 1e-3);
}

// torch.optim.Adam's update of one element, each operation rounded to float
// on its own (volatile: no multiply and add fused into one).
void adam_by_hand(const OptimizerSpec& spec, std::int64_t t, float& p, float g, float& m,
                  float& v) {
  const float lr = static_cast<float>(spec.lr), decay = static_cast<float>(spec.weight_decay);
  const float b1 = static_cast<float>(spec.beta1), b2 = static_cast<float>(spec.beta2);
  const float size = static_cast<float>(spec.lr / (1.0 - std::pow(spec.beta1, double(t))));
  const float root = static_cast<float>(std::sqrt(1.0 - std::pow(spec.beta2, double(t))));
  volatile float param = p, d = g, x;
  if (spec.type == OptimizerType::kAdamW) {
    param = param * (1.0f - lr * decay);
  } else {
    x = decay * param;
    d = d + x;
  }
  volatile float first = b1 * m;
  x = (1.0f - b1) * d;
  first = first + x;
  volatile float second = b2 * v;
  x = d * d;
  x = (1.0f - b2) * x;
  second = second + x;
  m = first;
  v = second;
  volatile float denominator = std::sqrt(second);
  denominator = denominator / root;
  denominator = denominator + static_cast<float>(spec.eps);
  volatile float change = size * first;
  change = change / denominator;
  p = param - change;
}

// Adam's update runs in the matrix kernel's instruction set: SSE2 4 floats
// at a time, AVX-512 16. Each gives the bits of torch's update computed one
// element at a time, for Adam, Adam with an L2 penalty and AdamW, over
// values from 1e-30 to 1e3 and a length that no vector width divides.
TEST(Adam, EveryInstructionSetGivesTheBitsOfTheElementwiseUpdate) {
  const std::size_t n = 100'003;
  for (OptimizerType type : {OptimizerType::kAdam, OptimizerType::kAdamW}) {
    for (double decay : {0.0, 0.01}) {
      OptimizerSpec spec;
      spec.type = type;
      spec.lr = 3e-3;
      spec.weight_decay = decay;
      Floats start(n), expected_p(n), m(n, 0.0f), v(n, 0.0f);
      for (std::size_t i = 0; i < n; ++i) {
        start[i] = std::sin(static_cast<float>(i)) * std::pow(10.0f, float(int(i % 34) - 30));
      }
      expected_p = start;
      std::vector<Floats> gradients;
      for (int t = 1; t <= 3; ++t) {
        Floats g(n);
        for (std::size_t i = 0; i < n; ++i) {
          g[i] = std::cos(static_cast<float>(i * t)) * std::pow(10.0f, float(int(i % 29) - 26));
          adam_by_hand(spec, t, expected_p[i], g[i], m[i], v[i]);
        }
        gradients.push_back(std::move(g));
      }
      for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2Fma, GemmKernel::kAvx512}) {
        if (!gemm_kernel_available(kernel)) continue;
        Optimizer optimizer(spec, n, kernel);
        Floats p = start;
        for (const Floats& g : gradients) optimizer.step(p, g, nullptr);
        std::size_t differing = 0;
        for (std::size_t i = 0; i < n; ++i) {
          differing += std::memcmp(&p[i], &expected_p[i], sizeof(float)) != 0;
        }
        EXPECT_EQ(0u, differing) << gemm_kernel_name(kernel) << ", weight decay " << decay
                                 << (type == OptimizerType::kAdamW ? ", AdamW" : ", Adam");
        EXPECT_EQ(0, std::memcmp(optimizer.second_moment().data(), v.data(), n * sizeof(float)))
            << gemm_kernel_name(kernel) << ": the second moment differs";
      }
    }
  }
}

TEST(Optimizer, PoolSplitGivesIdenticalBits) {
  WorkerPool pool(3);
  OptimizerSpec spec;
  const std::size_t n = 300'000;
  Optimizer serial(spec, n), parallel(spec, n);
  std::vector<float> a(n), b(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = b[i] = std::sin(static_cast<float>(i));
    g[i] = std::cos(static_cast<float>(i) * 0.5f);
  }
  serial.step(a, g, nullptr);
  parallel.step(b, g, &pool);
  EXPECT_EQ(a, b);
}

TEST(ClipByGlobalNorm, ScalesOnlyAboveTheBound) {
  std::vector<float> g = {3.0f, 4.0f};  // norm 5
  EXPECT_DOUBLE_EQ(clip_by_global_norm(g, 10.0, nullptr), 5.0);
  EXPECT_EQ(g, (Floats{3.0f, 4.0f}));
  EXPECT_DOUBLE_EQ(clip_by_global_norm(g, 1.0, nullptr), 5.0);
  EXPECT_NEAR(g[0], 0.6, 1e-6);
  EXPECT_NEAR(g[1], 0.8, 1e-6);
  EXPECT_NEAR(std::hypot(g[0], g[1]), 1.0, 1e-6);
}

}  // namespace
}  // namespace tpujobs::executor
