// Eigen's GEMM for one instruction set, with cache blocking fixed here rather
// than derived from the host's cache sizes. Compiled up to three times (see
// executor/CMakeLists.txt): with the build's flags as gemm_generic, with
// -mavx2 -mfma and TPUJOBS_GEMM_AVX2_FMA defined as gemm_avx2_fma, and with
// AVX-512 flags and TPUJOBS_GEMM_AVX512 defined as gemm_avx512.
#include "executor/gemm_kernel.h"

#if defined(TPUJOBS_GEMM_AVX2_FMA)
// Eigen is header-only: compiled with other target flags its templates are
// other code under the same symbol names, and the linker keeps one copy of
// each. Renaming Eigen's namespace in this object gives the AVX2 copy names
// of its own, so no function compiled for AVX2 can stand in for the generic
// one (tests/executor checks the object's symbols).
#define Eigen tpujobs_eigen_avx2_fma
#define TPUJOBS_GEMM_NAMESPACE gemm_avx2_fma
#elif defined(TPUJOBS_GEMM_AVX512)
#define Eigen tpujobs_eigen_avx512
#define TPUJOBS_GEMM_NAMESPACE gemm_avx512
#else
#define TPUJOBS_GEMM_NAMESPACE gemm_generic
#endif

#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <cstdlib>
#include <new>

namespace tpujobs::executor::TPUJOBS_GEMM_NAMESPACE {
namespace {

using Index = Eigen::Index;

// Eigen's own blocking reads the host's cache sizes, and the blocking decides
// where each element's sum over k is split and which micro-kernel (whose
// accumulation orders differ) computes it: with sizes fixed here the result
// is the same on every host. Depth blocks of at most 320 (Eigen picks 280 for
// a 32 KiB L1), packed blocks of op(b) of at most 1920 columns of c and of
// op(a) of at most 384 rows of c: as fast as Eigen's own choice on the
// project's machine, within the measurements' noise.
constexpr Index kMaxDepthBlock = 320;
constexpr Index kColumnsPerBlock = 1920;
constexpr Index kRowsPerBlock = 384;

// Eigen packs blocks of both operands into buffers that it would otherwise
// allocate (megabytes, from the heap) on every call: each thread keeps its
// own pair instead, allocated on its first product. One product runs on a
// thread at a time (a kernel call never waits on the pool).
class PackBuffers {
 public:
  static constexpr std::size_t kAFloats = std::size_t{kMaxDepthBlock} * kColumnsPerBlock;
  static constexpr std::size_t kBFloats = std::size_t{kMaxDepthBlock} * kRowsPerBlock;
  PackBuffers() : a_(allocate(kAFloats)), b_(allocate(kBFloats)) {}
  ~PackBuffers() {
    std::free(a_);
    std::free(b_);
  }
  PackBuffers(const PackBuffers&) = delete;
  PackBuffers& operator=(const PackBuffers&) = delete;
  float* a() { return a_; }
  float* b() { return b_; }

 private:
  static float* allocate(std::size_t floats) {
    void* memory = std::aligned_alloc(64, floats * sizeof(float));
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<float*>(memory);
  }
  float* a_;
  float* b_;
};

class FixedBlocking final : public Eigen::internal::level3_blocking<float, float> {
 public:
  explicit FixedBlocking(Index depth) {
    const Index blocks = (depth + kMaxDepthBlock - 1) / kMaxDepthBlock;
    m_kc = ((depth + blocks - 1) / blocks + 7) / 8 * 8;
    // Eigen computes the transposed, column-major product c^T = op(b)^T op(a)^T:
    // its rows are c's columns.
    m_mc = kColumnsPerBlock;
    m_nc = kRowsPerBlock;
    // m_kc <= kMaxDepthBlock: the thread's buffers hold any block.
    thread_local PackBuffers buffers;
    m_blockA = buffers.a();
    m_blockB = buffers.b();
  }
};

template <int AOrder, int BOrder>
void run(const GemmTask& task) {
  FixedBlocking blocking(task.k);
  Eigen::internal::general_matrix_matrix_product<Index, float, AOrder, false, float, BOrder, false,
                                                 Eigen::RowMajor, 1>::run(task.m, task.n, task.k,
                                                                          task.a, task.a_stride,
                                                                          task.b, task.b_stride,
                                                                          task.c, 1, task.c_stride,
                                                                          1.0f, blocking, nullptr);
}

}  // namespace

void multiply_add(const GemmTask& task) {
  // A row-major operand used transposed is a column-major one.
  constexpr int kRow = Eigen::RowMajor, kColumn = Eigen::ColMajor;
  if (!task.a_transposed && !task.b_transposed) {
    run<kRow, kRow>(task);
  } else if (!task.a_transposed) {
    run<kRow, kColumn>(task);
  } else if (!task.b_transposed) {
    run<kColumn, kRow>(task);
  } else {
    run<kColumn, kColumn>(task);
  }
}

}  // namespace tpujobs::executor::TPUJOBS_GEMM_NAMESPACE
