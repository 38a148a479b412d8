// A job launched on fewer than all workers of its multi-host slice
// (TrainingSpec::launch_failure, from lightning/workers.cc) fails when it is
// launched: its log shows what the launched processes print and the error,
// and it never reads its data nor takes a step.
#include <gtest/gtest.h>

#include "executor/executor.h"
#include "executor/slice_collective.h"
#include "executor/worker_pool.h"
#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

TrainingSpec FourHostSlice() {
  TrainingSpec spec;
  spec.model.layers = {fakes::linear(16), fakes::activation(LayerType::kRelu), fakes::linear(10)};
  spec.data.source = BuiltinData{"digits"};
  spec.world_size = 16;
  spec.devices_per_host = 4;
  spec.max_epochs = 1;
  return spec;
}

LaunchFailure OnWorkerZero() {
  return LaunchFailure{{"tpujobs: launched on worker 0 of the v5p-32 slice's 4 hosts",
                        "tpujobs: the processes on worker 0 wait for workers 1, 2, 3"},
                       "UNAVAILABLE",
                       "tpujobs: the v5p-32 slice's rendezvous failed",
                       "Launch on every worker (`--worker=all`)."};
}

TEST(Launch, FailsBeforeTheDataWithItsLinesAndError) {
  TrainingSpec spec = FourHostSlice();
  // An upload that does not exist: reading the data would fail otherwise.
  spec.data.source = UploadedData{"ds_missing"};
  spec.launch_failure = OnWorkerZero();
  WorkerPool workers(2);
  fakes::MapDatasets datasets;
  fakes::RecordingSink sink;
  const TrainingResult result = train(spec, DeviceFacts{}, workers, datasets, sink, RunControl{});
  EXPECT_EQ(Outcome::kFailed, result.outcome);
  ASSERT_TRUE(result.error);
  EXPECT_EQ("UNAVAILABLE", result.error->type);
  EXPECT_EQ("tpujobs: the v5p-32 slice's rendezvous failed", result.error->message);
  EXPECT_EQ("Launch on every worker (`--worker=all`).", result.error->hint);
  ASSERT_EQ(1u, result.error->fields.size());
  EXPECT_EQ("resources.workers", result.error->fields[0].field);
  EXPECT_EQ((std::vector<std::string>{
                "tpujobs: launched on worker 0 of the v5p-32 slice's 4 hosts",
                "tpujobs: the processes on worker 0 wait for workers 1, 2, 3",
                "UNAVAILABLE: tpujobs: the v5p-32 slice's rendezvous failed",
            }),
            sink.lines);
  EXPECT_EQ(0, result.steps);
  EXPECT_TRUE(sink.points.empty());
  EXPECT_TRUE(sink.checkpoints.empty());
}

// A part of a slice that spans processes: counts the gathers it is asked
// for; `peer_gone` answers as a network collective whose peer left.
class CountingCollective : public SliceCollective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  base::Status all_gather(const float* mine, float* all,
                          const std::vector<std::size_t>& counts) override {
    ++gathers;
    gathered_counts = counts;
    if (peer_gone) return job_error("UNAVAILABLE", "failed to connect to all addresses");
    all[0] = all[1] = *mine;
    return base::Status::Ok();
  }
  bool peer_gone = false;
  int gathers = 0;
  std::vector<std::size_t> gathered_counts;
};

// Each part meets the others once before it fails, so that none closes its
// connections while another still completes its own; a peer already gone
// changes neither the error nor the log.
TEST(Launch, APartOfASliceSpanningProcessesMeetsItsPeersThenFailsTheSame) {
  for (bool peer_gone : {false, true}) {
    TrainingSpec spec = FourHostSlice();
    spec.launch_failure = OnWorkerZero();
    CountingCollective collective;
    collective.peer_gone = peer_gone;
    SlicePart part{0, 2, {2, 2}, &collective};
    RunControl control;
    control.slice = &part;
    WorkerPool workers(2);
    fakes::MapDatasets datasets;
    fakes::RecordingSink sink;
    const TrainingResult result = train(spec, DeviceFacts{}, workers, datasets, sink, control);
    EXPECT_EQ(1, collective.gathers);
    EXPECT_EQ((std::vector<std::size_t>{1, 1}), collective.gathered_counts);
    ASSERT_TRUE(result.error);
    EXPECT_EQ("tpujobs: the v5p-32 slice's rendezvous failed", result.error->message);
    EXPECT_EQ(3u, sink.lines.size()) << sink.all_lines();
  }
}

TEST(Launch, WithoutAFailureTheSameJobTrains) {
  const TrainingSpec spec = FourHostSlice();
  WorkerPool workers(2);
  fakes::MapDatasets datasets;
  fakes::RecordingSink sink;
  const TrainingResult result = train(spec, DeviceFacts{}, workers, datasets, sink, RunControl{});
  EXPECT_EQ(Outcome::kSucceeded, result.outcome) << sink.all_lines();
  EXPECT_GT(result.steps, 0);
  EXPECT_TRUE(sink.lines_with("rendezvous").empty());
}

// A failed job's error is a base::Error: its type (what users see) decides
// the code callers branch on; message and hint pass through as given, and
// the spec field it names is its one field error, with the same texts.
TEST(JobErrorTest, ItsTypeDecidesItsCode) {
  const base::Error invalid = job_error("INVALID_ARGUMENT", "m", "h", "data.dataset");
  EXPECT_EQ(invalid.code, base::ErrorCode::kInvalid);
  EXPECT_EQ(invalid.type, "INVALID_ARGUMENT");
  EXPECT_EQ(invalid.message, "m");
  EXPECT_EQ(invalid.hint, "h");
  ASSERT_EQ(invalid.fields.size(), 1u);
  EXPECT_EQ(invalid.fields[0].field, "data.dataset");
  EXPECT_EQ(invalid.fields[0].message, "m");
  EXPECT_EQ(invalid.fields[0].hint, "h");
  for (const char* type :
       {"RESOURCE_EXHAUSTED", "NUMERICAL_ERROR", "EXPECTATION_FAILED", "DEADLINE_EXCEEDED"})
    EXPECT_EQ(job_error(type, "m").code, base::ErrorCode::kInvalid) << type;
  EXPECT_EQ(job_error("UNAVAILABLE", "m").code, base::ErrorCode::kUnavailable);
  EXPECT_EQ(job_error("CANCELLED", "m").code, base::ErrorCode::kConflict);
  EXPECT_EQ(job_error("INTERNAL", "m").code, base::ErrorCode::kInternal);
  EXPECT_EQ(job_error("SOMETHING_NEW", "m").code, base::ErrorCode::kInternal);
  EXPECT_TRUE(job_error("INTERNAL", "m").fields.empty());
}

}  // namespace
}  // namespace tpujobs::executor
