#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "executor/executor.h"
#include "executor/worker_pool.h"
#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

using fakes::activation;
using fakes::FakeClock;
using fakes::linear;
using fakes::MapDatasets;
using fakes::RecordingSink;
using fakes::small_spec;
using fakes::tied_linear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TrainingSpec digits_spec(int cores, int batch_per_core) {
  TrainingSpec spec;
  spec.model.layers = {linear(128), activation(LayerType::kRelu), linear(10)};
  spec.data.source = BuiltinData{"digits"};
  spec.data.batch_size = batch_per_core;
  spec.data.val_fraction = 0.2;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 1e-3;
  spec.max_epochs = 20;
  spec.world_size = cores;
  spec.on_tpu = true;
  return spec;
}

// Unoptimized Eigen (the Debug sanitizer preset) is ~100x slower: the full
// 20-epoch digits runs would take minutes there, so only optimized builds run them.
#ifdef __OPTIMIZE__
#define SKIP_IF_UNOPTIMIZED()
#else
#define SKIP_IF_UNOPTIMIZED() GTEST_SKIP() << "20-epoch runs need an optimized build"
#endif

std::string describe(const TrainingResult& result) {
  return result.error ? result.error->type + ": " + result.error->message : "no error";
}

class TrainerTest : public ::testing::Test {
 protected:
  TrainingResult run(const TrainingSpec& spec, RecordingSink& sink, RunControl control = {}) {
    return train(spec, DeviceFacts{}, pool_, datasets_, sink, control);
  }
  TrainingResult run(const TrainingSpec& spec) {
    RecordingSink sink;
    return run(spec, sink);
  }
  // A run on `clock`'s time, expected to succeed.
  TrainingResult run_succeeding(const TrainingSpec& spec, RecordingSink& sink, FakeClock& clock,
                                const Checkpoint* resume = nullptr) {
    RunControl control;
    control.clock = &clock;
    control.resume = resume;
    TrainingResult result = run(spec, sink, control);
    EXPECT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
    return result;
  }
  WorkerPool pool_{2};
  MapDatasets datasets_;
};

TEST_F(TrainerTest, DigitsMlpReachesAccuracyOnOneCoreAndOnEightAtTheSameGlobalBatch) {
  SKIP_IF_UNOPTIMIZED();
  const TrainingResult one = run(digits_spec(1, 64));
  ASSERT_EQ(one.outcome, Outcome::kSucceeded) << describe(one);
  EXPECT_GE(one.final_metrics.at("val_accuracy"), 0.96);
  EXPECT_EQ(one.steps, 20 * 23);  // 1438 training samples in batches of 64
  // 8 cores x 8 per core read, step by step, the same 64 samples as 1 core x 64.
  const TrainingResult eight = run(digits_spec(8, 8));
  ASSERT_EQ(eight.outcome, Outcome::kSucceeded) << describe(eight);
  EXPECT_GE(eight.final_metrics.at("val_accuracy"), 0.96);
  EXPECT_EQ(eight.steps, 20 * 23);
  EXPECT_NEAR(eight.final_metrics.at("val_accuracy"), one.final_metrics.at("val_accuracy"), 0.006);
}

TEST_F(TrainerTest, EightCoresWithBatch64PerCoreTakeEightTimesFewerSteps) {
  SKIP_IF_UNOPTIMIZED();
  // Lightning semantics: batch_size is per core, so the global batch is 512
  // and 20 epochs are 60 optimizer steps.
  const TrainingResult result = run(digits_spec(8, 64));
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_EQ(result.steps, 20 * 3);
  EXPECT_GT(result.final_metrics.at("val_accuracy"), 0.8);
}

TEST_F(TrainerTest, SameSeedGivesBitIdenticalParameters) {
  TrainingSpec spec = small_spec();
  spec.model.layers.insert(spec.model.layers.begin() + 2, activation(LayerType::kDropout, 0.2));
  spec.world_size = 4;
  const TrainingResult a = run(spec), b = run(spec);
  ASSERT_EQ(a.outcome, Outcome::kSucceeded) << describe(a);
  EXPECT_EQ(a.parameters_digest, b.parameters_digest);
  EXPECT_EQ(a.final_metrics.at("val_loss"), b.final_metrics.at("val_loss"));
  spec.seed = 43;
  EXPECT_NE(run(spec).parameters_digest, a.parameters_digest);
}

// Wide enough that the matrix products run as panels on the pool (see
// executor/gemm.h), with the reductions of layernorm and of the loss, dropout,
// and Adam: everything whose bits could depend on threads or addresses.
TrainingSpec wide_spec(int world_size) {
  TrainingSpec spec = small_spec();
  spec.data.source = SyntheticData{SyntheticKind::kBlobs, 600, 48, 5, 0.5};
  spec.model.layers = {linear(512),
                       activation(LayerType::kLayerNorm),
                       activation(LayerType::kGelu),
                       activation(LayerType::kDropout, 0.1),
                       linear(512),
                       activation(LayerType::kRelu),
                       linear(5)};
  spec.data.batch_size = 64;
  spec.world_size = world_size;
  spec.max_epochs = -1;
  spec.max_steps = 6;
  spec.checkpoint_every_n_steps = 2;
  return spec;
}

