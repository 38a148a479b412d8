// Matrix products of the training engine: C = op(A) op(B) or C += op(A) op(B)
// on row-major float matrices, in parallel on the worker pool.
//
// Reproducibility: a product is cut into panels (blocks of C's columns, or of
// its rows when C is taller than wide) by its shape alone; each panel is one
// kernel call with fixed cache blocking, and the pool may run the panels in
// any order on any thread. The bits of C therefore depend on the shapes and
// the kernel only: not on the pool's thread count, the host's cache sizes or
// where the buffers are.
//
// Kernels: Eigen's GEMM compiled for the build's baseline target (SSE2 on
// x86-64) and, when the build includes them (CMake options TPUJOBS_GEMM_AVX2
// and TPUJOBS_GEMM_AVX512), compiled for AVX2 with FMA (about twice as fast)
// and for AVX-512 (F and DQ, with FMA; 16 floats a vector). Each is used only
// when the CPU (and the OS) reports its features, so a binary runs on any
// x86-64 CPU. The kernels round differently: bit-identical reruns need the
// same kernel. The environment variable TPUJOBS_GEMM_KERNEL=sse2|avx2|avx512
// forces one (to compare them, or to resume bit-identically on another host).
#pragma once

#include <cstdint>
#include <string>

#include "executor/float_buffer.h"

namespace tpujobs::executor {

class WorkerPool;

enum class GemmKernel { kGeneric, kAvx2Fma, kAvx512 };

// The fastest kernel that this build includes and this CPU can run.
GemmKernel fastest_gemm_kernel();
bool gemm_kernel_available(GemmKernel kernel);
// "sse2" (the generic kernel on x86-64; "generic" elsewhere), "avx2", "avx512":
// the names TPUJOBS_GEMM_KERNEL takes.
const char* gemm_kernel_name(GemmKernel kernel);

// The kernel that `forced` (TPUJOBS_GEMM_KERNEL's value; null or empty: not
// set) asks for, or else the fastest. `error` says why when `forced` names
// no kernel or one that this build or CPU lacks; `kernel` is then the fastest.
struct GemmKernelChoice {
  GemmKernel kernel = GemmKernel::kGeneric;
  std::string error;
};
GemmKernelChoice choose_gemm_kernel(const char* forced);

// choose_gemm_kernel(TPUJOBS_GEMM_KERNEL), read once per process. train()
// fails every job with the choice's error, so that a misconfigured server
// says so rather than training with another kernel than the one it was told.
const GemmKernelChoice& configured_gemm_kernel();
inline GemmKernel best_gemm_kernel() { return configured_gemm_kernel().kernel; }

// Where a replica's products run: their panels on `pool` (null: all on the
// calling thread), their multiply-adds in `kernel` (the generic kernel when
// `kernel` is not available).
struct ComputeSplit {
  WorkerPool* pool = nullptr;
  GemmKernel kernel = best_gemm_kernel();
  // Where a product cut into panels of c's columns packs the operand they
  // share, grown as needed: the caller's own buffer, so that the memory a
  // product touches does not depend on which thread runs it. Null: a buffer
  // that the calling thread keeps.
  FloatBuffer* shared_operand = nullptr;
};

// The row-major matrix at `data`, rows `stride` floats apart, used as stored
// or transposed.
struct MatrixOperand {
  const float* data = nullptr;
  std::int64_t stride = 0;
  bool transposed = false;
};

// c[m x n] (rows `c_stride` floats apart) = op(a)[m x k] * op(b)[k x n], or
// c += that product when `accumulate`. c must not overlap a or b.
void gemm(int m, int n, int k, MatrixOperand a, MatrixOperand b, float* c, std::int64_t c_stride,
          bool accumulate, const ComputeSplit& split);

// How gemm() cuts an m x n x k product: `count` panels of `width` columns
// (or rows, when `along_rows`), the last one possibly narrower.
struct GemmPanels {
  bool along_rows = false;
  int count = 1;
  int width = 0;
};
GemmPanels plan_gemm_panels(int m, int n, int k);

}  // namespace tpujobs::executor
