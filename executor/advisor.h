// The performance advisor: the pitfalls of Lightning's TPU performance guide,
// found in a job spec before (and while) it runs, and an estimate of its step
// time on the real generation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/model_shape.h"
#include "executor/spec.h"

namespace tpujobs::executor {

// Everything referenced must outlive the call.
struct AdvisorInput {
  const TrainingSpec& spec;
  const ModelShape& shape;
  const DeviceFacts& device;
  std::int64_t train_samples;    // before sharding over replicas
  std::int64_t steps_per_epoch;  // optimizer steps per epoch per replica
};

struct Advice {
  // "SMALL_BATCH"        per-core batch below mxu_dim (128) while each core's
  //                      shard could fill one: every weight tile loaded into the
  //                      MXU is reused by too few rows (the TPU guide: a multiple
  //                      of 8, ideally 128 or more per core)
  // "BATCH_PADDING"      per-core batch not a multiple of 8 (XLA pads it)
  // "MXU_PADDING"        the linears do less than 90% useful MXU work because
  //                      widths are not multiples of 128 (per-layer figures)
  // "FREQUENT_HOST_SYNC" log_every_n_steps below 10 and at least 10 syncs planned
  // "RECOMPILES"         a last partial batch per core with drop_last: false
  std::string code;
  std::string message;  // one paragraph, with numbers and what to change
};

// The advice for a TPU job, in the order above; empty for a CPU job
// (spec.on_tpu == false) because none of it applies there.
std::vector<Advice> advise(const AdvisorInput& input);

// What every step costs however small its graph: launching the compiled
// program, feeding the batch, and the step's synchronisation. The figure is
// published, not guessed: the 1st percentile of ExecuteTime in torch_xla
// metrics users posted for training steps on Cloud TPU, 1.398 ms
// (pytorch/xla#3808, "Metric: ExecuteTime ... 1%=001ms397.965us"; the
// smallest of the reports found: Lightning-AI/pytorch-lightning#7368 shows
// 1%=002ms114.601us).
inline constexpr double kStepFixedCostSeconds = 1.397965e-3;

// An estimate, never a measurement: the training FLOPs of one step
// (6 x MACs per sample x global batch), split over the replicas, run at the
// generation's peak FLOP/s times the MXU utilisation the shapes allow, plus
// the fixed cost of a step.
struct StepTimeEstimate {
  double flops_per_step = 0;   // the whole global batch
  double mxu_utilization = 0;  // useful / padded multiply-adds over all linears, 0..1
  double compute_seconds = 0;  // the MXU work of one step, per core
  double fixed_seconds = 0;    // kStepFixedCostSeconds
  double seconds = 0;          // per step, on the real generation: compute + fixed
  std::string summary;         // "estimated step time on TPU v3: 0.42 ms (...)"
};
StepTimeEstimate estimate_step_time(const AdvisorInput& input);

// Total optimizer steps the spec asks for (max_steps and max_epochs both
// honoured); -1 when neither bounds the run.
std::int64_t planned_steps(const TrainingSpec& spec, std::int64_t steps_per_epoch);

}  // namespace tpujobs::executor
