// HBM accounting per emulated TPU core: what a replica keeps resident while
// it trains, against the usable HBM of its generation.
#pragma once

#include <cstdint>
#include <string>

#include "executor/model_shape.h"
#include "executor/spec.h"

namespace tpujobs::executor {

// The runtime keeps part of every core's HBM for itself; XLA's out-of-memory
// report lists it as "reserved": 530.00M on v2/v3 (7.48G and 15.48G usable),
// 1.25G on a v4 chip (30.75G usable), as in the reports users posted
// (LargeWorldModel/LWM#60 on a v3-8, erfanzar/EasyDeL#166 on a v4-32).
inline constexpr std::int64_t kHbmRuntimeReservedBytes = std::int64_t{530} << 20;
inline constexpr std::int64_t kHbmRuntimeReservedBytesV4 = std::int64_t{1280} << 20;

struct HbmUsage {
  // Bytes per core, each padded to the TPU tile layout (see estimate_hbm).
  std::int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0, total = 0;
  std::int64_t capacity = 0;     // usable HBM per core (16 GiB v3 -> "15.48G")
  std::int64_t reserved = 0;     // the runtime's share (capacity + reserved = the HBM)
  bool fits = true;              // total <= capacity
  bool certain = false;          // even the unpadded lower bound exceeds capacity
  std::int64_t lower_bound = 0;  // total without tile padding

  // What hint() needs to give concrete numbers.
  std::string generation;  // "v3"
  int per_core_batch = 0;
  int world_size = 1;
  Precision precision = Precision::kFp32;
  int max_fitting_batch = 0;       // largest per-core batch that fits; 0: not even 1
  std::int64_t total_in_bf16 = 0;  // total under bf16-true (fp32 jobs only, else 0)

  // XLA's compile-time out-of-memory error when it does not fit, empty
  // otherwise: "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of
  // memory in memory space hbm. Used 21.95G of 15.48G hbm. Exceeded hbm
  // capacity by 6.47G." then XLA's breakdown: "Total hbm usage >= ..."
  // (reserved, program, arguments), the output size, and "Program hbm
  // requirement" (global, scoped, HLO temp). Arguments are the parameters and
  // optimizer state (torch_xla's step aliases them with its outputs); the
  // program's HLO temp is the gradients and activations.
  std::string message() const;
  // What to change, with numbers: the largest per-core batch that fits, the
  // smallest slice of the generation that exists and keeps the global batch
  // within it (v4 counts chips: 8 chips are a v4-16 of 2 hosts), bf16-true.
  // Empty when it fits.
  std::string hint() const;
  // One line for logs and the validate endpoint:
  // "HBM per core: 420.00K of 15.48G (parameters 73.00K, gradients 73.00K, optimizer
  // state 146.00K, activations for batch_size 64 128.00K)".
  std::string summary() const;
};

// Formats bytes as GiB with two decimals and a "G" suffix: "15.48G".
std::string format_gib(std::int64_t bytes);
// Like format_gib for 1 GiB and more, else MiB ("M") or KiB ("K"): "420.00K".
std::string format_readable(std::int64_t bytes);

// Per core: parameters, their gradients, optimizer slots (sgd with momentum 1,
// adam/adamw 2; plain sgd 0) and the forward activations of one per-core batch
// kept for backward (the input and every layer's output). 2 bytes per element
// under bf16-true / 16-true, else 4. Every tensor is padded as XLA's TPU layout
// tiles it: the minor dimension to 128, the second-minor to 8.
HbmUsage estimate_hbm(const TrainingSpec& spec, const ModelShape& shape, const DeviceFacts& device);

}  // namespace tpujobs::executor
