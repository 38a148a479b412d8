// xmp.spawn(fn, args=(), nprocs=None, ...) by the runtime torch_xla runs it
// on, which torch_xla itself picks from the environment:
// - PJRT (PJRT_DEVICE set). From torch_xla 2.0,
//   torch_xla/distributed/xla_multiprocessing.py hands spawn to the PJRT
//   spawn (v2.0.0:386 `pjrt.spawn(fn, nprocs, start_method, args)`; v2.9.0:43),
//   whose only nprocs that is not ignored or refused is 1 (one process) or
//   None (one per device). 1.13's PJRT spawn takes no nprocs at all (v1.13.0
//   xla_multiprocessing.py `pjrt.spawn(fn, args)`) and says nothing: no row.
// - XRT (XRT_TPU_CONFIG set, PJRT_DEVICE not): spawn's own _pre_fork_setup,
//   which takes 1 or the host's device count, TPU_NUM_DEVICES or 8 when it is
//   unset (v2.0.0 xla_multiprocessing.py:80-83), and raises ValueError for
//   anything else. It is in every torch_xla up to 2.0 and in the separate
//   2.1.0+xrt build (the `xrt` branch); v2.1.0's own wheels have no XRT
//   (`@xr.requires_pjrt def spawn`, v2.1.0 xla_multiprocessing.py:6).
// Which one runs when neither variable is set: XRT up to 1.13 (v1.13.0
// torch_xla/experimental/pjrt.py:40-42, using_pjrt() is PJRT_DEVICE being
// set; before 1.13 spawn has no PJRT path), PJRT from 2.0 (v2.0.0
// experimental/pjrt.py:34-56 selects PJRT unless an XRT_* variable is set;
// the xrt branch's runtime.py:28-50 the same; v2.1.0 runtime.py:30-48
// ignores XRT_* and always selects PJRT).
#include "lightning/script_xla.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "lightning/checks.h"
#include "lightning/python.h"
#include "lightning/versions.h"

