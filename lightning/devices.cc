// `devices` and `tpu_cores`: Lightning's device parsing and its messages, by
// version. Sources: `parse_tpu_cores` / `_parse_tpu_devices` and
// `_check_data_type` of each tag's device parser, the connector's
// `_check_device_config_and_set_final_flags` and, for 1.x `tpu_cores`,
// `_map_deprecated_devices_specific_info_to_accelerator_and_device_flag`.
#include <algorithm>
#include <iterator>
#include <span>
#include <utility>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

enum class TpuParse {
  kOneBased,   // 1, 8 or [<1-8>]; only "1" and "8" are strings of a count
  kZeroBased,  // 'auto', 1, the device count or [<0-count-1>]; int(text) first
};

struct DeviceRules {
  Versions versions;
  TpuParse parse;
  std::string_view invalid;        // {count}, {last}, {devices}: the parsed value's repr
  std::string_view type_error;     // {type}, {repr}
  std::string_view type_sequence;  // {type}
  std::string_view unparsable;     // {devices}: 2.1+ the whole text; before, Python's int() error
  std::string_view source;         // of invalid and unparsable
  // type_error and type_sequence are `_check_data_type`'s, in the device
  // parser module, not the TPU accelerator's.
  std::string_view type_source;
  std::string_view sequence_source;
  // 1-based parsers: a string of no numbers ('', ' ', ',') parses to [],
  // which `_tpu_cores_valid` / `_tpu_devices_valid` index ([0]) before any
  // check: Python's IndexError. Empty for the 2.1+ parser.
  std::string_view empty_list_source = {};
  // 2.1+ `_check_data_type` refuses None first, in its own words (no
  // period); before, it accepts None.
  std::string_view type_none_source = {};
  // 2.0 (whose `devices` defaults to 'auto'): an explicit None passes
  // `_check_data_type` and `_tpu_devices_valid` (`devices in (1, 8, None)`),
  // so get_parallel_devices(None) leaves no devices and the 'auto' strategy
  // choice indexes None. Where; empty for releases where None is 'auto' (1.x)
  // or refused (2.1+).
  std::string_view none_unsubscriptable_source = {};
  // 1.6's `_check_data_type` takes any sequence without looking inside
  // (1.6.5 device_parser.py:240-243): `_tpu_cores_valid` then compares its
  // first item with 1 and 8 (:254). Where; empty when items are checked.
  std::string_view unchecked_items_source = {};
  // 2.0 with an XLA strategy named ('xla', 'xla_debug') and `devices=None`:
  // the connector gives the strategy parallel_devices=None and finishes;
  // Trainer.device_ids then asserts `devices is not None` when
  // _log_device_info asks for trainer.num_devices. Where; empty otherwise.
  std::string_view none_device_ids_source = {};
};

constexpr std::string_view kComparisonTypeError =
    "TypeError: '<=' not supported between instances of 'int' and '{type}'";
constexpr std::string_view kNoneUnsubscriptable =
    "TypeError: 'NoneType' object is not subscriptable";
// A bare `assert`: Python prints the exception's name alone.
constexpr std::string_view kAssertionError = "AssertionError";

constexpr std::string_view kIndexError = "IndexError: list index out of range";
constexpr std::string_view kTypeNone21 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed None";

// The connector's `devices in ([], 0, "0")` check, before any parsing.
struct ZeroDevicesRule {
  Versions versions;
  std::string_view text;  // {devices}: repr, {accelerator}
  bool names_resolved;    // the accelerator named is the one 'auto' resolved to
  std::string_view source;
};

constexpr std::string_view kZero =
    "`Trainer(devices={devices})` value is not a valid input using {accelerator} accelerator.";
constexpr std::string_view kIntLiteral = "invalid literal for int() with base 10: {devices}";
constexpr std::string_view kTypeError17 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints or None, but you passed "
    "{type}.";
constexpr std::string_view kTypeSequence17 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints or None, but you passed a "
    "sequence of {type}.";