TEST_F(TrainerTest, SameSeedIsBitIdenticalForEveryPoolSize) {
  for (int world_size : {1, 3}) {
    const TrainingSpec spec = wide_spec(world_size);
    std::string expected;
    for (int threads : {1, 2, 3}) {
      WorkerPool pool(threads);
      RecordingSink sink;
      const TrainingResult result = train(spec, DeviceFacts{}, pool, datasets_, sink, RunControl{});
      ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
      ASSERT_EQ(result.steps, 6);
      if (expected.empty()) expected = result.parameters_digest;
      EXPECT_EQ(result.parameters_digest, expected)
          << world_size << " replicas on " << threads << " threads";
      // And again on the same pool, after the heap has moved on.
      EXPECT_EQ(run(spec).parameters_digest, expected) << world_size << " replicas, rerun";
    }
  }
}

TEST_F(TrainerTest, ResumingOnAnotherPoolSizeIsBitIdentical) {
  const TrainingSpec spec = wide_spec(2);
  RecordingSink sink;
  const TrainingResult uninterrupted = run(spec, sink);  // 2 threads
  ASSERT_EQ(uninterrupted.outcome, Outcome::kSucceeded) << describe(uninterrupted);
  ASSERT_EQ(sink.checkpoints.size(), 3u);  // steps 2 and 4, and the end
  for (int threads : {1, 3}) {
    WorkerPool pool(threads);
    for (std::size_t i = 0; i + 1 < sink.checkpoints.size(); ++i) {
      RecordingSink resumed_sink;
      RunControl control;
      control.resume = &sink.checkpoints[i];
      const TrainingResult resumed =
          train(spec, DeviceFacts{}, pool, datasets_, resumed_sink, control);
      ASSERT_EQ(resumed.outcome, Outcome::kSucceeded) << describe(resumed);
      EXPECT_EQ(resumed.parameters_digest, uninterrupted.parameters_digest)
          << "from step " << sink.checkpoints[i].step << " on " << threads << " threads";
    }
  }
}

TEST_F(TrainerTest, ResumingFromAnyCheckpointIsBitIdentical) {
  TrainingSpec spec = small_spec();
  spec.model.layers = {linear(12), activation(LayerType::kLayerNorm), activation(LayerType::kGelu),
                       activation(LayerType::kDropout, 0.1), linear(3)};
  spec.world_size = 3;
  spec.data.batch_size = 8;  // 120 train samples: 40 per replica -> 5 batches
  spec.accumulate_grad_batches = 2;
  spec.gradient_clip_val = 0.5;
  spec.precision = Precision::kBf16;
  spec.optimizer.type = OptimizerType::kAdamW;
  spec.optimizer.weight_decay = 0.01;
  spec.max_epochs = 3;
  spec.checkpoint_every_n_steps = 2;
  RecordingSink sink;
  const TrainingResult uninterrupted = run(spec, sink);
  ASSERT_EQ(uninterrupted.outcome, Outcome::kSucceeded) << describe(uninterrupted);
  EXPECT_EQ(uninterrupted.steps, 9);  // 3 optimizer steps per epoch
  // Every 2 steps mid-epoch, and at each epoch end.
  std::vector<std::int64_t> steps;
  for (const Checkpoint& checkpoint : sink.checkpoints) steps.push_back(checkpoint.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{2, 3, 4, 6, 8, 9}));
  for (const Checkpoint& checkpoint : sink.checkpoints) {
    RecordingSink resumed_sink;
    RunControl control;
    control.resume = &checkpoint;
    const TrainingResult resumed = run(spec, resumed_sink, control);
    ASSERT_EQ(resumed.outcome, Outcome::kSucceeded) << describe(resumed);
    EXPECT_EQ(resumed.parameters_digest, uninterrupted.parameters_digest)
        << "from step " << checkpoint.step;
    EXPECT_EQ(resumed.steps, uninterrupted.steps);
    EXPECT_EQ(resumed.final_metrics.at("val_loss"), uninterrupted.final_metrics.at("val_loss"));
    EXPECT_EQ(resumed.final_metrics.at("loss"), uninterrupted.final_metrics.at("loss"));
    EXPECT_FALSE(resumed_sink.lines_with("Restoring states from the checkpoint at step").empty());
  }
}

// A sink that keeps every checkpoint it is handed, as the service's
// telemetry writer does until it has stored one, and a copy of what each
// held when it arrived.
class HoldingSink : public RecordingSink {
 public:
  void checkpoint(std::shared_ptr<const Checkpoint> checkpoint) override {
    RecordingSink::checkpoint(checkpoint);
    held.push_back(std::move(checkpoint));
  }
  std::vector<std::shared_ptr<const Checkpoint>> held;
};

