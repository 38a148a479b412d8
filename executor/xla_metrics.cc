#include "executor/xla_metrics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

namespace tpujobs::executor {
namespace {

// torch_xla keeps the newest 1024 samples of each metric for its rates and
// percentiles; TotalSamples and Accumulator count every sample.
constexpr std::size_t kMaxSamples = 1024;

constexpr std::string_view kCompileTime = "CompileTime";
constexpr std::string_view kExecuteTime = "ExecuteTime";

// The names and layout of each torch_xla release (major*100+minor).
struct TorchXlaMetrics {
  int first;  // the releases from this one ...
  int last;   // ... to this one
  std::string_view transfer_to_device;
  std::string_view transfer_from_device;
  // The lazy core's counters (TORCH_LAZY_COUNTER) print in a block of their
  // own before the runtime's; before 2.0 every counter was XLA_COUNTER.
  bool lazy_block;
  std::string_view source;
};
constexpr TorchXlaMetrics kTorchXlaMetrics[] = {
    {0, 199, "TransferToServerTime", "TransferFromServerTime", false,
     "pytorch/xla v1.13.0:third_party/xla_client/computation_client.cc, "
     "third_party/xla_client/metrics_analysis.cc, torch_xla/csrc/tensor.cpp (XLA_COUNTER)"},
    {200, 202, "TransferToServerTime", "TransferFromServerTime", true,
     "pytorch/xla v2.2.0:torch_xla/csrc/runtime/computation_client.cc, "
     "torch_xla/csrc/runtime/metrics_analysis.cc, torch_xla/csrc/init_python_bindings.cpp"},
    {203, 9999, "TransferToDeviceTime", "TransferFromDeviceTime", true,
     "pytorch/xla v2.3.0 ... v2.5.0:torch_xla/csrc/runtime/computation_client.cc, "
     "torch_xla/csrc/runtime/metrics_analysis.cc"},
};

const TorchXlaMetrics& metrics_of(int torch_xla_version) {
  for (const TorchXlaMetrics& row : kTorchXlaMetrics) {
    if (row.first <= torch_xla_version && torch_xla_version <= row.last) return row;
  }
  return kTorchXlaMetrics[std::size(kTorchXlaMetrics) - 1];
}
constexpr std::string_view kInboundData = "InboundData";
constexpr std::string_view kOutboundData = "OutboundData";
constexpr std::string_view kCrossHostGatherTime = "CrossHostAllGatherTime";  // tpujobs' own
constexpr std::string_view kCrossHostData = "CrossHostInboundData";          // tpujobs' own
constexpr std::string_view kUncachedCompile = "UncachedCompile";
constexpr std::string_view kCachedCompile = "CachedCompile";
constexpr std::string_view kLocalScalarDense = "aten::_local_scalar_dense";
constexpr std::string_view kMarkStep = "MarkStep";

// torch_xla's report is torch::lazy::CreateMetricReport() followed by
// runtime::metrics_reader::CreateMetricReport() (init_python_bindings.cpp
// `_xla_metrics_report`): these counters are the lazy core's
// (TORCH_LAZY_COUNTER in xla_graph_executor.cpp); every metric here and the
// other counters (XLA_COUNTER: MarkStep, aten::*) are the runtime's.
constexpr std::string_view kLazyCounters[] = {kCachedCompile, kUncachedCompile};

// metrics_analysis.cc (v1.13.0 ... v2.5.0), the analyses PT_XLA_DEBUG=1
// prints after each step.
constexpr std::string_view kAnalysisPrefix = "pt-xla-profiler";
struct FrequencyAnalysis {
  bool transfer;              // the release's TransferFrom...Time, else CompileTime
  double threshold;           // samples per step above which it fires
  std::int64_t warmup_steps;  // it stays quiet up to this many steps
};
constexpr FrequencyAnalysis kFrequencyAnalyses[] = {
    {false, 0.5, 10},
    {true, 0.5, 0},
};
struct SlowAnalysis {
  std::string_view metric;
  double threshold_ns;  // the longest retained sample above this fires
};
constexpr SlowAnalysis kSlowAnalyses[] = {
    {kCompileTime, 300e9},
    {kExecuteTime, 30e9},
};

constexpr std::string_view kSerializedMagic = "tpujobs.xla_metrics";
constexpr int kSerializedVersion = 1;

// 02s531ms124.356us: the larger units once the value reaches them, then
// always microseconds with three decimals (torch_xla's MetricFnTime).
std::string format_time(double nanoseconds) {
  struct Part {
    const char* suffix;
    double scale;
    int width;
  };
  static constexpr std::array<Part, 5> kWholeParts = {{
      {"d", 86400e9, 2},
      {"h", 3600e9, 2},
      {"m", 60e9, 2},
      {"s", 1e9, 2},
      {"ms", 1e6, 3},
  }};
  std::ostringstream out;
  out << std::setfill('0');
  double rest = std::max(0.0, nanoseconds);
  bool started = false;
  for (const Part& part : kWholeParts) {
    const double whole = std::floor(rest / part.scale);
    if (whole >= 1.0 || started) {
      out << std::setw(part.width) << static_cast<std::int64_t>(whole) << part.suffix;
      rest -= whole * part.scale;
      started = true;
    }
  }
  out << std::setw(7) << std::fixed << std::setprecision(3) << rest / 1e3 << "us";
  return out.str();
}

// 1.50MB: binary multiples, two decimals (torch_xla's MetricFnBytes).
std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 6> kSuffixes = {"B", "KB", "MB", "GB", "TB", "PB"};
  std::size_t suffix = 0;
  while (suffix + 1 < kSuffixes.size() && bytes >= 1024.0) {
    bytes /= 1024.0;
    ++suffix;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << bytes << kSuffixes[suffix];
  return out.str();
}

// Serialized strings are length-prefixed so keys may hold any byte.
// Appends `value` in decimal, then `separator`, without temporaries: a
// checkpoint carries up to kMaxSamples samples of every metric.
void put_integer(std::string& out, std::int64_t value, char separator) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof(text), value).ptr);
  out += separator;
}

