#include "lightning/slices.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>

#include "lightning/checks.h"
#include "lightning/python.h"

namespace tpujobs::lightning {

int devices_per_host(Generation generation) { return generation->devices_per_host; }
const std::string& generation_name(Generation generation) { return generation->name; }
const std::string& type_prefix(Generation generation) {
  return generation->type_prefix.empty() ? generation->name : generation->type_prefix;
}

Generation find_type_prefix(const PoolView& pool, std::string_view prefix) {
  for (const TpuGeneration& generation : pool.generations) {
    if (type_prefix(&generation) == prefix) return &generation;
  }
  return nullptr;
}

std::string SliceType::topology() const {
  for (const auto& [shape, slice_size] : generation->topologies) {
    if (slice_size == size) return shape;
  }
  return {};
}

Generation find_generation(const PoolView& pool, std::string_view name) {
  for (const TpuGeneration& generation : pool.generations) {
    if (generation.name == name) return &generation;
  }
  return nullptr;
}

std::optional<SliceType> parse_slice_type(const PoolView& pool, std::string_view text) {
  const std::size_t dash = text.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const Generation generation = find_type_prefix(pool, text.substr(0, dash));
  if (!generation) return std::nullopt;
  const std::string_view digits = text.substr(dash + 1);
  int size = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  const std::vector<int>& sizes = generation->slice_sizes;
  if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) return std::nullopt;
  return SliceType{generation, size};
}

std::string slice_names(Generation generation) {
  std::vector<std::string> names;
  for (int size : generation->slice_sizes) names.push_back(SliceType{generation, size}.name());
  return join(names, ", ");
}

std::string slice_host_counts(Generation generation) {
  std::vector<std::string> counts;
  for (int size : generation->slice_sizes) {
    counts.push_back(std::to_string(SliceType{generation, size}.hosts()));
  }
  return join(counts, ", ");
}

std::optional<SliceType> largest_slice(Generation generation, int hosts) {
  std::optional<SliceType> best;
  for (int size : generation->slice_sizes) {
    const SliceType slice{generation, size};
    if (slice.hosts() <= hosts) best = slice;
  }
  return best;
}

SliceType largest_slice_anywhere(const PoolView& pool) {
  std::optional<SliceType> best;
  for (const TpuGeneration& entry : pool.generations) {
    const Generation generation = &entry;
    const SliceType slice{generation, generation->slice_sizes.back()};
    if (!best || slice.hosts() > best->hosts()) best = slice;
  }
  return *best;
}

std::optional<SliceType> slice_of(Generation generation, std::int64_t devices) {
  const std::int64_t size = devices * generation->units_per_device;
  for (int valid : generation->slice_sizes) {
    if (valid == size) return SliceType{generation, valid};
  }
  return std::nullopt;
}

std::string host_counts_text(const std::vector<Generation>& generations) {
  std::vector<int> counts;
  for (Generation g : generations) counts.push_back(devices_per_host(g));
  std::sort(counts.begin(), counts.end(), std::greater<>());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<std::string> parts;
  for (int count : counts) {
    std::vector<std::string> names;
    for (Generation g : generations) {
      if (devices_per_host(g) == count) names.push_back(generation_name(g));
    }
    if (!names.empty()) {
      parts.push_back(std::to_string(count) + " on " + join(names, "/") + " hosts");
    }
  }
  return join(parts, ", ");
}

// ---------------------------------------------------------------------------
// resources.accelerator_type

