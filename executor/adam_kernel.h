// Adam's and AdamW's elementwise update, compiled once per instruction set
// (executor/CMakeLists.txt), as the matrix kernels are: with x86-64's
// baseline SSE2 it updates 4 floats an instruction, with AVX-512 16. Every
// copy computes each element with the same IEEE operations in the same order
// and none contracted into a fused multiply-add (-ffp-contract=off), so all
// give the same bits (tests/executor/optimizer_test.cc).
//
// Like gemm_kernel.h, this header is compiled with different target flags
// in different objects: it must not define any function.
#pragma once

#include <cstddef>

namespace tpujobs::executor {

// One step's constants (bias corrections folded in, as torch.optim.Adam's
// single-tensor path does) and the n elements it updates in place.
struct AdamStep {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float step_size;         // lr / (1 - beta1^t)
  float root_correction2;  // sqrt(1 - beta2^t)
  float eps;
  float decay;   // L2 penalty added to the gradient (adam), or 0
  float shrink;  // 1 - lr * weight_decay (adamw), or 1
  float* parameters;
  const float* gradients;
  float* first_moment;
  float* second_moment;
  std::size_t count;
};

namespace adam_generic {
void update(const AdamStep& step);
}
// Only in builds with TPUJOBS_HAVE_GEMM_AVX2_FMA / TPUJOBS_HAVE_GEMM_AVX512,
// and only called on CPUs that gemm_kernel_available() says can run them.
namespace adam_avx2_fma {
void update(const AdamStep& step);
}
namespace adam_avx512 {
void update(const AdamStep& step);
}

}  // namespace tpujobs::executor
