#include "executor/gemm.h"

#include <gtest/gtest.h>

#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "executor/gemm_kernel.h"
#include "executor/random.h"
#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

std::vector<GemmKernel> available_kernels() {
  std::vector<GemmKernel> kernels;
  for (GemmKernel kernel : {GemmKernel::kGeneric, GemmKernel::kAvx2Fma, GemmKernel::kAvx512}) {
    if (gemm_kernel_available(kernel)) kernels.push_back(kernel);
  }
  return kernels;
}

// A row-major matrix with `stride` >= cols: a block of a wider buffer.
struct Matrix {
  int rows = 0, cols = 0, stride = 0;
  std::vector<float> values;
  float at(int r, int c) const { return values[std::size_t(r) * stride + c]; }
  MatrixOperand operand(bool transposed) const { return {values.data(), stride, transposed}; }
};

Matrix random_matrix(int rows, int cols, int padding, std::uint64_t seed) {
  Matrix m{rows, cols, cols + padding, {}};
  m.values.resize(std::size_t(rows) * m.stride);
  Rng rng(seed);
  for (float& v : m.values) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  return m;
}

// The stored matrix that op() turns into rows x cols.
Matrix random_operand(int rows, int cols, bool transposed, std::uint64_t seed) {
  return transposed ? random_matrix(cols, rows, 3, seed) : random_matrix(rows, cols, 5, seed);
}

float op_at(const Matrix& stored, bool transposed, int r, int c) {
  return transposed ? stored.at(c, r) : stored.at(r, c);
}

std::string bits(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST(Gemm, MatchesADoublePrecisionReferenceForEveryTransposeAndKernel) {
  const int m = 37, n = 53, k = 29;
  for (GemmKernel kernel : available_kernels()) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool ta = mode & 1, tb = mode & 2;
      const Matrix a = random_operand(m, k, ta, 1 + mode);
      const Matrix b = random_operand(k, n, tb, 11 + mode);
      const int c_stride = n + 7;
      std::vector<float> c(std::size_t(m) * c_stride, 0.5f);
      gemm(m, n, k, a.operand(ta), b.operand(tb), c.data(), c_stride, /*accumulate=*/true,
           ComputeSplit{nullptr, kernel});
      std::vector<float> assigned = c;
      gemm(m, n, k, a.operand(ta), b.operand(tb), assigned.data(), c_stride, /*accumulate=*/false,
           ComputeSplit{nullptr, kernel});
      for (int r = 0; r < m; ++r) {
        for (int col = 0; col < c_stride; ++col) {
          const std::size_t at = std::size_t(r) * c_stride + col;
          if (col >= n) {  // outside c: untouched
            ASSERT_EQ(c[at], 0.5f);
            ASSERT_EQ(assigned[at], 0.5f);
            continue;
          }
          double expected = 0;
          for (int i = 0; i < k; ++i) expected += double{op_at(a, ta, r, i)} * op_at(b, tb, i, col);
          ASSERT_NEAR(assigned[at], expected, 1e-5)
              << gemm_kernel_name(kernel) << " mode " << mode << " at " << r << "," << col;
          ASSERT_NEAR(c[at], expected + 0.5, 1e-5) << gemm_kernel_name(kernel) << " mode " << mode;
        }
      }
    }
  }
}

