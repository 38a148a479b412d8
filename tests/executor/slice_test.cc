// A multi-host slice split among processes (SlicePart): the same bits as the
// whole slice in one process, however the hosts are split.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "executor/executor.h"
#include "executor/slice_collective.h"
#include "executor/worker_pool.h"
#include "training_fakes.h"

namespace tpujobs::executor {
namespace {

using fakes::linear;
using fakes::MapDatasets;
using fakes::RecordingSink;

// The processes of one slice as threads: an all-gather through shared
// memory, with a deadline like the network's.
class MemoryGroup {
 public:
  explicit MemoryGroup(int size) : size_(size), parts_(size) {}

  base::Status all_gather(int rank, const float* mine, float* all,
                          const std::vector<std::size_t>& counts) {
    std::unique_lock lock(mutex_);
    const std::int64_t round = round_;
    parts_[rank].assign(mine, mine + counts[rank]);
    if (++arrived_ == size_) {
      arrived_ = 0;
      gathered_ = parts_;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait_for(lock, std::chrono::seconds(60), [&] { return round_ != round || broken_; });
      // A round that completed stands, even if a peer dropped right after it
      // (as a finished network all-gather does): only a round that never
      // completed fails.
      if (round_ == round) {
        broken_ = true;
        changed_.notify_all();
        return job_error("UNAVAILABLE", "failed to connect to all addresses");
      }
    }
    for (const std::vector<float>& part : gathered_) all = std::copy(part.begin(), part.end(), all);
    return base::Status::Ok();
  }

  void break_group() {
    std::lock_guard lock(mutex_);
    broken_ = true;
    changed_.notify_all();
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<float>> parts_, gathered_;
  int arrived_ = 0;
  std::int64_t round_ = 0;
  bool broken_ = false;
};

class MemoryCollective : public SliceCollective {
 public:
  MemoryCollective(MemoryGroup& group, int rank, int size)
      : group_(group), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  base::Status all_gather(const float* mine, float* all,
                          const std::vector<std::size_t>& counts) override {
    if (fail_at_call_ > 0 && ++calls_ >= fail_at_call_) {
      group_.break_group();
      return job_error("UNAVAILABLE", "failed to connect to all addresses");
    }
    return group_.all_gather(rank_, mine, all, counts);
  }
  int fail_at_call_ = 0;  // > 0: that call fails, as a peer that dropped

