// Lightning 1.x's device-specific Trainer flags `num_processes`, `gpus`,
// `ipus` and `tpu_cores`, by version: 1.6-1.9 map them onto the accelerator
// and devices flags (`_map_deprecated_devices_specific_info_to_accelerator_
// and_device_flag`, 1.6: `..._devices_specfic_...`), 1.7-1.9 warn that they
// are deprecated, and 2.0 removed them from `Trainer.__init__`, so Python
// refuses the keyword. The same function in every tag of a minor release
// (1.6.0-1.6.5, 1.7.0-1.7.7, 1.8.0-1.8.6, 1.9.0-1.9.5); line numbers below
// are those of the tag quoted.
#include <array>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// The flags in the order of Python's `num_processes or gpus or ipus or
// tpu_cores` (1.9.5 accelerator_connector.py:494, 1.6.5 :456).
struct Flag {
  std::string_view field;
  DeviceValue TrainerSettings::*value;
};
constexpr std::array<Flag, 4> kFlags = {{
    {kFieldNumProcesses, &TrainerSettings::num_processes},
    {kFieldGpus, &TrainerSettings::gpus},
    {kFieldIpus, &TrainerSettings::ipus},
    {kFieldTpuCores, &TrainerSettings::tpu_cores},
}};

// 1.7-1.9: `rank_zero_deprecation` for each flag that is not None, in the
// order num_processes, gpus, tpu_cores, ipus; `{value}` is str() for
// num_processes and ipus, repr() for gpus and tpu_cores.
struct Deprecation {
  std::string_view field;
  std::string_view text;
  bool repr;
};
constexpr Deprecation kDeprecations[] = {
    {kFieldNumProcesses,
     "Setting `Trainer(num_processes={value})` is deprecated in v1.7 and will be removed in v2.0. "
     "Please use `Trainer(accelerator='cpu', devices={value})` instead.",
     false},
    {kFieldGpus,
     "Setting `Trainer(gpus={value})` is deprecated in v1.7 and will be removed in v2.0. Please "
     "use "
     "`Trainer(accelerator='gpu', devices={value})` instead.",
     true},
    {kFieldTpuCores,
     "Setting `Trainer(tpu_cores={value})` is deprecated in v1.7 and will be removed in v2.0. "
     "Please use `Trainer(accelerator='tpu', devices={value})` instead.",
     true},
    {kFieldIpus,
     "Setting `Trainer(ipus={value})` is deprecated in v1.7 and will be removed in v2.0. Please "
     "use "
     "`Trainer(accelerator='ipu', devices={value})` instead.",
     false},
};

// What each minor release does with the flags.
struct FlagRules {
  Versions versions;
  bool deprecated;          // kDeprecations apply
  std::string_view gpu;     // the accelerator `gpus` sets: "gpu" (1.6), "cuda" (1.7+)
  std::string_view source;  // of the warnings
};
constexpr FlagRules kFlagRules[] = {
    {{106, 106},
     false,
     "gpu",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:445-481 "
     "(_map_deprecated_devices_specfic_info_to_accelerator_and_device_flag)"},
    {{107, 107},
     true,
     "cuda",
     "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:431-488 "
     "(_map_deprecated_devices_specific_info_to_accelerator_and_device_flag)"},
    {{108, 108},
     true,
     "cuda",
     "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:425-482 "
     "(_map_deprecated_devices_specific_info_to_accelerator_and_device_flag)"},
    {{109, 109},
     true,
     "cuda",
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:462-519 "
     "(_map_deprecated_devices_specific_info_to_accelerator_and_device_flag)"},
};

constexpr std::string_view kDevicesIgnored =
    "The flag `devices={devices}` will be ignored, instead the device specific number {flag} will "
    "be used";
constexpr std::string_view kMoreThanOne = "more than one device specific flag has been set";