TEST(Gemm, EmptyDepthAssignsZerosOrLeavesC) {
  std::vector<float> c(6, 2.0f);
  gemm(2, 3, 0, MatrixOperand{nullptr, 0, false}, MatrixOperand{nullptr, 3, false}, c.data(), 3,
       true, ComputeSplit{});
  EXPECT_EQ(c, std::vector<float>(6, 2.0f));
  gemm(2, 3, 0, MatrixOperand{nullptr, 0, false}, MatrixOperand{nullptr, 3, false}, c.data(), 3,
       false, ComputeSplit{});
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(GemmPanels, CutTheDimensionWhoseSharedOperandIsSmallerIntoWholeGranules) {
  // The GEMM-bound MLP's forward product: batch 256, 4096 -> 4096.
  GemmPanels panels = plan_gemm_panels(256, 4096, 4096);
  EXPECT_FALSE(panels.along_rows);
  EXPECT_EQ(panels.count, 8);
  EXPECT_EQ(panels.width, 512);
  // Its last layer's weight gradient: 4096 x 10, summed over 256 rows.
  panels = plan_gemm_panels(4096, 10, 256);
  EXPECT_TRUE(panels.along_rows);
  EXPECT_EQ(panels.count, 5);
  EXPECT_EQ(panels.width % 48, 0);
  EXPECT_GE(panels.width * panels.count, 4096);
  // Fewer granules than the work would want panels: one granule each.
  panels = plan_gemm_panels(64, 32, 1 << 20);
  EXPECT_TRUE(panels.along_rows);
  EXPECT_EQ(panels.count, 2);
  EXPECT_EQ(panels.width, 48);
  // Small products stay whole.
  panels = plan_gemm_panels(64, 128, 64);
  EXPECT_EQ(panels.count, 1);
  EXPECT_EQ(panels.width, 128);
}

// The same product computed with every pool size and with operands moved to
// other addresses gives the same bits: panels depend on the shape alone, and
// the kernels pack their operands, so alignment plays no part.
TEST(Gemm, BitsDependOnNeitherThreadCountNorAddresses) {
  struct Shape {
    int m, n, k;
    bool ta, tb;
  };
  for (GemmKernel kernel : available_kernels()) {
    for (const Shape& shape :
         {Shape{96, 1000, 300, false, false}, Shape{1000, 40, 200, true, false},
          Shape{130, 700, 257, false, true}}) {
      ASSERT_GT(plan_gemm_panels(shape.m, shape.n, shape.k).count, 2);
      const Matrix a = random_operand(shape.m, shape.k, shape.ta, 3);
      const Matrix b = random_operand(shape.k, shape.n, shape.tb, 4);
      auto product = [&](WorkerPool* pool, int shift) {
        // Copies of the operands and of c starting `shift` floats further on.
        std::vector<float> a_copy(shift, 0.0f), b_copy(shift, 0.0f);
        a_copy.insert(a_copy.end(), a.values.begin(), a.values.end());
        b_copy.insert(b_copy.end(), b.values.begin(), b.values.end());
        std::vector<float> c(shift + std::size_t(shape.m) * shape.n, 1.0f);
        gemm(shape.m, shape.n, shape.k, MatrixOperand{a_copy.data() + shift, a.stride, shape.ta},
             MatrixOperand{b_copy.data() + shift, b.stride, shape.tb}, c.data() + shift, shape.n,
             true, ComputeSplit{pool, kernel});
        return std::vector<float>(c.begin() + shift, c.end());
      };
      const std::vector<float> expected = product(nullptr, 0);
      for (int shift = 1; shift < 8; ++shift) {
        EXPECT_EQ(bits(product(nullptr, shift)), bits(expected))
            << gemm_kernel_name(kernel) << " shifted by " << shift;
      }
      for (int threads : {1, 2, 3, 5}) {
        WorkerPool pool(threads);
        EXPECT_EQ(bits(product(&pool, threads)), bits(expected))
            << gemm_kernel_name(kernel) << " on " << threads << " threads";
      }
    }
  }
}

// A kernel's product, called directly (tests/executor/CMakeLists.txt defines
// which kernels this build has).
using MultiplyAdd = void (*)(const GemmTask&, PackedOperand);
MultiplyAdd kernel_multiply_add(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kAvx2Fma:
#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)
      return gemm_avx2_fma::multiply_add;
#else
      break;
#endif
    case GemmKernel::kAvx512:
#if defined(TPUJOBS_HAVE_GEMM_AVX512)
      return gemm_avx512::multiply_add;
#else
      break;
#endif
    case GemmKernel::kGeneric:
      break;
  }
  return gemm_generic::multiply_add;
}

// Panels of c's columns share op(a), which gemm() packs once for all of
// them: each panel must get the bits of Eigen's own product of the panel,
// which packs op(a) itself (several depth blocks and blocks of c's rows,
// every transpose), also when the product is assigned (c then starts as
// NaN: the kernel zeroes it block by block).
TEST(Gemm, PanelsReadingTheSharedOperandPackedOnceGetEigensBits) {
  struct Shape {
    int m, n, k;
  };
  for (GemmKernel kernel : available_kernels()) {
    for (const Shape& shape : {Shape{256, 1000, 700}, Shape{500, 900, 300}, Shape{40, 3000, 60}}) {
      const GemmPanels panels = plan_gemm_panels(shape.m, shape.n, shape.k);
      ASSERT_GT(panels.count, 1);
      ASSERT_FALSE(panels.along_rows);
      for (int mode = 0; mode < 8; ++mode) {
        const bool ta = mode & 1, tb = mode & 2, accumulate = mode & 4;
        const Matrix a = random_operand(shape.m, shape.k, ta, 21 + mode);
        const Matrix b = random_operand(shape.k, shape.n, tb, 31 + mode);
        const std::size_t size = std::size_t(shape.m) * shape.n;
        std::vector<float> expected(size, accumulate ? 1.0f : 0.0f);
        for (int panel = 0; panel < panels.count; ++panel) {
          const int begin = panel * panels.width;
          const int width = std::min(panels.width, shape.n - begin);
          const float* b_panel = b.values.data() + (tb ? std::int64_t{begin} * b.stride : begin);
          kernel_multiply_add(kernel)(
              GemmTask{shape.m, width, shape.k, a.values.data(), a.stride, ta, b_panel, b.stride,
                       tb, expected.data() + begin, shape.n},
              PackedOperand{});
        }
        for (int threads : {0, 1, 2, 3}) {
          std::optional<WorkerPool> pool;
          if (threads > 0) pool.emplace(threads);
          std::vector<float> c(size, accumulate ? 1.0f : std::nanf(""));
          gemm(shape.m, shape.n, shape.k, a.operand(ta), b.operand(tb), c.data(), shape.n,
               accumulate, ComputeSplit{pool ? &*pool : nullptr, kernel});
          EXPECT_EQ(bits(c), bits(expected))
              << gemm_kernel_name(kernel) << " " << shape.m << "x" << shape.n << "x" << shape.k
              << " mode " << mode << " on " << threads << " threads";
        }
      }
    }
  }
}

