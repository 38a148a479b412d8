// The per-instruction-set kernels behind gemm() (executor/gemm.h); only
// gemm.cc calls them. gemm_kernel.cc is compiled once per instruction set.
//
// This header is compiled with different target flags in different objects:
// it must not define any function (an inline function compiled for AVX2 could
// be the copy the linker keeps, and then run on a CPU without AVX2).
#pragma once

#include <cstdint>

namespace tpujobs::executor {

// c[m x n] = or += op(a)[m x k] * op(b)[k x n]; row-major storage, strides in
// floats; op transposes when the flag says so. m, n and k are positive.
struct GemmTask {
  std::int64_t m, n, k;
  const float* a;
  std::int64_t a_stride;
  bool a_transposed;
  const float* b;
  std::int64_t b_stride;
  bool b_transposed;
  float* c;
  std::int64_t c_stride;
};

// Adds op(a) * op(b) to c (the caller zeroes c for an assignment).
namespace gemm_generic {
void multiply_add(const GemmTask& task);
}
namespace gemm_avx2_fma {
void multiply_add(const GemmTask& task);  // only in builds with TPUJOBS_HAVE_GEMM_AVX2_FMA
}
namespace gemm_avx512 {
void multiply_add(const GemmTask& task);  // only in builds with TPUJOBS_HAVE_GEMM_AVX512
}

}  // namespace tpujobs::executor
