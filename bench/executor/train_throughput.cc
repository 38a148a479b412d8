// Training throughput of the real train() on this machine, for the table in
// bench/executor/RESULTS.md and for compare_pytorch.sh:
//   digits      64 -> 128 -> 10 ReLU, Adam lr 1e-3, batch 64, 1 core
//   gemm        1024 -> 4096 -> 4096 -> 10 ReLU, Adam lr 1e-3, batch 256, fp32,
//               synthetic blobs with 1024 features, 1 core
//   replicas    digits at a global batch of 512: 1 replica x 512 vs 8 x 64,
//               in alternating pairs (median ratio of the pairs)
//
// Each figure is the difference of two runs that differ only in max_steps,
// so dataset loading, shape inference, the first compile and the final
// validation cancel out and what remains is the steady-state training loop.
// The timed steps are late ones, after several epochs (digits: from step 400,
// the 18th epoch; GEMM MLP, 16 batches an epoch: steps 24 to 56, epochs 2 to
// 4, epoch-end checkpoints included), where values that drift towards
// subnormals would slow a core that does not flush them.
//
// Usage: executor_train_throughput [--threads N] [--quick] [digits|gemm|replicas]...
// Prints the matrix-product kernel in use, then one line per figure:
// "<name> samples_per_sec=<x> steps=<n> seconds=<s> samples_per_cpu_sec=<c> ..."
// (c: samples per CPU-second of all threads).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "executor/executor.h"
#include "executor/gemm.h"
#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

class DiscardingSink : public TrainingSink {
 public:
  void log(std::string_view) override {}
  void metrics(const MetricPoint&) override {}
  void checkpoint(std::shared_ptr<const Checkpoint>) override {}
  void progress(const Progress&) override {}
};

class NoUploads : public DatasetSource {
 public:
  std::optional<std::string> uploaded_csv(std::string_view) override { return std::nullopt; }
};

LayerSpec linear(int out) {
  LayerSpec layer;
  layer.type = LayerType::kLinear;
  layer.out = out;
  return layer;
}

LayerSpec relu() {
  LayerSpec layer;
  layer.type = LayerType::kRelu;
  return layer;
}

TrainingSpec digits_spec(int world_size, int batch_size) {
  TrainingSpec spec;
  spec.model.layers = {linear(128), relu(), linear(10)};
  spec.data.source = BuiltinData{"digits"};
  spec.data.batch_size = batch_size;
  spec.data.val_fraction = 0.2;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 1e-3;
  spec.max_epochs = -1;
  spec.log_every_n_steps = 50;
  spec.check_val_every_n_epoch = 1'000'000;  // no validation inside the timed loop
  spec.checkpoint_every_n_steps = 0;
  spec.world_size = world_size;
  spec.on_tpu = true;
  return spec;
}

TrainingSpec gemm_spec(std::int64_t samples) {
  TrainingSpec spec;
  spec.model.layers = {linear(4096), relu(), linear(4096), relu(), linear(10)};
  spec.data.source = SyntheticData{SyntheticKind::kBlobs, static_cast<int>(samples), 1024, 10, 0.1};
  spec.data.batch_size = 256;
  spec.data.val_fraction = 0.05;
  spec.data.drop_last = true;
  spec.optimizer.type = OptimizerType::kAdam;
  spec.optimizer.lr = 1e-3;
  spec.max_epochs = -1;
  spec.log_every_n_steps = 50;
  spec.check_val_every_n_epoch = 1'000'000;
  spec.checkpoint_every_n_steps = 0;
  spec.precision = Precision::kFp32;
  spec.on_tpu = true;
  return spec;
}

struct Timed {
  double seconds = 0;
  double cpu_seconds = 0;               // all threads of this process
  double reported_samples_per_sec = 0;  // train()'s own figure
};