void put_string(std::string& out, std::string_view text) {
  put_integer(out, static_cast<std::int64_t>(text.size()), ':');
  out += text;
  out += '\n';
}

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  bool integer(std::int64_t* value) {
    skip_space();
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    auto [ptr, error] = std::from_chars(begin, end, *value);
    if (error != std::errc() || ptr == begin) return false;
    pos_ += static_cast<std::size_t>(ptr - begin);
    return true;
  }
  // Doubles travel as their bit pattern so a round trip is exact.
  bool real(double* value) {
    std::int64_t bits = 0;
    if (!integer(&bits)) return false;
    *value = std::bit_cast<double>(bits);
    return std::isfinite(*value);
  }
  bool string(std::string* value) {
    std::int64_t size = 0;
    if (!integer(&size) || size < 0 || pos_ >= text_.size() || text_[pos_] != ':') return false;
    ++pos_;
    if (static_cast<std::uint64_t>(size) > text_.size() - pos_) return false;
    value->assign(text_.substr(pos_, static_cast<std::size_t>(size)));
    pos_ += static_cast<std::size_t>(size);
    return true;
  }
  bool done() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

XlaMetrics::XlaMetrics(base::Clock& clock, int torch_xla_version)
    : clock_(&clock), origin_(clock.now()), torch_xla_version_(torch_xla_version) {}

std::int64_t XlaMetrics::elapsed_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_->now() - origin_).count();
}

void XlaMetrics::add_sample(const std::string& name, Unit unit, double value) {
  Metric& metric = metrics_[name];
  metric.unit = unit;
  ++metric.total_samples;
  metric.accumulator += value;
  const Sample sample{value, elapsed_ns()};
  if (metric.samples.size() < kMaxSamples) {
    // The ring's whole storage at once (16 KiB), not regrown as it fills.
    if (metric.samples.capacity() < kMaxSamples) metric.samples.reserve(kMaxSamples);
    metric.samples.push_back(sample);
  } else {
    metric.samples[metric.next] = sample;
    metric.next = (metric.next + 1) % kMaxSamples;
  }
}

void XlaMetrics::add_counter(const std::string& name, std::int64_t delta) {
  counters_[name] += delta;
}

std::int64_t XlaMetrics::counter(const std::string& name) const {
  auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second;
}

