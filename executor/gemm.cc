#include "executor/gemm.h"

#include <algorithm>
#include <cstdlib>

#include "executor/float_buffer.h"
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
// row micro-panels of every kernel (12 rows for SSE2, 24 for AVX2, 48 for AVX-512).
constexpr int kColumnGranule = 16;
constexpr int kRowGranule = 48;

#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)  // defined by CMake on x86-64 only
bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif
#if defined(TPUJOBS_HAVE_GEMM_AVX512)  // defined by CMake on x86-64 only
// libgcc reports AVX-512 features only when the OS saves the ZMM registers.
bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

// One kernel's entry points (executor/gemm_kernel.h).
struct KernelFunctions {
  void (*multiply_add)(const GemmTask&, PackedOperand);
  std::size_t (*packed_floats)(std::int64_t, std::int64_t);
  int (*packed_blocks)(std::int64_t, std::int64_t);
  void (*pack_a)(const GemmTask&, int, float*);
};

const KernelFunctions& kernel_functions(GemmKernel kernel) {
#if defined(TPUJOBS_HAVE_GEMM_AVX512)
  static constexpr KernelFunctions kAvx512{gemm_avx512::multiply_add, gemm_avx512::packed_floats,
                                           gemm_avx512::packed_blocks, gemm_avx512::pack_a};
  if (kernel == GemmKernel::kAvx512 && cpu_has_avx512()) return kAvx512;
#endif
#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)
  static constexpr KernelFunctions kAvx2Fma{gemm_avx2_fma::multiply_add,
                                            gemm_avx2_fma::packed_floats,
                                            gemm_avx2_fma::packed_blocks, gemm_avx2_fma::pack_a};
  if (kernel == GemmKernel::kAvx2Fma && cpu_has_avx2_fma()) return kAvx2Fma;
#endif
  (void)kernel;
  static constexpr KernelFunctions kGeneric{gemm_generic::multiply_add, gemm_generic::packed_floats,
                                            gemm_generic::packed_blocks, gemm_generic::pack_a};
  return kGeneric;
}

// The buffer for a product's shared operand, packed: `own` (the caller's,
// see ComputeSplit) or else the calling thread's. Either lives across
// steps, so steps after the first neither allocate nor fault pages in. Only
// the thread's current gemm() uses the thread's buffer (a thread waiting on
// its panels runs none but its own).
float* shared_operand_buffer(FloatBuffer* own, std::size_t floats) {
  thread_local FloatBuffer thread_buffer;
  FloatBuffer& buffer = own != nullptr ? *own : thread_buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

// What a kernel needs, for the error when TPUJOBS_GEMM_KERNEL forces one.
const char* gemm_kernel_needs(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kAvx2Fma:
      return "AVX2 and FMA (option TPUJOBS_GEMM_AVX2)";
    case GemmKernel::kAvx512:
      return "AVX-512 F and DQ (option TPUJOBS_GEMM_AVX512)";
    case GemmKernel::kGeneric:
      break;
  }
  return "nothing";
}

constexpr GemmKernel kAllKernels[] = {GemmKernel::kGeneric, GemmKernel::kAvx2Fma,
                                      GemmKernel::kAvx512};

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
    case GemmKernel::kAvx512:
#if defined(TPUJOBS_HAVE_GEMM_AVX512)
      return cpu_has_avx512();
#else
      return false;
#endif
  }
  return false;
}

GemmKernel fastest_gemm_kernel() {
  if (gemm_kernel_available(GemmKernel::kAvx512)) return GemmKernel::kAvx512;
  if (gemm_kernel_available(GemmKernel::kAvx2Fma)) return GemmKernel::kAvx2Fma;
  return GemmKernel::kGeneric;
}

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kAvx2Fma:
      return "avx2";
    case GemmKernel::kAvx512:
      return "avx512";
    case GemmKernel::kGeneric:
      break;
  }
#if defined(__x86_64__)
  return "sse2";
#else
  return "generic";
#endif
}

namespace {
std::string available_gemm_kernel_names() {
  std::string names;
  for (GemmKernel kernel : kAllKernels) {
    if (!gemm_kernel_available(kernel)) continue;
    names += (names.empty() ? "" : ", ") + std::string(gemm_kernel_name(kernel));
  }
  return names;
}
}  // namespace

GemmKernelChoice choose_gemm_kernel(const char* forced) {
  GemmKernelChoice choice{fastest_gemm_kernel(), ""};
  if (forced == nullptr || *forced == '\0') return choice;
  const std::string name = forced;
  for (GemmKernel kernel : kAllKernels) {
    if (name != gemm_kernel_name(kernel)) continue;
    if (gemm_kernel_available(kernel)) {
      choice.kernel = kernel;
    } else {
      choice.error = "TPUJOBS_GEMM_KERNEL=" + name + ": the " + name + " matrix kernel needs " +
                     gemm_kernel_needs(kernel) + ", which this " +
                     "build or CPU lacks; available here: " + available_gemm_kernel_names();
    }
    return choice;
  }
  choice.error = "TPUJOBS_GEMM_KERNEL=" + name +
                 " names no matrix kernel; available here: " + available_gemm_kernel_names();
  return choice;
}

const GemmKernelChoice& configured_gemm_kernel() {
  static const GemmKernelChoice choice = choose_gemm_kernel(std::getenv("TPUJOBS_GEMM_KERNEL"));
  return choice;
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
  const KernelFunctions& kernel = kernel_functions(split.kernel);
  auto run_tasks = [&](int count, auto&& task) {
    if (count == 1 || split.pool == nullptr) {
      for (int index = 0; index < count; ++index) task(index);
    } else {
      split.pool->parallel_for(count, task);
    }
  };
  // Panels of c's columns all read the whole of op(a): pack it once, in
  // parallel, rather than once per panel (the kernel reads the same packed
  // values either way, so the bits are the same).
  PackedOperand packed_a;
  if (panels.count > 1 && !panels.along_rows && k > 0) {
    const GemmTask whole{
        m, n, k, a.data, a.stride, a.transposed, b.data, b.stride, b.transposed, c, c_stride};
    float* packed = shared_operand_buffer(split.shared_operand, kernel.packed_floats(m, k));
    run_tasks(kernel.packed_blocks(m, k), [&](int block) { kernel.pack_a(whole, block, packed); });
    packed_a.data = packed;
  }
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
    if (k <= 0) {
      if (!accumulate) {
        for (int r = 0; r < rows; ++r) std::fill_n(c_panel + r * c_stride, columns, 0.0f);
      }
      return;
    }
    kernel.multiply_add(GemmTask{rows, columns, k, a_panel, a.stride, a.transposed, b_panel,
                                 b.stride, b.transposed, c_panel, c_stride, !accumulate},
                        packed_a);
  };
  run_tasks(panels.count, run_panel);
}

}  // namespace tpujobs::executor
