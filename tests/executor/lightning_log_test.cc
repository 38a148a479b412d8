#include "executor/lightning_log.h"

#include <gtest/gtest.h>

#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

TEST(HumanReadableCount, MatchesLightning) {
  EXPECT_EQ(human_readable_count(0), "0");
  EXPECT_EQ(human_readable_count(999), "999");
  EXPECT_EQ(human_readable_count(1000), "1.0 K");
  EXPECT_EQ(human_readable_count(9610), "9.6 K");
  EXPECT_EQ(human_readable_count(123456), "123 K");
  EXPECT_EQ(human_readable_count(21'024'778), "21.0 M");
  EXPECT_EQ(human_readable_count(3'000'000'000), "3.0 B");
}

TEST(ModelSummary, ListsLayersAndTotals) {
  ModelSpec model;
  model.layers = {fakes::linear(128), fakes::activation(LayerType::kRelu), fakes::linear(10)};
  base::Result<ModelShape> inferred = infer_shape(model, 64);
  ASSERT_TRUE(inferred.ok()) << inferred.error().message;
  const ModelShape& shape = *inferred;
  const std::vector<std::string> lines = model_summary(model, shape);
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[0], "  | Name     | Type   | Params");
  EXPECT_EQ(lines[2], "0 | layers.0 | Linear | 8.3 K");
  EXPECT_EQ(lines[3], "1 | layers.1 | ReLU   | 0");
  EXPECT_EQ(lines[4], "2 | layers.2 | Linear | 1.3 K");
  EXPECT_EQ(lines[6], "9.6 K     Trainable params");
  EXPECT_EQ(lines[7], "0         Non-trainable params");
  EXPECT_EQ(lines[8], "9.6 K     Total params");
  EXPECT_EQ(lines[9], "0.038     Total estimated model params size (MB)");
}

TEST(EpochLine, ReadsLikeTheProgressBar) {
  EXPECT_EQ(
      epoch_line(3, 23, 2.0, {{"loss", 0.1234}, {"val_accuracy", 0.97222}}),
      "Epoch 3: 100%|██████████| 23/23 [00:02<00:00, 11.50it/s, loss=0.123, val_accuracy=0.972]");
  EXPECT_EQ(epoch_line(0, 5, 0.0, {}), "Epoch 0: 100%|██████████| 5/5 [00:00<00:00, ?it/s]");
}

TEST(FormatDuration, ReadsLikeTheSpec) {
  EXPECT_EQ(format_duration_ms(450), "450ms");
  EXPECT_EQ(format_duration_ms(30 * 60 * 1000), "30m");
  EXPECT_EQ(format_duration_ms((3600 + 120 + 3) * 1000), "1h2m3s");
}

// str(timedelta(seconds=int(elapsed))), as the Timer prints it.
TEST(LightningLogTest, TimeLimitLinePrintsTheElapsedTimeAsATimedelta) {
  EXPECT_EQ(time_limit_line(0),
            "Time limit reached. Elapsed time is 0:00:00. Signaling Trainer to stop.");
  EXPECT_EQ(time_limit_line(65.9),
            "Time limit reached. Elapsed time is 0:01:05. Signaling Trainer to stop.");
  EXPECT_EQ(time_limit_line(86399.99),
            "Time limit reached. Elapsed time is 23:59:59. Signaling Trainer to stop.");
  EXPECT_EQ(time_limit_line(86400),
            "Time limit reached. Elapsed time is 1 day, 0:00:00. Signaling Trainer to stop.");
  EXPECT_EQ(time_limit_line(2 * 86400 + 3661),
            "Time limit reached. Elapsed time is 2 days, 1:01:01. Signaling Trainer to stop.");
}

}  // namespace
}  // namespace tpujobs::executor