constexpr std::string_view kInvalid21 =
    "`devices` can only be 'auto', 1, {count} or [<0-{last}>] for TPUs. Got {devices}";
constexpr std::string_view kTypeError21 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed {repr}.";
constexpr std::string_view kTypeSequence21 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed a sequence "
    "of {type}.";
constexpr std::string_view kUnparsable21 = "Could not parse the selected TPU devices: {devices}";

// A 2.1+ row: the same parser texts, `_check_data_type`'s lines per release.
constexpr DeviceRules rules21(Versions versions, std::string_view type_source,
                              std::string_view sequence_source, std::string_view type_none_source) {
  return {versions,
          TpuParse::kZeroBased,
          kInvalid21,
          kTypeError21,
          kTypeSequence21,
          kUnparsable21,
          "2.1.4:src/lightning/fabric/accelerators/xla.py",
          type_source,
          sequence_source,
          {},
          type_none_source};
}

constexpr DeviceRules kDeviceRules[] = {
    {{106, 106},
     TpuParse::kOneBased,
     "`tpu_cores` can only be 1, 8 or [<1-8>]",
     "Device ID's (GPU/TPU) must be int, string or sequence of ints or None.",
     "Device ID's (GPU/TPU) must be int, string or sequence of ints or None.",
     kIntLiteral,
     "1.6.5:pytorch_lightning/utilities/device_parser.py",
     "1.6.5:pytorch_lightning/utilities/device_parser.py:243 (_check_data_type)",
     "1.6.5:pytorch_lightning/utilities/device_parser.py:243 (_check_data_type)",
     "1.6.5:pytorch_lightning/utilities/device_parser.py:254 (_tpu_cores_valid)",
     {},
     {},
     "1.6.5:pytorch_lightning/utilities/device_parser.py:254 (_tpu_cores_valid)"},
    {{107, 107},
     TpuParse::kOneBased,
     "`tpu_cores` can only be 1, 8 or [<1-8>]",
     kTypeError17,
     kTypeSequence17,
     kIntLiteral,
     "1.7.7:src/pytorch_lightning/utilities/device_parser.py",
     "1.7.7:src/pytorch_lightning/utilities/device_parser.py:293 (_check_data_type)",
     "1.7.7:src/pytorch_lightning/utilities/device_parser.py:291 (_check_data_type)",
     "1.7.7:src/pytorch_lightning/utilities/device_parser.py:304 (_tpu_cores_valid)"},
    // 1.8 moved the TPU parser to the accelerator and `_check_data_type` to
    // lightning_lite's (1.9 lightning_fabric's, 2.0 lightning.fabric's)
    // device_parser.py: lines 199 (a sequence) and 201 in every 1.8.x, 1.9.x
    // and 2.0.x but 2.0.3-2.0.6 (197, 199).
    {{108, 108},
     TpuParse::kOneBased,
     "`tpu_cores` can only be 1, 8 or [<1-8>]",
     kTypeError17,
     kTypeSequence17,
     kIntLiteral,
     "1.8.6:src/lightning_lite/accelerators/tpu.py",
     "1.8.6:src/lightning_lite/utilities/device_parser.py:201 (_check_data_type)",
     "1.8.6:src/lightning_lite/utilities/device_parser.py:199 (_check_data_type)",
     "1.8.6:src/lightning_lite/accelerators/tpu.py:168 (_tpu_cores_valid)"},
    {{109, 109},
     TpuParse::kOneBased,
     "`devices` can only be 1, 8 or [<1-8>] for TPUs.",
     kTypeError17,
     kTypeSequence17,
     kIntLiteral,
     "1.9.5:src/lightning_fabric/accelerators/tpu.py",
     "1.9.5:src/lightning_fabric/utilities/device_parser.py:201 (_check_data_type)",
     "1.9.5:src/lightning_fabric/utilities/device_parser.py:199 (_check_data_type)",
     "1.9.5:src/lightning_fabric/accelerators/tpu.py:168 (_tpu_devices_valid)"},
    {{200, 200},
     TpuParse::kOneBased,
     "`devices` can only be 1, 8 or [<1-8>] for TPUs.",
     kTypeError17,
     kTypeSequence17,
     kIntLiteral,
     "2.0.9:src/lightning/fabric/accelerators/tpu.py",
     "2.0.9:src/lightning/fabric/utilities/device_parser.py:201 (_check_data_type)",
     "2.0.9:src/lightning/fabric/utilities/device_parser.py:199 (_check_data_type)",
     "2.0.9:src/lightning/fabric/accelerators/tpu.py:173 (_tpu_devices_valid)",
     {},
     // _choose_strategy's `SingleTPUStrategy(device=self._parallel_devices[0])`:
     // line 426 in 2.0.0, 434 in 2.0.1-2.0.2, 427 in 2.0.3-2.0.9.
     "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:427 "
     "(_choose_strategy)",
     {},
     // `assert devices is not None`: line 1075 in 2.0.0-2.0.2, 1114 in
     // 2.0.3-2.0.4, 1112 in 2.0.5-2.0.6, 1119 in 2.0.7-2.0.9; setup.py:165
     // in every 2.0.x.
     "2.0.9:src/lightning/pytorch/trainer/trainer.py:1119 (Trainer.device_ids, from "
     "_log_device_info's trainer.num_devices, trainer/setup.py:165)"},
    // device_parser.py:203 / :205 in 2.1.0-2.4.0, :204 / :206 in 2.5.x.
    rules21({201, 204},
            "2.1.4:src/lightning/fabric/utilities/device_parser.py:205 (_check_data_type)",
            "2.1.4:src/lightning/fabric/utilities/device_parser.py:203 (_check_data_type)",
            "2.1.4:src/lightning/fabric/utilities/device_parser.py:198 (_check_data_type)"),
    rules21({205, 299},
            "2.5.6:src/lightning/fabric/utilities/device_parser.py:206 (_check_data_type)",
            "2.5.6:src/lightning/fabric/utilities/device_parser.py:204 (_check_data_type)",
            "2.5.6:src/lightning/fabric/utilities/device_parser.py:199 (_check_data_type)"),
};

