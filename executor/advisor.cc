#include "executor/advisor.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <optional>

namespace tpujobs::executor {
namespace {

// XLA pads the batch (the second-minor dimension of every activation) to 8.
constexpr std::int64_t kBatchTile = 8;
// Below this share of useful MXU work the widths are worth a warning: a
// classifier head of 10 classes on wide hidden layers stays above it.
constexpr double kMxuWarningUtilization = 0.9;
// A host sync more often than every this many steps stalls the pipeline.
constexpr int kMinStepsPerHostSync = 10;
// ... and it is only worth a warning once the job makes this many syncs.
constexpr std::int64_t kMinHostSyncsToWarn = 10;

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list sized;
  va_copy(sized, args);
  const int size = std::vsnprintf(nullptr, 0, pattern, sized);
  va_end(sized);
  std::string text(static_cast<std::size_t>(std::max(size, 0)), '\0');
  std::vsnprintf(text.data(), text.size() + 1, pattern, args);
  va_end(args);
  return text;
}

std::string percent(double fraction) { return format("%.1f%%", 100.0 * fraction); }

// Samples each replica reads per epoch: DistributedSampler pads the dataset
// so that every replica gets the same number.
std::int64_t shard_samples(const AdvisorInput& input) {
  const std::int64_t replicas = std::max(input.spec.world_size, 1);
  return (input.train_samples + replicas - 1) / replicas;
}

struct LinearWork {
  std::size_t index = 0;  // in the model's layers
  int in = 0, out = 0;
  double useful = 0, padded = 0;  // multiply-adds for one per-core batch
};

// What the MXU does for each linear of one per-core batch: the weight is cut
// into mxu_dim x mxu_dim tiles and the batch rows are padded to 8, so useful
// work is batch*in*out and the work done is the padded product.
std::vector<LinearWork> linear_work(const AdvisorInput& input) {
  const std::int64_t mxu = std::max(input.device.mxu_dim, 1);
  const std::int64_t batch = std::max(input.spec.data.batch_size, 1);
  std::vector<LinearWork> work;
  for (std::size_t i = 0; i < input.shape.layers.size(); ++i) {
    const LayerShape& layer = input.shape.layers[i];
    if (layer.type != LayerType::kLinear) continue;
    LinearWork linear{i, layer.in, layer.out, 0, 0};
    linear.useful = static_cast<double>(batch) * layer.in * layer.out;
    linear.padded = static_cast<double>(round_up(batch, kBatchTile)) *
                    static_cast<double>(round_up(layer.in, mxu)) *
                    static_cast<double>(round_up(layer.out, mxu));
    work.push_back(linear);
  }
  return work;
}

double overall_utilization(const std::vector<LinearWork>& work) {
  double useful = 0, padded = 0;
  for (const LinearWork& linear : work) {
    useful += linear.useful;
    padded += linear.padded;
  }
  return padded > 0 ? useful / padded : 0.0;
}

std::optional<Advice> small_batch(const AdvisorInput& input) {
  const int batch = input.spec.data.batch_size;
  const int mxu = input.device.mxu_dim;
  const std::int64_t shard = shard_samples(input);
  // A shard too small for a full MXU batch cannot be helped by a larger batch.
  if (batch >= mxu || shard < mxu) return std::nullopt;
  const int replicas = std::max(input.spec.world_size, 1);
  const std::string global =
      replicas > 1 ? format(" (a global batch of %d on %d cores)", mxu * replicas, replicas) : "";
  return Advice{
      "SMALL_BATCH",
      format("The per-core batch_size %d is small for a TPU: the MXU is a %dx%d systolic array "
             "and every weight tile it loads is reused only by the %d rows of the batch, so it "
             "spends much of each step loading weights. The TPU performance guide asks for a "
             "per-core batch that is a multiple of 8 and ideally %d or more. Each core reads "
             "%lld samples per epoch, so batch_size %d fits%s; scale the learning rate with the "
             "batch.",
             batch, mxu, mxu, batch, mxu, static_cast<long long>(shard), mxu, global.c_str())};
}

std::optional<Advice> batch_padding(const AdvisorInput& input) {
  const std::int64_t batch = input.spec.data.batch_size;
  if (batch <= 0 || batch % kBatchTile == 0) return std::nullopt;
  const std::int64_t padded = round_up(batch, kBatchTile);
  const std::int64_t lower = padded - kBatchTile;
  return Advice{
      "BATCH_PADDING",
      format("batch_size %lld is not a multiple of 8: XLA pads it to %lld rows in every matmul, "
             "so %s of that work is padding. Use %s%lld.",
             static_cast<long long>(batch), static_cast<long long>(padded),
             percent(1.0 - static_cast<double>(batch) / static_cast<double>(padded)).c_str(),
             lower > 0 ? format("%lld or ", static_cast<long long>(lower)).c_str() : "",
             static_cast<long long>(padded))};
}

std::optional<Advice> mxu_padding(const AdvisorInput& input) {
  const int mxu = input.device.mxu_dim;
  const std::vector<LinearWork> work = linear_work(input);
  const double utilization = overall_utilization(work);
  if (work.empty() || utilization >= kMxuWarningUtilization) return std::nullopt;
  std::string layers;
  bool hidden_width_to_fix = false;
  for (std::size_t k = 0; k < work.size(); ++k) {
    const LinearWork& linear = work[k];
    if (linear.in % mxu == 0 && linear.out % mxu == 0) continue;
    if (!layers.empty()) layers += "; ";
    layers += format("layers[%zu] linear %d->%d runs at %s", linear.index, linear.in, linear.out,
                     percent(linear.useful / linear.padded).c_str());
    // The first linear's input and the last one's output are the data's widths.
    const bool is_input = k == 0;
    const bool is_output = k + 1 == work.size();
    if ((!is_input && linear.in % mxu != 0) || (!is_output && linear.out % mxu != 0)) {
      hidden_width_to_fix = true;
    }
  }
  std::string advice = format(
      "Matrix dimensions that are not multiples of %d leave the %dx%d MXU partly idle (XLA "
      "pads them with zeros): %s. Overall the linears use %s of the MXU work they cost.",
      mxu, mxu, mxu, layers.c_str(), percent(utilization).c_str());
  advice += hidden_width_to_fix
                ? format(
                      " Round the hidden widths up to multiples of %d: the extra units cost "
                      "nothing on a TPU.",
                      mxu)
                : " The remaining padding comes from the input features and the number of "
                  "outputs, which the data fixes; wider hidden layers amortise it.";
  return Advice{"MXU_PADDING", advice};
}

std::optional<Advice> frequent_host_sync(const AdvisorInput& input) {
  const int every = input.spec.log_every_n_steps;
  if (every <= 0 || every >= kMinStepsPerHostSync) return std::nullopt;
  const std::int64_t steps = planned_steps(input.spec, input.steps_per_epoch);
  const std::int64_t syncs = steps < 0 ? -1 : steps / every;
  if (syncs >= 0 && syncs < kMinHostSyncsToWarn) return std::nullopt;
  const std::string how_many =
      syncs < 0 ? std::string("a host sync")
                : format("at least %lld host syncs in %lld steps", static_cast<long long>(syncs),
                         static_cast<long long>(steps));
  return Advice{
      "FREQUENT_HOST_SYNC",
      format("log_every_n_steps %d reads the logged values back to the host %s (.item(), "
             "counted as aten::_local_scalar_dense): %s. Each one waits for the TPU to finish "
             "the step, so the host cannot queue the next graph while the device works. Log "
             "every 50 steps (Lightning's default), or at least every %d.",
             every, every == 1 ? "on every step" : format("every %d steps", every).c_str(),
             how_many.c_str(), kMinStepsPerHostSync)};
}

std::optional<Advice> recompiles(const AdvisorInput& input) {
  const std::int64_t batch = input.spec.data.batch_size;
  const std::int64_t shard = shard_samples(input);
  if (input.spec.data.drop_last || batch <= 0 || shard <= batch || shard % batch == 0) {
    return std::nullopt;
  }
  const std::int64_t partial = shard % batch;
  // A nearby batch size that divides the shard and stays a multiple of 8.
  std::string divisor;
  for (std::int64_t candidate = batch / 2; candidate <= 2 * batch; ++candidate) {
    if (candidate % kBatchTile == 0 && shard % candidate == 0) {
      divisor = format(", or batch_size %lld, which divides the %lld samples of each core",
                       static_cast<long long>(candidate), static_cast<long long>(shard));
      if (candidate >= batch) break;
    }
  }
  return Advice{
      "RECOMPILES",
      format("Every epoch ends with a partial batch: each core reads %lld samples, that is %lld "
             "batches of %lld and one of %lld. XLA compiles a graph per input shape, so the last "
             "batch compiles a second graph (UncachedCompile) and every epoch switches between "
             "the two. Set data.drop_last: true to keep one shape (it skips %lld samples per core "
             "per epoch, different ones each epoch when shuffling)%s.",
             static_cast<long long>(shard), static_cast<long long>(shard / batch),
             static_cast<long long>(batch), static_cast<long long>(partial),
             static_cast<long long>(partial), divisor.c_str())};
}

}  // namespace