TEST_F(TrainerTest, ACheckpointTheSinkStillHoldsIsNeverOverwritten) {
  // The trainer encodes a checkpoint into the last one's bytes once the
  // sink has let go of them (no fresh pages for a large model's state),
  // never while the sink holds them.
  TrainingSpec spec = small_spec();
  spec.max_epochs = 3;
  spec.checkpoint_every_n_steps = 2;
  HoldingSink holding;
  ASSERT_EQ(run(spec, holding).outcome, Outcome::kSucceeded);
  ASSERT_GE(holding.held.size(), 3u);
  for (std::size_t i = 0; i < holding.held.size(); ++i) {
    EXPECT_EQ(holding.held[i]->step, holding.checkpoints[i].step);
    EXPECT_TRUE(holding.held[i]->bytes == holding.checkpoints[i].bytes)
        << "checkpoint " << i << " (step " << holding.checkpoints[i].step
        << ") changed after the sink got it";
  }
}

// A sink that is still storing the checkpoint it was handed until the
// trainer has made `busy_for` more steps (as the service's telemetry writer
// is, for epochs shorter than a database write).
class SlowStoringSink : public RecordingSink {
 public:
  explicit SlowStoringSink(std::int64_t busy_for) : busy_for_(busy_for) {}
  void checkpoint(std::shared_ptr<const Checkpoint> checkpoint) override {
    RecordingSink::checkpoint(checkpoint);
    stored_at_ = checkpoint->step + busy_for_;
  }
  bool ready_for_checkpoint() override {
    ++asked;
    return last_progress.step >= stored_at_;
  }
  int asked = 0;

 private:
  std::int64_t busy_for_;
  std::int64_t stored_at_ = 0;
};

TEST_F(TrainerTest, CheckpointsTheSinkIsNotReadyForAreSkippedButTheLastIsAlwaysEmitted) {
  TrainingSpec spec = small_spec();
  spec.max_epochs = 6;  // 1 optimizer step an epoch (a batch of 120 samples)
  spec.data.batch_size = 120;
  spec.checkpoint_every_n_steps = 0;
  RecordingSink every;
  const TrainingResult reference = run(spec, every);
  ASSERT_EQ(reference.outcome, Outcome::kSucceeded) << describe(reference);
  std::vector<std::int64_t> steps;
  for (const Checkpoint& c : every.checkpoints) steps.push_back(c.step);
  ASSERT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));

  // Busy for 2 steps after each: the epochs ending meanwhile are skipped,
  // the last one is not, and training is the same.
  SlowStoringSink slow(2);
  const TrainingResult result = run(spec, slow);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_EQ(result.parameters_digest, reference.parameters_digest);
  steps.clear();
  for (const Checkpoint& c : slow.checkpoints) steps.push_back(c.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 3, 5, 6}));
  EXPECT_EQ(slow.asked, 5) << "asked before every checkpoint but the last";
  // What it stored resumes to the same end.
  for (const Checkpoint& checkpoint : slow.checkpoints) {
    RecordingSink resumed_sink;
    RunControl control;
    control.resume = &checkpoint;
    EXPECT_EQ(run(spec, resumed_sink, control).parameters_digest, reference.parameters_digest)
        << "from step " << checkpoint.step;
  }

  // Never ready: only the last epoch's.
  SlowStoringSink never(1000);
  ASSERT_EQ(run(spec, never).outcome, Outcome::kSucceeded);
  ASSERT_EQ(never.checkpoints.size(), 2u);  // the first one asked (then busy), and the last
  EXPECT_EQ(never.checkpoints.back().step, 6);
}

TEST_F(TrainerTest, ResumeRefusesAnotherRunsCheckpoint) {
  TrainingSpec spec = small_spec();
  RecordingSink sink;
  ASSERT_EQ(run(spec, sink).outcome, Outcome::kSucceeded);
  ASSERT_FALSE(sink.checkpoints.empty());
  spec.world_size = 2;
  RunControl control;
  control.resume = &sink.checkpoints.front();
  const TrainingResult result = run(spec, sink, control);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "INVALID_ARGUMENT");
  EXPECT_THAT(result.error->message, HasSubstr("another model, seed or world size"));
  Checkpoint corrupted = sink.checkpoints.front();
  corrupted.bytes[corrupted.bytes.size() / 2] ^= 1;
  control.resume = &corrupted;
  spec.world_size = 1;
  EXPECT_THAT(run(spec, sink, control).error->message, HasSubstr("checksum"));
}

class CancellingSink : public RecordingSink {
 public:
  void progress(const Progress& progress) override {
    RecordingSink::progress(progress);
    if (progress.step == 3) cancel = true;
  }
  std::atomic<bool> cancel{false};
};

