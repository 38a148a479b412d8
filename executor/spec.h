// The training part of a job spec, after the API has parsed and validated it.
// This is the contract between api/ (which fills it from JSON) and the
// executor (which runs it). Field meanings follow DESIGN.md §3 and
// Lightning's Trainer.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tpujobs::executor {

enum class LayerType { kLinear, kRelu, kGelu, kTanh, kSigmoid, kDropout, kLayerNorm };

struct LayerSpec {
  LayerType type = LayerType::kLinear;
  int out = 0;             // linear: output width (ignored when tied)
  bool bias = true;        // linear
  double p = 0.5;          // dropout probability
  std::optional<int> tie;  // linear: index (in `layers`) of an earlier
                           // linear layer whose weight is reused, transposed
};

enum class Loss { kCrossEntropy, kMse };

struct ModelSpec {
  std::vector<LayerSpec> layers;
  Loss loss = Loss::kCrossEntropy;
};

enum class SyntheticKind { kBlobs, kSpirals, kXor, kRegression };

struct SyntheticData {
  SyntheticKind kind = SyntheticKind::kBlobs;
  int n = 1000;
  int features = 2;
  int classes = 2;  // ignored for regression (one target)
  double noise = 0.1;
};

struct BuiltinData {
  std::string name;
};  // iris, wine, breast_cancer, digits
struct UploadedData {
  std::string id;
};  // ds_...

struct DataSpec {
  std::variant<BuiltinData, SyntheticData, UploadedData> source = BuiltinData{"digits"};
  int batch_size = 32;  // per core, as in Lightning
  double val_fraction = 0.2;
  bool shuffle = true;
  bool drop_last = false;
};

enum class OptimizerType { kSgd, kAdam, kAdamW };

struct OptimizerSpec {
  OptimizerType type = OptimizerType::kAdam;
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  double beta1 = 0.9;     // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

enum class Precision { kFp32, kBf16, kFp16 };  // 32-true, bf16-true, 16-true

struct Bound {
  std::optional<double> min;
  std::optional<double> max;
};

// A job that cannot start, and what its processes print before it fails:
// launched on fewer than all workers of its multi-host slice
// (lightning::LaunchFailure, resources.workers).
struct LaunchFailure {
  std::vector<std::string> log_lines;
  std::string type;  // "UNAVAILABLE"
  std::string message;
  std::string hint;
};

struct TrainingSpec {
  ModelSpec model;
  DataSpec data;
  OptimizerSpec optimizer;

  // -1: no epoch limit. The API sets Lightning's default when the spec has
  // none (1000, or -1 when max_steps or max_time bound the run).
  int max_epochs = 10;
  std::int64_t max_steps = -1;  // -1: unlimited
  // Lightning's Timer (Trainer(max_time=...)): training stops after the step
  // at which this much training time has passed, counted across resumes
  // (the checkpoint keeps it); zero or less stops before the first step.
  // Both limits unset and max_epochs -1: training runs until cancelled.
  std::optional<std::chrono::milliseconds> max_time;
  int accumulate_grad_batches = 1;
  std::optional<double> gradient_clip_val;  // clip by global L2 norm
  int log_every_n_steps = 10;
  int check_val_every_n_epoch = 1;
  int checkpoint_every_n_steps = 100;  // 0: only at epoch end
  std::uint64_t seed = 42;

  Precision precision = Precision::kFp32;
  // Number of replicas (emulated TPU cores, or 1 for a CPU job).
  int world_size = 1;
  bool on_tpu = true;  // false for accelerator: "cpu"
  // Lightning's `trainer.num_devices`: the TPU cores the job uses on each
  // host (8 for a v3-32 slice of four hosts), the count its device log line
  // shows; and whether the pool offers TPUs at all (XLAAccelerator.is_available()).
  int devices_per_host = 1;
  bool tpu_available = true;
  // PT_XLA_DEBUG is on (strategy "xla_debug", or env): torch_xla prints its
  // performance analyses after every step.
  bool xla_debug = false;
  // env XLA_METRICS_FILE: "STDOUT" / "STDERR" print "[MetricsData; step=N]"
  // and the metrics report after every step; empty or a path prints nothing
  // to the log.
  std::string xla_metrics_file;
  // The torch_xla whose metric names and report layout apply (2.5 -> 205).
  int torch_xla_version = 205;
  // Lightning's _log_device_info lines, as the job's Lightning release
  // prints them (lightning::Resolution::device_info).
  std::vector<std::string> device_info;
  // tpujobs' own notices on how the job is emulated (each starts
  // "tpujobs:"), logged after the device lines (lightning::Resolution::notices).
  std::vector<std::string> notices;
  bool lightning_v1 = false;  // lightning_version: "1.x"
  // Set: the job fails when it is launched, before it reads its data.
  std::optional<LaunchFailure> launch_failure;

  // Quality gates on final metrics ("val_accuracy", "val_loss", "loss", ...).
  std::map<std::string, Bound> expect;
  std::optional<std::chrono::milliseconds> timeout;
};

// What the executor needs to know about the device it emulates. The service
// fills it from the scheduler's generation facts.
struct DeviceFacts {
  std::string generation = "v3";
  std::int64_t hbm_bytes = std::int64_t{16} << 30;
  double peak_flops = 61.5e12;
  int mxu_dim = 128;
  // What XLA reports usable ("of 15.75G hbm" on v5e); 0: hbm_bytes less the
  // v2-v4 runtime reservation (executor/hbm.h).
  std::int64_t hbm_capacity_bytes = 0;
};

}  // namespace tpujobs::executor
