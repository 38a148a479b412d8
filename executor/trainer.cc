// train() and estimate(): a job's preparation (data, shapes, the plan), its
// announcements, and its result. The run itself is the Trainer's
// (executor/trainer.h lists its files).
#include "executor/trainer.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>

#include "executor/advisor.h"
#include "executor/denormals.h"
#include "executor/gemm.h"
#include "executor/hbm.h"
#include "executor/lightning_log.h"
#include "executor/slice_collective.h"

namespace tpujobs::executor {

base::Error job_error(std::string type, std::string message, std::string hint, std::string field) {
  base::ErrorCode code = base::ErrorCode::kInternal;
  if (type == "INVALID_ARGUMENT" || type == "RESOURCE_EXHAUSTED" || type == "NUMERICAL_ERROR" ||
      type == "EXPECTATION_FAILED" || type == "DEADLINE_EXCEEDED") {
    code = base::ErrorCode::kInvalid;
  } else if (type == "UNAVAILABLE") {
    code = base::ErrorCode::kUnavailable;
  } else if (type == "CANCELLED") {
    code = base::ErrorCode::kConflict;
  }
  base::Error error{code, std::move(message)};
  error.hint = std::move(hint);
  error.type = std::move(type);
  if (!field.empty()) error.fields.push_back({std::move(field), error.message, error.hint});
  return error;
}

namespace internal {

base::Error invalid(std::string message, std::string hint) {
  return job_error("INVALID_ARGUMENT", std::move(message), std::move(hint));
}

base::Error invalid_field(std::string field, std::string message, std::string hint) {
  return job_error("INVALID_ARGUMENT", std::move(message), std::move(hint), std::move(field));
}

std::string format_number(double value, const char* format) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string model_fingerprint(const TrainingSpec& spec, const ModelShape& shape) {
  static const char* kPrecision[] = {"f32", "bf16", "f16"};
  std::string key = "in" + std::to_string(shape.input_features);
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& layer = shape.layers[i];
    const LayerSpec& layer_spec = spec.model.layers[i];
    key += "|" + std::to_string(static_cast<int>(layer.type)) + ":" + std::to_string(layer.out);
    if (layer_spec.tie) key += "t" + std::to_string(*layer_spec.tie);
    if (layer.type == LayerType::kLinear && !layer_spec.bias) key += "nb";
    if (layer.type == LayerType::kDropout) key += "p" + format_number(layer_spec.p, "%.17g");
  }
  key += spec.model.loss == Loss::kCrossEntropy ? "|ce|" : "|mse|";
  return key + kPrecision[static_cast<int>(spec.precision)];
}

base::Result<Prepared> prepare(const TrainingSpec& spec, DatasetSource& datasets) {
  Prepared prepared;
  if (spec.world_size < 1) return invalid_field("trainer.devices", "world_size must be at least 1");
  if (spec.data.batch_size < 1)
    return invalid_field("data.batch_size", "data.batch_size must be at least 1");
  if (spec.accumulate_grad_batches < 1)
    return invalid_field("trainer.accumulate_grad_batches",
                         "trainer.accumulate_grad_batches must be at least 1");
  if (spec.check_val_every_n_epoch < 1)
    return invalid_field("trainer.check_val_every_n_epoch",
                         "trainer.check_val_every_n_epoch must be at least 1");
  if (spec.log_every_n_steps < 1)
    return invalid_field("trainer.log_every_n_steps",
                         "trainer.log_every_n_steps must be at least 1");
  base::Result<DatasetSplit> loaded = load_dataset(spec.data, spec.model.loss, spec.seed, datasets);
  if (!loaded.ok()) {
    return invalid_field("data.dataset", loaded.error().message,
                         "Check data.dataset; uploaded CSVs need a header row, numeric features "
                         "and an integer class index in the last column 'label'.");
  }
  prepared.data = std::move(*loaded);
  base::Result<ModelShape> shape = infer_shape(spec.model, prepared.data.train.features);
  if (!shape.ok()) return invalid_field("model.layers", shape.error().message);
  prepared.shape = std::move(*shape);
  if (spec.model.layers.empty())
    return invalid_field("model.layers", "model.layers must not be empty");
  if (spec.model.loss == Loss::kCrossEntropy && prepared.shape.outputs < prepared.data.classes) {
    return invalid_field("model.layers",
                         "the model's last layer has " + std::to_string(prepared.shape.outputs) +
                             " outputs but the dataset has " +
                             std::to_string(prepared.data.classes) + " classes (labels up to " +
                             std::to_string(prepared.data.classes - 1) + ")",
                         "Make the last linear layer's out equal the number of classes.");
  }
  if (spec.model.loss == Loss::kMse && prepared.shape.outputs != 1) {
    return invalid_field("model.layers",
                         "loss mse compares one target per sample, but the model has " +
                             std::to_string(prepared.shape.outputs) + " outputs",
                         "End the model with a linear layer with out: 1.");
  }
  prepared.sampler = SamplerOptions{prepared.data.train.rows, spec.world_size, spec.seed,
                                    spec.data.shuffle, spec.data.drop_last};
  prepared.batches_per_epoch = batches_per_replica(prepared.sampler, spec.data.batch_size);
  if (prepared.batches_per_epoch == 0) {
    return invalid_field("data.batch_size",
                         "the training split has " + std::to_string(prepared.data.train.rows) +
                             " samples: not one full batch of " +
                             std::to_string(spec.data.batch_size) + " per core on " +
                             std::to_string(spec.world_size) + " cores with drop_last",
                         "Lower data.batch_size, use fewer cores or set drop_last: false.");
  }
  prepared.steps_per_epoch = (prepared.batches_per_epoch + spec.accumulate_grad_batches - 1) /
                             spec.accumulate_grad_batches;
  prepared.total_steps = planned_steps(spec, prepared.steps_per_epoch);
  return prepared;
}

namespace {

// Every emulated core keeps its own gradients and activations in host memory:
// refuse what would exhaust the host rather than the emulated HBM.
std::optional<base::Error> host_memory_error(const TrainingSpec& spec, const ModelShape& shape) {
  std::int64_t widths = shape.input_features;
  for (const LayerShape& layer : shape.layers) widths += 2 * std::int64_t{layer.out};
  const double host_bytes =
      4.0 * spec.world_size *
      (static_cast<double>(shape.parameters) +
       static_cast<double>(spec.data.batch_size) * static_cast<double>(widths));
  constexpr double kHostBudgetBytes = 8.0 * (1 << 30);
  if (host_bytes <= kHostBudgetBytes) return std::nullopt;
  return job_error(
      "RESOURCE_EXHAUSTED",
      "emulating " + std::to_string(spec.world_size) + " cores of this model needs " +
          format_number(host_bytes / (1 << 30), "%.1f") +
          " GiB of host memory; the emulator allows 8 GiB per job",
      "Use fewer cores (devices / num_nodes), a smaller model, or a smaller batch_size.");
}

}  // namespace

// What torch_xla prints after xm.mark_step(): the performance analyses
// under PT_XLA_DEBUG (StepMarker), the metrics report under
// XLA_METRICS_FILE=STDOUT|STDERR (debug/metrics_saver.py).
void Trainer::after_mark_step() {
  if (spec_.xla_debug) {
    for (const std::string& line : xla_.performance_report()) log(line);
  }
  if (spec_.xla_metrics_file == "STDOUT" || spec_.xla_metrics_file == "STDERR") {
    std::istringstream lines(xla_.metrics_data(metrics_saves_++));
    for (std::string line; std::getline(lines, line);) log(line);
  }
}

void Trainer::announce_devices() {
  // Lightning's _log_device_info, as the job's release prints it.
  for (const std::string& line : spec_.device_info) log(line);
  for (const std::string& notice : spec_.notices) log(notice);
  if (!spec_.on_tpu && spec_.world_size > 1) {
    log("Running on " + std::to_string(spec_.world_size) + " CPU processes");
  }
  log("Dataset: " + prepared_.data.description + "; train " +
      std::to_string(prepared_.data.train.rows) + ", validation " +
      std::to_string(prepared_.data.validation.rows) + "; " +
      std::to_string(prepared_.batches_per_epoch) + " batches of " +
      std::to_string(spec_.data.batch_size) + " per core per epoch on " +
      std::to_string(spec_.world_size) + (spec_.world_size == 1 ? " core" : " cores"));
  for (const std::string& line : model_summary(spec_.model, prepared_.shape)) log(line);
}

void Trainer::announce_model() {
  if (spec_.lightning_v1 && spec_.on_tpu && network_->tied_layers() > 0) {
    // Lightning 1.2-1.4 (core/decorators.py, parameter_validation) counted
    // parameters before and after moving the module to the XLA device; tied
    // weights were untied by the move, so the count grew.
    const int before = network_->parameter_tensors();
    const int after = before + network_->tied_layers();
    const std::string warning =
        "UserWarning: The model layers do not match after moving to the target device. If your "
        "model employs weight sharing on TPU, please tie your weights using the "
        "`on_post_move_to_device` model hook.";
    const std::string counts = "Layer count: [Before: " + std::to_string(before) +
                               " After: " + std::to_string(after) + "]";
    log(warning);
    log(counts);
    warnings_.push_back(warning + " " + counts);
  }
}

std::optional<base::Error> Trainer::check_fits() {
  if (spec_.on_tpu) {
    const HbmUsage hbm = estimate_hbm(spec_, prepared_.shape, device_);
    log(hbm.summary());
    if (!hbm.fits) {
      log(hbm.message());
      return job_error("RESOURCE_EXHAUSTED", hbm.message(), hbm.hint());
    }
    const AdvisorInput input{spec_, prepared_.shape, device_, prepared_.data.train.rows,
                             prepared_.steps_per_epoch};
    for (const Advice& advice : advise(input)) {
      const std::string line = "PerformanceWarning [" + advice.code + "]: " + advice.message;
      log(line);
      warnings_.push_back(line);
    }
    log(estimate_step_time(input).summary);
  }
  if (std::optional<base::Error> error = host_memory_error(spec_, prepared_.shape)) {
    log(error->type + ": " + error->message);
    return error;
  }
  return std::nullopt;
}

TrainingResult Trainer::finish(TrainingResult result) {
  if (result.error && result.outcome == Outcome::kSucceeded) result.outcome = Outcome::kFailed;
  result.steps = step_;
  result.final_metrics = last_metrics_;
  if (step_ > 0 || !last_metrics_.empty()) result.final_metrics["epochs"] = epoch_;
  const double seconds = seconds_since(started_);
  if (seconds > 0 && samples_this_run_ > 0) {
    result.final_metrics["samples_per_sec"] = static_cast<double>(samples_this_run_) / seconds;
  }
  result.xla_report = xla_.report();
  if (network_) result.parameters_digest = digest(network_->parameters());
  result.warnings = std::move(warnings_);
  return result;
}

}  // namespace internal