bool XlaMetrics::compile(std::string_view graph_key, std::chrono::nanoseconds planning_time) {
  if (compiled_graphs_.contains(graph_key)) {
    add_counter(std::string(kCachedCompile), 1);
    return false;
  }
  compiled_graphs_.emplace(graph_key);
  add_counter(std::string(kUncachedCompile), 1);
  add_sample(std::string(kCompileTime), Unit::kTime, static_cast<double>(planning_time.count()));
  return true;
}

void XlaMetrics::execute(std::chrono::nanoseconds run_time) {
  add_sample(std::string(kExecuteTime), Unit::kTime, static_cast<double>(run_time.count()));
  add_counter(std::string(kMarkStep), 1);
}

void XlaMetrics::local_scalar_dense(std::int64_t count) {
  if (count > 0) add_counter(std::string(kLocalScalarDense), count);
}

void XlaMetrics::transfer_to_device(std::int64_t bytes, std::chrono::nanoseconds time) {
  add_sample(std::string(metrics_of(torch_xla_version_).transfer_to_device), Unit::kTime,
             static_cast<double>(time.count()));
  add_sample(std::string(kInboundData), Unit::kBytes, static_cast<double>(bytes));
}

void XlaMetrics::cross_host_gather(std::int64_t bytes, std::chrono::nanoseconds time) {
  add_sample(std::string(kCrossHostGatherTime), Unit::kTime, static_cast<double>(time.count()));
  add_sample(std::string(kCrossHostData), Unit::kBytes, static_cast<double>(bytes));
}

void XlaMetrics::transfer_from_device(std::int64_t bytes, std::chrono::nanoseconds time) {
  add_sample(std::string(metrics_of(torch_xla_version_).transfer_from_device), Unit::kTime,
             static_cast<double>(time.count()));
  add_sample(std::string(kOutboundData), Unit::kBytes, static_cast<double>(bytes));
}

std::int64_t XlaMetrics::uncached_compiles() const {
  return counter(std::string(kUncachedCompile));
}

std::int64_t XlaMetrics::cached_compiles() const { return counter(std::string(kCachedCompile)); }

std::int64_t XlaMetrics::local_scalar_dense_count() const {
  return counter(std::string(kLocalScalarDense));
}

std::int64_t XlaMetrics::mark_steps() const { return counter(std::string(kMarkStep)); }

std::optional<std::string> XlaMetrics::frequency_analysis(std::string_view name,
                                                          std::int64_t steps) const {
  const std::string_view transfer = metrics_of(torch_xla_version_).transfer_from_device;
  for (const FrequencyAnalysis& analysis : kFrequencyAnalyses) {
    if ((analysis.transfer ? transfer : kCompileTime) != name) continue;
    const auto it = metrics_.find(std::string(name));
    if (it == metrics_.end() || steps <= analysis.warmup_steps || steps <= 0) return std::nullopt;
    const std::int64_t count = it->second.total_samples;
    if (static_cast<double>(count) / static_cast<double>(steps) <= analysis.threshold) {
      return std::nullopt;
    }
    return std::string(kAnalysisPrefix) + ": " + std::string(name) +
           " too frequent: " + std::to_string(count) + " counts during " + std::to_string(steps) +
           " steps";
  }
  return std::nullopt;
}

std::optional<std::string> XlaMetrics::frequent_compile_warning(std::int64_t steps) const {
  return frequency_analysis(kCompileTime, steps);
}

std::vector<std::string> XlaMetrics::performance_report() const {
  std::vector<std::string> lines;
  const std::int64_t steps = mark_steps();
  const std::string_view transfer = metrics_of(torch_xla_version_).transfer_from_device;
  for (const FrequencyAnalysis& analysis : kFrequencyAnalyses) {
    if (auto line = frequency_analysis(analysis.transfer ? transfer : kCompileTime, steps)) {
      lines.push_back(*line);
    }
  }
  for (const SlowAnalysis& analysis : kSlowAnalyses) {
    const auto it = metrics_.find(std::string(analysis.metric));
    if (it == metrics_.end()) continue;
    double longest = 0;
    for (const Sample& sample : it->second.samples) longest = std::max(longest, sample.value);
    if (longest > analysis.threshold_ns) {
      lines.push_back(std::string(kAnalysisPrefix) + ": " + std::string(analysis.metric) +
                      " too slow: longest instance took " + format_time(longest) +
                      ". Please open a GitHub issue with the graph dump for our team to "
                      "optimize.");
    }
  }
  std::string unlowered;
  for (const auto& [name, value] : counters_) {
    if (value > 0 && name.find("aten::") != std::string::npos && name != kLocalScalarDense) {
      unlowered += name + ", ";
    }
  }
  if (!unlowered.empty()) {
    lines.push_back(std::string(kAnalysisPrefix) + ": Op(s) not lowered: " + unlowered +
                    " Please open a GitHub issue with the above op lowering requests.");
  }
  return lines;
}