// Ten jobs started together on one pool: each sink's first log line waits
// until all ten have one (they are then all sharing the pool), and every
// step any job reports is a sample of all ten jobs' progress.
class TenJobsRace {
 public:
  static constexpr int kJobs = 10;

  class Sink : public RecordingSink {
   public:
    Sink(TenJobsRace& race, int job) : race_(race), job_(job) {}
    void log(std::string_view line) override {
      if (lines.empty()) race_.arrive();
      RecordingSink::log(line);
    }
    void progress(const Progress& progress) override {
      RecordingSink::progress(progress);
      race_.sample(job_, progress);
    }

   private:
    TenJobsRace& race_;
    int job_;
  };

  void arrive() {
    std::unique_lock lock(mutex_);
    ++arrived_;
    all_arrived_.notify_all();
    // A generous bound on how long ten job threads take to start.
    if (!all_arrived_.wait_for(lock, std::chrono::minutes(1), [&] { return arrived_ == kJobs; })) {
      unfair_.push_back("not all jobs started");
    }
  }
  void sample(int job, const Progress& progress) {
    std::lock_guard lock(mutex_);
    done_[job] = static_cast<double>(progress.step) / static_cast<double>(progress.total_steps);
    ++samples_;
    const auto [slowest, fastest] = std::minmax_element(std::begin(done_), std::end(done_));
    // At least half, with one step of slack for the turns running right now.
    const double one_step = 1.0 / static_cast<double>(progress.total_steps);
    if (*slowest + one_step < *fastest / 2 && unfair_.size() < 5) {
      std::string line =
          "job " + std::to_string(job) + " at step " + std::to_string(progress.step) + ": progress";
      for (double d : done_) line += " " + std::to_string(d);
      unfair_.push_back(line);
    }
  }
  std::vector<std::string> unfair() {
    std::lock_guard lock(mutex_);
    return unfair_;
  }
  int samples() {
    std::lock_guard lock(mutex_);
    return samples_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  double done_[kJobs] = {};
  int samples_ = 0;
  std::vector<std::string> unfair_;
};

TEST_F(TrainerTest, TenJobsStartedTogetherProgressAlike) {
  // Digits steps are tiny (they run on the job's own thread): without turns,
  // whichever threads the OS runs first would take hundreds of steps while
  // others wait for their first.
  TrainingSpec spec = digits_spec(1, 64);
  spec.max_epochs = 3;
  TenJobsRace race;
  std::vector<std::unique_ptr<TenJobsRace::Sink>> sinks;
  std::vector<TrainingResult> results(TenJobsRace::kJobs);
  for (int job = 0; job < TenJobsRace::kJobs; ++job)
    sinks.push_back(std::make_unique<TenJobsRace::Sink>(race, job));
  std::vector<std::thread> jobs;
  for (int job = 0; job < TenJobsRace::kJobs; ++job) {
    jobs.emplace_back([&, job] {
      results[job] = train(spec, DeviceFacts{}, pool_, datasets_, *sinks[job], RunControl{});
    });
  }
  for (std::thread& thread : jobs) thread.join();
  for (const TrainingResult& result : results) {
    ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
    EXPECT_EQ(result.steps, 3 * 23);
  }
  EXPECT_EQ(race.samples(), TenJobsRace::kJobs * 3 * 23);
  EXPECT_THAT(race.unfair(), ::testing::IsEmpty())
      << "the slowest job fell below half the fastest's progress";
}

TEST_F(TrainerTest, CancelStopsWithinOneStep) {
  CancellingSink sink;
  RunControl control;
  control.cancel = &sink.cancel;
  const TrainingResult result = run(small_spec(), sink, control);
  EXPECT_EQ(result.outcome, Outcome::kCancelled);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "CANCELLED");
  EXPECT_EQ(result.steps, 3);
  EXPECT_THAT(sink.lines_with("stopping before step"),
              ElementsAre("Job cancelled: stopping before step 4 (epoch 0)"));
}

// A run stopped for a host failure or a preemption says so, not "cancelled".
TEST_F(TrainerTest, StopForAnotherReasonSaysWhyInTheLog) {
  CancellingSink sink;
  RunControl control;
  control.cancel = &sink.cancel;
  control.stop_reason = [] { return std::string("a host of its slice failed"); };
  const TrainingResult result = run(small_spec(), sink, control);
  EXPECT_EQ(result.outcome, Outcome::kCancelled);
  EXPECT_EQ(result.steps, 3);
  EXPECT_THAT(
      sink.lines_with("stopping before step"),
      ElementsAre("Job stopped, a host of its slice failed: stopping before step 4 (epoch 0)"));
  EXPECT_THAT(sink.lines_with("cancelled"), ::testing::IsEmpty());
}

