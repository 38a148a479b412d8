// A job launched on fewer than all workers of its multi-host slice
// (TrainingSpec::launch_failure, from lightning/workers.cc) fails when it is
// launched: its log shows what the launched processes print and the error,
// and it never reads its data nor takes a step.
#include <gtest/gtest.h>

#include "executor/executor.h"
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
  EXPECT_EQ("resources.workers", result.error->field);
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

}  // namespace
}  // namespace tpujobs::executor
