// xmp.spawn(fn, args=(), nprocs=None, ...) under PJRT, the runtime tpujobs
// jobs run (`runtime: "pjrt"`, PJRT_DEVICE=TPU). From torch_xla 2.0,
// torch_xla/distributed/xla_multiprocessing.py hands it to the PJRT spawn
// (v2.0.0:386 `pjrt.spawn(fn, nprocs, start_method, args)`; v2.9.0:43), whose
// only nprocs that is not ignored or refused is 1 (one process) or None (one
// per device). 1.13's PJRT spawn takes no nprocs at all (v1.13.0
// xla_multiprocessing.py `pjrt.spawn(fn, args)`) and says nothing: no row.
// XRT's `_pre_fork_setup` (1.13, 2.0, the 2.1.0+xrt build) is not modelled.
#include "lightning/script_xla.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "lightning/checks.h"
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
     "v2.1.1:200, v2.2.0:198, v2.3.0:209, v2.4.0:212)",
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

std::string replaced(std::string_view text, std::string_view key, const std::string& value) {
  std::string out(text);
  for (std::size_t at = out.find(key); at != std::string::npos;
       at = out.find(key, at + value.size()))
    out.replace(at, key.size(), value);
  return out;
}

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

bool single_or_default(const PyValue& value) {
  return value.type == PyValue::Type::kNone ||
         ((value.type == PyValue::Type::kInt || value.type == PyValue::Type::kBool) &&
          value.integer == 1) ||
         (value.type == PyValue::Type::kFloat && value.real == 1.0);
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

}  // namespace

void check_xla_spawn(const LightningCall& call, std::string_view path,
                     const ScriptCheckOptions& options, std::vector<Finding>* out) {
  auto note = [&](int line, int column, std::string message, std::string hint) {
    out->push_back({std::string(path), line, column, "not-checked", Severity::kNote,
                    std::move(message), std::move(hint), ""});
  };
  bool splat = false;
  const CallArgument* nprocs = nprocs_argument(call, &splat);
  if (!nprocs) {
    if (splat)
      note(call.line, call.column,
           "not checked: " + call.callee + "(*...) / (**...) may set `nprocs`",
           "Pass `nprocs` by keyword, or leave it out");
    return;
  }
  if (!nprocs->value) {
    note(nprocs->line, nprocs->column,
         "not checked: `nprocs` of " + call.callee + "(...): " + nprocs->unknown_reason,
         "Set `nprocs` to a literal, or a module-level constant, to have it checked");
    return;
  }
  if (single_or_default(*nprocs->value)) return;
  const std::optional<std::string> printed = printed_nprocs(*nprocs->value);
  if (!printed) {
    note(nprocs->line, nprocs->column,
         "not checked: `nprocs` of " + call.callee + "(...) is a " + py_type_name(*nprocs->value) +
             ", which tpujobs does not check",
         "Use `nprocs=1` or leave it out");
    return;
  }
  const Requirement* pin = nullptr;
  for (const Requirement& requirement : options.requirements)
    if (requirement.package == "torch-xla") pin = &requirement;
  const std::optional<int> version =
      pin && !pin->version.empty() ? version_number(pin->version) : std::nullopt;
  const SpawnNprocsRule* rule =
      version ? row_for<SpawnNprocsRule>(kSpawnNprocsRules, *version) : nullptr;
  if (!rule || pin->version.find("+xrt") != std::string::npos) {
    const std::string why =
        !pin       ? "no requirements file pins torch_xla"
        : !version ? "torch_xla is not pinned to one version"
        : pin->version.find("+xrt") != std::string::npos
            ? "torch_xla " + pin->version + " runs XRT, whose spawn tpujobs does not model"
        : *version == 113
            ? "torch_xla 1.13's PJRT spawn takes no nprocs: xmp.spawn drops it without a message "
              "(pytorch/xla v1.13.0:torch_xla/distributed/xla_multiprocessing.py:383)"
            : "tpujobs has no rule for torch_xla " + pin->version + "'s spawn";
    note(nprocs->line, nprocs->column,
         "not checked: `nprocs=" + *printed + "` of " + call.callee + "(...): " + why,
         "Pin torch_xla with `==` in a --requirements file (torch_xla 2.0 to 2.9 are checked)");
    return;
  }
  const std::string minor = std::to_string(*version / 100) + "." + std::to_string(*version % 100);
  out->push_back({std::string(path), nprocs->line, nprocs->column, std::string(kRule),
                  rule->severity, replaced(rule->text, "{nprocs}", *printed),
                  replaced(rule->hint, "{version}", minor), std::string(rule->source)});
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
  return out;
}

}  // namespace tpujobs::lightning