// Trainer arguments Lightning 2.0 removed: `Trainer.__init__` (decorated by
// `_defaults_from_env_vars`, which passes every keyword on) takes keyword-only
// arguments and no **kwargs, so Python refuses the keyword when the Trainer
// is built, before Lightning runs. Checked in every last patch release
// 2.0.9, 2.1.4, 2.2.5, 2.3.3, 2.4.0, 2.5.6 and in 2.0.0: no `gpus`, `ipus`,
// `num_processes` or `tpu_cores` parameter, no **kwargs. `tpu_cores` is
// devices.cc's (kTpuCoresRules).
struct RemovedArgument {
  Versions versions;
  std::string_view field;
  std::string_view text;  // {qualname}
  std::string_view hint;
  std::string_view source;
};
constexpr RemovedArgument kRemovedArguments[] = {
    {{200, 299},
     kFieldGpus,
     "{qualname}() got an unexpected keyword argument 'gpus'",
     "Lightning 2.0 removed `gpus`: use `accelerator` with `devices` (`accelerator: \"tpu\"`, "
     "`devices: 8` on a TPU host).",
     "2.0.0:src/lightning/pytorch/trainer/trainer.py:90-132 (Trainer.__init__ has no gpus)"},
    {{200, 299},
     kFieldIpus,
     "{qualname}() got an unexpected keyword argument 'ipus'",
     "Lightning 2.0 removed `ipus`: use `accelerator` with `devices`; tpujobs runs "
     "`accelerator: \"tpu\"` (`devices: 8` on a TPU host) or `\"cpu\"`.",
     "2.0.0:src/lightning/pytorch/trainer/trainer.py:90-132 (Trainer.__init__ has no ipus)"},
    {{200, 299},
     kFieldNumProcesses,
     "{qualname}() got an unexpected keyword argument 'num_processes'",
     "Lightning 2.0 removed `num_processes`: use `accelerator` with `devices` "
     "(`accelerator: \"cpu\"`, `devices: 2`; or `accelerator: \"tpu\"`, `devices: 8`).",
     "2.0.0:src/lightning/pytorch/trainer/trainer.py:90-132 (Trainer.__init__ has no "
     "num_processes)"},
};

bool given(const DeviceValue& value) { return value.kind != DeviceValue::Kind::kAbsent; }

}  // namespace

bool py_truthy(const DeviceValue& value) {
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
      return false;
    case DeviceValue::Kind::kInt:
      return value.number != 0;
    case DeviceValue::Kind::kString:
      return !value.text.empty();
    case DeviceValue::Kind::kList:
      return value.list_length > 0 || !value.list.empty();
    case DeviceValue::Kind::kOther:
      return !is_none(value) && !value.equals_zero && value.python_repr != "{}";
  }
  return false;
}

std::optional<DeviceFlag> mapped_device_flag(const Context& c) {
  // `devices in ([], 0, "0")` is refused before the mapping (1.9.5 :440).
  if (!c.v1() || is_zero(c.settings.devices)) return std::nullopt;
  for (const Flag& flag : kFlags) {
    const DeviceValue& value = c.settings.*flag.value;
    if (!py_truthy(value)) continue;
    // `flag not in ([], 0, "0")`: the first true one decides.
    if (value.kind == DeviceValue::Kind::kString && value.text == "0") return std::nullopt;
    return DeviceFlag{flag.field, &value};
  }
  return std::nullopt;
}

std::optional<DeviceFlag> accelerator_from_device_flags(const Context& c, std::string* name) {
  if (!mapped_device_flag(c)) return std::nullopt;
  const FlagRules& rules = *row_for<FlagRules>(kFlagRules, c.version);
  const TrainerSettings& s = c.settings;
  // `if ipus: ... if tpu_cores: ... if gpus: ... if num_processes:` (1.9.5
  // :512-519): the last true one wins.
  std::optional<DeviceFlag> out;
  const std::pair<std::string_view, std::string_view> order[] = {{kFieldIpus, "ipu"},
                                                                 {kFieldTpuCores, "tpu"},
                                                                 {kFieldGpus, rules.gpu},
                                                                 {kFieldNumProcesses, "cpu"}};
  for (const auto& [field, accelerator] : order) {
    for (const Flag& flag : kFlags) {
      if (flag.field != field || !py_truthy(s.*flag.value)) continue;
      out = DeviceFlag{field, &(s.*flag.value)};
      *name = std::string(accelerator);
    }
  }
  return out;
}