TEST_F(TrainerTest, TimeoutEndsWithDeadlineExceeded) {
  TrainingSpec spec = small_spec();
  spec.max_epochs = 1000;
  spec.timeout = std::chrono::seconds(10);
  FakeClock clock(std::chrono::milliseconds(250));  // every now() moves time on
  RecordingSink sink;
  RunControl control;
  control.clock = &clock;
  const TrainingResult result = run(spec, sink, control);
  EXPECT_EQ(result.outcome, Outcome::kFailed);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "DEADLINE_EXCEEDED");
  EXPECT_THAT(result.error->message, HasSubstr("timeout of 10s"));
  EXPECT_GT(result.steps, 0);
  EXPECT_LT(result.steps, 100);
}

TEST_F(TrainerTest, NonFiniteLossIsANumericalErrorNamingTheStep) {
  TrainingSpec spec = small_spec();
  spec.optimizer.type = OptimizerType::kSgd;
  spec.optimizer.lr = 1e30;
  const TrainingResult result = run(spec);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "NUMERICAL_ERROR");
  EXPECT_THAT(result.error->message,
              ::testing::MatchesRegex("the training loss is (nan|inf) at step [0-9]+ .*"));
  EXPECT_THAT(result.error->hint, HasSubstr("gradient_clip_val"));
}

TEST_F(TrainerTest, ExpectGatesNameMetricValueAndBound) {
  TrainingSpec spec = small_spec();
  spec.expect["val_accuracy"] = Bound{0.5, std::nullopt};
  EXPECT_EQ(run(spec).outcome, Outcome::kSucceeded);
  spec.expect["val_accuracy"] = Bound{1.01, std::nullopt};
  const TrainingResult result = run(spec);
  EXPECT_EQ(result.outcome, Outcome::kFailed);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "EXPECTATION_FAILED");
  EXPECT_THAT(result.error->message,
              ::testing::MatchesRegex("val_accuracy = 0\\.[0-9]+ is below the minimum 1\\.01"));
  spec.expect.clear();
  spec.expect["loss"] = Bound{std::nullopt, 1e-9};
  EXPECT_THAT(run(spec).error->message, HasSubstr("is above the maximum 1e-09"));
}

TEST_F(TrainerTest, TiedWeightsStayTiedAndLightning1xWarns) {
  TrainingSpec spec = small_spec();
  spec.model.layers = {linear(6), activation(LayerType::kTanh), tied_linear(0)};  // 4 -> 6 -> 4
  spec.on_tpu = true;
  spec.lightning_v1 = true;
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_EQ(sink.lines_with("Layer count: [Before: 3 After: 4]").size(), 1u);
  EXPECT_EQ(
      sink.lines_with("The model layers do not match after moving to the target device").size(),
      1u);
  ASSERT_FALSE(result.warnings.empty());
  EXPECT_EQ(sink.lines_with("Total params").front(), "34        Total params");  // 4*6+6 + 4
  spec.lightning_v1 = false;
  RecordingSink quiet;
  run(spec, quiet);
  EXPECT_TRUE(quiet.lines_with("Layer count").empty());
}

// lightning/ picks the lines (tests/lightning: DeviceInfoLinesAreThoseOfTheRelease).
TEST_F(TrainerTest, DeviceLinesAreTheReleasesOwn) {
  // lightning/ resolves _log_device_info's lines per release; the trainer
  // prints them first, as Lightning does at fit start.
  TrainingSpec spec = small_spec();
  spec.device_info = {"GPU available: False, used: False",
                      "TPU available: True, using: 8 TPU cores",
                      "HPU available: False, using: 0 HPUs"};
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  ASSERT_GE(sink.lines.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(sink.lines.begin(), sink.lines.begin() + 3), spec.device_info);
  EXPECT_TRUE(sink.lines_with("IPU available").empty());
}

TEST_F(TrainerTest, LogsReadLikeLightningOnATpuHost) {
  TrainingSpec spec = small_spec();
  spec.world_size = 8;
  spec.devices_per_host = 8;
  spec.on_tpu = true;
  spec.data.batch_size = 8;
  spec.device_info = {"GPU available: False, used: False",
                      "TPU available: True, using: 8 TPU cores"};
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_EQ(sink.lines[0], "GPU available: False, used: False");
  EXPECT_EQ(sink.lines[1], "TPU available: True, using: 8 TPU cores");
  EXPECT_EQ(sink.lines_with("  | Name     | Type   | Params").size(), 1u);
  EXPECT_EQ(sink.lines_with("Trainable params").size(), 1u);
  const auto epochs = sink.lines_with("Epoch ");
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_THAT(epochs[2],
              ::testing::MatchesRegex("Epoch 2: 100%\\|██████████\\| 2/2 \\[.*, loss=[0-9.e-]+, "
                                      "val_loss=[0-9.e-]+, val_accuracy=[0-9.]+\\]"));
  EXPECT_EQ(sink.lines.back(), "`Trainer.fit` stopped: `max_epochs=3` reached.");
  EXPECT_EQ(sink.lines_with("HBM per core").size(), 1u);
}