// 1.x checks the flags before it resolves 'auto' (an absent accelerator is
// None); 2.0 after.
constexpr ZeroDevicesRule kZeroDevicesRules[] = {
    {{106, 109},
     kZero,
     false,
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{200, 299},
     kZero,
     true,
     "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
};

// Lightning 2.0 removed `tpu_cores`: Python refuses the keyword. 1.x maps
// it onto the accelerator and devices as it does `gpus`, `ipus` and
// `num_processes` (device_flags.cc).
struct TpuCoresRemoved {
  Versions versions;
  std::string_view text;  // {qualname}
  std::string_view source;
};
constexpr TpuCoresRemoved kTpuCoresRemoved[] = {
    {{200, 299},
     "{qualname}() got an unexpected keyword argument 'tpu_cores'",
     "2.0.9:src/lightning/pytorch/trainer/trainer.py (Trainer.__init__ has no tpu_cores)"},
};

// 1.x: `devices='auto'` without `accelerator` names no device type.
struct AutoWithoutAccelerator {
  Versions versions;
  std::string_view text;  // {devices}: as written (str)
  std::string_view source;
};
constexpr AutoWithoutAccelerator kAutoWithoutAccelerator[] = {
    {{106, 106},
     "You passed `devices={devices}` but haven't specified `accelerator=('auto'|'tpu'|'gpu'|'ipu'|"
     "'cpu'|'hpu)` for the devices mapping",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{107, 109},
     "You passed `devices={devices}` but haven't specified `accelerator=('auto'|'tpu'|'gpu'|'ipu'|"
     "'cpu'|'hpu'|'mps')` for the devices mapping.",
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
};

// `_parse_cpu_cores` (1.6-1.7: `parse_cpu_cores`): the same text in every
// release, raised by the connector as it parses the CPU devices.
struct CpuCoresRule {
  Versions versions;
  std::string_view source;
};
constexpr std::string_view kCpuCores =
    "`devices` selected with `CPUAccelerator` should be an int > 0.";
constexpr CpuCoresRule kCpuCoresRules[] = {
    {{106, 106}, "1.6.5:pytorch_lightning/utilities/device_parser.py:155 (parse_cpu_cores)"},
    {{107, 107}, "1.7.7:src/pytorch_lightning/utilities/device_parser.py:175 (parse_cpu_cores)"},
    {{108, 108}, "1.8.6:src/lightning_lite/accelerators/cpu.py:85 (_parse_cpu_cores)"},
    {{109, 109}, "1.9.5:src/lightning_fabric/accelerators/cpu.py:85 (_parse_cpu_cores)"},
    {{200, 200}, "2.0.9:src/lightning/fabric/accelerators/cpu.py:85 (_parse_cpu_cores)"},
    {{201, 201}, "2.1.4:src/lightning/fabric/accelerators/cpu.py:86 (_parse_cpu_cores)"},
    {{202, 204}, "2.4.0:src/lightning/fabric/accelerators/cpu.py:94 (_parse_cpu_cores)"},
    {{205, 299}, "2.5.6:src/lightning/fabric/accelerators/cpu.py:99 (_parse_cpu_cores)"},
};

const DeviceRules& rules_for(const Context& c) {
  return *row_for<DeviceRules>(kDeviceRules, c.version);
}

std::string devices_hint(const Context& c) {
  const std::vector<Generation> generations = c.device_generations();
  if (rules_for(c).parse == TpuParse::kOneBased) {
    return "Lightning " + c.release->name() +
           " accepts 1, 8 (every core of a host) or [k] with 1 <= k <= 8 (one core, 1-based). Use "
           "`devices: 8` or `devices: 1`; 0-based [k] and 4-device v4 hosts need Lightning 2.1 or "
           "later.";
  }
  const int count = devices_per_host(generations.front());
  return "Use `devices: " + std::to_string(count) + "` (every core of a host), `devices: 1`, or " +
         "`devices: [k]` for one specific core (0-based); for more cores add hosts with " +
         "`num_nodes`. Devices per host in this pool: " + host_counts_text(generations) + ".";
}

}  // namespace

bool is_none(const DeviceValue& value) {
  return value.kind == DeviceValue::Kind::kOther && value.python_type == "NoneType";
}

bool is_zero(const DeviceValue& value) {
  return (value.kind == DeviceValue::Kind::kInt && value.number == 0) ||
         (value.kind == DeviceValue::Kind::kString && value.text == "0") ||
         (value.kind == DeviceValue::Kind::kList && value.list.empty() &&
          value.list_other_type.empty()) ||
         (value.kind == DeviceValue::Kind::kOther && value.equals_zero);
}

namespace {

// The connector's check on the raw flag, before any parsing: devices in
// ([], 0, "0"). The accelerator it names is the flag ('auto' resolved from
// 2.0 on; as written, None when absent, before).
bool refuse_zero_devices(Context& c, const DeviceValue& value) {
  if (!is_zero(value)) return false;
  const ZeroDevicesRule& rule = *row_for<ZeroDevicesRule>(kZeroDevicesRules, c.version);
  std::string accelerator;
  if (!c.unavailable_accelerator.empty()) {
    accelerator = c.unavailable_accelerator;
  } else if (rule.names_resolved) {
    accelerator = c.accelerator == Accelerator::kTpu ? "tpu" : "cpu";
  } else {
    accelerator = c.accelerator_flag().value_or("None");
  }
  c.error(c.devices_field,
          fill(rule.text, {{"devices", py_repr(value)}, {"accelerator", accelerator}}),
          "Ask for at least one device: `devices: 1` for a single core, or 'auto' for a whole "
          "host.",
          rule.source);
  return true;
}

// `_check_data_type`: ints, strings and sequences of ints only.
bool refuse_data_type(Context& c, const DeviceValue& value) {
  const DeviceRules& rules = rules_for(c);
  if (is_none(value) && !rules.type_none_source.empty()) {
    c.error(c.devices_field, std::string(kTypeNone21), devices_hint(c), rules.type_none_source);
    return true;
  }
  if (value.kind == DeviceValue::Kind::kOther) {
    c.error(c.devices_field,
            fill(rules.type_error, {{"type", value.python_type}, {"repr", value.python_repr}}),
            devices_hint(c), rules.type_source);
    return true;
  }
  if (value.kind == DeviceValue::Kind::kList && !value.list_other_type.empty() &&
      rules.unchecked_items_source.empty()) {
    c.error(c.devices_field, fill(rules.type_sequence, {{"type", value.list_other_type}}),
            devices_hint(c), rules.sequence_source);
    return true;
  }
  return false;
}

std::optional<DeviceAsk> invalid(Context& c, const std::string& shown) {
  const DeviceRules& rules = rules_for(c);
  const int count = devices_per_host(c.device_generations().front());
  c.error(c.devices_field,
          fill(rules.invalid, {{"count", std::to_string(count)},
                               {"last", std::to_string(count - 1)},
                               {"devices", shown}}),
          devices_hint(c), rules.source);
  return std::nullopt;
}

// 2.1+ `_parse_tpu_devices` + `_check_tpu_devices_valid`, with the device
// count of the generations the job may run on.
std::optional<DeviceAsk> parse_zero_based(Context& c, const DeviceValue& value) {
  std::optional<std::int64_t> count;
  std::optional<std::vector<std::int64_t>> list;
  std::string shown = py_repr(value);  // what "Got ..." prints: the parsed value
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
    case DeviceValue::Kind::kOther:
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
      base::Result<std::vector<std::int64_t>, std::string> parsed = py_int_list(text);
      if (!parsed.ok()) {
        c.error(c.devices_field, fill(rules_for(c).unparsable, {{"devices", py_repr(text)}}),
                devices_hint(c), rules_for(c).source);
        return std::nullopt;
      }
      list = std::move(*parsed);
      shown = py_list(*list);
      break;
    }
  }
  for (Generation g : c.device_generations()) {
    const int per_host = devices_per_host(g);
    if (count && (*count == 1 || *count == per_host)) {
      return DeviceAsk{DeviceAsk::Kind::kCount, *count, 0};
    }
    if (list && list->size() == 1 && (*list)[0] >= 0 && (*list)[0] < per_host) {
      return DeviceAsk{DeviceAsk::Kind::kCore, 0, (*list)[0]};
    }
  }
  return invalid(c, shown);
}

