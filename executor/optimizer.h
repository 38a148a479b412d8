// Optimizers with torch.optim's update rules, over the flat parameter vector,
// and gradient clipping by global norm (torch.nn.utils.clip_grad_norm_).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "executor/float_buffer.h"
#include "executor/gemm.h"
#include "executor/spec.h"

namespace tpujobs::executor {

class WorkerPool;
struct AdamStep;

class Optimizer {
 public:
  // Adam's and AdamW's update runs in `kernel`'s instruction set (the
  // generic one when `kernel` is not available); the bits are the same in
  // every one.
  Optimizer(const OptimizerSpec& spec, std::size_t parameters,
            GemmKernel kernel = best_gemm_kernel());

  // One update of all parameters (as many as the optimizer was made for) from
  // gradients that are already averaged over replicas and clipped.
  // Elementwise, so the result does not depend on how `pool` (may be null)
  // splits the work.
  void step(std::span<float> parameters, std::span<const float> gradients, WorkerPool* pool);

  double learning_rate() const { return spec_.lr; }
  // Slots a checkpoint must keep: the step count (adam's bias correction),
  // sgd's momentum buffer or adam's first moment, adam's second moment.
  std::int64_t steps() const { return steps_; }
  const FloatBuffer& first_moment() const { return first_moment_; }
  const FloatBuffer& second_moment() const { return second_moment_; }
  // Restores the slots; returns false (changing nothing) when their sizes do
  // not fit this optimizer.
  bool restore(std::int64_t steps, std::span<const float> first_moment,
               std::span<const float> second_moment);

 private:
  void update(float* parameters, const float* gradients, std::size_t begin, std::size_t end);

  OptimizerSpec spec_;
  void (*adam_update_)(const AdamStep&);
  std::int64_t steps_ = 0;
  FloatBuffer first_moment_;   // sgd momentum buffer / adam m
  FloatBuffer second_moment_;  // adam v
};

// Scales `gradients` by max_norm / (norm + 1e-6) when their global L2 norm
// exceeds max_norm; returns the norm before clipping. The norm is summed in a
// fixed order of fixed-size chunks, so it does not depend on thread count.
double clip_by_global_norm(std::span<float> gradients, double max_norm, WorkerPool* pool);

}  // namespace tpujobs::executor