void XlaMetrics::cpu_fallback(std::string_view op) { add_counter("aten::" + std::string(op), 1); }

void XlaMetrics::emit_metric(std::ostringstream& out, const std::string& name,
                             const Metric& metric) const {
  auto repr = [&](double value) {
    return metric.unit == Unit::kTime ? format_time(value) : format_bytes(value);
  };
  out << "Metric: " << name << "\n";
  out << "  TotalSamples: " << metric.total_samples << "\n";
  out << "  Accumulator: " << repr(metric.accumulator) << "\n";
  // Rates over the retained samples, from the first to the last timestamp.
  std::int64_t first = metric.samples.front().time_ns;
  std::int64_t last = first;
  double window_total = 0;
  for (const Sample& sample : metric.samples) {
    first = std::min(first, sample.time_ns);
    last = std::max(last, sample.time_ns);
    window_total += sample.value;
  }
  if (last > first) {
    const double seconds = static_cast<double>(last - first) / 1e9;
    out << "  ValueRate: " << repr(window_total / seconds) << " / second\n";
    out << "  Rate: " << static_cast<double>(metric.samples.size()) / seconds << " / second\n";
  }
  std::vector<double> values;
  values.reserve(metric.samples.size());
  for (const Sample& sample : metric.samples) values.push_back(sample.value);
  std::sort(values.begin(), values.end());
  static constexpr std::array<int, 9> kPercentiles = {1, 5, 10, 20, 50, 80, 90, 95, 99};
  out << "  Percentiles: ";
  for (std::size_t i = 0; i < kPercentiles.size(); ++i) {
    if (i > 0) out << "; ";
    out << kPercentiles[i] << "%=";
    const std::size_t index = values.size() * static_cast<std::size_t>(kPercentiles[i]) / 100;
    out << repr(values[std::min(index, values.size() - 1)]);
  }
  out << "\n";
}

std::string XlaMetrics::report() const {
  const bool lazy_block = metrics_of(torch_xla_version_).lazy_block;
  auto lazy = [lazy_block](std::string_view name) {
    return lazy_block && std::find(std::begin(kLazyCounters), std::end(kLazyCounters), name) !=
                             std::end(kLazyCounters);
  };
  std::ostringstream out;
  // The lazy core's block: its counters (its metrics are not emulated).
  for (const auto& [name, value] : counters_) {
    if (value > 0 && lazy(name)) out << "Counter: " << name << "\n  Value: " << value << "\n";
  }
  // The runtime's block: every metric, then the other counters.
  for (const auto& [name, metric] : metrics_) {
    if (metric.total_samples > 0) emit_metric(out, name, metric);
  }
  for (const auto& [name, value] : counters_) {
    if (value > 0 && !lazy(name)) out << "Counter: " << name << "\n  Value: " << value << "\n";
  }
  return out.str();
}

std::string XlaMetrics::metrics_data(std::int64_t save_index) const {
  return "[MetricsData; step=" + std::to_string(save_index) + "]\n" + report() + "\n";
}

std::string XlaMetrics::serialize() const {
  std::string out;
  serialize(out);
  return out;
}