TEST_F(TrainerTest, MetricsEveryLogIntervalAndAtValidation) {
  TrainingSpec spec = small_spec();  // 120 samples, batch 16: 8 steps per epoch, 24 in all
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_EQ(result.steps, 24);
  std::vector<std::int64_t> loss_steps, validation_steps;
  for (const MetricPoint& point : sink.points) {
    if (point.values.count("loss")) {
      loss_steps.push_back(point.step);
      EXPECT_TRUE(point.values.count("samples_per_sec") && point.values.count("lr"));
    }
    if (point.values.count("val_accuracy")) validation_steps.push_back(point.step);
  }
  EXPECT_EQ(loss_steps, (std::vector<std::int64_t>{5, 10, 15, 20}));
  EXPECT_EQ(validation_steps, (std::vector<std::int64_t>{8, 16, 24}));
  EXPECT_EQ(sink.progress_calls, 24);
  EXPECT_THAT(result.xla_report, HasSubstr("Counter: aten::_local_scalar_dense\n  Value: 18\n"));
}

// Under PT_XLA_DEBUG torch_xla runs its analyses after every mark_step
// (init_python_bindings.cpp StepMarker) and prints only those that fire
// (xla_metrics_test covers each analysis); XLA_METRICS_FILE=STDOUT prints
// the report after every step (debug/metrics_saver.py).
TEST_F(TrainerTest, PtXlaDebugAndMetricsFileFollowEachStep) {
  TrainingSpec spec = small_spec();  // 120 samples, batch 16: 8 steps per epoch, 24 in all
  spec.xla_debug = true;
  spec.max_epochs = 2;
  RecordingSink sink;
  run(spec, sink);
  // Two graphs in 16 steps never fire; XLA_METRICS_FILE is off.
  EXPECT_TRUE(sink.lines_with("pt-xla-profiler").empty());
  EXPECT_TRUE(sink.lines_with("[MetricsData").empty());

  spec.xla_metrics_file = "STDOUT";
  RecordingSink saved;
  run(spec, saved);
  const auto headers = saved.lines_with("[MetricsData; step=");
  ASSERT_EQ(headers.size(), 16u);
  EXPECT_EQ(headers.front(), "[MetricsData; step=0]");
  EXPECT_EQ(headers.back(), "[MetricsData; step=15]");
  EXPECT_EQ(saved.lines_with("Counter: MarkStep").size(), 16u);
}

TEST_F(TrainerTest, LastPartialBatchCompilesASecondGraph) {
  TrainingSpec spec = small_spec();  // 120 samples in batches of 16: the last has 8
  spec.xla_debug = true;
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  EXPECT_THAT(result.xla_report, HasSubstr("Counter: UncachedCompile\n  Value: 2\n"));
  EXPECT_THAT(result.xla_report, HasSubstr("Metric: CompileTime\n  TotalSamples: 2\n"));
  EXPECT_THAT(result.xla_report, HasSubstr("Counter: CachedCompile\n  Value: 22\n"));
  // PT_XLA_DEBUG prints analyses, not the report; two compiles in 24 steps:
  // torch_xla's analysis (more than one per two steps, after 10 steps) stays
  // quiet.
  EXPECT_TRUE(sink.lines_with("Metric: CompileTime").empty());
  EXPECT_TRUE(sink.lines_with("pt-xla-profiler").empty());
  spec.data.drop_last = true;
  spec.xla_debug = false;
  RecordingSink quiet;
  const TrainingResult dropped = run(spec, quiet);
  EXPECT_THAT(dropped.xla_report, HasSubstr("Counter: UncachedCompile\n  Value: 1\n"));
  EXPECT_TRUE(quiet.lines_with("Metric: CompileTime").empty());
  EXPECT_TRUE(quiet.lines_with("pt-xla-profiler").empty());
}

TEST_F(TrainerTest, TooLargeForHbmFailsAtStartWithoutAllocating) {
  TrainingSpec spec = small_spec();
  spec.model.layers = {linear(60000), linear(60000), linear(3)};  // 3.6e9 parameters
  spec.on_tpu = true;
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "RESOURCE_EXHAUSTED");
  EXPECT_THAT(result.error->message,
              ::testing::StartsWith("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out "
                                    "of memory in memory space hbm. Used 53.80G of 15.48G hbm. "
                                    "Exceeded hbm capacity by 38.32G.\n\nTotal hbm usage >= "));
  EXPECT_FALSE(result.error->hint.empty());
  EXPECT_EQ(result.steps, 0);
}

TEST_F(TrainerTest, TooManyEmulatedCoresForHostMemoryFailsAtStart) {
  TrainingSpec spec = small_spec();
  spec.model.layers = {linear(20000), linear(20000), linear(3)};  // 4e8 parameters
  spec.world_size = 8;
  const TrainingResult result = run(spec);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "RESOURCE_EXHAUSTED");
  EXPECT_THAT(result.error->message, HasSubstr("GiB of host memory"));
}

