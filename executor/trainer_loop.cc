// The training loop: epochs of optimizer steps until a limit stops it, as
// Lightning's fit loop does: max_epochs (-1: no limit), max_steps, and
// max_time (the Timer callback, checked after every step against the
// training time across resumes), each ending with the epoch's end, a
// validation and a final checkpoint; or until a control ends the run first
// (a cancel, a stop for the service, the job's timeout).
#include <algorithm>
#include <cmath>

#include "executor/lightning_log.h"
#include "executor/trainer.h"

namespace tpujobs::executor::internal {

TrainingResult Trainer::run() {
  TrainingResult result;
  started_ = clock_.now();
  throughput_since_ = started_;
  train_started_ = started_;
  announce_devices();
  if (std::optional<base::Error> error = check_fits()) {
    result.error = std::move(error);
    return finish(std::move(result));
  }
  // Only now that the model is known to fit: allocate it.
  network_ = std::make_unique<Network>(spec_.model, prepared_.shape, spec_.precision, spec_.seed);
  optimizer_ = std::make_unique<Optimizer>(spec_.optimizer, network_->parameters().size());
  announce_model();
  if (control_.resume != nullptr) {
    if (std::optional<base::Error> error = restore(*control_.resume)) {
      result.error = std::move(error);
      return finish(std::move(result));
    }
  }
  train_started_ = clock_.now();  // the Timer's on_train_start
  check_limits_at_start();
  while (!stop_.stopped && (spec_.max_epochs < 0 || epoch_ < spec_.max_epochs)) {
    if (std::optional<base::Error> error = run_epoch()) {
      if (error->type == "CANCELLED") result.outcome = Outcome::kCancelled;
      result.error = std::move(error);
      return finish(std::move(result));
    }
  }
  log_stop();
  result.outcome = Outcome::kSucceeded;
  check_expectations(result);
  return finish(std::move(result));
}

std::optional<base::Error> Trainer::run_epoch() {
  all_replica_indices(prepared_.sampler, epoch_, epoch_order_, shards_);
  const steady_clock::time_point epoch_began = clock_.now();
  const std::int64_t batches = prepared_.batches_per_epoch;
  while (batch_ < batches) {
    if (std::optional<base::Error> error = check_control(step_ + 1)) return error;
    if (std::optional<base::Error> error = train_step()) return error;
    if (limit_reached_after_step()) break;
    if (spec_.checkpoint_every_n_steps > 0 && step_ % spec_.checkpoint_every_n_steps == 0 &&
        batch_ < batches) {
      emit_checkpoint(/*required=*/false);
    }
  }
  end_epoch(epoch_began);
  return std::nullopt;
}

std::optional<base::Error> Trainer::train_step() {
  const std::int64_t batches = prepared_.batches_per_epoch;
  const int accumulate = spec_.accumulate_grad_batches;
  const std::int64_t group_end = std::min(batches, (batch_ / accumulate + 1) * accumulate);
  // Forward, weight and input gradients: about 3 multiply-adds per weight and sample.
  WorkerPool::StepTurn turn(share_, (group_end - batch_) * local_replicas_ * spec_.data.batch_size *
                                        3 * prepared_.shape.macs_per_sample());
  step_losses_.clear();
  for (std::int64_t b = batch_; b < group_end; ++b) {
    run_micro_batch(b, static_cast<int>(b - batch_), shards_);
  }
  const base::Result<std::vector<double>> reduced =
      reduce_step(static_cast<int>(group_end - batch_));
  if (!reduced.ok()) return reduced.error();
  double step_loss = 0;
  for (double loss : *reduced) {
    step_loss += loss;
    epoch_loss_sum_ += loss;
    ++epoch_loss_count_;
  }
  step_loss /= static_cast<double>(group_end - batch_);
  if (!std::isfinite(step_loss)) {
    const std::string message = std::string("the training loss is ") +
                                (std::isnan(step_loss) ? "nan" : "inf") + " at step " +
                                std::to_string(step_ + 1) + " (epoch " + std::to_string(epoch_) +
                                ", batch " + std::to_string(group_end - 1) + ")";
    log("NUMERICAL_ERROR: " + message);
    std::string hint = "Lower the learning rate (optimizer.lr is " +
                       format_number(spec_.optimizer.lr) +
                       "), set trainer.gradient_clip_val (e.g. 1.0)";
    if (spec_.precision == Precision::kFp16)
      hint += ", or use precision bf16-true (16-true overflows easily)";
    return job_error("NUMERICAL_ERROR", message, hint + ".");
  }
  FloatBuffer& gradients = replicas_[0]->gradients();
  if (spec_.gradient_clip_val) clip_by_global_norm(gradients, *spec_.gradient_clip_val, &workers_);
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
  return std::nullopt;
}

// Epoch end (or the last, truncated epoch when a limit stopped it).
void Trainer::end_epoch(steady_clock::time_point epoch_began) {
  const std::int64_t batches = prepared_.batches_per_epoch;
  const bool last_epoch =
      stop_.stopped || (spec_.max_epochs >= 0 && epoch_ + 1 >= spec_.max_epochs);
  const bool epoch_finished = batch_ >= batches;
  std::vector<std::pair<std::string, double>> shown;
  if (epoch_loss_count_ > 0) {
    last_metrics_["loss"] = epoch_loss_sum_ / static_cast<double>(epoch_loss_count_);
    shown.emplace_back("loss", last_metrics_["loss"]);
  }
  if ((epoch_ + 1) % spec_.check_val_every_n_epoch == 0 || last_epoch) validate_and_report();
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

void Trainer::check_limits_at_start() {
  // Timer.on_fit_start: a timer restored already past max_time stops the
  // fit before its first step (no step has run yet: the elapsed time is the
  // restored one).
  if (spec_.max_time && elapsed_before_ >= *spec_.max_time) {
    log(time_limit_line(duration<double>(elapsed_before_).count()));
    stop_.stopped = true;
  }
  if (spec_.max_steps >= 0 && step_ >= spec_.max_steps) {
    stop_.stopped = true;
    stop_.reason = "`max_steps=" + std::to_string(spec_.max_steps) + "` reached.";
  }
}

bool Trainer::limit_reached_after_step() {
  // Timer.on_train_batch_end (interval "step"), then the fit loop's checks.
  if (spec_.max_time) {
    const nanoseconds elapsed = train_elapsed();
    if (elapsed >= *spec_.max_time) {
      log(time_limit_line(duration<double>(elapsed).count()));
      stop_.stopped = true;
    }
  }
  if (spec_.max_steps >= 0 && step_ >= spec_.max_steps) {
    stop_.stopped = true;
    stop_.reason = "`max_steps=" + std::to_string(spec_.max_steps) + "` reached.";
  }
  return stop_.stopped;
}

// _FitLoop.done's info line: max_steps first, then max_epochs; a stop by
// the Timer alone is only a debug line upstream.
void Trainer::log_stop() {
  std::string reason = stop_.reason;
  if (reason.empty() && spec_.max_epochs >= 0 && epoch_ >= spec_.max_epochs)
    reason = "`max_epochs=" + std::to_string(spec_.max_epochs) + "` reached.";
  if (!reason.empty()) log("`Trainer.fit` stopped: " + reason);
}

std::optional<base::Error> Trainer::check_control(std::int64_t next_step) {
  if (control_.cancel != nullptr && control_.cancel->load(std::memory_order_relaxed)) {
    // Called between optimizer steps, where a checkpoint is exact.
    if (control_.checkpoint_on_cancel != nullptr && control_.checkpoint_on_cancel->load())
      emit_checkpoint(/*required=*/true);
    const std::string reason = control_.stop_reason ? control_.stop_reason() : std::string();
    log((reason.empty() ? std::string("Job cancelled") : "Job stopped, " + reason) +
        ": stopping before step " + std::to_string(next_step) + " (epoch " +
        std::to_string(epoch_) + ")");
    return job_error("CANCELLED", "cancelled at step " + std::to_string(next_step - 1) +
                                      " (epoch " + std::to_string(epoch_) + ")");
  }
  if (spec_.timeout) {
    const auto elapsed =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - started_);
    if (elapsed > *spec_.timeout) {
      const std::string message =
          "the job exceeded its timeout of " + format_duration_ms(spec_.timeout->count()) +
          " at step " + std::to_string(next_step - 1) + " (epoch " + std::to_string(epoch_) + ")";
      log("DEADLINE_EXCEEDED: " + message);
      return job_error(
          "DEADLINE_EXCEEDED", message,
          "Raise `timeout`, lower trainer.max_epochs / max_steps, or train on more cores.");
    }
  }
  return std::nullopt;
}

}  // namespace tpujobs::executor::internal
