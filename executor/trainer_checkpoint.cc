// A Trainer's checkpoints: emitting one of where training is, and resuming
// from one bit-identically.
#include <atomic>

#include "executor/random.h"
#include "executor/trainer.h"

namespace tpujobs::executor::internal {

std::optional<base::Error> Trainer::restore(const Checkpoint& checkpoint) {
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
  std::optional<XlaMetrics> xla =
      XlaMetrics::deserialize(state->xla_metrics, clock_, spec_.torch_xla_version);
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
  elapsed_before_ = std::chrono::milliseconds(state->train_elapsed_ms);
  log("Restoring states from the checkpoint at step " + std::to_string(step_) + " (epoch " +
      std::to_string(epoch_) + ", batch " + std::to_string(batch_) + ")");
  return std::nullopt;
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
  state.train_elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(train_elapsed()).count();
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

}  // namespace tpujobs::executor::internal