namespace tpujobs::lightning {
namespace {

constexpr std::string_view kRule = "xmp.spawn.nprocs";

struct SpawnNprocsRule {
  Versions versions;      // torch_xla major*100+minor
  Severity severity;      // kWarning: logged and ignored; kError: ValueError
  std::string_view text;  // `{nprocs}`: '%d' % nprocs
  std::string_view source;
  std::string_view hint;
};

constexpr std::string_view kIgnoredHint =
    "torch_xla {version} ignores `nprocs` under PJRT and starts one process per device of the "
    "host: drop `nprocs`, or use `nprocs=1` for a single process";
constexpr std::string_view kRefusedHint =
    "Drop `nprocs` (spawn then uses every device of the host) or use `nprocs=1`; to use fewer "
    "devices, set the device count variable the message names (TPU_NUM_DEVICES on a TPU)";

constexpr std::string_view kRefusedText =
    "Unsupported nprocs ({nprocs}). Please use nprocs=1 or None (default). If None, spawn will "
    "use all available devices. Use the environment variable X_NUM_DEVICES (where X is CPU, GPU, "
    "TPU, NEURONCORE, etc) to limit the number of devices used.";

constexpr SpawnNprocsRule kSpawnNprocsRules[] = {
    {{200, 200},
     Severity::kWarning,
     "Unsupported nprocs ({nprocs}), ignoring...",
     "pytorch/xla v2.0.0:torch_xla/experimental/pjrt.py:363 (spawn, logging.warning)",
     kIgnoredHint},
    {{201, 205},
     Severity::kWarning,
     "Unsupported nprocs ({nprocs}), ignoring...",
     "pytorch/xla v2.5.1:torch_xla/_internal/pjrt.py:207 (spawn, logging.warning; "
     "v2.1.1:200, v2.2.0:198, v2.3.0:209, v2.4.0:212; the 2.1.0+xrt build's xrt branch "
     "5b6e913:200)",
     kIgnoredHint},
    {{206, 208},
     Severity::kError,
     kRefusedText,
     "pytorch/xla v2.8.1:torch_xla/_internal/pjrt.py:209-211 (spawn, ValueError; "
     "v2.6.1 and v2.7.0 the same lines)",
     kRefusedHint},
    {{209, 209},
     Severity::kError,
     "Unsupported nprocs ({nprocs}). Please use nprocs=1 or None (default). If None, spawn will "
     "use all available devices. Use the environment variable X_NUM_DEVICES (where X is CPU, "
     "TPU, NEURONCORE, etc) to limit the number of devices used.",
     "pytorch/xla v2.9.0:torch_xla/_internal/pjrt.py:207-209 (spawn, ValueError)",
     kRefusedHint},
};

// XRT's _pre_fork_setup: `num_devices not in [1, dev_count]` raises
// ValueError('...'.format(dev_count, num_devices)). `{devices}` is
// dev_count, `{nprocs}` is str(nprocs). The text is the same in every tag.
constexpr std::string_view kXrtText =
    "The number of devices must be either 1 or {devices}, got {nprocs} instead";
// dev_count on a TPU: TPU_NUM_DEVICES, or 8 when it is unset (v2.0.0
// xla_multiprocessing.py:80-83, v1.5.0:46-47).
constexpr int kXrtDevices = 8;
constexpr int kXrtBuild = 201;  // torch_xla 2.1.0+xrt

struct XrtSpawnRule {
  Versions versions;
  std::string_view source;
};
constexpr XrtSpawnRule kXrtSpawnRules[] = {
    {{105, 112},
     "pytorch/xla v1.12.0:torch_xla/distributed/xla_multiprocessing.py:200-202 "
     "(_pre_fork_setup, ValueError; v1.5.0:75-77, v1.6.0:157-159, v1.10.0:199-201)"},
    {{113, 113},
     "pytorch/xla v1.13.0:torch_xla/distributed/xla_multiprocessing.py:201-203 "
     "(_pre_fork_setup, ValueError)"},
    {{200, 200},
     "pytorch/xla v2.0.0:torch_xla/distributed/xla_multiprocessing.py:204-206 "
     "(_pre_fork_setup, ValueError)"},
    {{kXrtBuild, kXrtBuild},
     "pytorch/xla xrt branch 5b6e913 (torch_xla 2.1.0+xrt):torch_xla/distributed/"
     "xla_multiprocessing.py:204-206 (_pre_fork_setup, ValueError)"},
};

// torch_xla's pin as major*100+minor ("2.6.0+cpu" -> 206); nullopt when
// it does not start with two numbers.
std::optional<int> version_number(std::string_view pin) {
  int major = 0, minor = 0;
  const char* end = pin.data() + pin.size();
  auto [dot, e1] = std::from_chars(pin.data(), end, major);
  if (e1 != std::errc() || dot == end || *dot != '.') return std::nullopt;
  auto [rest, e2] = std::from_chars(dot + 1, end, minor);
  if (e2 != std::errc() || minor > 99) return std::nullopt;
  return major * 100 + minor;
}

// What `'%d' % nprocs` prints, for an nprocs other than 1 and None;
// nullopt when the value is not a number (a TypeError, not this rule's).
std::optional<std::string> printed_nprocs(const PyValue& value) {
  switch (value.type) {
    case PyValue::Type::kInt:
    case PyValue::Type::kBool:
      return std::to_string(value.integer);
    case PyValue::Type::kFloat:
      if (!std::isfinite(value.real) || std::fabs(value.real) > 9e18) return std::nullopt;
      return std::to_string(static_cast<std::int64_t>(std::trunc(value.real)));
    default:
      return std::nullopt;
  }
}

// Python's `value == number` for the values the check knows.
bool equals(const PyValue& value, int number) {
  return ((value.type == PyValue::Type::kInt || value.type == PyValue::Type::kBool) &&
          value.integer == number) ||
         (value.type == PyValue::Type::kFloat && value.real == number);
}

bool single_or_default(const PyValue& value) {
  return value.type == PyValue::Type::kNone || equals(value, 1);
}

// Python's str(value), as '{}'.format prints it.
std::string python_str(const PyValue& value) {
  if (value.type == PyValue::Type::kStr) return value.text;
  return py_value_repr(value);
}

// nprocs as written: the keyword, or the third positional argument.
const CallArgument* nprocs_argument(const LightningCall& call, bool* splat) {
  int positional = 0;
  const CallArgument* found = nullptr;
  for (const CallArgument& argument : call.arguments) {
    if (argument.name == "*" || argument.name == "**") *splat = true;
    if (argument.name == "nprocs") found = &argument;
    if (argument.name.empty() && positional++ == 2) found = &argument;
  }
  return found;
}

// The torch_xla the requirements pin, and the runtime its spawn runs on.
struct SpawnRuntime {
  const Requirement* pin = nullptr;
  std::optional<int> version;  // major*100+minor; nullopt: not pinned with ==
  bool xrt_build = false;      // "2.1.0+xrt"
  bool xrt = false;            // spawn runs XRT's _pre_fork_setup
  std::string reason;          // who picked the runtime, for the hints
  std::string name() const { return xrt ? "XRT" : "PJRT"; }
};

SpawnRuntime spawn_runtime(const ScriptCheckOptions& options) {
  SpawnRuntime out;
  for (const Requirement& requirement : options.requirements)
    if (requirement.package == "torch-xla") out.pin = &requirement;
  if (out.pin && !out.pin->version.empty()) out.version = version_number(out.pin->version);
  out.xrt_build = out.version == kXrtBuild && out.pin->version.find("+xrt") != std::string::npos;
  // A torch_xla without XRT (2.1's own wheels, 2.2+) selects PJRT whatever
  // XRT_* says (v2.1.0 runtime.py:30-48).
  const bool has_xrt = !out.version || *out.version <= 200 || out.xrt_build;
  if (options.runtime == "xrt" && !has_xrt) {
    out.reason = "torch_xla " + out.pin->version +
                 " has no XRT and selects PJRT whatever XRT_TPU_CONFIG says";
  } else if (options.runtime) {
    out.xrt = *options.runtime == "xrt";
    out.reason = "--runtime " + *options.runtime;
  } else if (out.version) {
    out.xrt = *out.version <= 113;
    const std::string name = "torch_xla " + out.pin->version;
    out.reason = out.xrt ? name +
                               " runs XRT (XRT_TPU_CONFIG set) unless PJRT_DEVICE is set; "
                               "--runtime pjrt checks PJRT"
                 : has_xrt ? name +
                                 " selects PJRT unless an XRT_* variable is set; --runtime "
                                 "xrt checks XRT"
                           : name + " runs PJRT only";
  }
  return out;
}

std::string minor_name(int version) {
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

void add_note(const LightningCall& call, const CallArgument* at, std::string_view path,
              std::string message, std::string hint, std::vector<Finding>* out) {
  out->push_back({std::string(path), at ? at->line : call.line, at ? at->column : call.column,
                  "not-checked", Severity::kNote, std::move(message), std::move(hint), ""});
}

// `nprocs` under XRT: 1 or the host's 8, else _pre_fork_setup's ValueError.
void check_xrt_spawn(const LightningCall& call, const CallArgument& nprocs,
                     const SpawnRuntime& runtime, std::string_view path,
                     std::vector<Finding>* out) {
  if (equals(*nprocs.value, 1) || equals(*nprocs.value, kXrtDevices)) return;
  // Without a pin, --runtime xrt: every torch_xla that has XRT says the same.
  const XrtSpawnRule* rule = row_for<XrtSpawnRule>(kXrtSpawnRules, runtime.version.value_or(200));
  if (!rule) {
    add_note(call, &nprocs, path,
             "not checked: `nprocs` of " + call.callee +
                 "(...): tpujobs has no rule for torch_xla " + runtime.pin->version + "'s spawn",
             "Pin torch_xla 1.5 to 2.9 with `==` in a --requirements file", out);
    return;
  }
  const std::string devices = std::to_string(kXrtDevices);
  const bool number = printed_nprocs(*nprocs.value).has_value();
  out->push_back(
      {std::string(path), nprocs.line, nprocs.column, std::string(kRule), Severity::kError,
       fill(kXrtText, {{"devices", devices}, {"nprocs", python_str(*nprocs.value)}}),
       (number ? ""
               : "`nprocs` is a " + py_type_name(*nprocs.value) + ", never equal to a count. ") +
           "Under XRT (" + runtime.reason +
           ") spawn takes `nprocs=1` or the host's device count, " + devices +
           " (TPU_NUM_DEVICES when set): drop `nprocs` to use every device, or use `nprocs=1`",
       std::string(rule->source)});
}

// Why a PJRT nprocs is not checked; empty when a row applies.
std::string pjrt_unchecked(const SpawnRuntime& runtime, const SpawnNprocsRule* rule) {
  if (rule) return "";
  if (!runtime.pin) return "no requirements file pins torch_xla";
  if (!runtime.version) return "torch_xla is not pinned to one version";
  if (*runtime.version < 113)
    return "torch_xla " + runtime.pin->version +
           " has no PJRT runtime (PJRT came in 1.13): its spawn is XRT's";
  if (*runtime.version == 113)
    return "torch_xla 1.13's PJRT spawn takes no nprocs: xmp.spawn drops it without a message "
           "(pytorch/xla v1.13.0:torch_xla/distributed/xla_multiprocessing.py:383)";
  return "tpujobs has no rule for torch_xla " + runtime.pin->version + "'s spawn";
}

}  // namespace

void check_xla_spawn(const LightningCall& call, std::string_view path,
                     const ScriptCheckOptions& options, std::vector<Finding>* out) {
  bool splat = false;
  const CallArgument* nprocs = nprocs_argument(call, &splat);
  if (!nprocs) {
    if (splat)
      add_note(call, nullptr, path,
               "not checked: " + call.callee + "(*...) / (**...) may set `nprocs`",
               "Pass `nprocs` by keyword, or leave it out", out);
    return;
  }
  if (!nprocs->value) {
    add_note(call, nprocs, path,
             "not checked: `nprocs` of " + call.callee + "(...): " + nprocs->unknown_reason,
             "Set `nprocs` to a literal, or a module-level constant, to have it checked", out);
    return;
  }
  if (single_or_default(*nprocs->value)) return;  // both runtimes take them
  const SpawnRuntime runtime = spawn_runtime(options);
  if (runtime.xrt) {
    check_xrt_spawn(call, *nprocs, runtime, path, out);
    return;
  }
  const std::optional<std::string> printed = printed_nprocs(*nprocs->value);
  if (!printed) {
    add_note(call, nprocs, path,
             "not checked: `nprocs` of " + call.callee + "(...) is a " +
                 py_type_name(*nprocs->value) + ", which tpujobs does not check",
             "Use `nprocs=1` or leave it out", out);
    return;
  }
  const SpawnNprocsRule* rule =
      runtime.version ? row_for<SpawnNprocsRule>(kSpawnNprocsRules, *runtime.version) : nullptr;
  if (const std::string why = pjrt_unchecked(runtime, rule); !why.empty()) {
    add_note(call, nprocs, path,
             "not checked: `nprocs=" + *printed + "` of " + call.callee + "(...): " + why,
             "Pin torch_xla with `==` in a --requirements file (torch_xla 1.5 to 2.9 are "
             "checked; --runtime xrt checks XRT's spawn without a pin)",
             out);
    return;
  }
  out->push_back({std::string(path), nprocs->line, nprocs->column, std::string(kRule),
                  rule->severity, fill(rule->text, {{"nprocs", *printed}}),
                  fill(rule->hint, {{"version", minor_name(*runtime.version)}}) +
                      " (runtime: " + runtime.name() + ", " + runtime.reason + ")",
                  std::string(rule->source)});
}

std::optional<PjrtSpawnNprocs> pjrt_spawn_nprocs(int torch_xla) {
  const SpawnNprocsRule* rule = row_for<SpawnNprocsRule>(kSpawnNprocsRules, torch_xla);
  if (!rule) return std::nullopt;
  return PjrtSpawnNprocs{rule->severity == Severity::kError, rule->text, rule->source};
}

std::vector<RuleText> xla_spawn_rule_texts() {
  std::vector<RuleText> out;
  for (const SpawnNprocsRule& rule : kSpawnNprocsRules)
    out.push_back({kRule, rule.text, rule.source});
  for (const XrtSpawnRule& rule : kXrtSpawnRules) out.push_back({kRule, kXrtText, rule.source});
  return out;
}

}  // namespace tpujobs::lightning