TEST_F(TrainerTest, BadDatasetOrModelIsInvalidArgument) {
  TrainingSpec spec = small_spec();
  spec.data.source = UploadedData{"ds_missing"};
  EXPECT_EQ(run(spec).error->message, "no uploaded dataset 'ds_missing'");
  datasets_.uploads["ds_1"] = "a,b,label\n1,2,0\n3,4,7\n5,6,1\n";
  spec.data.source = UploadedData{"ds_1"};
  const TrainingResult result = run(spec);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->type, "INVALID_ARGUMENT");
  EXPECT_EQ(result.error->message,
            "the model's last layer has 3 outputs but the dataset has 8 classes (labels up to 7)");
}

TEST_F(TrainerTest, RegressionOnSyntheticDataLearns) {
  TrainingSpec spec = small_spec();
  spec.data.source = SyntheticData{SyntheticKind::kRegression, 600, 8, 0, 0.05};
  spec.model.layers = {linear(16), activation(LayerType::kTanh), linear(1)};
  spec.model.loss = Loss::kMse;
  spec.max_epochs = 15;
  spec.world_size = 2;
  const TrainingResult result = run(spec);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_LT(result.final_metrics.at("val_loss"), 0.1);  // targets have variance ~1
  EXPECT_EQ(result.final_metrics.count("val_accuracy"), 0u);
}

TEST_F(TrainerTest, MaxStepsStopsMidEpochAndValidates) {
  TrainingSpec spec = small_spec();
  spec.max_epochs = -1;
  spec.max_steps = 11;
  RecordingSink sink;
  const TrainingResult result = run(spec, sink);
  ASSERT_EQ(result.outcome, Outcome::kSucceeded) << describe(result);
  EXPECT_EQ(result.steps, 11);
  EXPECT_EQ(sink.lines.back(), "`Trainer.fit` stopped: `max_steps=11` reached.");
  EXPECT_EQ(result.final_metrics.count("val_accuracy"), 1u);
}

TEST_F(TrainerTest, EstimateDescribesTheJob) {
  TrainingSpec spec = digits_spec(8, 64);
  auto estimated = estimate(spec, DeviceFacts{}, datasets_);
  ASSERT_TRUE(estimated.ok()) << estimated.error().message;
  const Estimate& e = *estimated;
  EXPECT_EQ(e.input_features, 64);
  EXPECT_EQ(e.classes, 10);
  EXPECT_EQ(e.train_samples, 1438);
  EXPECT_EQ(e.steps_per_epoch, 3);
  EXPECT_EQ(e.total_steps, 60);
  EXPECT_TRUE(e.hbm.fits);
  EXPECT_GT(e.estimated_step_seconds, 0);
  EXPECT_FALSE(e.advice.empty());  // batch 64 < 128, widths not multiples of 128
  spec.data.source = BuiltinData{"nope"};
  EXPECT_EQ(estimate(spec, DeviceFacts{}, datasets_).error().type, "INVALID_ARGUMENT");
}

// The dry run's refusals name the spec field to change (the API's problem
// answer shows it), whatever their message says.
TEST_F(TrainerTest, EstimateErrorsNameTheFieldToChange) {
  auto field_of = [&](const TrainingSpec& spec) {
    auto estimated = estimate(spec, DeviceFacts{}, datasets_);
    if (estimated.ok()) return std::string("(no error)");
    const std::vector<base::FieldError>& fields = estimated.error().fields;
    return fields.empty() ? std::string("(no field)") : fields.front().field;
  };
  TrainingSpec spec = digits_spec(8, 64);
  spec.data.source = BuiltinData{"nope"};
  EXPECT_EQ(field_of(spec), "data.dataset");
  spec = digits_spec(8, 64);
  spec.model.layers.back().out = 3;  // 10 classes
  EXPECT_EQ(field_of(spec), "model.layers");
  spec = digits_spec(8, 64);
  spec.data.batch_size = 100000;
  spec.data.drop_last = true;
  EXPECT_EQ(field_of(spec), "data.batch_size");
}

