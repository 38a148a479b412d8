#include "scheduler/resolve.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>

namespace tpujobs::scheduler {
namespace {

// JSON paths of the settings, as the API layer names them.
constexpr std::string_view kFieldAccelerator = "trainer.accelerator";
constexpr std::string_view kFieldDevices = "trainer.devices";
constexpr std::string_view kFieldTpuCores = "trainer.tpu_cores";
constexpr std::string_view kFieldNumNodes = "trainer.num_nodes";
constexpr std::string_view kFieldPrecision = "trainer.precision";
constexpr std::string_view kFieldStrategy = "trainer.strategy";
constexpr std::string_view kFieldRuntime = "runtime";
constexpr std::string_view kFieldEnv = "env";
constexpr std::string_view kFieldAcceleratorType = "resources.accelerator_type";
constexpr std::string_view kFieldLightningVersion = "lightning_version";

constexpr std::array kAllGenerations{Generation::kV2, Generation::kV3, Generation::kV4};

enum class Version { kV1, kV2 };
enum class Accelerator { kUnresolved, kTpu, kCpu };

// ---------------------------------------------------------------------------
// Python-style rendering, so that messages read exactly as Lightning's do.

std::string py_repr(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string py_list(const std::vector<std::int64_t>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(list[i]);
  }
  return out + "]";
}

// repr(value) as Lightning prints it with {value!r}.
std::string py_repr(const DeviceValue& value) {
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
      return "None";
    case DeviceValue::Kind::kInt:
      return std::to_string(value.number);
    case DeviceValue::Kind::kString:
      return py_repr(value.text);
    case DeviceValue::Kind::kList:
      return py_list(value.list);
  }
  return "None";
}

// str(value) as Lightning prints it with {value}.
std::string py_str(const DeviceValue& value) {
  return value.kind == DeviceValue::Kind::kString ? value.text : py_repr(value);
}

std::string_view strip(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}

// Python's int(text) for the texts users write: optional sign, digits,
// surrounding whitespace. nullopt when Python would raise (or overflow).
std::optional<std::int64_t> py_int(std::string_view text) {
  text = strip(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Splits "0, 1," like Lightning: empty pieces are skipped. nullopt names the
// first piece Python's int() refuses, through *bad.
std::optional<std::vector<std::int64_t>> py_int_list(std::string_view text, std::string* bad) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view piece = text.substr(start, comma - start);
    if (!piece.empty()) {
      const std::optional<std::int64_t> value = py_int(piece);
      if (!value) {
        *bad = std::string(strip(piece));
        return std::nullopt;
      }
      out.push_back(*value);
    }
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

// ---------------------------------------------------------------------------
// Generation facts as the messages need them.

int devices_per_host(Generation generation) { return facts(generation).devices_per_host; }
std::string generation_name(Generation generation) { return std::string(facts(generation).name); }

// "v3-8, v3-32, v3-64, ..."
std::string slice_names(Generation generation) {
  std::vector<std::string> names;
  for (int size : facts(generation).slice_sizes)
    names.push_back(SliceType{generation, size}.name());
  return join(names, ", ");
}

// "1, 4, 8, 16, ..." hosts: the num_nodes values that make a slice.
std::string slice_host_counts(Generation generation) {
  std::vector<std::string> counts;
  for (int size : facts(generation).slice_sizes) {
    counts.push_back(std::to_string(SliceType{generation, size}.hosts()));
  }
  return join(counts, ", ");
}

// The largest slice of `generation` with at most `hosts` hosts.
std::optional<SliceType> largest_slice(Generation generation, int hosts) {
  std::optional<SliceType> best;
  for (int size : facts(generation).slice_sizes) {
    const SliceType slice{generation, size};
    if (slice.hosts() <= hosts) best = slice;
  }
  return best;
}

// The slice with the most hosts of any generation.
SliceType largest_slice_anywhere() {
  std::optional<SliceType> best;
  for (Generation generation : kAllGenerations) {
    const SliceType slice{generation, facts(generation).slice_sizes.back()};
    if (!best || slice.hosts() > best->hosts()) best = slice;
  }
  return *best;
}

std::optional<SliceType> slice_of(Generation generation, std::int64_t devices) {
  const std::int64_t size = devices * facts(generation).name_units_per_device;
  for (int valid : facts(generation).slice_sizes) {
    if (valid == size) return SliceType{generation, valid};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// What `devices` / `tpu_cores` asks of one host once Lightning's rules pass.

struct DeviceAsk {
  enum class Kind { kAuto, kCount, kCore } kind = Kind::kAuto;
  std::int64_t count = 0;  // kCount
  std::int64_t core = 0;   // kCore, 0-based
};

// The state the checks share: what earlier checks resolved, for later ones.
struct Context {
  const TrainerSettings& settings;
  const PoolCapacity& pool;
  Resolution& out;

  Version version = Version::kV2;
  Accelerator accelerator = Accelerator::kUnresolved;
  std::vector<Generation> pool_generations = {};  // TPU generations with hosts, v2 first

  // resources.accelerator_type, when given and valid.
  std::optional<SliceType> named_slice = std::nullopt;
  bool named_slice_ok = true;  // false: invalid, or its generation is not in the pool

  // The device setting in use and what it asks; ask is nullopt when invalid.
  std::string_view devices_field = kFieldDevices;
  const DeviceValue* devices_value = nullptr;
  std::optional<DeviceAsk> ask = std::nullopt;

  bool num_nodes_ok = true;
  bool request_ok = false;

  void error(std::string_view field, std::string message, std::string hint) {
    out.errors.push_back({std::string(field), std::move(message), std::move(hint)});
  }
  void warn(std::string text) { out.warnings.push_back(std::move(text)); }

  int pool_hosts(Generation generation) const {
    const auto it = pool.hosts.find(generation);
    return it == pool.hosts.end() ? 0 : std::max(it->second, 0);
  }
  bool tpu_available() const { return !pool_generations.empty(); }

  // The generations the device rules are checked against.
  std::vector<Generation> device_generations() const {
    if (named_slice) return {named_slice->generation};
    return pool_generations;
  }

  std::string_view devices_name() const {
    return devices_field == kFieldTpuCores ? "tpu_cores" : "devices";
  }
  // "`devices=8`" as written, for tpujobs' own messages.
  std::string devices_written() const {
    const bool absent = !devices_value || devices_value->kind == DeviceValue::Kind::kAbsent;
    return "`" + std::string(devices_name()) + "=" +
           (absent ? std::string("'auto'") : py_repr(*devices_value)) + "`";
  }
};

// "8 on v2/v3 hosts, 4 on v4 hosts"
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
// lightning_version

void check_lightning_version(Context& c) {
  const std::optional<std::string>& written = c.settings.lightning_version;
  if (!written || *written == "2.x") {
    c.version = Version::kV2;
  } else if (*written == "1.x") {
    c.version = Version::kV1;
  } else {
    c.error(kFieldLightningVersion,
            "`lightning_version` must be '2.x' or '1.x', got " + py_repr(*written) + ".",
            "Use \"2.x\" (the default) for Lightning 2 rules, or \"1.x\" to validate as "
            "Lightning 1.x did.");
  }
  c.out.lightning_v1 = c.version == Version::kV1;
}

// ---------------------------------------------------------------------------
// accelerator

enum class AcceleratorKind { kTpu, kCpu, kAuto, kUnavailable };

struct AcceleratorRule {
  std::string_view name;
  AcceleratorKind kind;
};

constexpr AcceleratorRule kAcceleratorRules[] = {
    {"tpu", AcceleratorKind::kTpu},          {"cpu", AcceleratorKind::kCpu},
    {"auto", AcceleratorKind::kAuto},        {"gpu", AcceleratorKind::kUnavailable},
    {"cuda", AcceleratorKind::kUnavailable}, {"mps", AcceleratorKind::kUnavailable},
    {"hpu", AcceleratorKind::kUnavailable},  {"ipu", AcceleratorKind::kUnavailable},
};

// Lightning's "invalid accelerator name" list (the registry, sorted).
std::string_view registered_accelerators(Version version) {
  return version == Version::kV2 ? "auto, cpu, cuda, mps, tpu"
                                 : "auto, cpu, cuda, hpu, ipu, mps, tpu";
}

void check_accelerator(Context& c) {
  const bool tpu_cores_given = c.settings.tpu_cores.kind != DeviceValue::Kind::kAbsent;
  std::optional<AcceleratorKind> kind;
  if (!c.settings.accelerator) {
    // 2.x defaults to 'auto'; 1.x defaulted to the CPU unless a device flag
    // such as tpu_cores named the accelerator.
    if (c.version == Version::kV2) {
      kind = tpu_cores_given ? AcceleratorKind::kTpu : AcceleratorKind::kAuto;
    } else {
      kind = tpu_cores_given ? AcceleratorKind::kTpu : AcceleratorKind::kCpu;
      if (!tpu_cores_given && c.tpu_available()) {
        c.warn(
            "TPU available but not used. Set `accelerator` and `devices` using "
            "`Trainer(accelerator='tpu', devices=8)`.");
      }
    }
  } else {
    const std::string& written = *c.settings.accelerator;
    for (const AcceleratorRule& rule : kAcceleratorRules) {
      if (rule.name == written) kind = rule.kind;
    }
    if (!kind) {
      c.error(kFieldAccelerator,
              "You selected an invalid accelerator name: `accelerator=" + py_repr(written) +
                  "`. Available names are: " + std::string(registered_accelerators(c.version)) +
                  ".",
              "tpujobs emulates TPUs: use `accelerator: \"tpu\"` (or \"auto\"), or \"cpu\".");
      return;
    }
  }

  switch (*kind) {
    case AcceleratorKind::kCpu:
      c.accelerator = Accelerator::kCpu;
      break;
    case AcceleratorKind::kAuto:
      c.accelerator = c.tpu_available() ? Accelerator::kTpu : Accelerator::kCpu;
      break;
    case AcceleratorKind::kTpu:
      if (c.tpu_available()) {
        c.accelerator = Accelerator::kTpu;
      } else {
        c.error(c.settings.accelerator ? kFieldAccelerator : kFieldTpuCores,
                "No TPU devices were found.",
                "This pool has no TPU hosts: use `accelerator: \"cpu\"` (or \"auto\", which "
                "falls back to the CPU), or submit to a service started with TPU hosts "
                "(--pool v3-8).");
      }
      break;
    case AcceleratorKind::kUnavailable:
      c.error(kFieldAccelerator,
              "`Trainer(accelerator=" + py_repr(*c.settings.accelerator) +
                  ")` can not run on your system since the accelerator is not available. The "
                  "following accelerator(s) is available and can be passed into `accelerator` "
                  "argument of `Trainer`: " +
                  (c.tpu_available() ? "['tpu', 'cpu']" : "['cpu']") + ".",
              "tpujobs emulates TPU hosts, not GPUs: use `accelerator: \"tpu\"` (or \"auto\") and "
              "drop GPU-only settings.");
      break;
  }
  if (c.accelerator != Accelerator::kUnresolved) {
    c.out.accelerator = c.accelerator == Accelerator::kTpu ? "tpu" : "cpu";
  }
}

// ---------------------------------------------------------------------------
// resources.accelerator_type

void check_accelerator_type(Context& c) {
  if (!c.settings.accelerator_type) return;
  const std::string& written = *c.settings.accelerator_type;
  if (c.accelerator == Accelerator::kCpu) {
    c.named_slice_ok = false;
    c.error(kFieldAcceleratorType,
            "`accelerator_type=" + py_repr(written) +
                "` names a TPU slice, but the job runs with `accelerator='cpu'`.",
            "Drop `resources.accelerator_type` for a CPU job, or set `accelerator: \"tpu\"`.");
    return;
  }
  c.named_slice = parse_slice_type(written);
  if (!c.named_slice) {
    c.named_slice_ok = false;
    const std::size_t dash = written.find('-');
    const std::optional<Generation> generation =
        parse_generation(std::string_view(written).substr(0, dash));
    if (generation && dash != std::string::npos) {
      c.error(kFieldAcceleratorType,
              py_repr(written) + " is not a valid " + generation_name(*generation) +
                  " slice. Valid " + generation_name(*generation) +
                  " slices: " + slice_names(*generation) + ".",
              "Pick one of the listed accelerator types; the number counts TensorCores.");
    } else {
      c.error(kFieldAcceleratorType,
              py_repr(written) +
                  " is not a TPU accelerator type this service emulates: expected "
                  "<generation>-<cores> with generation v2, v3 or v4, e.g. 'v3-32'.",
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
// devices / tpu_cores

std::string devices_hint(const Context& c) {
  const std::vector<Generation> generations = c.device_generations();
  const int count = devices_per_host(generations.front());
  if (c.version == Version::kV1) {
    return "Lightning 1.x accepts 1, 8 (every core of a host) or [k] with 1 <= k <= 8 (one core, "
           "1-based). Use `devices: 8` or `devices: 1`, or `lightning_version: \"2.x\"`.";
  }
  return "Use `devices: " + std::to_string(count) + "` (every core of a host), `devices: 1`, or " +
         "`devices: [k]` for one specific core (0-based); for more cores add hosts with " +
         "`num_nodes`. Devices per host in this pool: " + host_counts_text(generations) + ".";
}

// Lightning's check on the raw flag, before any parsing.
bool refuse_zero_devices(Context& c, const DeviceValue& value, std::string_view accelerator) {
  const bool zero = (value.kind == DeviceValue::Kind::kInt && value.number == 0) ||
                    (value.kind == DeviceValue::Kind::kString && value.text == "0") ||
                    (value.kind == DeviceValue::Kind::kList && value.list.empty());
  if (!zero) return false;
  c.error(c.devices_field,
          "`Trainer(devices=" + py_repr(value) + ")` value is not a valid input using " +
              std::string(accelerator) + " accelerator.",
          "Ask for at least one device: `devices: 1` for a single core, or 'auto' for a whole "
          "host.");
  return true;
}

std::string_view accelerator_flag(const Context& c) {
  if (c.settings.accelerator) return *c.settings.accelerator;
  return c.version == Version::kV2 ? "auto" : "tpu";
}

// Lightning 2.x `_parse_tpu_devices` + `_check_tpu_devices_valid`, with the
// device count of the generations the job may run on.
std::optional<DeviceAsk> parse_devices_v2(Context& c, const DeviceValue& value) {
  if (refuse_zero_devices(c, value, accelerator_flag(c))) return std::nullopt;
  const std::vector<Generation> generations = c.device_generations();

  std::optional<std::int64_t> count;
  std::optional<std::vector<std::int64_t>> list;
  std::string shown = py_repr(value);  // what "Got ..." prints: the parsed value
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
      return DeviceAsk{};
    case DeviceValue::Kind::kInt:
      count = value.number;
      break;
    case DeviceValue::Kind::kList:
      list = value.list;
      break;
    case DeviceValue::Kind::kString: {
      if (value.text == "auto") return DeviceAsk{};
      const std::string_view text = strip(value.text);
      count = py_int(text);
      if (count) {
        shown = std::to_string(*count);
        break;
      }
      std::string bad;
      list = py_int_list(text, &bad);
      if (!list) {
        c.error(c.devices_field, "Could not parse the selected TPU devices: " + py_repr(text),
                devices_hint(c));
        return std::nullopt;
      }
      shown = py_list(*list);
      break;
    }
  }

  for (Generation g : generations) {
    const int per_host = devices_per_host(g);
    if (count && (*count == 1 || *count == per_host)) {
      return DeviceAsk{DeviceAsk::Kind::kCount, *count, 0};
    }
    if (list && list->size() == 1 && (*list)[0] >= 0 && (*list)[0] < per_host) {
      return DeviceAsk{DeviceAsk::Kind::kCore, 0, (*list)[0]};
    }
  }
  const int quoted_count = devices_per_host(generations.front());
  c.error(c.devices_field,
          "`devices` can only be 'auto', 1, " + std::to_string(quoted_count) + " or [<0-" +
              std::to_string(quoted_count - 1) + ">] for TPUs. Got " + shown,
          devices_hint(c));
  return std::nullopt;
}

// Lightning 1.x `parse_tpu_cores`: 1, 8 or [<1-8>], 1-based, with "1"/"8" the
// only strings read as counts.
std::optional<DeviceAsk> parse_devices_v1(Context& c, const DeviceValue& value) {
  if (c.devices_field == kFieldDevices && refuse_zero_devices(c, value, accelerator_flag(c))) {
    return std::nullopt;
  }
  std::optional<std::int64_t> count;
  std::optional<std::vector<std::int64_t>> list;
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
      return DeviceAsk{};
    case DeviceValue::Kind::kInt:
      count = value.number;
      break;
    case DeviceValue::Kind::kList:
      list = value.list;
      break;
    case DeviceValue::Kind::kString: {
      if (value.text == "auto" && c.devices_field == kFieldDevices) return DeviceAsk{};
      const std::string_view text = strip(value.text);
      if (text == "1" || text == "8") {
        count = text == "1" ? 1 : 8;
        break;
      }
      std::string bad;
      list = py_int_list(text, &bad);
      if (!list) {
        c.error(c.devices_field, "invalid literal for int() with base 10: " + py_repr(bad),
                devices_hint(c));
        return std::nullopt;
      }
      break;
    }
  }
  if (count && (*count == 1 || *count == 8)) return DeviceAsk{DeviceAsk::Kind::kCount, *count, 0};
  if (list && list->size() == 1 && (*list)[0] >= 1 && (*list)[0] <= 8) {
    return DeviceAsk{DeviceAsk::Kind::kCore, 0, (*list)[0] - 1};
  }
  c.error(c.devices_field, "`tpu_cores` can only be 1, 8 or [<1-8>]", devices_hint(c));
  return std::nullopt;
}

void check_tpu_devices(Context& c) {
  const DeviceValue& devices = c.settings.devices;
  const DeviceValue& tpu_cores = c.settings.tpu_cores;
  const bool tpu_cores_given = tpu_cores.kind != DeviceValue::Kind::kAbsent;
  if (tpu_cores_given && devices.kind != DeviceValue::Kind::kAbsent) {
    c.error(kFieldTpuCores,
            "`devices=" + py_repr(devices) + "` and `tpu_cores=" + py_repr(tpu_cores) +
                "` were both given; pass only one of them.",
            "Remove `tpu_cores` (deprecated since Lightning 1.7) and keep `devices`.");
    return;
  }
  c.devices_field = tpu_cores_given ? kFieldTpuCores : kFieldDevices;
  c.devices_value = tpu_cores_given ? &tpu_cores : &devices;
  if (tpu_cores_given && c.version == Version::kV2) {
    c.warn("Setting `Trainer(tpu_cores=" + py_str(tpu_cores) +
           ")` is deprecated in v1.7 and will be removed in v2.0. Please use "
           "`Trainer(accelerator='tpu', devices=" +
           py_str(tpu_cores) + ")` instead.");
  }
  if (c.device_generations().empty()) return;  // no TPU: already reported
  // tpu_cores keeps its 1.x meaning under either version.
  c.ask = (tpu_cores_given || c.version == Version::kV1) ? parse_devices_v1(c, *c.devices_value)
                                                         : parse_devices_v2(c, *c.devices_value);
}

// Lightning's `_parse_cpu_cores`. A CPU job is one replica on the executor's
// threads, so more devices are accepted but do not multiply the work.
void check_cpu_devices(Context& c) {
  if (c.settings.tpu_cores.kind != DeviceValue::Kind::kAbsent) {
    c.error(kFieldTpuCores,
            "`tpu_cores=" + py_str(c.settings.tpu_cores) +
                "` asks for TPU cores, but the job runs with `accelerator='cpu'`.",
            "Remove `tpu_cores` for a CPU job, or set `accelerator: \"tpu\"` with `devices`.");
    return;
  }
  const DeviceValue& devices = c.settings.devices;
  c.devices_value = &devices;
  if (refuse_zero_devices(c, devices, c.settings.accelerator ? *c.settings.accelerator : "cpu")) {
    return;
  }
  std::optional<std::int64_t> count;
  if (devices.kind == DeviceValue::Kind::kAbsent) return;
  if (devices.kind == DeviceValue::Kind::kInt) count = devices.number;
  if (devices.kind == DeviceValue::Kind::kString) {
    if (devices.text == "auto") return;
    const std::string_view text = strip(devices.text);
    if (!text.empty() &&
        std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      count = py_int(text);
    }
  }
  if (!count || *count <= 0) {
    c.error(kFieldDevices, "`devices` selected with `CPUAccelerator` should be an int > 0.",
            "Use `devices: 1` (or 'auto') for a CPU job.");
    return;
  }
  if (*count > 1) {
    c.warn(
        "tpujobs runs `accelerator='cpu'` jobs as one process on the executor's threads; "
        "`devices=" +
        std::to_string(*count) + "` trains one replica.");
  }
}

void check_devices(Context& c) {
  if (c.accelerator == Accelerator::kTpu) check_tpu_devices(c);
  if (c.accelerator == Accelerator::kCpu) check_cpu_devices(c);
}

// ---------------------------------------------------------------------------
// num_nodes

void check_num_nodes(Context& c) {
  if (!c.settings.num_nodes) return;
  const std::int64_t num_nodes = *c.settings.num_nodes;
  if (num_nodes < 1) {
    c.num_nodes_ok = false;
    c.error(kFieldNumNodes,
            "`num_nodes` must be a positive integer, but got " + std::to_string(num_nodes) + ".",
            "Use `num_nodes: 1` for one host, or the number of hosts of a pod slice.");
  } else if (const SliceType largest = largest_slice_anywhere(); num_nodes > largest.hosts()) {
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

// ---------------------------------------------------------------------------
// The resource request: which hosts of which generation.

ResourceRequest single_core(std::optional<Generation> generation, const DeviceAsk& ask) {
  ResourceRequest request;
  request.kind = RequestKind::kSingleCore;
  request.generation = generation;
  request.devices_per_host = 1;
  request.hosts = 1;
  if (ask.kind == DeviceAsk::Kind::kCore) request.pinned_core = static_cast<int>(ask.core);
  return request;
}

ResourceRequest whole_hosts(std::optional<Generation> generation, int per_host, int hosts) {
  ResourceRequest request;
  request.kind = hosts > 1 ? RequestKind::kSlice : RequestKind::kHost;
  request.generation = generation;
  request.devices_per_host = per_host;
  request.hosts = hosts;
  if (generation) {
    request.accelerator_type = slice_of(*generation, std::int64_t{per_host} * hosts)->name();
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

// Only reachable under 1.x, whose rules assume 8-core hosts.
void report_host_misfit(Context& c, const std::vector<Generation>& generations,
                        const DeviceAsk& ask) {
  const std::string what = ask.kind == DeviceAsk::Kind::kCore
                               ? "core " + std::to_string(ask.core) + " (0-based) of a host"
                               : std::to_string(ask.count) + " devices per host";
  c.error(c.devices_field,
          c.devices_written() + " asks for " + what + ", but the hosts it may run on have " +
              host_counts_text(generations) + ".",
          "Lightning 1.x only knows 8-core hosts: on v4 hosts use `lightning_version: \"2.x\"` "
          "with `devices: 4` (or 'auto'), or `devices: 1`.");
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
  const std::optional<std::int64_t> num_nodes = c.settings.num_nodes;
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
      c.out.request = single_core(generation, ask);
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
  c.out.request = whole_hosts(generation, per_host, slice.hosts());
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
  const std::optional<Generation> only =
      fitting.size() == 1 ? std::optional<Generation>(fitting.front()) : std::nullopt;
  const std::int64_t num_nodes = c.settings.num_nodes.value_or(1);
  if (is_single(ask)) {
    if (num_nodes > 1) {
      report_partial_hosts(c, num_nodes, fitting.back());
      return;
    }
    c.out.request = single_core(only, ask);
    c.request_ok = true;
    return;
  }
  const int per_host = static_cast<int>(ask.count);
  if (num_nodes == 1) {
    c.out.request = whole_hosts(only, per_host, 1);
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
    const std::int64_t size = per_host * num_nodes * facts(g).name_units_per_device;
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
      c.out.request = whole_hosts(*it, per_host, static_cast<int>(num_nodes));
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

void check_request(Context& c) {
  if (c.accelerator == Accelerator::kCpu) {
    c.out.request = ResourceRequest{};
    c.request_ok = true;
  } else if (c.accelerator == Accelerator::kTpu && c.ask && c.num_nodes_ok && c.named_slice_ok) {
    if (c.named_slice) {
      resolve_named_slice(c, *c.ask);
    } else {
      resolve_in_pool(c, *c.ask);
    }
  }
  c.out.world_size = c.request_ok && c.accelerator == Accelerator::kTpu ? c.out.request.cores() : 1;
}

// ---------------------------------------------------------------------------
// precision

// Lightning 2.x `_convert_precision_to_unified_args`: aliases to canonical
// names, with the legacy warning for the ones that change meaning.
struct PrecisionAlias {
  std::string_view written;
  std::string_view canonical;
  bool legacy_warning;
};
constexpr PrecisionAlias kPrecisionAliasesV2[] = {
    {"64", "64-true", false},
    {"32", "32-true", false},
    {"16", "16-mixed", true},
    {"bf16", "bf16-mixed", true},
};
constexpr std::string_view kPrecisionNamesV2[] = {"16-true",    "16-mixed", "bf16-true",
                                                  "bf16-mixed", "32-true",  "64-true"};
constexpr std::string_view kAllowedPrecisionsV2 =
    "('16-true', '16-mixed', 'bf16-true', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', "
    "'32', '16', 'bf16')";

// What tpujobs runs, per canonical name (the XLA plugin's supported set).
struct PrecisionRun {
  std::string_view canonical;
  Precision precision;
};
constexpr PrecisionRun kRunnablePrecisions[] = {
    {"32-true", Precision::k32True},
    {"16-true", Precision::k16True},
    {"bf16-true", Precision::kBf16True},
};

constexpr std::string_view kPrecisionHint =
    "Use `precision: \"bf16-true\"` on TPUs (the MXU multiplies in bfloat16), or \"32-true\"; "
    "mixed precision (AMP) does not exist on XLA.";

void check_precision_v2(Context& c, std::string_view written) {
  std::string canonical(written);
  for (const PrecisionAlias& alias : kPrecisionAliasesV2) {
    if (alias.written != written) continue;
    canonical = alias.canonical;
    if (alias.legacy_warning) {
      c.warn("`precision=" + std::string(written) +
             "` is supported for historical reasons but its usage is discouraged. Please set your "
             "precision to " +
             canonical + " instead!");
    }
  }
  if (std::find(std::begin(kPrecisionNamesV2), std::end(kPrecisionNamesV2), canonical) ==
      std::end(kPrecisionNamesV2)) {
    c.error(kFieldPrecision,
            "Precision " + py_repr(written) +
                " is invalid. Allowed precision values: " + std::string(kAllowedPrecisionsV2),
            std::string(kPrecisionHint));
    return;
  }
  for (const PrecisionRun& run : kRunnablePrecisions) {
    if (run.canonical == canonical) {
      c.out.precision = run.precision;
      return;
    }
  }
  if (c.accelerator == Accelerator::kCpu) {
    c.error(kFieldPrecision,
            "`precision=" + py_repr(canonical) +
                "` is not supported by the tpujobs CPU executor. `precision` must be one of: "
                "('32-true', '16-true', 'bf16-true').",
            "Use `precision: \"32-true\"` or \"bf16-true\" for a CPU job.");
    return;
  }
  c.error(kFieldPrecision,
          "`precision=" + py_repr(canonical) +
              ")` is not supported in XLA. `precision` must be one of: ('32-true', '16-true', "
              "'bf16-true').",
          std::string(kPrecisionHint));
}

// Lightning 1.x: 16, 32, 64 or 'bf16'; 16 on a TPU meant bf16.
void check_precision_v1(Context& c, std::string_view written) {
  const bool tpu = c.accelerator != Accelerator::kCpu;
  if (written == "32") {
    c.out.precision = Precision::k32True;
  } else if (written == "bf16") {
    c.out.precision = Precision::kBf16True;
  } else if (written == "16") {
    c.out.precision = Precision::kBf16True;
    c.warn(tpu ? "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported "
                 "with TPUs. Using `precision='bf16'` instead."
               : "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not "
                 "supported on CPU. Using `precision='bf16'` instead.");
  } else if (written == "64") {
    if (tpu) {
      c.error(kFieldPrecision,
              "`Trainer(accelerator='tpu', precision=64)` is not implemented. Please, open an "
              "issue in `https://github.com/Lightning-AI/lightning/issues` requesting this "
              "feature.",
              "Use `precision: \"bf16\"` (or 16, which means bf16 on TPUs) or 32.");
    } else {
      c.error(kFieldPrecision,
              "`precision=64` is not supported by the tpujobs CPU executor. `precision` must be "
              "one of: [16, 32, 'bf16'].",
              "Use `precision: 32` or \"bf16\" for a CPU job.");
    }
  } else {
    c.error(kFieldPrecision,
            "Precision " + py_repr(written) +
                " is invalid. Allowed precision values: ['16', '32', '64', 'bf16']",
            "Lightning 1.x takes 16, 32, 64 or \"bf16\" (the \"-true\"/\"-mixed\" names came in "
            "2.0): use \"bf16\" on TPUs, or `lightning_version: \"2.x\"`.");
  }
}

void check_precision(Context& c) {
  if (!c.settings.precision) return;
  if (c.version == Version::kV2) {
    check_precision_v2(c, *c.settings.precision);
  } else {
    check_precision_v1(c, *c.settings.precision);
  }
}

// ---------------------------------------------------------------------------
// strategy

enum class StrategyKind { kAuto, kXla, kSingleXla, kXlaDebug, kForeign };

struct StrategyRule {
  std::string_view name;
  StrategyKind kind;
  std::string_view class_name;  // kForeign: the class Lightning instantiates
};

// The registered names per version. TPU strategies first; the rest are
// registered but refused on TPU.
constexpr StrategyRule kStrategiesV2[] = {
    {"auto", StrategyKind::kAuto, ""},
    {"xla", StrategyKind::kXla, ""},
    {"single_xla", StrategyKind::kSingleXla, ""},
    {"xla_debug", StrategyKind::kXlaDebug, ""},
    {"ddp", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_spawn", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_fork", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_notebook", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_find_unused_parameters_true", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_find_unused_parameters_false", StrategyKind::kForeign, "DDPStrategy"},
    {"deepspeed", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_1", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_2", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_3", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"fsdp", StrategyKind::kForeign, "FSDPStrategy"},
    {"fsdp_cpu_offload", StrategyKind::kForeign, "FSDPStrategy"},
};
constexpr StrategyRule kStrategiesV1[] = {
    {"auto", StrategyKind::kAuto, ""},
    {"tpu_spawn", StrategyKind::kXla, ""},
    {"single_tpu", StrategyKind::kSingleXla, ""},
    {"tpu_spawn_debug", StrategyKind::kXlaDebug, ""},
    {"ddp", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_spawn", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_fork", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_notebook", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_sharded", StrategyKind::kForeign, "DDPShardedStrategy"},
    {"dp", StrategyKind::kForeign, "DataParallelStrategy"},
    {"deepspeed", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"fsdp", StrategyKind::kForeign, "DDPFullyShardedStrategy"},
    {"fsdp_native", StrategyKind::kForeign, "DDPFullyShardedNativeStrategy"},
    {"horovod", StrategyKind::kForeign, "HorovodStrategy"},
};

std::span<const StrategyRule> strategy_rules(Version version) {
  if (version == Version::kV2) return kStrategiesV2;
  return kStrategiesV1;
}

std::string tpu_strategy_names(Version version) {
  std::vector<std::string> names;
  for (const StrategyRule& rule : strategy_rules(version)) {
    if (rule.kind != StrategyKind::kForeign) names.emplace_back(rule.name);
  }
  return join(names, ", ");
}

std::string strategy_hint(Version version) {
  return std::string("Remove `strategy` (or use \"auto\"): Lightning picks ") +
         (version == Version::kV2 ? "`XLAStrategy` for several TPU cores and "
                                    "`SingleDeviceXLAStrategy` for one"
                                  : "`TPUSpawnStrategy` for several TPU cores and "
                                    "`SingleTPUStrategy` for one") +
         ". TPU strategies: " + tpu_strategy_names(version) + ".";
}

void check_strategy(Context& c) {
  const std::string written = c.settings.strategy.value_or("auto");
  if (c.accelerator == Accelerator::kCpu) {
    c.out.strategy = "auto";
    if (written != "auto") {
      c.error(kFieldStrategy,
              "`strategy=" + py_repr(written) +
                  "` is not supported for `accelerator='cpu'` jobs: tpujobs runs them as one "
                  "process on the executor's threads.",
              "Remove `strategy` (or use \"auto\") for a CPU job.");
    }
    return;
  }
  const StrategyRule* rule = nullptr;
  for (const StrategyRule& candidate : strategy_rules(c.version)) {
    if (candidate.name == written) rule = &candidate;
  }
  if (!rule) {
    c.error(kFieldStrategy,
            "You selected an invalid strategy name: `strategy=" + py_repr(written) +
                "`. It must be either a string or an instance of `" +
                (c.version == Version::kV2 ? "lightning.pytorch" : "pytorch_lightning") +
                ".strategies.Strategy`. Valid names on TPUs: " + tpu_strategy_names(c.version) +
                ".",
            strategy_hint(c.version));
    return;
  }
  const bool several = c.request_ok && c.out.world_size > 1;
  switch (rule->kind) {
    case StrategyKind::kAuto:
      c.out.strategy = several || !c.request_ok ? "xla" : "single_xla";
      return;
    case StrategyKind::kXla:
      c.out.strategy = "xla";
      return;
    case StrategyKind::kXlaDebug:
      c.out.strategy = "xla_debug";
      return;
    case StrategyKind::kSingleXla:
      if (several) {
        c.error(kFieldStrategy,
                "`strategy=" + py_repr(written) + "` runs on one TPU core, but " +
                    c.devices_written() + " asks for " + std::to_string(c.out.world_size) + ".",
                "Use `strategy: \"" + std::string(c.version == Version::kV2 ? "xla" : "tpu_spawn") +
                    "\"` (or \"auto\") for several cores, or `devices: 1`.");
        return;
      }
      c.out.strategy = "single_xla";
      return;
    case StrategyKind::kForeign:
      c.error(kFieldStrategy,
              c.version == Version::kV2
                  ? "The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` or "
                    "`XLAStrategy`, found " +
                        std::string(rule->class_name) + "."
                  : "The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
                    "`TPUSpawnStrategy`, found " +
                        std::string(rule->class_name) + ".",
              strategy_hint(c.version));
      return;
  }
}

// ---------------------------------------------------------------------------
// runtime

void check_runtime(Context& c) {
  const std::string runtime = c.settings.runtime.value_or("pjrt");
  if (runtime != "pjrt" && runtime != "xrt") {
    c.error(kFieldRuntime, "`runtime` must be 'pjrt' or 'xrt', got " + py_repr(runtime) + ".",
            "Use `runtime: \"pjrt\"` (the default, PJRT_DEVICE=TPU).");
    return;
  }
  if (runtime != "xrt" || c.accelerator == Accelerator::kCpu) return;
  if (c.version == Version::kV2) {
    c.error(kFieldRuntime, "The XLA XRT runtime is not supported anymore.",
            "Use `runtime: \"pjrt\"` (PJRT_DEVICE=TPU): Lightning 2.x and torch_xla 2.x run on "
            "PJRT only. Or validate as `lightning_version: \"1.x\"`.");
  } else if (c.settings.env.find("XRT_TPU_CONFIG") == c.settings.env.end()) {
    c.error(kFieldEnv, "Missing XLA configuration",
            "Set XRT_TPU_CONFIG in `env`, as on a Cloud TPU VM: export "
            "XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"");
  }
}

// ---------------------------------------------------------------------------
// Every check, in the order its problems are reported. Later checks read what
// earlier ones resolved (the accelerator, the devices, the world size).
using Check = void (*)(Context&);
constexpr Check kChecks[] = {
    check_lightning_version, check_accelerator, check_accelerator_type,
    check_devices,           check_num_nodes,   check_request,
    check_precision,         check_strategy,    check_runtime,
};

}  // namespace

Resolution resolve(const TrainerSettings& settings, const PoolCapacity& pool) {
  Resolution out;
  Context context{settings, pool, out};
  for (Generation generation : kAllGenerations) {
    if (context.pool_hosts(generation) > 0) context.pool_generations.push_back(generation);
  }
  for (Check check : kChecks) check(context);
  return out;
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::k32True:
      return "32-true";
    case Precision::k16True:
      return "16-true";
    case Precision::kBf16True:
      return "bf16-true";
  }
  return "32-true";
}

}  // namespace tpujobs::scheduler
