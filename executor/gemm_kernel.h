// The per-instruction-set kernels behind gemm() (executor/gemm.h); only
// gemm.cc calls them. gemm_kernel.cc is compiled once per instruction set.
//
// This header is compiled with different target flags in different objects:
// it must not define any function (an inline function compiled for AVX2 could
// be the copy the linker keeps, and then run on a CPU without AVX2).
#pragma once

#include <cstddef>
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
  bool assign = false;  // c = the product, else c += it
};

// op(a) of an m x k product packed as the kernel reads it, in blocks that
// can be packed independently (in parallel): a product cut into panels of
// c's columns shares op(a), which is then packed once instead of once per
// panel. The packed form depends on the kernel (its micro-panel widths).
struct PackedOperand {
  const float* data = nullptr;  // packed_floats(m, k) floats; null: not packed
};

namespace gemm_generic {
// Adds op(a) * op(b) to c, or assigns it to c. Reads op(a)
// from `packed_a` when that is not null: packed by pack_a from the same op(a),
// all m rows, and the same k. The bits of c are the same either way.
void multiply_add(const GemmTask& task, PackedOperand packed_a);
// The floats and the independent blocks of op(a)'s packed form, m x k.
std::size_t packed_floats(std::int64_t m, std::int64_t k);
int packed_blocks(std::int64_t m, std::int64_t k);
// Packs block `block` (in [0, packed_blocks)) of the task's op(a) into `packed`.
void pack_a(const GemmTask& task, int block, float* packed);
}  // namespace gemm_generic

// The same four functions, compiled for AVX2+FMA: only in builds with
// TPUJOBS_HAVE_GEMM_AVX2_FMA.
namespace gemm_avx2_fma {
void multiply_add(const GemmTask& task, PackedOperand packed_a);
std::size_t packed_floats(std::int64_t m, std::int64_t k);
int packed_blocks(std::int64_t m, std::int64_t k);
void pack_a(const GemmTask& task, int block, float* packed);
}  // namespace gemm_avx2_fma

// And for AVX-512: only in builds with TPUJOBS_HAVE_GEMM_AVX512.
namespace gemm_avx512 {
void multiply_add(const GemmTask& task, PackedOperand packed_a);
std::size_t packed_floats(std::int64_t m, std::int64_t k);
int packed_blocks(std::int64_t m, std::int64_t k);
void pack_a(const GemmTask& task, int block, float* packed);
}  // namespace gemm_avx512

}  // namespace tpujobs::executor