 private:
  MemoryGroup& group_;
  int rank_, size_;
  int calls_ = 0;
};

// A v3-32 slice (4 hosts of 8 cores) training on digits.
TrainingSpec v3_32_spec() {
  TrainingSpec spec;
  spec.model.layers = {linear(32), fakes::activation(LayerType::kRelu), linear(10)};
  spec.data.source = BuiltinData{"digits"};
  spec.data.batch_size = 4;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 1e-2;
  spec.max_epochs = 2;
  spec.accumulate_grad_batches = 2;
  spec.log_every_n_steps = 1;
  spec.checkpoint_every_n_steps = 3;
  spec.world_size = 32;
  spec.devices_per_host = 8;
  spec.on_tpu = true;
  return spec;
}

struct PartRun {
  TrainingResult result;
  RecordingSink sink;
};

// Runs the slice split as `hosts_per_rank` says, each part on its own
// thread (resuming from resumes[rank], when given).
std::vector<PartRun> run_split(const TrainingSpec& spec, const std::vector<int>& hosts_per_rank,
                               int fail_rank = -1, int fail_at_call = 0,
                               const std::vector<const Checkpoint*>& resumes = {}) {
  const int size = static_cast<int>(hosts_per_rank.size());
  MemoryGroup group(size);
  std::vector<std::unique_ptr<MemoryCollective>> collectives;
  std::vector<SlicePart> parts(size);
  int first = 0;
  for (int rank = 0; rank < size; ++rank) {
    collectives.push_back(std::make_unique<MemoryCollective>(group, rank, size));
    if (rank == fail_rank) collectives.back()->fail_at_call_ = fail_at_call;
    parts[rank] = SlicePart{first, hosts_per_rank[rank], hosts_per_rank, collectives.back().get()};
    first += hosts_per_rank[rank];
  }
  std::vector<PartRun> runs(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      WorkerPool workers(1);
      MapDatasets datasets;
      RunControl control;
      if (size > 1) control.slice = &parts[rank];  // one part: the whole slice here
      if (!resumes.empty()) control.resume = resumes[rank];
      runs[rank].result = train(spec, DeviceFacts{}, workers, datasets, runs[rank].sink, control);
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

std::string losses(const RecordingSink& sink) {
  std::string out;
  for (const MetricPoint& point : sink.points) {
    for (const char* name : {"loss", "val_loss", "val_accuracy"}) {
      auto it = point.values.find(name);
      if (it == point.values.end()) continue;
      char bits[32];
      std::uint64_t raw;
      std::memcpy(&raw, &it->second, sizeof raw);
      std::snprintf(bits, sizeof bits, "%016llx", static_cast<unsigned long long>(raw));
      out += std::to_string(point.step) + ":" + name + "=" + bits + " ";
    }
  }
  return out;
}

TEST(SliceTest, SplitAmongProcessesGivesTheBitsOfTheWholeSlice) {
  const TrainingSpec spec = v3_32_spec();
  const std::vector<PartRun> whole = run_split(spec, {4});
  ASSERT_EQ(whole[0].result.outcome, Outcome::kSucceeded);
  ASSERT_FALSE(whole[0].result.parameters_digest.empty());
  ASSERT_GT(whole[0].sink.points.size(), 10u);
  for (const std::vector<int>& split :
       {std::vector<int>{2, 2}, std::vector<int>{1, 1, 1, 1}, std::vector<int>{3, 1}}) {
    const std::vector<PartRun> parts = run_split(spec, split);
    for (std::size_t rank = 0; rank < parts.size(); ++rank) {
      SCOPED_TRACE("split into " + std::to_string(split.size()) + " parts, rank " +
                   std::to_string(rank));
      ASSERT_EQ(parts[rank].result.outcome, Outcome::kSucceeded);
      EXPECT_EQ(parts[rank].result.parameters_digest, whole[0].result.parameters_digest);
      EXPECT_EQ(losses(parts[rank].sink), losses(whole[0].sink));
      EXPECT_EQ(parts[rank].result.steps, whole[0].result.steps);
    }
    EXPECT_NE(parts[0].result.xla_report.find("Metric: CrossHostAllGatherTime"), std::string::npos);
  }
  EXPECT_EQ(whole[0].result.xla_report.find("CrossHost"), std::string::npos);
}

TEST(SliceTest, APeerDroppingMidRunFailsTheStepOnEveryPart) {
  const std::vector<PartRun> parts =
      run_split(v3_32_spec(), {2, 2}, /*fail_rank=*/1, /*fail_at_call=*/5);
  for (const PartRun& part : parts) {
    ASSERT_EQ(part.result.outcome, Outcome::kFailed);
    ASSERT_TRUE(part.result.error.has_value());
    EXPECT_EQ(part.result.error->type, "UNAVAILABLE");
    EXPECT_EQ(part.result.error->message, "failed to connect to all addresses");
    EXPECT_EQ(part.result.steps, 4);  // the fifth step's gather failed
  }
}

TEST(SliceTest, AResumedPartContinuesBitIdentically) {
  const TrainingSpec spec = v3_32_spec();
  const std::vector<PartRun> whole = run_split(spec, {4});
  ASSERT_EQ(whole[0].result.outcome, Outcome::kSucceeded);
  ASSERT_GE(whole[0].sink.checkpoints.size(), 2u);
  const Checkpoint* middle = &whole[0].sink.checkpoints[1];
  // The slice re-placed on two processes resumes from the one-process checkpoint.
  for (const PartRun& part : run_split(spec, {2, 2}, -1, 0, {middle, middle})) {
    ASSERT_EQ(part.result.outcome, Outcome::kSucceeded);
    EXPECT_EQ(part.result.parameters_digest, whole[0].result.parameters_digest);
  }
}

TEST(SliceTest, PartsResumedFromDifferentCheckpointsFailInsteadOfMixingSteps) {
  const TrainingSpec spec = v3_32_spec();
  const std::vector<PartRun> whole = run_split(spec, {4});
  ASSERT_GE(whole[0].sink.checkpoints.size(), 2u);
  const std::vector<PartRun> parts = run_split(
      spec, {2, 2}, -1, 0, {&whole[0].sink.checkpoints[0], &whole[0].sink.checkpoints[1]});
  for (const PartRun& part : parts) {
    const TrainingResult& result = part.result;
    ASSERT_EQ(result.outcome, Outcome::kFailed);
    EXPECT_EQ(result.error->type, "INTERNAL");
    EXPECT_NE(result.error->message.find("resumed from different checkpoints"), std::string::npos);
  }
}

}  // namespace
}  // namespace tpujobs::executor
