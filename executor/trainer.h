// The training run of one job, internal to executor/: train() (trainer.cc)
// builds a Trainer and runs it. Its parts, one file each:
//   trainer.cc             preparing a job, train() and estimate(), the
//                          announcements and the result;
//   trainer_loop.cc        the loop: epochs, steps, the limits that stop it
//                          (max_epochs, max_steps, max_time) and the controls
//                          (cancel, timeout);
//   trainer_step.cc        one optimizer step's compute: micro-batches on the
//                          replicas and the gradients' all-reduce;
//   trainer_checkpoint.cc  emitting a checkpoint and resuming from one;
//   trainer_validation.cc  validation and the `expect` gates.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/dataset.h"
#include "executor/executor.h"
#include "executor/model_shape.h"
#include "executor/network.h"
#include "executor/optimizer.h"
#include "executor/sampler.h"
#include "executor/slice_collective.h"
#include "executor/training_state.h"
#include "executor/worker_pool.h"
#include "executor/xla_metrics.h"

namespace tpujobs::executor::internal {

using std::chrono::duration;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;

base::Error invalid(std::string message, std::string hint = {});
// A spec the dry run refuses: the error names the field the user must change.
base::Error invalid_field(std::string field, std::string message, std::string hint = {});
std::string format_number(double value, const char* format = "%.4g");
// What identifies a model for checkpoints and XLA graph keys.
std::string model_fingerprint(const TrainingSpec& spec, const ModelShape& shape);

// The parts of a job that do not depend on training: data, shapes, plan.
struct Prepared {
  DatasetSplit data;
  ModelShape shape;
  SamplerOptions sampler;
  std::int64_t batches_per_epoch = 0;  // per replica
  std::int64_t steps_per_epoch = 0;    // optimizer steps
  std::int64_t total_steps = -1;
};

// The job's data, shapes and plan, or the error that refuses the spec.
base::Result<Prepared> prepare(const TrainingSpec& spec, DatasetSource& datasets);

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
        xla_(clock_, spec.torch_xla_version) {
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
  // Why the loop stops before its epochs are done: a limit reached
  // (max_steps, max_time), with the reason Lightning's fit loop logs
  // ("`max_steps=100` reached."; empty when only the Timer stopped it,
  // which logs its own line).
  struct LoopStop {
    bool stopped = false;
    std::string reason;
  };

  void log(const std::string& line) { sink_.log(line); }

  // trainer.cc
  void announce_devices();
  void after_mark_step();
  void announce_model();
  // The HBM and host-memory checks, with the advisor's warnings; the error
  // that stops the job before it allocates its model.
  std::optional<base::Error> check_fits();
  TrainingResult finish(TrainingResult result);

  // trainer_loop.cc
  // One epoch, from batch_ to its end or to a limit; an error (CANCELLED,
  // DEADLINE_EXCEEDED, NUMERICAL_ERROR, a slice's) ends the run.
  std::optional<base::Error> run_epoch();
  // One optimizer step: its micro-batches, the reduction, the update, and
  // what is reported after it.
  std::optional<base::Error> train_step();
  // The epoch's end: validation when due, the epoch line, the checkpoint.
  void end_epoch(steady_clock::time_point epoch_began);
  // Lightning's limits before the first step (the Timer's on_fit_start,
  // the fit loop's max_steps) and after each step (on_train_batch_end).
  void check_limits_at_start();
  bool limit_reached_after_step();
  void log_stop();
  std::optional<base::Error> check_control(std::int64_t next_step);
  // Training time so far, across resumes: what max_time is checked against.
  nanoseconds train_elapsed() const { return elapsed_before_ + (clock_.now() - train_started_); }

  // trainer_step.cc
  // Runs micro-batch `batch` of `epoch` on this process's replicas; their
  // losses are appended to step_losses_ (one per replica, in replica order).
  void run_micro_batch(std::int64_t batch, int index_in_group,
                       const std::vector<std::vector<std::int64_t>>& shards);
  // Averages the step's gradients over the slice's replicas into
  // replicas_[0]'s and returns each micro-batch's mean loss over them, in
  // fixed orders. An error when a peer of the slice is gone.
  base::Result<std::vector<double>> reduce_step(int micro_batches);
  base::Result<std::vector<double>> reduce_across_hosts(int micro_batches);
  void ensure_replicas();  // allocates every replica's buffers, once

  // trainer_checkpoint.cc
  std::optional<base::Error> restore(const Checkpoint& checkpoint);
  // A checkpoint of where training is, for the sink. One that is not
  // `required` is skipped while the sink is not ready for it.
  void emit_checkpoint(bool required);

  // trainer_validation.cc
  void validate();
  // validate(), then its metrics to the sink.
  void validate_and_report();
  // The `expect` gates on the final metrics: a miss fails the result.
  void check_expectations(TrainingResult& result);

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

  LoopStop stop_;
  steady_clock::time_point started_;
  // Lightning's Timer: when this run's training began (on_train_start), and
  // the training time of the runs before it (from the checkpoint).
  steady_clock::time_point train_started_;
  nanoseconds elapsed_before_{0};
  steady_clock::time_point throughput_since_;
  std::int64_t throughput_samples_ = 0;
  std::int64_t samples_this_run_ = 0;
  double last_samples_per_sec_ = 0;
  bool compile_warning_logged_ = false;
  std::int64_t metrics_saves_ = 0;  // XLA_METRICS_FILE's step=N
};

}  // namespace tpujobs::executor::internal
