// The copies of adam_kernel.h's update: compiled with the build's flags as
// adam_generic, with -mavx2 -mfma as adam_avx2_fma and with AVX-512 flags as
// adam_avx512 (executor/CMakeLists.txt). No header with inline functions is
// included: the linker could keep an AVX-512 copy of one for every caller.
#include "executor/adam_kernel.h"

#if defined(TPUJOBS_ADAM_AVX2_FMA)
#define TPUJOBS_ADAM_NAMESPACE adam_avx2_fma
#elif defined(TPUJOBS_ADAM_AVX512)
#define TPUJOBS_ADAM_NAMESPACE adam_avx512
#else
#define TPUJOBS_ADAM_NAMESPACE adam_generic
#endif

namespace tpujobs::executor::TPUJOBS_ADAM_NAMESPACE {

// One pass: each element's parameter, gradient and moments are read once
// and written once. The operations are those of torch.optim.Adam, in its
// order: m = b1 m + (1 - b1) d; v = b2 v + (1 - b2) d^2;
// p -= (step_size m) / (sqrt(v) / root_correction2 + eps). The three loops
// (AdamW's shrink, Adam's L2 penalty, neither) differ only in d and in p
// before the update, so that each vectorises without a branch inside. __builtin_sqrtf is the
// correctly rounded square root (the object is compiled with -fno-math-errno: v is never negative).
void update(const AdamStep& step) {
  float* __restrict p = step.parameters;
  const float* __restrict g = step.gradients;
  float* __restrict m = step.first_moment;
  float* __restrict v = step.second_moment;
  const float b1 = step.beta1, c1 = step.one_minus_beta1;
  const float b2 = step.beta2, c2 = step.one_minus_beta2;
  const float size = step.step_size, root = step.root_correction2, eps = step.eps;
  const std::size_t n = step.count;
  auto apply = [&](std::size_t i, float param, float d) {
    const float first = b1 * m[i] + c1 * d;
    const float second = b2 * v[i] + c2 * (d * d);
    m[i] = first;
    v[i] = second;
    p[i] = param - (size * first) / (__builtin_sqrtf(second) / root + eps);
  };
  if (step.shrink != 1.0f) {
    const float shrink = step.shrink;
    for (std::size_t i = 0; i < n; ++i) apply(i, p[i] * shrink, g[i]);
  } else if (step.decay != 0.0f) {
    const float decay = step.decay;
    for (std::size_t i = 0; i < n; ++i) apply(i, p[i], g[i] + decay * p[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) apply(i, p[i], g[i]);
  }
}

}  // namespace tpujobs::executor::TPUJOBS_ADAM_NAMESPACE