using internal::prepare;
using internal::Prepared;
using internal::Trainer;

namespace {

// The processes on the launched workers print what they print, then wait
// for a rendezvous that never completes: the job fails there, before its
// first step. The parts of a slice that spans processes fail alike; they
// first gather one value each, so that none closes its connections while
// another is still completing its own (a part whose peer left early would
// fail UNAVAILABLE instead). A peer already gone changes nothing here.
TrainingResult failed_launch(const LaunchFailure& failure, TrainingSink& sink,
                             const RunControl& control) {
  if (control.slice && control.slice->collective) {
    SliceCollective& collective = *control.slice->collective;
    const float mine = 0;
    std::vector<float> all(static_cast<std::size_t>(collective.size()));
    (void)collective.all_gather(&mine, all.data(),
                                std::vector<std::size_t>(all.size(), std::size_t{1}));
  }
  for (const std::string& line : failure.log_lines) sink.log(line);
  sink.log(failure.type + ": " + failure.message);
  TrainingResult result;
  result.outcome = Outcome::kFailed;
  result.error = job_error(failure.type, failure.message, failure.hint, "resources.workers");
  return result;
}

}  // namespace

TrainingResult train(const TrainingSpec& spec, const DeviceFacts& device, WorkerPool& workers,
                     DatasetSource& datasets, TrainingSink& sink, const RunControl& control) {
  // The caller's thread runs small models' passes and the optimizer: it
  // flushes subnormals like the pool's threads, until train() returns.
  FlushDenormalsScope flush_denormals;
  try {
    if (const GemmKernelChoice& kernel = configured_gemm_kernel(); !kernel.error.empty()) {
      sink.log("INTERNAL: " + kernel.error);
      TrainingResult result;
      result.outcome = Outcome::kFailed;
      result.error = job_error("INTERNAL", kernel.error,
                               "Unset TPUJOBS_GEMM_KERNEL on the server, or set it to one of the "
                               "kernels available there.");
      return result;
    }
    if (spec.launch_failure) return failed_launch(*spec.launch_failure, sink, control);
    base::Result<Prepared> prepared = prepare(spec, datasets);
    if (!prepared.ok()) {
      sink.log(prepared.error().type + ": " + prepared.error().message);
      TrainingResult result;
      result.outcome = Outcome::kFailed;
      result.error = prepared.error();
      return result;
    }
    Trainer trainer(spec, device, workers, sink, control, std::move(*prepared));
    return trainer.run();
  } catch (const std::exception& e) {
    TrainingResult result;
    result.outcome = Outcome::kFailed;
    result.error = job_error("INTERNAL", std::string("training failed: ") + e.what());
    return result;
  }
}