// 1.6 with a list holding more than ints: `1 <= list(tpu_cores)[0] <= 8` runs
// whatever the length, so a first item that is not a number is Python's
// TypeError; one number in range passes (torch_xla then gets it as the core,
// which tpujobs does not follow); anything else is the usual refusal.
std::optional<DeviceAsk> parse_untyped_list16(Context& c, const DeviceValue& value) {
  const DeviceRules& rules = rules_for(c);
  const std::string& first = value.list_first_type;
  if (first != "int" && first != "float" && first != "bool") {
    c.error(c.devices_field, fill(kComparisonTypeError, {{"type", first}}), devices_hint(c),
            rules.unchecked_items_source);
    return std::nullopt;
  }
  if (value.list_length == 1 && value.list_first_number >= 1 && value.list_first_number <= 8) {
    c.error(
        c.devices_field,
        "Lightning " + c.release->name() + " accepts a " + first + " as the TPU core of `" +
            std::string(c.devices_name()) +
            "` and hands it to torch_xla as the device ordinal; tpujobs does not run such a job.",
        devices_hint(c));
    return std::nullopt;
  }
  return invalid(c, "");
}

// 1.x and 2.0 `parse_tpu_cores` / `_parse_tpu_devices`: 1, 8 or [<1-8>],
// 1-based, with "1"/"8" the only strings read as counts.
std::optional<DeviceAsk> parse_one_based(Context& c, const DeviceValue& value) {
  std::optional<std::int64_t> count;
  std::optional<std::vector<std::int64_t>> list;
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
    case DeviceValue::Kind::kOther:
      return DeviceAsk{};
    case DeviceValue::Kind::kInt:
      count = value.number;
      break;
    case DeviceValue::Kind::kList:
      if (!value.list_other_type.empty()) return parse_untyped_list16(c, value);
      list = value.list;
      break;
    case DeviceValue::Kind::kString: {
      if (value.text == "auto") return DeviceAsk{};
      const std::string_view text = strip(value.text);
      if (text == "1" || text == "8") {
        count = text == "1" ? 1 : 8;
        break;
      }
      base::Result<std::vector<std::int64_t>, std::string> parsed = py_int_list(text);
      if (!parsed.ok()) {
        c.error(c.devices_field,
                fill(rules_for(c).unparsable, {{"devices", py_repr(parsed.error())}}),
                devices_hint(c), rules_for(c).source);
        return std::nullopt;
      }
      list = std::move(*parsed);
      break;
    }
  }
  if (count && (*count == 1 || *count == 8)) return DeviceAsk{DeviceAsk::Kind::kCount, *count, 0};
  // A string of no numbers ('', ' ', ','): `list(devices)[0]` of [] (an
  // empty list itself is refused before, as devices in ([], 0, "0")).
  if (list && list->empty() && !rules_for(c).empty_list_source.empty()) {
    c.error(c.devices_field, std::string(kIndexError),
            "Lightning " + c.release->name() + " parses " + py_repr(*c.devices_value) +
                " as no device at all and fails indexing it: use `devices: 8` or `devices: 1`.",
            rules_for(c).empty_list_source);
    return std::nullopt;
  }
  if (list && list->size() == 1 && (*list)[0] >= 1 && (*list)[0] <= 8) {
    return DeviceAsk{DeviceAsk::Kind::kCore, 0, (*list)[0] - 1};
  }
  return invalid(c, "");
}