// Lightning's max_epochs=-1 with max_steps=-1 trains without end: the dry
// run accepts it, with no total, and the run goes on until it is stopped.
TEST_F(TrainerTest, UnlimitedEpochsAndStepsTrainUntilCancelled) {
  TrainingSpec spec = digits_spec(8, 64);
  spec.max_epochs = -1;
  spec.max_steps = -1;
  auto estimated = estimate(spec, DeviceFacts{}, datasets_);
  ASSERT_TRUE(estimated.ok()) << estimated.error().message;
  EXPECT_EQ(estimated->total_steps, -1);

  // A sink that cancels the job once it has seen step 50 (iris: 8 steps an epoch).
  struct CancellingSink : RecordingSink {
    std::atomic<bool> cancel{false};
    void progress(const Progress& progress) override {
      RecordingSink::progress(progress);
      if (progress.step >= 50) cancel = true;
    }
  } sink;
  spec = small_spec();
  spec.max_epochs = -1;
  spec.max_steps = -1;
  RunControl control;
  control.cancel = &sink.cancel;
  const TrainingResult result = run(spec, sink, control);
  EXPECT_EQ(result.outcome, Outcome::kCancelled) << describe(result);
  EXPECT_EQ(result.steps, 50);
  EXPECT_EQ(sink.last_progress.total_steps, -1);
  EXPECT_EQ(sink.last_progress.max_epochs, -1);
  EXPECT_EQ(sink.lines_with("Epoch ").size(), 6u);  // epochs 0-5 ended, 6 was cut short
  EXPECT_THAT(sink.lines_with("`Trainer.fit` stopped"), ::testing::IsEmpty());
}

// The Timer's line, as a job that stopped after `elapsed` logs it.
std::vector<std::string> timer_stopped_after(const std::string& elapsed) {
  return {"Time limit reached. Elapsed time is " + elapsed + ". Signaling Trainer to stop."};
}

// max_time (Lightning's Timer, interval "step"): after the step at which the
// training time reaches it, the fit stops as at max_steps (the epoch's end,
// a validation, a final checkpoint) and succeeds; the Timer logs its line
// and the fit loop none of its own. Time is the FakeClock's: every read
// moves it 1 ms on, so where it stops is deterministic.
TEST_F(TrainerTest, MaxTimeStopsAfterAStepWithAFinalCheckpoint) {
  TrainingSpec spec = small_spec();
  spec.max_epochs = -1;
  spec.max_time = std::chrono::seconds(2);
  FakeClock clock(std::chrono::milliseconds(1));
  RecordingSink sink;
  const TrainingResult result = run_succeeding(spec, sink, clock);
  EXPECT_GT(result.steps, 8);  // past the first epoch
  EXPECT_EQ(sink.lines_with("Time limit reached"), timer_stopped_after("0:00:02"));
  EXPECT_THAT(sink.lines_with("`Trainer.fit` stopped"), ::testing::IsEmpty());
  ASSERT_FALSE(sink.checkpoints.empty());
  EXPECT_EQ(sink.checkpoints.back().step, result.steps);
  EXPECT_EQ(result.final_metrics.count("val_accuracy"), 1u);
  EXPECT_THAT(sink.lines.back(), HasSubstr("Epoch "));

  // The checkpoint keeps the training time (the Timer's state): resumed with
  // the same max_time, the fit stops before its first step (on_fit_start);
  // with twice as much, it trains on and stops at 4 s of training in all.
  FakeClock later(std::chrono::milliseconds(1));
  RecordingSink resumed_sink;
  TrainingResult resumed = run_succeeding(spec, resumed_sink, later, &sink.checkpoints.back());
  EXPECT_EQ(resumed.steps, result.steps);
  EXPECT_EQ(resumed_sink.lines_with("Time limit reached"), timer_stopped_after("0:00:02"));
  spec.max_time = std::chrono::seconds(4);
  RecordingSink longer_sink;
  resumed = run_succeeding(spec, longer_sink, later, &sink.checkpoints.back());
  EXPECT_GT(resumed.steps, result.steps);
  EXPECT_EQ(longer_sink.lines_with("Time limit reached"), timer_stopped_after("0:00:04"));
}

// A zero duration is reached at on_fit_start: no step, and the job succeeds.
TEST_F(TrainerTest, ZeroMaxTimeStopsBeforeTheFirstStep) {
  TrainingSpec spec = small_spec();
  spec.max_time = std::chrono::milliseconds(0);
  FakeClock clock;
  RecordingSink sink;
  const TrainingResult result = run_succeeding(spec, sink, clock);
  EXPECT_EQ(result.steps, 0);
  EXPECT_EQ(sink.lines_with("Time limit reached"), timer_stopped_after("0:00:00"));
}

// max_steps and max_time at the same step: the Timer's line, then the fit
// loop's max_steps line, as upstream logs them.
TEST_F(TrainerTest, MaxStepsAndMaxTimeTogetherLogBothLines) {
  TrainingSpec spec = small_spec();
  spec.max_epochs = -1;
  spec.max_steps = 1;
  spec.max_time = std::chrono::milliseconds(1);  // the first step reads the clock past it
  FakeClock clock(std::chrono::milliseconds(1));
  RecordingSink sink;
  const TrainingResult result = run_succeeding(spec, sink, clock);
  EXPECT_EQ(result.steps, 1);
  EXPECT_THAT(sink.lines_with("stop"),
              ElementsAre("Time limit reached. Elapsed time is 0:00:00. Signaling Trainer to "
                          "stop.",
                          "`Trainer.fit` stopped: `max_steps=1` reached."));
}

}  // namespace
}  // namespace tpujobs::executor
