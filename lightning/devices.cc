#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

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

}  // namespace

void check_devices(Context& c) {
  if (c.accelerator == Accelerator::kTpu) check_tpu_devices(c);
  if (c.accelerator == Accelerator::kCpu) check_cpu_devices(c);
}

}  // namespace tpujobs::lightning