// 2.0's `devices=None` on a TPU: no parallel devices. With the strategy left
// to Lightning ('auto'), _choose_strategy indexes them. A named XLAStrategy
// gets parallel_devices=None and the connector finishes; then
// _log_device_info's trainer.num_devices asserts they are not None. Any other
// named strategy is refused by the strategy checks first (on a TPU,
// _lazy_init_strategy's "can only be used with"), which check_strategy
// reports. 'single_tpu' tpujobs does not follow: it refuses it in its own
// words.
void refuse_none_devices(Context& c) {
  const std::string hint = "Lightning " + c.release->name() +
                           " takes `devices=None` as no TPU devices at all: drop `devices` (its "
                           "default is 'auto') or set `devices: 8` or `devices: 1`.";
  switch (strategy_choice(c)) {
    case StrategyChoice::kAutomatic:
      c.error(c.devices_field, std::string(kNoneUnsubscriptable), hint,
              rules_for(c).none_unsubscriptable_source);
      return;
    case StrategyChoice::kXlaParallel:
      c.error(c.devices_field, std::string(kAssertionError), hint,
              rules_for(c).none_device_ids_source);
      return;
    case StrategyChoice::kXlaSingle:
      c.error(c.devices_field,
              "Lightning " + c.release->name() +
                  " gives `strategy=" + py_repr(c.strategy_flag().value_or("")) +
                  "` no TPU devices for `devices=None` (parallel_devices=None); tpujobs does not "
                  "run such a job.",
              "Drop `devices` (its default is 'auto') or set `devices: 8` or `devices: 1`.");
      return;
    case StrategyChoice::kOther:
      return;
  }
}