Timed run(TrainingSpec spec, std::int64_t steps, WorkerPool& workers) {
  spec.max_steps = steps;
  DeviceFacts device;  // v3
  NoUploads datasets;
  DiscardingSink sink;
  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  const TrainingResult result = train(spec, device, workers, datasets, sink, RunControl{});
  const auto end = std::chrono::steady_clock::now();
  const std::clock_t cpu_end = std::clock();
  if (result.outcome != Outcome::kSucceeded) {
    std::fprintf(stderr, "train() failed: %s: %s\n", result.error ? result.error->type.c_str() : "",
                 result.error ? result.error->message.c_str() : "");
    std::exit(1);
  }
  auto reported = result.final_metrics.find("samples_per_sec");
  return Timed{std::chrono::duration<double>(end - start).count(),
               static_cast<double>(cpu_end - cpu_start) / CLOCKS_PER_SEC,
               reported == result.final_metrics.end() ? 0.0 : reported->second};
}

struct Rates {
  double samples_per_sec = 0;
  double samples_per_cpu_sec = 0;
};

// Steady-state samples/s from two runs of `short_steps` and `long_steps`.
Rates measure(const char* name, const TrainingSpec& spec, std::int64_t short_steps,
              std::int64_t long_steps, WorkerPool& workers) {
  run(spec, short_steps, workers);  // warm caches and the allocator
  const Timed shorter = run(spec, short_steps, workers);
  const Timed longer = run(spec, long_steps, workers);
  const double seconds = longer.seconds - shorter.seconds;
  const double samples =
      static_cast<double>(long_steps - short_steps) * spec.data.batch_size * spec.world_size;
  const double cpu_seconds = longer.cpu_seconds - shorter.cpu_seconds;
  const Rates rates{samples / seconds, samples / cpu_seconds};
  std::printf(
      "%s samples_per_sec=%.1f steps=%lld seconds=%.4f samples_per_cpu_sec=%.1f "
      "train_reported_samples_per_sec=%.1f\n",
      name, rates.samples_per_sec, static_cast<long long>(long_steps - short_steps), seconds,
      rates.samples_per_cpu_sec, longer.reported_samples_per_sec);
  std::fflush(stdout);
  return rates;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

int main_impl(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quick = false;
  std::vector<std::string> which;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "digits" || arg == "gemm" || arg == "replicas") {
      which.emplace_back(arg);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--quick] [digits|gemm|replicas]...\n",
                   argv[0]);
      return 2;
    }
  }
  if (which.empty()) which = {"digits", "gemm", "replicas"};
  WorkerPool workers(threads);
  std::printf("threads=%d gemm_kernel=%s\n", threads, gemm_kernel_name(best_gemm_kernel()));
  const int scale = quick ? 1 : 4;
  for (const std::string& name : which) {
    if (name == "digits") {
      measure("digits_mlp", digits_spec(1, 64), 100 * scale, 1100 * scale, workers);
    } else if (name == "gemm") {
      // Epochs of 16 batches of 256 (+5% validation).
      const std::int64_t first = quick ? 8 : 24, last = quick ? 16 : 56;
      measure("gemm_mlp", gemm_spec(256 * 16 * 100 / 95 + 1), first, last, workers);
    } else if (name == "replicas") {
      // Pairs of runs in alternating order, so that both sides see the same
      // load; the median of the pairs' ratios.
      const int pairs = quick ? 3 : 5;
      std::vector<double> ratios, cpu_ratios;
      std::string each;
      for (int pair = 0; pair < pairs; ++pair) {
        Rates one, eight;
        auto run_one = [&] {
          one = measure("digits_global512_1x512", digits_spec(1, 512), 20 * scale, 220 * scale,
                        workers);
        };
        auto run_eight = [&] {
          eight = measure("digits_global512_8x64", digits_spec(8, 64), 20 * scale, 220 * scale,
                          workers);
        };
        if (pair % 2 == 0) {
          run_one();
          run_eight();
        } else {
          run_eight();
          run_one();
        }
        ratios.push_back(one.samples_per_sec / eight.samples_per_sec);
        cpu_ratios.push_back(one.samples_per_cpu_sec / eight.samples_per_cpu_sec);
        char text[32];
        std::snprintf(text, sizeof(text), "%s%.3f", each.empty() ? "" : ",", ratios.back());
        each += text;
      }
      std::printf("replicas time_ratio_8_vs_1=%.3f cpu_time_ratio_8_vs_1=%.3f pairs=%s\n",
                  median(ratios), median(cpu_ratios), each.c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace tpujobs::executor

int main(int argc, char** argv) { return tpujobs::executor::main_impl(argc, argv); }