base::Result<Estimate> estimate(const TrainingSpec& spec, const DeviceFacts& device,
                                DatasetSource& datasets) {
  try {
    base::Result<Prepared> prepared_or_error = prepare(spec, datasets);
    if (!prepared_or_error.ok()) return prepared_or_error.error();
    const Prepared& prepared = *prepared_or_error;
    Estimate estimate;
    estimate.input_features = prepared.shape.input_features;
    estimate.classes = prepared.data.classes;
    estimate.train_samples = prepared.data.train.rows;
    estimate.steps_per_epoch = prepared.steps_per_epoch;
    estimate.total_steps = prepared.total_steps;
    estimate.hbm = estimate_hbm(spec, prepared.shape, device);
    const AdvisorInput input{spec, prepared.shape, device, prepared.data.train.rows,
                             prepared.steps_per_epoch};
    for (const Advice& advice : advise(input))
      estimate.advice.push_back(advice.code + ": " + advice.message);
    const StepTimeEstimate step_time = estimate_step_time(input);
    estimate.estimated_step_seconds = step_time.seconds;
    estimate.mxu_utilization = step_time.mxu_utilization;
    return estimate;
  } catch (const std::exception& e) {
    return job_error("INTERNAL", std::string("estimate failed: ") + e.what());
  }
}

}  // namespace tpujobs::executor