// Lightning's warnings about the flags, which
// _check_device_config_and_set_final_flags gives after int(num_nodes) and
// `devices in ([], 0, "0")` and before the accelerator is chosen: so with
// none of the errors of the flags checked before them (flags_refused_first),
// and before every accelerator and device error.
void warn_device_flags(Context& c) {
  const FlagRules* rules = row_for<FlagRules>(kFlagRules, c.version);
  if (!rules || flags_refused_first(c) || is_zero(c.settings.devices)) return;
  for (const Deprecation& d : kDeprecations) {
    if (!rules->deprecated) break;
    for (const Flag& flag : kFlags) {
      const DeviceValue& value = c.settings.*flag.value;
      if (flag.field != d.field || !given(value) || is_none(value)) continue;
      c.warn(fill(d.text, {{"value", d.repr ? py_repr(value) : py_str(value)}}));
    }
  }
  const std::optional<DeviceFlag> mapped = mapped_device_flag(c);
  if (!mapped) return;
  if (py_truthy(c.settings.devices)) {
    c.warn(fill(kDevicesIgnored,
                {{"devices", py_str(c.settings.devices)}, {"flag", py_str(*mapped->value)}}));
  }
  int not_none = 0;
  for (const Flag& flag : kFlags) {
    const DeviceValue& value = c.settings.*flag.value;
    if (given(value) && !is_none(value)) ++not_none;
  }
  if (not_none > 1) c.warn(std::string(kMoreThanOne));
}

// "Trainer.__init__" from Python 3.10 on, "__init__" before.
std::string init_qualname(const Context& c) {
  const std::string python =
      c.settings.environment ? c.settings.environment->python.value_or("3.10") : "3.10";
  if (python.starts_with("3.") && python.size() >= 3) {
    const std::optional<std::int64_t> minor = py_int(std::string_view(python).substr(2, 2));
    if (minor && *minor < 10) return "__init__";
  }
  return "Trainer.__init__";
}

// 1.x raises in _check_config_and_set_final_flags (the accelerator and
// strategy names, the precision value), called before
// _check_device_config_and_set_final_flags, which takes int(num_nodes) first
// and then maps the device flags onto the devices and warns about them
// (1.9.5 accelerator_connector.py:183 then :192; the names :265-296, the
// precision :316, int(num_nodes) :437, the warnings :472-507; 1.6.5 :184
// then :193, :259-266, the precision :306, int(num_nodes) :420, :461-469):
// those warnings never come with such an error.
bool flags_refused_first(const Context& c) {
  return c.accelerator_name_refused || strategy_refused_with_the_flags(c) ||
         precision_refused_with_the_flags(c) || num_nodes_refused_by_int(c);
}

// `gpus`, `ipus`, `num_processes`: Python's TypeError under 2.x, for the
// first one given (the spec's JSON object does not keep the order written).
// 1.x takes them (mapped_device_flag).
void check_removed_arguments(Context& c) {
  for (const std::string& name : c.settings.removed_arguments) {
    const std::string field = "trainer." + name;
    for (const RemovedArgument& row : kRemovedArguments) {
      if (row.field != field || c.version < row.versions.first || row.versions.last < c.version) {
        continue;
      }
      c.error(field, fill(row.text, {{"qualname", init_qualname(c)}}), std::string(row.hint),
              row.source);
      return;
    }
  }
}

std::vector<RuleText> device_flag_rule_texts() {
  std::vector<RuleText> out;
  for (const FlagRules& rules : kFlagRules) {
    if (rules.deprecated) {
      for (const Deprecation& d : kDeprecations) out.push_back({"warning", d.text, rules.source});
    }
    out.push_back({"warning", kDevicesIgnored, rules.source});
    out.push_back({"warning", kMoreThanOne, rules.source});
  }
  for (const RemovedArgument& row : kRemovedArguments)
    out.push_back({row.field, row.text, row.source});
  return out;
}

}  // namespace tpujobs::lightning