void check_accelerator_type(Context& c) {
  std::optional<std::string> from_topology;
  if (c.settings.topology && !check_topology(c, &from_topology)) {
    c.named_slice_ok = false;
    return;
  }
  if (!c.settings.accelerator_type && !from_topology) return;
  const std::string& written =
      c.settings.accelerator_type ? *c.settings.accelerator_type : *from_topology;
  if (c.accelerator == Accelerator::kCpu) {
    c.named_slice_ok = false;
    c.error(kFieldAcceleratorType,
            "`accelerator_type=" + py_repr(written) +
                "` names a TPU slice, but the job runs with `accelerator='cpu'`.",
            "Drop `resources.accelerator_type` for a CPU job, or set `accelerator: \"tpu\"`.");
    return;
  }
  c.named_slice = parse_slice_type(c.pool, written);
  if (!c.named_slice) {
    c.named_slice_ok = false;
    const std::size_t dash = written.rfind('-');
    const Generation generation =
        find_type_prefix(c.pool, std::string_view(written).substr(0, dash));
    if (generation && dash != std::string::npos) {
      c.error(kFieldAcceleratorType,
              py_repr(written) + " is not a valid " + generation_name(generation) +
                  " slice. Valid " + generation_name(generation) +
                  " slices: " + slice_names(generation) + ".",
              std::string("Pick one of the listed accelerator types; the number counts ") +
                  (generation->type_counts_chips ? "chips." : "TensorCores."));
    } else {
      std::vector<std::string> prefixes;
      for (const TpuGeneration& g : c.pool.generations) prefixes.push_back(type_prefix(&g));
      const std::string last = prefixes.empty() ? "" : prefixes.back();
      if (!prefixes.empty()) prefixes.pop_back();
      c.error(kFieldAcceleratorType,
              py_repr(written) +
                  " is not a TPU accelerator type this service emulates: expected "
                  "<generation>-<cores> with generation " +
                  join(prefixes, ", ") + (prefixes.empty() ? "" : " or ") + last +
                  ", e.g. 'v3-32'.",
              "Use an accelerator type such as \"v3-8\" (one host) or \"v3-32\" (4 hosts), or "
              "drop it and say `devices` and `num_nodes`.");
    }
    return;
  }
  const Generation generation = c.named_slice->generation;
  if (c.accelerator == Accelerator::kTpu && c.pool_hosts(generation) == 0) {
    c.named_slice_ok = false;
    std::vector<std::string> present;
    for (Generation g : c.pool_generations) {
      present.push_back(generation_name(g) + " (" + std::to_string(c.pool_hosts(g)) + " hosts)");
    }
    c.error(kFieldAcceleratorType,
            "The pool has no " + generation_name(generation) + " hosts; it has " +
                join(present, ", ") + ".",
            "Use an accelerator type of a generation in the pool (e.g. " +
                SliceType{c.pool_generations.front(), 8}.name() +
                "), or drop `accelerator_type` and say `devices` and `num_nodes`.");
  }
}

// ---------------------------------------------------------------------------
// num_nodes