// 2.x: `tpu_cores` is Python's TypeError, before anything else.
bool refuse_removed_tpu_cores(Context& c, std::string hint) {
  const TpuCoresRemoved* removed = row_for<TpuCoresRemoved>(kTpuCoresRemoved, c.version);
  if (!removed || c.settings.tpu_cores.kind == DeviceValue::Kind::kAbsent) return false;
  c.error(kFieldTpuCores, fill(removed->text, {{"qualname", init_qualname(c)}}), std::move(hint),
          removed->source);
  return true;
}

void check_tpu_devices(Context& c) {
  const DeviceValue& devices = c.settings.devices;
  c.devices_field = kFieldDevices;
  c.devices_value = &devices;
  if (refuse_removed_tpu_cores(c,
                               "Lightning 2.0 removed `tpu_cores`: use `devices` with "
                               "`accelerator: \"tpu\"` (`devices: 8`, or `devices: [k]` with "
                               "k 0-based from 2.1 on).")) {
    return;
  }
  if (c.device_generations().empty()) return;  // no TPU: already reported
  // 1.x checks `devices` in ([], 0, "0") before it maps a device flag onto
  // it (_check_device_config_and_set_final_flags; 1.9.5
  // accelerator_connector.py:440, before the mapping at :453), so
  // `devices=0` is refused even beside `tpu_cores=8` or `gpus=8`.
  if (refuse_zero_devices(c, devices)) return;
  if (const std::optional<DeviceFlag> flag = mapped_device_flag(c)) {
    c.devices_field = flag->field;
    c.devices_value = flag->value;
  }
  // 1.x: `devices=None` is 'auto' (_set_devices_flag_if_auto_passed, 1.9.5
  // accelerator_connector.py:584).
  if (c.v1() && is_none(*c.devices_value)) {
    c.ask = DeviceAsk{};
    return;
  }
  if (is_none(*c.devices_value) && !rules_for(c).none_unsubscriptable_source.empty()) {
    refuse_none_devices(c);
    return;
  }
  if (refuse_data_type(c, *c.devices_value)) return;
  c.ask = rules_for(c).parse == TpuParse::kZeroBased ? parse_zero_based(c, *c.devices_value)
                                                     : parse_one_based(c, *c.devices_value);
}