// Eigen's own blocking follows the cache sizes it detects, and with it where
// sums are split: 92% of a 130x300x1000 product's elements changed between a
// 32 KiB and a 16 KiB L1. The kernels block with fixed sizes instead, so a
// checkpoint resumed on another host of the same kind continues bit for bit.
// (Only the generic kernel's copy of Eigen can be told other cache sizes.)
TEST(Gemm, BitsDoNotDependOnTheHostsCacheSizes) {
  const Matrix a = random_operand(130, 1000, false, 5);
  const Matrix b = random_operand(1000, 300, false, 6);
  auto product = [&] {
    std::vector<float> c(130 * 300);
    gemm(130, 300, 1000, a.operand(false), b.operand(false), c.data(), 300, false,
         ComputeSplit{nullptr, GemmKernel::kGeneric});
    return c;
  };
  const std::vector<float> expected = product();
  const std::ptrdiff_t l1 = Eigen::l1CacheSize(), l2 = Eigen::l2CacheSize(),
                       l3 = Eigen::l3CacheSize();
  Eigen::setCpuCacheSizes(16 * 1024, 256 * 1024, 2 * 1024 * 1024);
  const std::vector<float> other_host = product();
  Eigen::setCpuCacheSizes(l1, l2, l3);
  EXPECT_EQ(bits(other_host), bits(expected));
}

TEST(Gemm, KernelForcedByNameOrTheFastest) {
  const GemmKernel fastest = fastest_gemm_kernel();
  EXPECT_EQ(choose_gemm_kernel(nullptr).kernel, fastest);
  EXPECT_EQ(choose_gemm_kernel("").kernel, fastest);
  EXPECT_TRUE(choose_gemm_kernel(nullptr).error.empty());
  const GemmKernelChoice sse2 = choose_gemm_kernel(gemm_kernel_name(GemmKernel::kGeneric));
  EXPECT_EQ(sse2.kernel, GemmKernel::kGeneric);
  EXPECT_EQ(sse2.error, "");
  const GemmKernelChoice unknown = choose_gemm_kernel("avx1024");
  EXPECT_EQ(unknown.kernel, fastest);
  EXPECT_NE(unknown.error.find("TPUJOBS_GEMM_KERNEL=avx1024 names no matrix kernel; available "
                               "here: "),
            std::string::npos)
      << unknown.error;
  for (GemmKernel kernel : {GemmKernel::kAvx2Fma, GemmKernel::kAvx512}) {
    const GemmKernelChoice forced = choose_gemm_kernel(gemm_kernel_name(kernel));
    if (gemm_kernel_available(kernel)) {
      EXPECT_EQ(forced.kernel, kernel);
      EXPECT_EQ(forced.error, "");
    } else {
      EXPECT_EQ(forced.kernel, fastest);
      EXPECT_NE(forced.error.find("which this build or CPU lacks"), std::string::npos)
          << forced.error;
    }
  }
}

// The AVX-512 kernel on its own: correct, and the same bits on every pool size
// (the tests above cover it too, among the available kernels).
TEST(Gemm, Avx512KernelIsCorrectAndBitReproducible) {
  if (!gemm_kernel_available(GemmKernel::kAvx512)) {
    GTEST_SKIP() << "this CPU (or build) has no AVX-512 F+DQ: the avx512 kernel cannot run here";
  }
  EXPECT_EQ(fastest_gemm_kernel(), GemmKernel::kAvx512);
  const int m = 200, n = 700, k = 333;
  const Matrix a = random_operand(m, k, false, 11);
  const Matrix b = random_operand(k, n, true, 12);
  auto product = [&](WorkerPool* pool) {
    std::vector<float> c(std::size_t(m) * n);
    gemm(m, n, k, a.operand(false), b.operand(true), c.data(), n, false,
         ComputeSplit{pool, GemmKernel::kAvx512});
    return c;
  };
  const std::vector<float> alone = product(nullptr);
  for (int r = 0; r < m; r += 37) {
    for (int col = 0; col < n; col += 53) {
      double expected = 0;
      for (int i = 0; i < k; ++i)
        expected += double(op_at(a, false, r, i)) * op_at(b, true, i, col);
      ASSERT_NEAR(alone[std::size_t(r) * n + col], expected, 1e-4) << r << "," << col;
    }
  }
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    EXPECT_EQ(bits(product(&pool)), bits(alone)) << threads << " threads";
  }
}

}  // namespace
}  // namespace tpujobs::executor
