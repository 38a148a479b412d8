// Training jobs in the end-to-end tests: a spec to submit, and checks of what
// a job recorded (its progress, its log sequence, its metric series). Each
// check adds a gtest failure that says what is wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service_process.h"

namespace tpujobs::testing {

// A job that trains a one-hidden-layer MLP (ReLU, Adam, batch 32 per core)
// on a synthetic "blobs" dataset of 4 classes, 20% of it held out.
struct BlobsJob {
  std::string name;
  int seed = 1;
  int devices = 1;
  int epochs = 1;
  int log_every_n_steps = 50;
  int checkpoint_every_n_steps = 100;
  int samples = 1000;
  int features = 32;
  int hidden = 128;
};
nlohmann::json blobs_job_spec(const BlobsJob& job);

// A blobs job on 8 cores that trains until the test ends it (max_epochs
// -1), checkpointing every 10 steps: to restart the service in the middle of.
nlohmann::json restartable_job_spec(const std::string& name);

// A blobs job of 8 steps on one core (320 samples, one epoch): it ends well
// within a second of starting.
nlohmann::json short_job_spec(const std::string& name);

// A job that trains until the test ends it (max_epochs -1): epochs of
// `steps_per_epoch` steps on one core through a wide hidden layer (1,024
// hidden units; 1,000 samples for 25 steps an epoch), logging and
// checkpointing once an epoch, with max_retries 2.
nlohmann::json long_job_spec(const std::string& name, int seed, int steps_per_epoch = 25);

// How a job that ran until the test ended it ended: its steps and the
// digest of its parameters.
struct EndedJob {
  std::string state;
  std::int64_t steps = -1;
  std::string parameters_digest;
};

// The highest step among job `id`'s stored metric points (0 when none): a
// run that resumed from an earlier checkpoint has rewritten the points of
// the run before it once it trains past this step.
std::int64_t last_metric_step(const ServiceProcess& service, std::int64_t id);

// Cancels job `id` and waits for its end.
EndedJob cancel_and_wait(const ServiceProcess& service, std::int64_t id,
                         std::chrono::seconds timeout = std::chrono::seconds(300));

// `spec` bounded to `steps` (max_steps, max_epochs -1): the uninterrupted
// reference of a run of `spec` that a test ended after that many steps.
nlohmann::json bounded_to_steps(nlohmann::json spec, std::int64_t steps);

// Job `reference` (the uninterrupted run, bounded_to_steps) must end
// SUCCEEDED after `ended.steps` steps with the parameters `ended` had, bit
// for bit, and the same metric series (job `id`'s, the ended one; the
// reference's final validation at a step within an epoch, which a cancel
// does not run, left out). Both series are checked gapless: a training point
// every `log_every` steps, a validation at each epoch's end.
void expect_same_as_reference(const ServiceProcess& service, std::int64_t id, const EndedJob& ended,
                              std::int64_t reference, std::int64_t log_every,
                              std::int64_t steps_per_epoch,
                              std::chrono::seconds timeout = std::chrono::seconds(300));

// Training steps an epoch of such a job on one core: 80% of the samples in
// batches of 32 (for sample counts that divide evenly, as the tests use).
constexpr std::int64_t blobs_steps_per_epoch(int samples) {
  return std::int64_t{samples} * 4 / 5 / 32;
}

// Polls GET /v1/jobs/{id} until the job is RUNNING at `step` or later with
// a checkpoint stored (last_checkpoint: checkpoints are written behind the
// training), or the timeout passes; returns the last view either way.
nlohmann::json wait_for_step(const ServiceProcess& service, std::int64_t id, std::int64_t step,
                             std::chrono::seconds timeout = std::chrono::seconds(60));

// The same without waiting for a stored checkpoint: for a test that then
// stops the job at a checkpoint of its own (a graceful stop, a preemption),
// so that it acts a telemetry flush sooner and the job cannot end first.
nlohmann::json wait_for_running_step(const ServiceProcess& service, std::int64_t id,
                                     std::int64_t step,
                                     std::chrono::seconds timeout = std::chrono::seconds(60));

// The N of the job's last "Resumed from the checkpoint at step N" event;
// -1 when it never resumed.
std::int64_t resumed_from_step(const ServiceProcess& service, std::int64_t id);

// GET /v1/jobs/{id}/logs must number the lines 1, 2, ..., n: no gap and no
// duplicate. Returns n.
std::int64_t expect_contiguous_logs(const ServiceProcess& service, std::int64_t id);

// GET /v1/jobs/{id}/metrics of a job that trained `total_steps` steps over
// `epochs` epochs (validating after each), against what the trainer emits:
// seq 1..n, a training point (with "loss") at every multiple of
// log_every_n_steps and a validation point (with "val_loss") at the last
// step of every epoch, in step order, each exactly once. Returns the series
// as lines such as "step 10 epoch 0 train loss=0.52", comparable between two
// runs of one spec (throughput, which differs, left out).
std::vector<std::string> expect_gapless_metrics(const ServiceProcess& service, std::int64_t id,
                                                std::int64_t log_every_n_steps, std::int64_t epochs,
                                                std::int64_t total_steps);

// The same for a job of `steps_per_epoch` steps an epoch that trained
// `total_steps`, the last epoch possibly cut short: with a validation at
// its last step when `final_validation` (a limit stopped it) and none when
// a cancel did.
std::vector<std::string> expect_gapless_metric_steps(const ServiceProcess& service, std::int64_t id,
                                                     std::int64_t log_every_n_steps,
                                                     std::int64_t steps_per_epoch,
                                                     std::int64_t total_steps,
                                                     bool final_validation);

// "1 2 3": numbers for a message.
std::string join(const std::vector<std::int64_t>& values);

// "" when the two are equal, else where they first differ:
// "line 12: 'a' vs 'b'" (a line that one of them lacks reads "(none)").
std::string first_difference(const std::vector<std::string>& actual,
                             const std::vector<std::string>& expected);

}  // namespace tpujobs::testing