std::int64_t planned_steps(const TrainingSpec& spec, std::int64_t steps_per_epoch) {
  const std::int64_t by_epochs =
      spec.max_epochs >= 0
          ? std::int64_t{spec.max_epochs} * std::max<std::int64_t>(steps_per_epoch, 0)
          : -1;
  if (spec.max_steps < 0) return by_epochs;
  return by_epochs < 0 ? spec.max_steps : std::min(by_epochs, spec.max_steps);
}

std::vector<Advice> advise(const AdvisorInput& input) {
  std::vector<Advice> advice;
  if (!input.spec.on_tpu) return advice;
  for (auto rule : {small_batch, batch_padding, mxu_padding, frequent_host_sync, recompiles}) {
    if (std::optional<Advice> found = rule(input)) advice.push_back(std::move(*found));
  }
  return advice;
}

StepTimeEstimate estimate_step_time(const AdvisorInput& input) {
  StepTimeEstimate estimate;
  const std::int64_t replicas = std::max(input.spec.world_size, 1);
  const std::int64_t batch = std::max(input.spec.data.batch_size, 1);
  const std::int64_t accumulate = std::max(input.spec.accumulate_grad_batches, 1);
  // 2 FLOPs per multiply-add, and backward costs twice the forward pass.
  estimate.flops_per_step = 6.0 * static_cast<double>(input.shape.macs_per_sample()) *
                            static_cast<double>(batch * replicas * accumulate);
  estimate.mxu_utilization = overall_utilization(linear_work(input));
  const double per_core_flops_per_second = input.device.peak_flops * estimate.mxu_utilization;
  if (estimate.flops_per_step > 0 && per_core_flops_per_second > 0) {
    estimate.compute_seconds =
        estimate.flops_per_step / static_cast<double>(replicas) / per_core_flops_per_second;
  }
  estimate.fixed_seconds = kStepFixedCostSeconds;
  estimate.seconds = estimate.compute_seconds + estimate.fixed_seconds;
  auto duration = [](double seconds) {
    return seconds < 1e-3 ? format("%.3g us", seconds * 1e6) : format("%.3g ms", seconds * 1e3);
  };
  estimate.summary = format(
      "Estimated step time on TPU %s: %s (an estimate, not a measurement: %s of MXU work, "
      "%.3g GFLOP per core per step at %.1f TFLOP/s peak and %s MXU utilisation, plus %s fixed "
      "per step for dispatch, infeed and the step's synchronisation, the shortest ExecuteTime "
      "posted for a torch_xla training step on Cloud TPU, pytorch/xla#3808; input pipeline, "
      "host syncs and compiles come on top)",
      input.device.generation.c_str(), duration(estimate.seconds).c_str(),
      duration(estimate.compute_seconds).c_str(),
      estimate.flops_per_step / static_cast<double>(replicas) / 1e9, input.device.peak_flops / 1e12,
      percent(estimate.mxu_utilization).c_str(), duration(estimate.fixed_seconds).c_str());
  return estimate;
}

}  // namespace tpujobs::executor
