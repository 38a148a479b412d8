// Validation after an epoch, and the `expect` gates on the final metrics.
#include <algorithm>

#include "executor/trainer.h"

namespace tpujobs::executor::internal {

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

void Trainer::validate_and_report() {
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

void Trainer::check_expectations(TrainingResult& result) {
  for (const auto& [metric, bound] : spec_.expect) {
    auto it = last_metrics_.find(metric);
    if (it == last_metrics_.end()) {
      result.outcome = Outcome::kFailed;
      result.error = job_error(
          "EXPECTATION_FAILED",
          "expect." + metric + ": the job did not produce the metric " + metric,
          "Expect one of the final metrics: loss, val_loss, val_accuracy (classification).");
      return;
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
      result.error = job_error(
          "EXPECTATION_FAILED", failure,
          "Train longer (max_epochs), tune optimizer.lr, or relax expect." + metric + ".");
      return;
    }
  }
}

}  // namespace tpujobs::executor::internal
