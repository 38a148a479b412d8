// The lines Lightning prints during fit, reproduced for a job's log.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "executor/model_shape.h"
#include "executor/spec.h"

namespace tpujobs::executor {

// Lightning's get_human_readable_count: "0", "999", "8.3 K", "21.0 M".
std::string human_readable_count(std::int64_t number);

// The model summary table Lightning prints before fit, one string per line:
//   "  | Name     | Type   | Params", a rule, one row per layer
//   ("0 | layers.0 | Linear | 8.3 K"), a rule, then "Trainable params",
//   "Non-trainable params", "Total params" and the estimated size in MB.
std::vector<std::string> model_summary(const ModelSpec& model, const ModelShape& shape);

// The final state of an epoch's progress bar, e.g.
// "Epoch 3: 100%|██████████| 23/23 [00:01<00:00, 18.52it/s, loss=0.123, val_loss=0.0912,
// val_accuracy=0.972]". `elapsed_seconds` <= 0 prints "?it/s". Values print with 3 significant
// digits.
std::string epoch_line(int epoch, std::int64_t batches, double elapsed_seconds,
                       const std::vector<std::pair<std::string, double>>& values);

// What Lightning's Timer logs (rank_zero_info) when `max_time` has passed:
// "Time limit reached. Elapsed time is 0:01:05. Signaling Trainer to stop."
// The elapsed training time prints as str(timedelta(seconds=int(elapsed))):
// "H:MM:SS", "1 day, H:MM:SS", "3 days, H:MM:SS". The same text in every
// release 1.6-2.5 (callbacks/timer.py, Timer._check_time_remaining).
std::string time_limit_line(double elapsed_seconds);

// "30m", "1h2m3s", "450ms": for messages about the timeout.
std::string format_duration_ms(std::int64_t milliseconds);

}  // namespace tpujobs::executor