namespace {

// What each release does with the value: 2.0 and older take
// int(num_nodes) (so "2" and 2.0 are 2, 2.5 is 2), 2.1 and later accept only
// an int >= 1 and print the value with str().
struct NumNodesRules {
  Versions versions;
  bool python_int;            // int(num_nodes), Python's own errors
  std::string_view positive;  // {num_nodes}: str(value); empty: no check
  std::string_view source;
};

constexpr std::string_view kNumNodesPositive =
    "`num_nodes` must be a positive integer, but got {num_nodes}.";
constexpr NumNodesRules kNumNodesRules[] = {
    {{106, 106}, true, "", "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{107, 109},
     true,
     "",
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{200, 200},
     true,
     "",
     "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
    {{201, 299},
     false,
     kNumNodesPositive,
     "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
};

// Python's int() of a value that is not an int (CPython's own texts; the
// TypeError's wording changed in Python 3.10).
constexpr std::string_view kIntLiteral = "invalid literal for int() with base 10: {value}";
constexpr std::string_view kIntTypeError39 =
    "int() argument must be a string, a bytes-like object or a number, not '{type}'";
constexpr std::string_view kIntTypeError310 =
    "int() argument must be a string, a bytes-like object or a real number, not '{type}'";
constexpr std::string_view kPythonSource =
    "CPython Objects/longobject.c, Objects/abstract.c (int())";

}  // namespace

std::vector<RuleText> num_nodes_rule_texts() {
  std::vector<RuleText> out;
  for (const NumNodesRules& rules : kNumNodesRules) {
    if (!rules.positive.empty()) out.push_back({kFieldNumNodes, rules.positive, rules.source});
  }
  for (std::string_view text : {kIntLiteral, kIntTypeError39, kIntTypeError310}) {
    out.push_back({kFieldNumNodes, text, kPythonSource});
  }
  return out;
}

namespace {

// The int Lightning ends up with, or the error it raises instead.
struct NumNodesValue {
  std::optional<std::int64_t> value;
  std::string error = {};  // when value is nullopt
  std::string_view source = {};
};

NumNodesValue num_nodes_value(const Context& c) {
  const DeviceValue& value = c.settings.num_nodes;
  const NumNodesRules& rules = *row_for<NumNodesRules>(kNumNodesRules, c.version);
  auto refuse = [](std::string message, std::string_view source) {
    return NumNodesValue{std::nullopt, std::move(message), source};
  };
  if (value.kind == DeviceValue::Kind::kInt) return {value.number};
  const bool is_bool = value.kind == DeviceValue::Kind::kOther && value.python_type == "bool";
  if (!rules.python_int) {
    // 2.1+: isinstance(num_nodes, int); a bool is an int (True is 1).
    if (is_bool && value.python_repr == "True") return {1};
    return refuse(fill(rules.positive, {{"num_nodes", py_str(value)}}), rules.source);
  }
  // 2.0 and older: int(num_nodes); None means 1.
  if (value.kind == DeviceValue::Kind::kOther && value.python_type == "NoneType") return {1};
  if (is_bool) return {value.python_repr == "True" ? 1 : 0};
  if (value.kind == DeviceValue::Kind::kString) {
    if (std::optional<std::int64_t> number = py_int(value.text)) return {number};
    return refuse(fill(kIntLiteral, {{"value", py_repr(value.text)}}), kPythonSource);
  }
  if (value.kind == DeviceValue::Kind::kOther && value.python_type == "float") {
    // int(2.5) truncates towards zero.
    double number = 0;
    const char* text = value.python_repr.c_str();
    const auto [end, ec] = std::from_chars(text, text + value.python_repr.size(), number);
    if (ec == std::errc() && end == text + value.python_repr.size() && std::abs(number) < 1e15) {
      return {static_cast<std::int64_t>(number)};
    }
  }
  const std::string type = value.kind == DeviceValue::Kind::kList ? "list" : value.python_type;
  return refuse(fill(c.python_minor >= 10 ? kIntTypeError310 : kIntTypeError39, {{"type", type}}),
                kPythonSource);
}

}  // namespace

bool num_nodes_refused_by_int(const Context& c) {
  return c.settings.num_nodes.kind != DeviceValue::Kind::kAbsent &&
         row_for<NumNodesRules>(kNumNodesRules, c.version)->python_int && !num_nodes_value(c).value;
}

void check_num_nodes(Context& c) {
  if (c.settings.num_nodes.kind == DeviceValue::Kind::kAbsent) return;
  const NumNodesValue value = num_nodes_value(c);
  if (!value.value) {
    c.num_nodes_ok = false;
    c.error(kFieldNumNodes, value.error,
            "`num_nodes` counts hosts: write an int, 1 for one host or the number of hosts of a "
            "pod slice (4 for a v3-32).",
            value.source);
    return;
  }
  const std::int64_t num_nodes = *value.value;
  c.num_nodes = num_nodes;
  const NumNodesRules& rules = *row_for<NumNodesRules>(kNumNodesRules, c.version);
  if (num_nodes < 1) {
    c.num_nodes_ok = false;
    // Lightning 2.1 and later check this themselves; before, tpujobs does.
    c.error(kFieldNumNodes, fill(kNumNodesPositive, {{"num_nodes", std::to_string(num_nodes)}}),
            "Use `num_nodes: 1` for one host, or the number of hosts of a pod slice.",
            rules.positive.empty() ? std::string_view() : rules.source);
  } else if (const SliceType largest = largest_slice_anywhere(c.pool);
             num_nodes > largest.hosts()) {
    // Also keeps every later devices x num_nodes product far from overflow.
    c.num_nodes_ok = false;
    c.error(kFieldNumNodes,
            "`num_nodes=" + std::to_string(num_nodes) +
                "` is more hosts than any TPU pod slice has (the largest, " + largest.name() +
                ", has " + std::to_string(largest.hosts()) + ").",
            "`num_nodes` counts hosts: use the number of hosts of a slice, e.g. 4 for a v3-32.");
  } else if (num_nodes > 1 && c.accelerator == Accelerator::kCpu) {
    c.num_nodes_ok = false;
    c.error(kFieldNumNodes,
            "`num_nodes=" + std::to_string(num_nodes) +
                "` asks for several TPU hosts, but the job runs with `accelerator='cpu'`.",
            "Use `num_nodes: 1` for a CPU job, or `accelerator: \"tpu\"` for a pod slice.");
  }
}

namespace {

// ---------------------------------------------------------------------------
// The resource request: which hosts of which generation.

DeviceRequest single_core(Generation generation, const DeviceAsk& ask) {
  DeviceRequest request;
  request.kind = DeviceRequest::Kind::kSingleCore;
  if (generation) request.generation = generation->name;
  request.devices_per_host = 1;
  request.hosts = 1;
  if (ask.kind == DeviceAsk::Kind::kCore) request.pinned_core = static_cast<int>(ask.core);
  return request;
}

DeviceRequest whole_hosts(Generation generation, int per_host, int hosts) {
  DeviceRequest request;
  request.kind = hosts > 1 ? DeviceRequest::Kind::kSlice : DeviceRequest::Kind::kHost;
  if (generation) request.generation = generation->name;
  request.devices_per_host = per_host;
  request.hosts = hosts;
  if (generation) {
    request.accelerator_type = slice_of(generation, std::int64_t{per_host} * hosts)->name();
  }
  return request;
}

bool is_single(const DeviceAsk& ask) {
  return ask.kind == DeviceAsk::Kind::kCore ||
         (ask.kind == DeviceAsk::Kind::kCount && ask.count == 1);
}

// Does a host of `generation` have what `ask` wants of one host?
bool host_fits(Generation generation, const DeviceAsk& ask) {
  switch (ask.kind) {
    case DeviceAsk::Kind::kAuto:
      return true;
    case DeviceAsk::Kind::kCount:
      return ask.count == 1 || ask.count == devices_per_host(generation);
    case DeviceAsk::Kind::kCore:
      return ask.core < devices_per_host(generation);
  }
  return false;
}

// Only reachable under 1.x and 2.0, whose rules assume 8-device hosts.
void report_host_misfit(Context& c, const std::vector<Generation>& generations,
                        const DeviceAsk& ask) {
  const std::string what = ask.kind == DeviceAsk::Kind::kCore
                               ? "core " + std::to_string(ask.core) + " (0-based) of a host"
                               : std::to_string(ask.count) + " devices per host";
  std::vector<std::string> others;  // "v4 hosts use `devices: 4`"
  for (Generation g : generations) {
    if (devices_per_host(g) == 8) continue;
    others.push_back(generation_name(g) +
                     " hosts `devices: " + std::to_string(devices_per_host(g)) + "`");
  }
  c.error(c.devices_field,
          c.devices_written() + " asks for " + what + ", but the hosts it may run on have " +
              host_counts_text(generations) + ".",
          others.empty() ? std::string("Use `devices: 8` (every device of a host) or `devices: 1`.")
                         : "Lightning " + c.release->name() + " counts 8 devices a host: use " +
                               "`lightning_version: \"2.x\"` with " + join(others, ", ") +
                               " (or 'auto'), or `devices: 1`.");
}

void report_partial_hosts(Context& c, std::int64_t num_nodes, Generation generation) {
  const int per_host = devices_per_host(generation);
  c.error(c.devices_field,
          "`num_nodes=" + std::to_string(num_nodes) +
              "` asks for a pod slice of whole hosts, but " + c.devices_written() +
              " uses 1 of the " + std::to_string(per_host) + " devices of each " +
              generation_name(generation) + " host.",
          "Set `devices: " + std::to_string(per_host) +
              "` (or 'auto') for a pod slice, or `num_nodes: 1` for a single-core job.");
}

void resolve_named_slice(Context& c, const DeviceAsk& ask) {
  const SliceType slice = *c.named_slice;
  const Generation generation = slice.generation;
  const int per_host = devices_per_host(generation);
  if (!host_fits(generation, ask)) {
    report_host_misfit(c, {generation}, ask);
    return;
  }
  const std::optional<std::int64_t> num_nodes = c.num_nodes;
  if (is_single(ask)) {
    if (num_nodes.value_or(1) > 1) {
      report_partial_hosts(c, *num_nodes, generation);
    } else if (slice.hosts() > 1) {
      c.error(kFieldAcceleratorType,
              "`accelerator_type=" + py_repr(slice.name()) + "` is " +
                  std::to_string(slice.hosts()) + " hosts x " + std::to_string(per_host) +
                  " devices, but " + c.devices_written() + " asks for a single core.",
              "Drop `devices` to take the whole " + slice.name() +
                  ", or use `accelerator_type: \"" + SliceType{generation, 8}.name() +
                  "\"` for one core of one host.");
    } else {
      c.out.device = single_core(generation, ask);
      c.request_ok = true;
    }
    return;
  }
  const std::int64_t hosts = num_nodes.value_or(slice.hosts());
  if (hosts != slice.hosts()) {
    c.error(kFieldAcceleratorType,
            "`accelerator_type=" + py_repr(slice.name()) + "` is " + std::to_string(slice.hosts()) +
                " hosts x " + std::to_string(per_host) + " devices, but " + c.devices_written() +
                " x `num_nodes=" + std::to_string(hosts) + "` asks for " +
                std::to_string(hosts * per_host) + " devices.",
            "Drop `num_nodes` to take the whole " + slice.name() +
                ", or set `num_nodes: " + std::to_string(slice.hosts()) + "`.");
    return;
  }
  if (slice.hosts() > c.pool_hosts(generation)) {
    const std::optional<SliceType> largest = largest_slice(generation, c.pool_hosts(generation));
    c.error(kFieldAcceleratorType,
            "A " + slice.name() + " slice needs " + std::to_string(slice.hosts()) + " " +
                generation_name(generation) + " hosts, but the pool has " +
                std::to_string(c.pool_hosts(generation)) + ".",
            "The largest " + generation_name(generation) + " slice this pool can run is " +
                (largest ? largest->name() : std::string("none")) +
                "; ask for that, or submit to a larger pool.");
    return;
  }
  c.out.device = whole_hosts(generation, per_host, slice.hosts());
  c.request_ok = true;
}

void resolve_in_pool(Context& c, DeviceAsk ask) {
  const std::vector<Generation>& generations = c.pool_generations;
  if (ask.kind == DeviceAsk::Kind::kAuto) {
    // 'auto' on a mixed pool: the largest host kind present.
    int largest = 0;
    for (Generation g : generations) largest = std::max(largest, devices_per_host(g));
    ask = DeviceAsk{DeviceAsk::Kind::kCount, largest, 0};
  }
  std::vector<Generation> fitting;
  for (Generation g : generations) {
    if (host_fits(g, ask)) fitting.push_back(g);
  }
  if (fitting.empty()) {
    report_host_misfit(c, generations, ask);
    return;
  }
  const Generation only = fitting.size() == 1 ? fitting.front() : nullptr;
  const std::int64_t num_nodes = c.num_nodes.value_or(1);
  if (is_single(ask)) {
    if (num_nodes > 1) {
      report_partial_hosts(c, num_nodes, fitting.back());
      return;
    }
    c.out.device = single_core(only, ask);
    c.request_ok = true;
    return;
  }
  const int per_host = static_cast<int>(ask.count);
  if (num_nodes == 1) {
    c.out.device = whole_hosts(only, per_host, 1);
    c.request_ok = true;
    return;
  }
  // A pod slice: the newest fitting generation that has this slice size and
  // enough hosts.
  std::vector<Generation> valid;
  for (Generation g : fitting) {
    if (slice_of(g, per_host * num_nodes)) valid.push_back(g);
  }
  if (valid.empty()) {
    const Generation g = fitting.back();
    const std::int64_t size = per_host * num_nodes * g->units_per_device;
    c.error(kFieldNumNodes,
            c.devices_written() + " x `num_nodes=" + std::to_string(num_nodes) + "` makes a " +
                generation_name(g) + "-" + std::to_string(size) + ", which is not a valid " +
                generation_name(g) + " slice. Valid " + generation_name(g) +
                " slices: " + slice_names(g) + ".",
            "With " + std::to_string(per_host) + " devices per " + generation_name(g) +
                " host, `num_nodes` can be " + slice_host_counts(g) + ".");
    return;
  }
  for (auto it = valid.rbegin(); it != valid.rend(); ++it) {
    if (c.pool_hosts(*it) >= num_nodes) {
      c.out.device = whole_hosts(*it, per_host, static_cast<int>(num_nodes));
      c.request_ok = true;
      return;
    }
  }
  const Generation g = valid.back();
  const SliceType wanted = *slice_of(g, per_host * num_nodes);
  const std::optional<SliceType> largest = largest_slice(g, c.pool_hosts(g));
  c.error(
      kFieldNumNodes,
      "A " + wanted.name() + " slice needs " + std::to_string(num_nodes) + " " +
          generation_name(g) + " hosts, but the pool has " + std::to_string(c.pool_hosts(g)) + ".",
      "The largest " + generation_name(g) + " slice this pool can run is " +
          (largest ? largest->name() + " (`num_nodes: " + std::to_string(largest->hosts()) + "`)"
                   : std::string("none")) +
          "; ask for that, or submit to a larger pool.");
}

}  // namespace

void check_request(Context& c) {
  if (c.accelerator == Accelerator::kCpu) {
    c.out.device = DeviceRequest{};
    c.request_ok = true;
  } else if (c.accelerator == Accelerator::kTpu && c.ask && c.num_nodes_ok && c.named_slice_ok) {
    const bool spawn_ignores_nprocs = follow_spawn_nprocs(c);
    if (c.named_slice) {
      resolve_named_slice(c, *c.ask);
    } else {
      resolve_in_pool(c, *c.ask);
    }
    if (spawn_ignores_nprocs && c.request_ok) note_spawn_nprocs(c);
  }
  c.out.world_size = c.request_ok && c.accelerator == Accelerator::kTpu ? c.out.device.cores() : 1;
}

}  // namespace tpujobs::lightning
