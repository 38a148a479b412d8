// torch_xla-style metrics of one job: the emulated compile cache, execute and
// transfer timings, host syncs, and the report that torch_xla's
// `met.metrics_report()` prints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace tpujobs::executor {

// Thread-compatible: one job owns one instance and uses it from its own thread.
class XlaMetrics {
 public:
  // `clock` timestamps samples (for the report's Rate and ValueRate lines);
  // it must outlive the metrics. Tests pass a base::FakeClock.
  // `torch_xla_version` (major*100+minor, 2.5 -> 205) picks the metric names
  // and report layout of that release: TransferToServerTime /
  // TransferFromServerTime up to 2.2, TransferToDeviceTime /
  // TransferFromDeviceTime from 2.3; one block before 2.0 (every counter was
  // the runtime's), the lazy core's block first from 2.0.
  explicit XlaMetrics(base::Clock& clock = base::real_clock(), int torch_xla_version = 205);

  // The compile cache. Returns true when `graph_key` (the step's graph and its
  // input shapes) was not seen before: counts UncachedCompile and records
  // CompileTime = planning_time. Otherwise counts CachedCompile, returns false.
  bool compile(std::string_view graph_key, std::chrono::nanoseconds planning_time);
  // One execution of a compiled graph (ExecuteTime): one step, so it also
  // counts MarkStep, as xm.mark_step() does.
  void execute(std::chrono::nanoseconds run_time);
  // Host syncs such as `.item()` on a logged scalar (aten::_local_scalar_dense).
  void local_scalar_dense(std::int64_t count = 1);
  // Host -> device copies (TransferToDeviceTime, InboundData).
  void transfer_to_device(std::int64_t bytes, std::chrono::nanoseconds time);
  // Device -> host copies (TransferFromDeviceTime, OutboundData; the
  // ...ServerTime names up to torch_xla 2.2).
  void transfer_from_device(std::int64_t bytes, std::chrono::nanoseconds time);
  // A gather of gradients from the other hosts of a slice spanning processes
  // (tpujobs' own metric: on a real pod the all-reduce runs on the ICI and
  // torch_xla's report has no such line). `bytes` received from other hosts.
  void cross_host_gather(std::int64_t bytes, std::chrono::nanoseconds time);

  std::int64_t uncached_compiles() const;
  std::int64_t cached_compiles() const;
  std::int64_t local_scalar_dense_count() const;
  std::int64_t mark_steps() const;
  // An op that fell back to the CPU (counted as "aten::<op>").
  void cpu_fallback(std::string_view op);

  // torch_xla's MetricFrequency("CompileTime", 0.5, 10) analysis after
  // `steps` steps: more than one compile per two steps once past 10 steps.
  // Returns "pt-xla-profiler: CompileTime too frequent: N counts during M
  // steps" (N = CompileTime samples), else nullopt.
  std::optional<std::string> frequent_compile_warning(std::int64_t steps) const;

  // What torch_xla prints after each step under PT_XLA_DEBUG=1 (StepMarker
  // in init_python_bindings.cpp, runtime/metrics_analysis.cc
  // CreatePerformanceReport), one line per analysis that fires, in its
  // order, with MarkStep as the step count; empty when none fires:
  //   CompileTime too frequent (> 0.5 per step, after 10 steps),
  //   TransferFromDeviceTime (up to 2.2: TransferFromServerTime) too
  //   frequent (> 0.5 per step),
  //   CompileTime too slow (> 300 s), ExecuteTime too slow (> 30 s),
  //   Op(s) not lowered (aten:: counters but _local_scalar_dense).
  std::vector<std::string> performance_report() const;

  // torch_xla's metrics_report(): the lazy core's block (counters
  // CachedCompile, UncachedCompile) then the runtime's (every metric with
  // samples, by name, then the other counters: MarkStep, aten::*). A metric:
  //   Metric: CompileTime
  //     TotalSamples: 2
  //     Accumulator: 02s531ms124.356us
  //     ValueRate: 01s265ms562.178us / second
  //     Rate: 0.999 / second
  //     Percentiles: 1%=...; 5%=...; 10%=...; 20%=...; 50%=...; 80%=...; 90%=...; 95%=...; 99%=...
  // A counter: "Counter: UncachedCompile\n  Value: 2\n"; zero ones are left out.
  // Times print like 02s531ms124.356us, bytes like 1.50MB. ValueRate and Rate
  // appear once the samples span a positive time.
  std::string report() const;

  // A self-describing, versioned encoding of all counters, samples and the
  // compile cache, for checkpoints.
  std::string serialize() const;
  // The same, written over `out`: its capacity is reused (checkpoints of a
  // long job then build it without fresh memory).
  void serialize(std::string& out) const;
  // Returns nullopt when `bytes` is not something serialize() produced.
  // Sample timestamps continue from where the serialized instance stopped.
  static std::optional<XlaMetrics> deserialize(std::string_view bytes,
                                               base::Clock& clock = base::real_clock(),
                                               int torch_xla_version = 205);

  // XLA_METRICS_FILE=STDOUT: what torch_xla's debug/metrics_saver.py prints
  // after each step, "[MetricsData; step=N]\n" then report() and a blank
  // line, N counting the saves from 0.
  std::string metrics_data(std::int64_t save_index) const;

 private:
  struct Sample {
    double value = 0;
    std::int64_t time_ns = 0;  // since this job's metrics began
  };
  enum class Unit { kTime, kBytes };
  struct Metric {
    Unit unit = Unit::kTime;
    std::int64_t total_samples = 0;
    double accumulator = 0;
    std::vector<Sample> samples;  // the newest kMaxSamples, as a ring
    std::size_t next = 0;         // ring position of the next overwrite
  };

  std::int64_t elapsed_ns() const;
  std::optional<std::string> frequency_analysis(std::string_view name, std::int64_t steps) const;
  void emit_metric(std::ostringstream& out, const std::string& name, const Metric& metric) const;
  void add_sample(const std::string& name, Unit unit, double value);
  void add_counter(const std::string& name, std::int64_t delta);
  std::int64_t counter(const std::string& name) const;

  base::Clock* clock_;  // a pointer: a resumed job's metrics are assigned over
  base::Clock::time_point origin_;
  int torch_xla_version_;
  std::set<std::string, std::less<>> compiled_graphs_;
  std::map<std::string, Metric> metrics_;
  std::map<std::string, std::int64_t> counters_;
};

}  // namespace tpujobs::executor
