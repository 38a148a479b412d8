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
#include <algorithm>
#include <cstdlib>
#include <new>
#include <type_traits>

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

// The depth of the blocks a product's sums over k are split into: at most
// kMaxDepthBlock, as equal as multiples of 8 allow.
Index depth_block(Index depth) {
  const Index blocks = (depth + kMaxDepthBlock - 1) / kMaxDepthBlock;
  return ((depth + blocks - 1) / blocks + 7) / 8 * 8;
}

// How many blocks of kRowsPerBlock of c's m rows Eigen cuts a product into.
Index packed_column_blocks(Index m) {
  const Index nc = std::min<Index>(m, kRowsPerBlock);
  return (m + nc - 1) / nc;
}

class FixedBlocking final : public Eigen::internal::level3_blocking<float, float> {
 public:
  explicit FixedBlocking(Index depth) {
    m_kc = depth_block(depth);
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

// Eigen computes c's transpose, column-major: c^T = op(b)^T op(a)^T. Its
// left operand is op(b)^T (packed per block as it goes), its right one
// op(a)^T, which the panels of a product cut along c's columns share: that
// one can come packed (pack_a). A row-major operand used as stored is a
// column-major one transposed, and the other way round.
template <int AOrder, int BOrder>
struct Product {
  static constexpr int kLhsOrder = BOrder == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
  static constexpr int kRhsOrder = AOrder == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
  using Traits = Eigen::internal::gebp_traits<float, float>;
  using LhsMapper = Eigen::internal::const_blas_data_mapper<float, Index, kLhsOrder>;
  using RhsMapper = Eigen::internal::const_blas_data_mapper<float, Index, kRhsOrder>;
  using ResultMapper =
      Eigen::internal::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;

  // Eigen's own sequential product (GeneralMatrixMatrix.h), packing op(a) as it goes.
  static void run(const GemmTask& task) {
    if (task.assign) {
      for (Index r = 0; r < task.m; ++r) std::fill_n(task.c + r * task.c_stride, task.n, 0.0f);
    }
    FixedBlocking blocking(task.k);
    Eigen::internal::general_matrix_matrix_product<Index, float, AOrder, false, float, BOrder,
                                                   false, Eigen::RowMajor, 1>::run(task.m, task.n,
                                                                                   task.k, task.a,
                                                                                   task.a_stride,
                                                                                   task.b,
                                                                                   task.b_stride,
                                                                                   task.c, 1,
                                                                                   task.c_stride,
                                                                                   1.0f, blocking,
                                                                                   nullptr);
  }

  // The same loop over the same blocks, calling the same micro-kernel on the
  // same packed data, with op(a)'s blocks read from `packed`: the same bits.
  // An assignment zeroes each block of c just before the micro-kernel first
  // adds to it, while it is in cache, rather than all of c beforehand.
  static void run_packed(const GemmTask& task, const float* packed) {
    FixedBlocking blocking(task.k);
    const Index rows = task.n, columns = task.m, depth = task.k;
    const Index kc = blocking.kc();
    const Index mc = std::min(rows, blocking.mc());
    const Index nc = std::min(columns, blocking.nc());
    LhsMapper lhs(task.b, task.b_stride);
    ResultMapper result(task.c, task.c_stride, 1);
    Eigen::internal::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                                   typename Traits::LhsPacket4Packing, kLhsOrder>
        pack_lhs;
    Eigen::internal::gebp_kernel<float, float, Index, ResultMapper, Traits::mr, Traits::nr, false,
                                 false>
        gebp;
    for (Index i2 = 0; i2 < rows; i2 += mc) {
      const Index block_rows = std::min(i2 + mc, rows) - i2;
      for (Index k2 = 0; k2 < depth; k2 += kc) {
        const Index block_depth = std::min(k2 + kc, depth) - k2;
        pack_lhs(blocking.blockA(), lhs.getSubMapper(i2, k2), block_depth, block_rows);
        for (Index j2 = 0; j2 < columns; j2 += nc) {
          const Index block_columns = std::min(j2 + nc, columns) - j2;
          if (task.assign && k2 == 0) {
            for (Index r = j2; r < j2 + block_columns; ++r) {
              std::fill_n(task.c + r * task.c_stride + i2, block_rows, 0.0f);
            }
          }
          gebp(result.getSubMapper(i2, j2), blocking.blockA(),
               packed + packed_offset(columns, k2, block_depth, j2), block_rows, block_depth,
               block_columns, 1.0f);
        }
      }
    }
  }

  // Block (k2, j2) of op(a)'s packed form: depth rows [k2, k2 + kc) and
  // columns [j2, j2 + nc) of op(a)^T, after the blocks of every earlier
  // depth range and of the earlier columns of its own.
  static std::size_t packed_offset(Index columns, Index k2, Index block_depth, Index j2) {
    return static_cast<std::size_t>(k2 * columns + block_depth * j2);
  }

  static void pack(const GemmTask& task, int block, float* packed) {
    const Index columns = task.m, depth = task.k;
    const Index kc = depth_block(depth);
    const Index nc = std::min<Index>(columns, kRowsPerBlock);
    const Index column_blocks = packed_column_blocks(columns);
    const Index k2 = block / column_blocks * kc, j2 = block % column_blocks * nc;
    const Index block_depth = std::min(k2 + kc, depth) - k2;
    const Index block_columns = std::min(j2 + nc, columns) - j2;
    RhsMapper rhs(task.a, task.a_stride);
    Eigen::internal::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, kRhsOrder> pack_rhs;
    pack_rhs(packed + packed_offset(columns, k2, block_depth, j2), rhs.getSubMapper(k2, j2),
             block_depth, block_columns);
  }
};

// Calls work(a_order, b_order) with the task's operand storage orders as
// std::integral_constant<int, Eigen::RowMajor or Eigen::ColMajor>.
template <typename Work>
void with_orders(const GemmTask& task, Work&& work) {
  using Row = std::integral_constant<int, Eigen::RowMajor>;
  using Column = std::integral_constant<int, Eigen::ColMajor>;
  if (!task.a_transposed && !task.b_transposed) {
    work(Row{}, Row{});
  } else if (!task.a_transposed) {
    work(Row{}, Column{});
  } else if (!task.b_transposed) {
    work(Column{}, Row{});
  } else {
    work(Column{}, Column{});
  }
}

}  // namespace

void multiply_add(const GemmTask& task, PackedOperand packed_a) {
  with_orders(task, [&](auto a_order, auto b_order) {
    using Orders = Product<decltype(a_order)::value, decltype(b_order)::value>;
    if (packed_a.data != nullptr) {
      Orders::run_packed(task, packed_a.data);
    } else {
      Orders::run(task);
    }
  });
}

std::size_t packed_floats(std::int64_t m, std::int64_t k) { return std::size_t(m) * k; }

int packed_blocks(std::int64_t m, std::int64_t k) {
  const Index depth_blocks = (k + depth_block(k) - 1) / depth_block(k);
  return static_cast<int>(depth_blocks * packed_column_blocks(m));
}

void pack_a(const GemmTask& task, int block, float* packed) {
  with_orders(task, [&](auto a_order, auto b_order) {
    Product<decltype(a_order)::value, decltype(b_order)::value>::pack(task, block, packed);
  });
}

}  // namespace tpujobs::executor::TPUJOBS_GEMM_NAMESPACE