void XlaMetrics::serialize(std::string& out) const {
  out.clear();
  // Room for every metric's ring full (a sample: two integers of up to 20
  // characters and their separators), so that the later checkpoints of a
  // job, whose rings hold more samples, write over this memory rather than
  // regrowing it.
  std::size_t room = 64 * (4 + compiled_graphs_.size() + counters_.size() + metrics_.size()) +
                     metrics_.size() * kMaxSamples * 42;
  for (const std::string& key : compiled_graphs_) room += key.size();
  for (const auto& [name, value] : counters_) room += name.size();
  for (const auto& [name, metric] : metrics_) room += name.size();
  out.reserve(room);
  out += kSerializedMagic;
  out += ' ';
  put_integer(out, kSerializedVersion, '\n');
  put_integer(out, elapsed_ns(), '\n');
  put_integer(out, static_cast<std::int64_t>(compiled_graphs_.size()), '\n');
  for (const std::string& key : compiled_graphs_) put_string(out, key);
  put_integer(out, static_cast<std::int64_t>(counters_.size()), '\n');
  for (const auto& [name, value] : counters_) {
    put_string(out, name);
    put_integer(out, value, '\n');
  }
  put_integer(out, static_cast<std::int64_t>(metrics_.size()), '\n');
  for (const auto& [name, metric] : metrics_) {
    put_string(out, name);
    put_integer(out, metric.unit == Unit::kTime ? 0 : 1, ' ');
    put_integer(out, metric.total_samples, ' ');
    put_integer(out, std::bit_cast<std::int64_t>(metric.accumulator), ' ');
    put_integer(out, static_cast<std::int64_t>(metric.next), ' ');
    put_integer(out, static_cast<std::int64_t>(metric.samples.size()), '\n');
    for (const Sample& sample : metric.samples) {
      put_integer(out, std::bit_cast<std::int64_t>(sample.value), ' ');
      put_integer(out, sample.time_ns, '\n');
    }
  }
}

std::optional<XlaMetrics> XlaMetrics::deserialize(std::string_view bytes, base::Clock& clock,
                                                  int torch_xla_version) {
  const std::string header = std::string(kSerializedMagic) + " ";
  if (!bytes.starts_with(header)) return std::nullopt;
  Reader in(bytes.substr(header.size()));
  std::int64_t version = 0, elapsed = 0, count = 0;
  if (!in.integer(&version) || version != kSerializedVersion) return std::nullopt;
  if (!in.integer(&elapsed) || elapsed < 0) return std::nullopt;

  XlaMetrics metrics(clock, torch_xla_version);
  metrics.origin_ -= std::chrono::nanoseconds(elapsed);

  if (!in.integer(&count) || count < 0) return std::nullopt;
  for (std::int64_t i = 0; i < count; ++i) {
    std::string key;
    if (!in.string(&key)) return std::nullopt;
    metrics.compiled_graphs_.insert(std::move(key));
  }
  if (!in.integer(&count) || count < 0) return std::nullopt;
  for (std::int64_t i = 0; i < count; ++i) {
    std::string name;
    std::int64_t value = 0;
    if (!in.string(&name) || !in.integer(&value) || value < 0) return std::nullopt;
    metrics.counters_[name] = value;
  }
  if (!in.integer(&count) || count < 0) return std::nullopt;
  for (std::int64_t i = 0; i < count; ++i) {
    std::string name;
    std::int64_t unit = 0, next = 0, retained = 0;
    Metric metric;
    if (!in.string(&name) || !in.integer(&unit) || (unit != 0 && unit != 1) ||
        !in.integer(&metric.total_samples) || !in.real(&metric.accumulator) || !in.integer(&next) ||
        !in.integer(&retained)) {
      return std::nullopt;
    }
    if (retained < 0 || static_cast<std::size_t>(retained) > kMaxSamples ||
        retained > metric.total_samples || next < 0 ||
        // The ring only wraps once it is full.
        (next > 0 && (static_cast<std::size_t>(retained) < kMaxSamples || next >= retained)) ||
        (metric.total_samples > 0 && retained == 0)) {
      return std::nullopt;
    }
    metric.unit = unit == 0 ? Unit::kTime : Unit::kBytes;
    metric.next = static_cast<std::size_t>(next);
    for (std::int64_t s = 0; s < retained; ++s) {
      Sample sample;
      if (!in.real(&sample.value) || !in.integer(&sample.time_ns)) return std::nullopt;
      metric.samples.push_back(sample);
    }
    metrics.metrics_[name] = std::move(metric);
  }
  if (!in.done()) return std::nullopt;
  return metrics;
}

}  // namespace tpujobs::executor
