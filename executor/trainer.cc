// train() and estimate(): the training loop of one job, with Lightning's
// semantics on TPU (per-core batches, distributed sampling, all-reduced
// gradients), the emulated XLA runtime around it, and the job's reporting.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>

#include "executor/advisor.h"
#include "executor/all_reduce.h"
#include "executor/dataset.h"
#include "executor/denormals.h"
#include "executor/executor.h"
#include "executor/gemm.h"
#include "executor/lightning_log.h"
#include "executor/network.h"
#include "executor/optimizer.h"
#include "executor/random.h"
#include "executor/sampler.h"
#include "executor/slice_collective.h"
#include "executor/training_state.h"
#include "executor/worker_pool.h"
#include "executor/xla_metrics.h"

namespace tpujobs::executor {
namespace {

using std::chrono::duration;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

constexpr std::uint64_t kDropoutStream = 0xd20;

JobError invalid(std::string message, std::string hint = {}) {
  return JobError{"INVALID_ARGUMENT", std::move(message), std::move(hint)};
}

// A spec the dry run refuses: the error names the field the user must change.
JobError invalid_field(std::string field, std::string message, std::string hint = {}) {
  return JobError{"INVALID_ARGUMENT", std::move(message), std::move(hint), std::move(field)};
}

std::string format_number(double value, const char* format = "%.4g") {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// What identifies a model for checkpoints and XLA graph keys.
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

// The parts of a job that do not depend on training: data, shapes, plan.
struct Prepared {
  DatasetSplit data;
  ModelShape shape;
  SamplerOptions sampler;
  std::int64_t batches_per_epoch = 0;  // per replica
  std::int64_t steps_per_epoch = 0;    // optimizer steps
  std::int64_t total_steps = -1;
};

base::Result<Prepared, JobError> prepare(const TrainingSpec& spec, DatasetSource& datasets) {
  Prepared prepared;
  if (spec.world_size < 1) return invalid_field("trainer.devices", "world_size must be at least 1");
  if (spec.data.batch_size < 1)
    return invalid_field("data.batch_size", "data.batch_size must be at least 1");
  if (spec.accumulate_grad_batches < 1)
    return invalid_field("trainer.accumulate_grad_batches",
                         "trainer.accumulate_grad_batches must be at least 1");
  if (spec.max_epochs < 0 && spec.max_steps < 0) {
    return invalid_field("trainer.max_steps",
                         "trainer: max_epochs=-1 needs max_steps to bound the run");
  }
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

// Every emulated core keeps its own gradients and activations in host memory:
// refuse what would exhaust the host rather than the emulated HBM.
std::optional<JobError> host_memory_error(const TrainingSpec& spec, const ModelShape& shape) {
  std::int64_t widths = shape.input_features;
  for (const LayerShape& layer : shape.layers) widths += 2 * std::int64_t{layer.out};
  const double host_bytes =
      4.0 * spec.world_size *
      (static_cast<double>(shape.parameters) +
       static_cast<double>(spec.data.batch_size) * static_cast<double>(widths));
  constexpr double kHostBudgetBytes = 8.0 * (1 << 30);
  if (host_bytes <= kHostBudgetBytes) return std::nullopt;
  return JobError{
      "RESOURCE_EXHAUSTED",
      "emulating " + std::to_string(spec.world_size) + " cores of this model needs " +
          format_number(host_bytes / (1 << 30), "%.1f") +
          " GiB of host memory; the emulator allows 8 GiB per job",
      "Use fewer cores (devices / num_nodes), a smaller model, or a smaller batch_size."};
}

// One running job. Owns everything train() builds; run() never throws past train().
class Trainer {
 public:
  Trainer(const TrainingSpec& spec, const DeviceFacts& device, WorkerPool& workers,
          TrainingSink& sink, const RunControl& control, Prepared prepared)
      : spec_(spec),
        device_(device),
        workers_(workers),
        share_(workers),
        sink_(sink),
        control_(control),
        clock_(control.clock != nullptr ? *control.clock : base::real_clock()),
        prepared_(std::move(prepared)),
        fingerprint_(model_fingerprint(spec, prepared_.shape)),
        xla_([this] { return clock_.now(); }, spec.torch_xla_version) {
    const int per_host = spec_.devices_per_host;
    multi_host_ = spec_.on_tpu && per_host > 0 && spec_.world_size > per_host &&
                  spec_.world_size % per_host == 0;
    slice_hosts_ = multi_host_ ? spec_.world_size / per_host : 1;
    if (multi_host_ && control_.slice != nullptr) {
      first_replica_ = control_.slice->first_host * per_host;
      local_replicas_ = control_.slice->hosts * per_host;
    } else {
      local_replicas_ = spec_.world_size;
    }
  }

  TrainingResult run();

 private:
  struct StepOutcome {
    std::optional<JobError> error;
    bool cancelled = false;
  };

  void log(const std::string& line) { sink_.log(line); }
  void announce_devices();
  void after_mark_step();
  void announce_model();
  std::optional<JobError> restore(const Checkpoint& checkpoint);
  std::optional<JobError> check_control(std::int64_t next_step);
  // Runs micro-batch `batch` of `epoch` on this process's replicas; their
  // losses are appended to step_losses_ (one per replica, in replica order).
  void run_micro_batch(std::int64_t batch, int index_in_group,
                       const std::vector<std::vector<std::int64_t>>& shards);
  // Averages the step's gradients over the slice's replicas into
  // replicas_[0]'s and returns each micro-batch's mean loss over them, in
  // fixed orders. An error when a peer of the slice is gone.
  std::variant<std::vector<double>, JobError> reduce_step(int micro_batches);
  std::variant<std::vector<double>, JobError> reduce_across_hosts(int micro_batches);
  void ensure_replicas();  // allocates every replica's buffers, once
  void validate();
  // A checkpoint of where training is, for the sink. One that is not
  // `required` is skipped while the sink is not ready for it.
  void emit_checkpoint(bool required);
  TrainingResult finish(TrainingResult result);
  double seconds_since(steady_clock::time_point since) {
    return duration<double>(clock_.now() - since).count();
  }

  const TrainingSpec& spec_;
  const DeviceFacts& device_;
  WorkerPool& workers_;
  // Joined once the dataset is loaded (executor/worker_pool.h): every
  // step's and validation's compute is a turn.
  WorkerPool::JobShare share_;
  TrainingSink& sink_;
  const RunControl& control_;
  Clock& clock_;
  Prepared prepared_;
  std::string fingerprint_;
  XlaMetrics xla_;

  std::unique_ptr<Network> network_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<Optimizer> optimizer_;
  std::map<int, std::string> planned_rows_;  // batch rows -> graph key, once buffers are sized
  std::vector<double> replica_losses_;
  std::vector<nanoseconds> replica_transfer_;
  std::vector<double> step_losses_;  // micro-batch-major: [m * local_replicas_ + r]
  std::vector<float*> gradient_buffers_;
  std::vector<float> gather_send_, gather_all_;
  // Kept for their capacity: epochs, validations and checkpoints after the
  // first write over the memory of the ones before (no fresh pages).
  std::vector<std::int64_t> epoch_order_;
  std::vector<std::vector<std::int64_t>> shards_;  // this epoch's samples, per replica
  std::vector<BatchLoss> validation_results_;
  TrainingState checkpoint_state_;          // but its three large arrays
  std::shared_ptr<Checkpoint> checkpoint_;  // the last one emitted, reused once the sink let go

  // The slice: a multi-host one reduces per host, then across hosts. This
  // process runs replicas [first_replica_, first_replica_ + local_replicas_).
  bool multi_host_ = false;
  int slice_hosts_ = 1;
  int first_replica_ = 0;
  int local_replicas_ = 1;
  std::vector<std::string> warnings_;

  // Position and running statistics (what a checkpoint keeps).
  std::int64_t step_ = 0;
  int epoch_ = 0;
  std::int64_t batch_ = 0;
  double epoch_loss_sum_ = 0;
  std::int64_t epoch_loss_count_ = 0;
  std::map<std::string, double> last_metrics_;

  steady_clock::time_point started_;
  steady_clock::time_point throughput_since_;
  std::int64_t throughput_samples_ = 0;
  std::int64_t samples_this_run_ = 0;
  double last_samples_per_sec_ = 0;
  bool compile_warning_logged_ = false;
  std::int64_t metrics_saves_ = 0;  // XLA_METRICS_FILE's step=N
};

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

std::optional<JobError> Trainer::restore(const Checkpoint& checkpoint) {
  base::Result<TrainingState> state = decode_state(checkpoint.bytes);
  if (!state.ok()) return invalid("cannot resume: " + state.error().message);
  if (state->model_fingerprint != fingerprint_ || state->seed != spec_.seed ||
      state->world_size != spec_.world_size ||
      state->parameters.size() != network_->parameters().size()) {
    return invalid("cannot resume: the checkpoint belongs to another model, seed or world size",
                   "Resume with the spec the checkpoint was written with.");
  }
  if (!optimizer_->restore(state->optimizer_steps, state->first_moment, state->second_moment)) {
    return invalid("cannot resume: the checkpoint's optimizer state does not match the optimizer");
  }
  std::optional<XlaMetrics> xla = XlaMetrics::deserialize(
      state->xla_metrics, [this] { return clock_.now(); }, spec_.torch_xla_version);
  if (!xla) return invalid("cannot resume: the checkpoint's XLA metrics are unreadable");
  xla_ = std::move(*xla);
  network_->parameters().assign(state->parameters.begin(), state->parameters.end());
  network_->parameters_changed();
  step_ = state->step;
  epoch_ = state->epoch;
  batch_ = state->batch;
  epoch_loss_sum_ = state->epoch_loss_sum;
  epoch_loss_count_ = state->epoch_loss_count;
  last_metrics_ = std::move(state->last_metrics);
  log("Restoring states from the checkpoint at step " + std::to_string(step_) + " (epoch " +
      std::to_string(epoch_) + ", batch " + std::to_string(batch_) + ")");
  return std::nullopt;
}

std::optional<JobError> Trainer::check_control(std::int64_t next_step) {
  if (control_.cancel != nullptr && control_.cancel->load(std::memory_order_relaxed)) {
    // Called between optimizer steps, where a checkpoint is exact.
    if (control_.checkpoint_on_cancel != nullptr && control_.checkpoint_on_cancel->load())
      emit_checkpoint(/*required=*/true);
    const std::string reason = control_.stop_reason ? control_.stop_reason() : std::string();
    log((reason.empty() ? std::string("Job cancelled") : "Job stopped, " + reason) +
        ": stopping before step " + std::to_string(next_step) + " (epoch " +
        std::to_string(epoch_) + ")");
    return JobError{"CANCELLED",
                    "cancelled at step " + std::to_string(next_step - 1) + " (epoch " +
                        std::to_string(epoch_) + ")",
                    ""};
  }
  if (spec_.timeout) {
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - started_);
    if (elapsed > *spec_.timeout) {
      const std::string message =
          "the job exceeded its timeout of " + format_duration_ms(spec_.timeout->count()) +
          " at step " + std::to_string(next_step - 1) + " (epoch " + std::to_string(epoch_) + ")";
      log("DEADLINE_EXCEEDED: " + message);
      return JobError{
          "DEADLINE_EXCEEDED", message,
          "Raise `timeout`, lower trainer.max_epochs / max_steps, or train on more cores."};
    }
  }
  return std::nullopt;
}

void Trainer::run_micro_batch(std::int64_t batch, int index_in_group,
                              const std::vector<std::vector<std::int64_t>>& shards) {
  const int rows = batch_rows(prepared_.sampler, spec_.data.batch_size, batch);
  const int world = local_replicas_;
  const int features = prepared_.data.train.features;

  // The emulated XLA compile: a graph per (model, batch shape). Sizing the
  // step's buffers for a shape not seen before is this emulation's compile.
  nanoseconds planning{0};
  auto plan = planned_rows_.find(rows);
  if (plan == planned_rows_.end()) {
    const auto begin = steady_clock::now();
    ensure_replicas();
    const std::string graph_key = "train_step[" + fingerprint_ + "] x=f32[" + std::to_string(rows) +
                                  "," + std::to_string(features) + "] y=[" + std::to_string(rows) +
                                  "]";
    plan = planned_rows_.emplace(rows, graph_key).first;
    planning = steady_clock::now() - begin;
  }
  xla_.compile(plan->second, planning);

  std::vector<double>& losses = replica_losses_;
  std::vector<nanoseconds>& transfer = replica_transfer_;
  const std::uint64_t step_seed =
      derive_seed(spec_.seed, {kDropoutStream, static_cast<std::uint64_t>(step_),
                               static_cast<std::uint64_t>(index_in_group)});
  const float loss_scale = 1.0f / static_cast<float>(spec_.accumulate_grad_batches);
  const Dataset& train = prepared_.data.train;
  auto run_replica = [&](int r) {
    Replica& replica = *replicas_[r];
    const auto copy_begin = steady_clock::now();
    const std::int64_t first = batch * spec_.data.batch_size;
    float* input = replica.input();
    float* labels = replica.labels();
    for (int i = 0; i < rows; ++i) {
      const std::int64_t sample = shards[first_replica_ + r][first + i];
      std::copy_n(train.values.data() + sample * features, features,
                  input + std::size_t(i) * features);
      labels[i] = train.labels[sample];
    }
    transfer[r] = steady_clock::now() - copy_begin;
    const BatchLoss result = replica.train_batch(
        rows, loss_scale, derive_seed(step_seed, {std::uint64_t(first_replica_ + r)}),
        /*accumulate=*/index_in_group > 0);
    losses[r] = result.loss_sum / rows;
  };
  const auto begin = steady_clock::now();
  // Waking pool threads costs more than tiny models' passes: those run here.
  // The result is the same bits either way.
  constexpr std::int64_t kInlineMultiplyAdds = std::int64_t{1} << 21;
  if (std::int64_t{world} * rows * prepared_.shape.macs_per_sample() * 3 < kInlineMultiplyAdds) {
    for (int r = 0; r < world; ++r) run_replica(r);
  } else {
    workers_.parallel_for(world, run_replica);
  }
  const nanoseconds elapsed = steady_clock::now() - begin;
  nanoseconds transfer_total{0};
  for (const nanoseconds& t : transfer) transfer_total += t;
  xla_.transfer_to_device(std::int64_t{world} * rows * (features + 1) * 4, transfer_total);
  xla_.execute(elapsed - transfer_total / world);
  samples_this_run_ += std::int64_t{spec_.world_size} * rows;
  throughput_samples_ += std::int64_t{spec_.world_size} * rows;
  step_losses_.insert(step_losses_.end(), losses.begin(), losses.end());
}

std::variant<std::vector<double>, JobError> Trainer::reduce_step(int micro_batches) {
  if (gradient_buffers_.size() != replicas_.size()) {
    gradient_buffers_.clear();
    for (auto& replica : replicas_) gradient_buffers_.push_back(replica->gradients().data());
  }
  if (multi_host_) return reduce_across_hosts(micro_batches);
  const int world = spec_.world_size;
  FloatBuffer& gradients = replicas_[0]->gradients();
  ring_all_reduce(gradient_buffers_, gradients.size(), 1.0f / static_cast<float>(world), &workers_);
  std::vector<double> means(micro_batches, 0.0);
  for (int m = 0; m < micro_batches; ++m) {
    for (int r = 0; r < world; ++r)
      means[m] += step_losses_[std::size_t(m) * world + r];  // fixed order
    means[m] /= world;
  }
  return means;
}

std::variant<std::vector<double>, JobError> Trainer::reduce_across_hosts(int micro_batches) {
  const int per_host = spec_.devices_per_host;
  const int local_hosts = local_replicas_ / per_host;
  const std::size_t count = replicas_[0]->gradients().size();
  // One row per host: its replicas' gradient sum, then its replicas' losses
  // of each micro-batch (doubles, as pairs of floats' bits), then the step
  // it took (an int64's bits): parts that resumed from different
  // checkpoints must not be summed.
  const std::size_t loss_floats = std::size_t(micro_batches) * per_host * 2;
  const std::size_t row = count + loss_floats + 2;
  gather_send_.resize(row * local_hosts);
  for (int h = 0; h < local_hosts; ++h) {
    std::vector<float*> host(gradient_buffers_.begin() + h * per_host,
                             gradient_buffers_.begin() + (h + 1) * per_host);
    ring_all_reduce(host, count, 1.0f, &workers_);  // today's in-process ring, unscaled
    float* out = gather_send_.data() + row * h;
    std::copy_n(host[0], count, out);
    std::vector<double> losses;
    for (int m = 0; m < micro_batches; ++m) {
      for (int r = 0; r < per_host; ++r) {
        losses.push_back(step_losses_[std::size_t(m) * local_replicas_ + h * per_host + r]);
      }
    }
    std::memcpy(out + count, losses.data(), loss_floats * sizeof(float));
    const std::int64_t step = step_ + 1;
    std::memcpy(out + count + loss_floats, &step, sizeof step);
  }
  const float* rows = gather_send_.data();
  if (control_.slice != nullptr && control_.slice->collective != nullptr) {
    const SlicePart& part = *control_.slice;
    std::vector<std::size_t> counts;
    for (int hosts : part.hosts_per_rank) counts.push_back(row * hosts);
    gather_all_.resize(row * slice_hosts_);
    const auto begin = steady_clock::now();
    if (std::optional<JobError> error =
            part.collective->all_gather(gather_send_.data(), gather_all_.data(), counts)) {
      log(error->type + ": " + error->message);
      return std::move(*error);
    }
    xla_.cross_host_gather(
        static_cast<std::int64_t>((gather_all_.size() - gather_send_.size()) * sizeof(float)),
        steady_clock::now() - begin);
    rows = gather_all_.data();
    for (int h = 0; h < slice_hosts_; ++h) {
      std::int64_t step = 0;
      std::memcpy(&step, rows + row * h + count + loss_floats, sizeof step);
      if (step != step_ + 1) {
        const std::string message = "host " + std::to_string(h) + " of the slice took step " +
                                    std::to_string(step) + " while this one took step " +
                                    std::to_string(step_ + 1) +
                                    ": its parts resumed from different checkpoints";
        log("INTERNAL: " + message);
        return JobError{"INTERNAL", message, "Resubmit the job; report this as a bug."};
      }
    }
  }
  // The hosts' sums added in host order, then scaled: the same bits however
  // the hosts are split among processes.
  std::vector<const float*> host_sums;
  for (int h = 0; h < slice_hosts_; ++h) host_sums.push_back(rows + row * h);
  ordered_sum(host_sums, count, 1.0f / static_cast<float>(spec_.world_size),
              replicas_[0]->gradients().data());
  std::vector<double> means(micro_batches, 0.0);
  std::vector<double> losses(std::size_t(micro_batches) * per_host);
  for (int h = 0; h < slice_hosts_; ++h) {
    std::memcpy(losses.data(), rows + row * h + count, loss_floats * sizeof(float));
    for (int m = 0; m < micro_batches; ++m) {
      for (int r = 0; r < per_host; ++r) means[m] += losses[std::size_t(m) * per_host + r];
    }
  }
  for (double& mean : means) mean /= spec_.world_size;
  return means;
}

void Trainer::ensure_replicas() {
  if (!replicas_.empty()) return;
  const int world = local_replicas_;
  // Large products run as panels on the pool, nested in the replicas' tasks:
  // threads that have no replica left to run take panels.
  ComputeSplit split;
  split.pool = &workers_;
  for (int r = 0; r < world; ++r) {
    replicas_.push_back(std::make_unique<Replica>(*network_, spec_.data.batch_size, split));
  }
  replica_losses_.assign(world, 0.0);
  replica_transfer_.assign(world, nanoseconds{0});
}

void Trainer::validate() {
  const Dataset& validation = prepared_.data.validation;
  if (validation.rows == 0) return;
  WorkerPool::StepTurn turn(share_, validation.rows * prepared_.shape.macs_per_sample());
  ensure_replicas();
  const int world = local_replicas_;  // every process evaluates all of it: the same bits
  const int chunk = spec_.data.batch_size;
  const std::int64_t chunks = (validation.rows + chunk - 1) / chunk;
  std::vector<BatchLoss>& results = validation_results_;
  results.assign(static_cast<std::size_t>(chunks), BatchLoss{});
  const int features = validation.features;
  workers_.parallel_for(world, [&](int r) {
    Replica& replica = *replicas_[r];
    for (std::int64_t c = r; c < chunks; c += world) {
      const std::int64_t first = c * chunk;
      const int rows = static_cast<int>(std::min<std::int64_t>(chunk, validation.rows - first));
      std::copy_n(validation.values.data() + first * features, std::size_t(rows) * features,
                  replica.input());
      std::copy_n(validation.labels.data() + first, rows, replica.labels());
      results[c] = replica.evaluate_batch(rows);
    }
  });
  double loss_sum = 0;
  std::int64_t correct = 0;
  for (const BatchLoss& result : results) {
    loss_sum += result.loss_sum;
    correct += result.correct;
  }
  last_metrics_["val_loss"] = loss_sum / validation.rows;
  if (spec_.model.loss == Loss::kCrossEntropy) {
    last_metrics_["val_accuracy"] = static_cast<double>(correct) / validation.rows;
  }
}

void Trainer::emit_checkpoint(bool required) {
  if (!required && !sink_.ready_for_checkpoint()) return;
  TrainingState& state = checkpoint_state_;
  state.model_fingerprint = fingerprint_;
  state.seed = spec_.seed;
  state.world_size = spec_.world_size;
  state.step = step_;
  state.epoch = epoch_;
  state.batch = batch_;
  state.optimizer_steps = optimizer_->steps();
  state.rng_stream = derive_seed(
      spec_.seed, {static_cast<std::uint64_t>(epoch_), static_cast<std::uint64_t>(batch_)});
  state.epoch_loss_sum = epoch_loss_sum_;
  state.epoch_loss_count = epoch_loss_count_;
  state.last_metrics = last_metrics_;
  xla_.serialize(state.xla_metrics);
  // The arrays are encoded from where they live, into the previous
  // checkpoint's bytes once the sink has let go of them: no copies of them
  // and no fresh pages to fault in (those were several percent of a large
  // model's steps). While the sink still stores the previous one, new bytes.
  if (checkpoint_ == nullptr || checkpoint_.use_count() != 1) {
    checkpoint_ = std::make_shared<Checkpoint>();
  } else {
    // The sink's last read of the bytes happened before it let go.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  checkpoint_->step = step_;
  checkpoint_->epoch = epoch_;
  encode_state(
      state,
      StateArrays{network_->parameters(), optimizer_->first_moment(), optimizer_->second_moment()},
      checkpoint_->bytes);
  sink_.checkpoint(checkpoint_);
}

TrainingResult Trainer::run() {
  TrainingResult result;
  started_ = clock_.now();
  throughput_since_ = started_;
  announce_devices();
  if (spec_.on_tpu) {
    const HbmUsage hbm = estimate_hbm(spec_, prepared_.shape, device_);
    log(hbm.summary());
    if (!hbm.fits) {
      log(hbm.message());
      result.error = JobError{"RESOURCE_EXHAUSTED", hbm.message(), hbm.hint()};
      return finish(std::move(result));
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
  if (std::optional<JobError> error = host_memory_error(spec_, prepared_.shape)) {
    log(error->type + ": " + error->message);
    result.error = std::move(error);
    return finish(std::move(result));
  }
  // Only now that the model is known to fit: allocate it.
  network_ = std::make_unique<Network>(spec_.model, prepared_.shape, spec_.precision, spec_.seed);
  optimizer_ = std::make_unique<Optimizer>(spec_.optimizer, network_->parameters().size());
  announce_model();

  if (control_.resume != nullptr) {
    if (std::optional<JobError> error = restore(*control_.resume)) {
      result.error = std::move(error);
      return finish(std::move(result));
    }
  }

  const std::int64_t batches = prepared_.batches_per_epoch;
  const int accumulate = spec_.accumulate_grad_batches;
  const int world = local_replicas_;
  std::string stop_reason;
  bool stopped = spec_.max_steps >= 0 && step_ >= spec_.max_steps;
  if (stopped) stop_reason = "`max_steps=" + std::to_string(spec_.max_steps) + "` reached.";

  while (!stopped && (spec_.max_epochs < 0 || epoch_ < spec_.max_epochs)) {
    all_replica_indices(prepared_.sampler, epoch_, epoch_order_, shards_);
    const std::vector<std::vector<std::int64_t>>& shards = shards_;
    const steady_clock::time_point epoch_began = clock_.now();
    while (batch_ < batches) {
      if (std::optional<JobError> error = check_control(step_ + 1)) {
        result.error = std::move(error);
        if (result.error->type == "CANCELLED") result.outcome = Outcome::kCancelled;
        return finish(std::move(result));
      }
      const std::int64_t group_end = std::min(batches, (batch_ / accumulate + 1) * accumulate);
      // Forward, weight and input gradients: about 3 multiply-adds per weight and sample.
      WorkerPool::StepTurn turn(share_, (group_end - batch_) * world * spec_.data.batch_size * 3 *
                                            prepared_.shape.macs_per_sample());
      step_losses_.clear();
      for (std::int64_t b = batch_; b < group_end; ++b) {
        run_micro_batch(b, static_cast<int>(b - batch_), shards);
      }
      auto reduced = reduce_step(static_cast<int>(group_end - batch_));
      if (auto* error = std::get_if<JobError>(&reduced)) {
        result.error = std::move(*error);
        return finish(std::move(result));
      }
      double step_loss = 0;
      for (double loss : std::get<std::vector<double>>(reduced)) {
        step_loss += loss;
        epoch_loss_sum_ += loss;
        ++epoch_loss_count_;
      }
      step_loss /= static_cast<double>(group_end - batch_);
      if (!std::isfinite(step_loss)) {
        const std::string message =
            std::string("the training loss is ") + (std::isnan(step_loss) ? "nan" : "inf") +
            " at step " + std::to_string(step_ + 1) + " (epoch " + std::to_string(epoch_) +
            ", batch " + std::to_string(group_end - 1) + ")";
        log("NUMERICAL_ERROR: " + message);
        std::string hint = "Lower the learning rate (optimizer.lr is " +
                           format_number(spec_.optimizer.lr) +
                           "), set trainer.gradient_clip_val (e.g. 1.0)";
        if (spec_.precision == Precision::kFp16)
          hint += ", or use precision bf16-true (16-true overflows easily)";
        result.error = JobError{"NUMERICAL_ERROR", message, hint + "."};
        return finish(std::move(result));
      }
      FloatBuffer& gradients = replicas_[0]->gradients();
      if (spec_.gradient_clip_val)
        clip_by_global_norm(gradients, *spec_.gradient_clip_val, &workers_);
      optimizer_->step(network_->parameters(), gradients, &workers_);
      network_->parameters_changed();
      turn.end();
      ++step_;
      batch_ = group_end;
      after_mark_step();

      const double since = seconds_since(throughput_since_);
      if (since > 0) last_samples_per_sec_ = static_cast<double>(throughput_samples_) / since;
      sink_.progress(
          Progress{step_, prepared_.total_steps, epoch_, spec_.max_epochs, last_samples_per_sec_});
      if (step_ % spec_.log_every_n_steps == 0) {
        MetricPoint point{step_,
                          epoch_,
                          {{"loss", step_loss},
                           {"samples_per_sec", last_samples_per_sec_},
                           {"lr", optimizer_->learning_rate()}}};
        xla_.local_scalar_dense(static_cast<std::int64_t>(point.values.size()));
        sink_.metrics(point);
        throughput_since_ = clock_.now();
        throughput_samples_ = 0;
      }
      if (spec_.max_steps >= 0 && step_ >= spec_.max_steps) {
        stopped = true;
        stop_reason = "`max_steps=" + std::to_string(spec_.max_steps) + "` reached.";
        break;
      }
      if (spec_.checkpoint_every_n_steps > 0 && step_ % spec_.checkpoint_every_n_steps == 0 &&
          batch_ < batches) {
        emit_checkpoint(/*required=*/false);
      }
    }

    // Epoch end (or the last, truncated epoch when max_steps stopped it).
    const bool last_epoch = stopped || (spec_.max_epochs >= 0 && epoch_ + 1 >= spec_.max_epochs);
    const bool epoch_finished = batch_ >= batches;
    std::vector<std::pair<std::string, double>> shown;
    if (epoch_loss_count_ > 0) {
      last_metrics_["loss"] = epoch_loss_sum_ / static_cast<double>(epoch_loss_count_);
      shown.emplace_back("loss", last_metrics_["loss"]);
    }
    if ((epoch_ + 1) % spec_.check_val_every_n_epoch == 0 || last_epoch) {
      validate();
      MetricPoint point{step_, epoch_, {}};
      for (const char* name : {"val_loss", "val_accuracy"}) {
        if (auto it = last_metrics_.find(name); it != last_metrics_.end())
          point.values[name] = it->second;
      }
      if (!point.values.empty()) {
        xla_.local_scalar_dense(static_cast<std::int64_t>(point.values.size()));
        sink_.metrics(point);
      }
    }
    for (const char* name : {"val_loss", "val_accuracy"}) {
      if (auto it = last_metrics_.find(name); it != last_metrics_.end())
        shown.emplace_back(name, it->second);
    }
    log(epoch_line(epoch_, epoch_finished ? batches : batch_, seconds_since(epoch_began), shown));
    if (!compile_warning_logged_) {
      if (std::optional<std::string> warning = xla_.frequent_compile_warning(step_)) {
        // tpujobs' advice; the log has torch_xla's own lines only under
        // PT_XLA_DEBUG (after_mark_step).
        warnings_.push_back(*warning);
        compile_warning_logged_ = true;
      }
    }
    if (epoch_finished) {
      ++epoch_;
      batch_ = 0;
      epoch_loss_sum_ = 0;
      epoch_loss_count_ = 0;
    }
    emit_checkpoint(/*required=*/last_epoch);
  }
  if (stop_reason.empty())
    stop_reason = "`max_epochs=" + std::to_string(spec_.max_epochs) + "` reached.";
  log("`Trainer.fit` stopped: " + stop_reason);
  result.outcome = Outcome::kSucceeded;

  for (const auto& [metric, bound] : spec_.expect) {
    auto it = last_metrics_.find(metric);
    if (it == last_metrics_.end()) {
      result.outcome = Outcome::kFailed;
      result.error = JobError{
          "EXPECTATION_FAILED",
          "expect." + metric + ": the job did not produce the metric " + metric,
          "Expect one of the final metrics: loss, val_loss, val_accuracy (classification)."};
      break;
    }
    const double value = it->second;
    std::string failure;
    if (bound.min && !(value >= *bound.min)) {
      failure = metric + " = " + format_number(value) + " is below the minimum " +
                format_number(*bound.min);
    } else if (bound.max && !(value <= *bound.max)) {
      failure = metric + " = " + format_number(value) + " is above the maximum " +
                format_number(*bound.max);
    }
    if (!failure.empty()) {
      log("EXPECTATION_FAILED: " + failure);
      result.outcome = Outcome::kFailed;
      result.error =
          JobError{"EXPECTATION_FAILED", failure,
                   "Train longer (max_epochs), tune optimizer.lr, or relax expect." + metric + "."};
      break;
    }
  }
  return finish(std::move(result));
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
      result.error = JobError{"INTERNAL", kernel.error,
                              "Unset TPUJOBS_GEMM_KERNEL on the server, or set it to one of the "
                              "kernels available there."};
      return result;
    }
    base::Result<Prepared, JobError> prepared = prepare(spec, datasets);
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
    result.error = JobError{"INTERNAL", std::string("training failed: ") + e.what(), ""};
    return result;
  }
}

base::Result<Estimate, JobError> estimate(const TrainingSpec& spec, const DeviceFacts& device,
                                          DatasetSource& datasets) {
  try {
    base::Result<Prepared, JobError> prepared_or_error = prepare(spec, datasets);
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
    return JobError{"INTERNAL", std::string("estimate failed: ") + e.what(), ""};
  }
}

}  // namespace tpujobs::executor
