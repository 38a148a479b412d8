#include "executor/gemm.h"

#include <algorithm>

#include "executor/gemm_kernel.h"
#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

// Smaller products are not worth waking a thread for (about 35 us of work).
constexpr std::int64_t kMinPanelMultiplyAdds = std::int64_t{1} << 21;
// Enough panels to keep a few threads busy; each panel packs the operand it
// shares with the others again, so not more.
constexpr int kMaxPanels = 8;
// Panel widths are whole SIMD column groups (and cache lines of c) or whole
// row micro-panels of both kernels (12 rows for SSE2, 24 for AVX2).
constexpr int kColumnGranule = 16;
constexpr int kRowGranule = 48;

#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)  // defined by CMake on x86-64 only
bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

void multiply_add(GemmKernel kernel, const GemmTask& task) {
#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)
  if (kernel == GemmKernel::kAvx2Fma && cpu_has_avx2_fma()) {
    gemm_avx2_fma::multiply_add(task);
    return;
  }
#endif
  (void)kernel;
  gemm_generic::multiply_add(task);
}

}  // namespace

bool gemm_kernel_available(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kGeneric:
      return true;
    case GemmKernel::kAvx2Fma:
#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)
      return cpu_has_avx2_fma();
#else
      return false;
#endif
  }
  return false;
}

GemmKernel best_gemm_kernel() {
  return gemm_kernel_available(GemmKernel::kAvx2Fma) ? GemmKernel::kAvx2Fma : GemmKernel::kGeneric;
}

const char* gemm_kernel_name(GemmKernel kernel) {
  return kernel == GemmKernel::kAvx2Fma ? "avx2+fma" : "generic";
}

GemmPanels plan_gemm_panels(int m, int n, int k) {
  // Cutting c's columns repacks op(a) (m x k) per panel, cutting its rows
  // repacks op(b) (k x n): cut the dimension whose shared operand is smaller.
  GemmPanels panels;
  panels.along_rows = m > n;
  const int extent = panels.along_rows ? m : n;
  const int granule = panels.along_rows ? kRowGranule : kColumnGranule;
  const std::int64_t multiply_adds = std::int64_t{m} * n * k;
  const int wanted = static_cast<int>(
      std::clamp<std::int64_t>(multiply_adds / kMinPanelMultiplyAdds, 1, kMaxPanels));
  const int granules = (extent + granule - 1) / granule;
  const int panel_count = std::min(wanted, granules);
  const int granules_per_panel = (granules + panel_count - 1) / panel_count;
  panels.width = std::max(1, std::min(extent, granules_per_panel * granule));
  panels.count = (extent + panels.width - 1) / panels.width;
  return panels;
}

void gemm(int m, int n, int k, MatrixOperand a, MatrixOperand b, float* c, std::int64_t c_stride,
          bool accumulate, const ComputeSplit& split) {
  if (m <= 0 || n <= 0) return;
  const GemmPanels panels = plan_gemm_panels(m, n, k);
  auto run_panel = [&](int index) {
    const int begin = index * panels.width;
    const int size = std::min(panels.width, (panels.along_rows ? m : n) - begin);
    const int rows = panels.along_rows ? size : m;
    const int columns = panels.along_rows ? n : size;
    // The panel's first element of c, of op(a) and of op(b).
    float* c_panel = c + (panels.along_rows ? std::int64_t{begin} * c_stride : begin);
    const float* a_panel = a.data;
    const float* b_panel = b.data;
    if (panels.along_rows) {
      a_panel += a.transposed ? begin : std::int64_t{begin} * a.stride;
    } else {
      b_panel += b.transposed ? std::int64_t{begin} * b.stride : begin;
    }
    if (!accumulate) {
      for (int r = 0; r < rows; ++r) std::fill_n(c_panel + r * c_stride, columns, 0.0f);
    }
    if (k <= 0) return;
    multiply_add(split.kernel, GemmTask{rows, columns, k, a_panel, a.stride, a.transposed, b_panel,
                                        b.stride, b.transposed, c_panel, c_stride});
  };
  if (panels.count == 1 || split.pool == nullptr) {
    for (int index = 0; index < panels.count; ++index) run_panel(index);
  } else {
    split.pool->parallel_for(panels.count, run_panel);
  }
}

}  // namespace tpujobs::executor
