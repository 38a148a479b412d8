// HBM accounting per emulated TPU core: what a replica keeps resident while
// it trains, against the usable HBM of its generation.
#pragma once

#include <cstdint>
#include <string>

#include "executor/model_shape.h"
#include "executor/spec.h"

namespace tpujobs::executor {

// The runtime keeps part of every core's HBM for itself (programs, infeed
// buffers, scratch): a v2 core reports 7.48G and a v3 core 15.48G usable.
inline constexpr std::int64_t kHbmRuntimeReservedBytes = 558'345'748;  // 0.52 GiB

struct HbmUsage {
  // Bytes per core, each padded to the TPU tile layout (see estimate_hbm).
  std::int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0, total = 0;
  std::int64_t capacity = 0;     // usable HBM per core (16 GiB v3 -> "15.48G")
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

  // "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 21.95G of
  // 15.48G hbm." (G = GiB, two decimals) when it does not fit; empty otherwise.
  std::string message() const;
  // What to change, with numbers: the largest per-core batch that fits, the
  // cores that keep the global batch at that per-core batch, bf16-true. Empty
  // when it fits.
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