// Lightning's `_parse_cpu_cores`. A CPU job is one replica on the executor's
// threads, so more devices are accepted but do not multiply the work.
void check_cpu_devices(Context& c) {
  if (refuse_removed_tpu_cores(c, "Lightning 2.0 removed `tpu_cores`: use `devices`.")) return;
  c.devices_field = kFieldDevices;
  c.devices_value = &c.settings.devices;
  // 1.x refuses `devices=0` before it maps a device flag (check_tpu_devices).
  if (refuse_zero_devices(c, c.settings.devices)) return;
  // A false flag (0, '', "0", None, ...) is not used: `devices` stays.
  if (const std::optional<DeviceFlag> flag = mapped_device_flag(c)) {
    if (flag->field == kFieldTpuCores) {
      c.error(kFieldTpuCores,
              "`tpu_cores=" + py_str(c.settings.tpu_cores) +
                  "` asks for TPU cores, but the job runs with `accelerator='cpu'`.",
              "Remove `tpu_cores` for a CPU job, or set `accelerator: \"tpu\"` with `devices`.");
      return;
    }
    c.devices_field = flag->field;
    c.devices_value = flag->value;
  }
  const DeviceValue& devices = *c.devices_value;
  std::optional<std::int64_t> count;
  if (devices.kind == DeviceValue::Kind::kAbsent) return;
  if (c.v1() && is_none(devices)) return;  // 'auto' in 1.x (check_tpu_devices)
  if (devices.kind == DeviceValue::Kind::kInt) count = devices.number;
  // isinstance(True, int): `devices=True` is one process (False was refused
  // above, as False == 0).
  if (devices.kind == DeviceValue::Kind::kOther && devices.python_type == "bool") {
    count = devices.python_repr == "True" ? 1 : 0;
  }
  if (devices.kind == DeviceValue::Kind::kString) {
    if (devices.text == "auto") return;
    const std::string_view text = strip(devices.text);
    if (!text.empty() &&
        std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      count = py_int(text);
    }
  }
  if (!count || *count <= 0) {
    c.error(c.devices_field, std::string(kCpuCores), "Use `devices: 1` (or 'auto') for a CPU job.",
            row_for<CpuCoresRule>(kCpuCoresRules, c.version)->source);
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
  warn_device_flags(c);
  const AutoWithoutAccelerator* automatic =
      row_for<AutoWithoutAccelerator>(kAutoWithoutAccelerator, c.version);
  const DeviceValue& devices = c.settings.devices;
  // Only a true device flag (tpu_cores, gpus, ...) replaces the devices flag
  // and names the accelerator (1.9.5 accelerator_connector.py:495-519); None,
  // 0 or '' leave 'auto' without one (:456).
  if (automatic && !c.accelerator_flag() && devices.kind == DeviceValue::Kind::kString &&
      devices.text == "auto" && !mapped_device_flag(c)) {
    c.error(kFieldDevices, fill(automatic->text, {{"devices", devices.text}}),
            "Lightning " + c.release->name() +
                " needs an accelerator for `devices: \"auto\"`: add `accelerator: \"tpu\"`.",
            automatic->source);
    return;
  }
  if (c.accelerator == Accelerator::kTpu) check_tpu_devices(c);
  if (c.accelerator == Accelerator::kCpu) check_cpu_devices(c);
  if (!c.unavailable_accelerator.empty()) refuse_zero_devices(c, c.settings.devices);
}

std::vector<RuleText> device_rule_texts() {
  std::vector<RuleText> out;
  for (const DeviceRules& rules : kDeviceRules) {
    const std::pair<std::string_view, std::string_view> texts[] = {
        {rules.invalid, rules.source},
        {rules.type_error, rules.type_source},
        {rules.type_sequence, rules.sequence_source},
        {rules.unparsable, rules.source}};
    // 1.x parses gpus, ipus and num_processes as tpu_cores, in place of devices.
    const std::span<const std::string_view> flags(
        kDeviceFlagFields, rules.versions.first < 200 ? std::size(kDeviceFlagFields) : 1);
    for (const auto& [text, source] : texts) {
      out.push_back({kFieldDevices, text, source});
      for (std::string_view field : flags) out.push_back({field, text, source});
    }
    if (!rules.type_none_source.empty()) {
      out.push_back({kFieldDevices, kTypeNone21, rules.type_none_source});
      out.push_back({kFieldTpuCores, kTypeNone21, rules.type_none_source});
    }
    if (!rules.empty_list_source.empty()) {
      out.push_back({kFieldDevices, kIndexError, rules.empty_list_source});
      for (std::string_view field : flags)
        out.push_back({field, kIndexError, rules.empty_list_source});
    }
    if (!rules.unchecked_items_source.empty()) {
      out.push_back({kFieldDevices, kComparisonTypeError, rules.unchecked_items_source});
      for (std::string_view field : flags) {
        out.push_back({field, kComparisonTypeError, rules.unchecked_items_source});
      }
    }
    if (!rules.none_unsubscriptable_source.empty()) {
      out.push_back({kFieldDevices, kNoneUnsubscriptable, rules.none_unsubscriptable_source});
    }
    if (!rules.none_device_ids_source.empty()) {
      out.push_back({kFieldDevices, kAssertionError, rules.none_device_ids_source});
    }
  }
  for (const ZeroDevicesRule& rule : kZeroDevicesRules) {
    out.push_back({kFieldDevices, rule.text, rule.source});
    out.push_back({kFieldTpuCores, rule.text, rule.source});
  }
  for (const AutoWithoutAccelerator& row : kAutoWithoutAccelerator) {
    out.push_back({kFieldDevices, row.text, row.source});
  }
  for (const CpuCoresRule& rule : kCpuCoresRules) {
    out.push_back({kFieldDevices, kCpuCores, rule.source});
    if (rule.versions.first < 200) {  // 1.x: a device flag in place of devices
      for (std::string_view field : kDeviceFlagFields)
        out.push_back({field, kCpuCores, rule.source});
    }
  }
  for (const TpuCoresRemoved& row : kTpuCoresRemoved) {
    out.push_back({kFieldTpuCores, row.text, row.source});
  }
  return out;
}

}  // namespace tpujobs::lightning
