// Fakes for driving train() in tests: a sink that records everything, an
// in-memory upload store and a clock that tests move by hand.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/executor.h"

namespace tpujobs::executor::fakes {

class RecordingSink : public TrainingSink {
 public:
  void log(std::string_view line) override { lines.emplace_back(line); }
  void metrics(const MetricPoint& point) override { points.push_back(point); }
  void checkpoint(std::shared_ptr<const Checkpoint> checkpoint) override {
    checkpoints.push_back(*checkpoint);
  }
  void progress(const Progress& progress) override {
    ++progress_calls;
    last_progress = progress;
  }

  // Every log line containing `text`.
  std::vector<std::string> lines_with(std::string_view text) const {
    std::vector<std::string> found;
    for (const std::string& line : lines) {
      if (line.find(text) != std::string::npos) found.push_back(line);
    }
    return found;
  }
  std::string all_lines() const {
    std::string out;
    for (const std::string& line : lines) out += line + "\n";
    return out;
  }

  std::vector<std::string> lines;
  std::vector<MetricPoint> points;
  std::vector<Checkpoint> checkpoints;
  int progress_calls = 0;
  Progress last_progress;
};

class MapDatasets : public DatasetSource {
 public:
  std::optional<std::string> uploaded_csv(std::string_view id) override {
    auto it = uploads.find(std::string(id));
    if (it == uploads.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, std::string> uploads;
};

// Time advances by `tick` on every now() call (and by advance()).
using FakeClock = base::FakeClock;

inline LayerSpec linear(int out, bool bias = true) {
  LayerSpec layer;
  layer.type = LayerType::kLinear;
  layer.out = out;
  layer.bias = bias;
  return layer;
}
inline LayerSpec tied_linear(int source, bool bias = true) {
  LayerSpec layer = linear(0, bias);
  layer.tie = source;
  return layer;
}
inline LayerSpec activation(LayerType type, double p = 0.5) {
  LayerSpec layer;
  layer.type = type;
  layer.p = p;
  return layer;
}

// A small classification job on a built-in dataset, on the CPU (no HBM or
// advisor checks) unless a test sets on_tpu.
inline TrainingSpec small_spec(std::string dataset = "iris") {
  TrainingSpec spec;
  spec.model.layers = {linear(16), activation(LayerType::kRelu), linear(3)};
  spec.model.loss = Loss::kCrossEntropy;
  spec.data.source = BuiltinData{std::move(dataset)};
  spec.data.batch_size = 16;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 0.01;
  spec.max_epochs = 3;
  spec.log_every_n_steps = 5;
  spec.checkpoint_every_n_steps = 4;
  spec.world_size = 1;
  spec.on_tpu = false;
  return spec;
}

}  // namespace tpujobs::executor::fakes
