#include "lightning/script_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include "lightning/checks.h"
#include "lightning/script_calls.h"
#include "lightning/script_xla.h"
#include "lightning/versions.h"

namespace tpujobs::lightning {
namespace {

// The Trainer / Fabric keyword arguments job validation has rules for.
constexpr std::string_view kCheckedArguments[] = {
    "accelerator", "devices", "tpu_cores", "num_nodes",     "precision",
    "strategy",    "gpus",    "ipus",      "num_processes", "max_time"};
// Settings whose value does not change how Lightning judges `accelerator`
// and `precision`: when only these are unknown, those two are still checked.
// (Not 1.x's gpus, ipus, num_processes: they may set the accelerator.)
constexpr std::string_view kDeviceArguments[] = {"devices", "tpu_cores", "num_nodes"};
// Settings no other rule reads (the Timer's duration): when one is unknown,
// only its own rule is not checked.
constexpr std::string_view kOwnRuleArguments[] = {"max_time"};

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// "`kwargs`" -> "kwargs"; "..." for nothing.
std::string unquoted(const std::string& text) {
  if (text.size() >= 2 && text.front() == '`' && text.back() == '`')
    return text.substr(1, text.size() - 2);
  return text.empty() ? "..." : text;
}

bool environment_field(std::string_view field) {
  return field.starts_with("environment") || field == "lightning_version";
}

// A problem of the versions in play, placed at a requirement line: the
// environment's fields, and a torch_xla without the XRT runtime --runtime
// names (environment.cc, tpujobs' own text: no source). Lightning's own
// refusal of XRT (2.2+, cited) is the Trainer call's.
bool environment_problem(const base::FieldError& problem) {
  return environment_field(problem.field) ||
         (problem.field == kFieldRuntime && problem.source.empty());
}

// --runtime as the rules take it: "xrt" is XRT with XRT_TPU_CONFIG set, as
// on a Cloud TPU VM set up for XRT (its value is not read).
void apply_runtime(const ScriptCheckOptions& options, TrainerSettings* settings) {
  if (!options.runtime) return;
  settings->runtime = options.runtime;
  if (*options.runtime == "xrt") settings->env["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011";
}

// The pip distribution whose pin selects the rules for an import.
std::string_view distribution(std::string_view package) {
  if (package == "pytorch_lightning") return "pytorch-lightning";
  if (package == "lightning_fabric") return "lightning-fabric";
  return "lightning";
}

const Requirement* find_requirement(const std::vector<Requirement>& requirements,
                                    std::string_view package) {
  for (const Requirement& requirement : requirements)
    if (requirement.package == package) return &requirement;
  return nullptr;
}

// What the requirements pin, for `environment`; nullopt without any
// requirements file, or when torch_xla is listed without a pin (the
// environment check would take it as missing).
std::optional<Environment> pinned_environment(const ScriptCheckOptions& options,
                                              std::string_view package) {
  if (options.requirements.empty()) return std::nullopt;
  const Requirement* torch_xla = find_requirement(options.requirements, "torch-xla");
  if (torch_xla && torch_xla->version.empty()) return std::nullopt;
  Environment env;
  auto pin = [&](std::string_view name) -> std::optional<std::string> {
    const Requirement* r = find_requirement(options.requirements, name);
    if (!r || r->version.empty()) return std::nullopt;
    return r->version;
  };
  env.python = options.python;
  env.torch = pin("torch");
  env.torch_xla = pin("torch-xla");
  env.lightning = pin(distribution(package));
  return env;
}

// `devices` / `tpu_cores` / `num_nodes` as Lightning sees the value; nullopt
// for a tuple, whose repr the rule texts do not print.
std::optional<DeviceValue> device_value(const PyValue& value) {
  DeviceValue out;
  switch (value.type) {
    case PyValue::Type::kInt:
      out.kind = DeviceValue::Kind::kInt;
      out.number = value.integer;
      return out;
    case PyValue::Type::kStr:
      out.kind = DeviceValue::Kind::kString;
      out.text = value.text.substr(0, 64);
      return out;
    case PyValue::Type::kList:
      out.kind = DeviceValue::Kind::kList;
      out.list_length = value.items.size();
      if (!value.items.empty()) {
        const PyValue& first = value.items[0];
        out.list_first_type = py_type_name(first);
        if (first.type == PyValue::Type::kInt || first.type == PyValue::Type::kBool)
          out.list_first_number = static_cast<double>(first.integer);
        if (first.type == PyValue::Type::kFloat) out.list_first_number = first.real;
      }
      for (const PyValue& item : value.items) {
        if (item.type == PyValue::Type::kInt) {
          out.list.push_back(item.integer);
        } else if (out.list_other_type.empty()) {
          out.list_other_type = py_type_name(item);
        }
      }
      return out;
    case PyValue::Type::kTuple:
      return std::nullopt;
    default:
      out.kind = DeviceValue::Kind::kOther;
      out.python_type = py_type_name(value);
      out.python_repr = py_value_repr(value);
      out.equals_zero = (value.type == PyValue::Type::kFloat && value.real == 0.0) ||
                        (value.type == PyValue::Type::kBool && value.integer == 0);
      return out;
  }
}

// `max_time` as the Timer callback takes it: None is no Timer, a str is
// parsed, anything else but a dict (which the check cannot know) has no
// total_seconds().
void apply_max_time(const PyValue& value, TrainerSettings* s) {
  if (value.type == PyValue::Type::kNone) return;
  if (value.type == PyValue::Type::kStr) {
    s->max_time.kind = DurationValue::Kind::kString;
    s->max_time.text = value.text.substr(0, 64);
    return;
  }
  s->max_time.kind = DurationValue::Kind::kOther;
  s->max_time.python_type = py_type_name(value);
}

// Sets one keyword argument; false when its value is of a kind the rules
// do not take (then it is a note).
bool apply(std::string_view name, const PyValue& value, TrainerSettings* s) {
  const bool none = value.type == PyValue::Type::kNone;
  if (name == "max_time") {
    apply_max_time(value, s);
    return true;
  }
  if (name == "accelerator" || name == "strategy") {
    if (value.type != PyValue::Type::kStr && !(none && name == "accelerator")) return false;
    std::optional<std::string>& field = name == "accelerator" ? s->accelerator : s->strategy;
    if (!none) field = value.text.substr(0, 64);
    return true;
  }
  if (name == "precision") {
    if (value.type == PyValue::Type::kStr) {
      s->precision = value.text.substr(0, 32);
    } else if (value.type == PyValue::Type::kInt) {
      s->precision = std::to_string(value.integer);
      s->precision_is_number = true;
    } else if (!none) {
      return false;
    }
    return true;
  }
  std::optional<DeviceValue> device = device_value(value);
  if (!device) return false;
  // 1.x's device flags, which 2.x's Trainer no longer takes (device_flags.cc).
  for (auto [flag, target] : {std::pair{"gpus", &s->gpus}, std::pair{"ipus", &s->ipus},
                              std::pair{"num_processes", &s->num_processes}}) {
    if (name != flag) continue;
    s->removed_arguments.emplace_back(flag);
    *target = *device;
    return true;
  }
  (name == "devices" ? s->devices : name == "tpu_cores" ? s->tpu_cores : s->num_nodes) = *device;
  return true;
}

class CallChecker {
 public:
  CallChecker(const LightningCall& call, std::string_view path, const ScriptCheckOptions& options,
              std::vector<Finding>* out)
      : call_(call), path_(path), options_(options), out_(*out) {}

  void run() {
    TrainerSettings settings;
    settings.lightning_version = options_.lightning_version;
    settings.accelerator_type = options_.accelerator_type;
    settings.environment = pinned_environment(options_, call_.package);
    apply_runtime(options_, &settings);
    if (!settings.lightning_version && !settings.environment) {
      if (const Requirement* pin =
              find_requirement(options_.requirements, distribution(call_.package));
          pin && !pin->version.empty())
        settings.lightning_version = pin->version;
    }
    for (const CallArgument& argument : call_.arguments) read(argument, &settings);
    report(resolve(settings, options_.pool));
  }

 private:
  void note(int line, int column, std::string message, std::string hint = {}) {
    out_.push_back({std::string(path_), line, column, "not-checked", Severity::kNote,
                    std::move(message), std::move(hint), ""});
  }
  std::string what() const {
    return call_.kind == LightningCall::Kind::kTrainer ? "Trainer" : "Fabric";
  }
  void read(const CallArgument& argument, TrainerSettings* settings) {
    if (argument.name == "**" || argument.name == "*") {
      splat_ = true;
      note(argument.line, argument.column,
           "not checked: " + what() + "(" + argument.name + unquoted(argument.unknown_reason) +
               ") may set any argument, so this call's settings were not checked",
           "Write the TPU settings (accelerator, devices, precision, strategy) as keyword "
           "arguments");
      return;
    }
    if (argument.name.empty()) {
      note(argument.line, argument.column,
           "not checked: a positional argument (" + argument.unknown_reason + ") of " + what() +
               "(...)",
           "Pass " + what() + "'s settings by keyword");
      return;
    }
    if (!contains(kCheckedArguments, argument.name)) return;
    positions_[argument.name] = {argument.line, argument.column};
    if (argument.value && apply(argument.name, *argument.value, settings)) return;
    unknown_.insert(argument.name);
    const std::string reason = argument.value ? "it is a " + py_type_name(*argument.value) +
                                                    ", which tpujobs does not check"
                                              : argument.unknown_reason;
    note(
        argument.line, argument.column,
        "not checked: `" + argument.name + "`: " + reason +
            (contains(kOwnRuleArguments, argument.name) ? ""
             : contains(kDeviceArguments, argument.name)
                 ? "; this call's settings other than `accelerator` and `precision` were not "
                   "checked"
                 : "; this call's settings were not checked"),
        "Set `" + argument.name + "` to a literal, or a module-level constant, to have it checked");
  }
  bool reportable(const base::FieldError& problem) const {
    const std::string_view field = problem.field;
    if (environment_problem(problem) || splat_) return false;
    bool devices_unknown = false;
    for (const std::string& name : unknown_) {
      if (contains(kOwnRuleArguments, name)) continue;
      if (!contains(kDeviceArguments, name)) return false;
      devices_unknown = true;
    }
    return !devices_unknown || field == "trainer.accelerator" || field == "trainer.precision";
  }
  std::pair<int, int> position(std::string_view field) const {
    if (field.starts_with("trainer.")) {
      if (auto it = positions_.find(std::string(field.substr(8))); it != positions_.end())
        return it->second;
    }
    return {call_.line, call_.column};
  }
  // The settings' errors, and the warnings Lightning gave whether it
  // refused them or not.
  void report(const base::Result<Resolution>& resolution) {
    for (const base::FieldError& problem : base::field_errors(resolution)) {
      if (!reportable(problem)) continue;
      const auto [line, column] = position(problem.field);
      out_.push_back({std::string(path_), line, column, problem.field, Severity::kError,
                      problem.message, problem.hint, problem.source});
    }
    for (const std::string& name : unknown_)
      if (!contains(kOwnRuleArguments, name)) return;
    if (splat_) return;
    std::set<std::string> seen;
    for (const std::string& warning : resolution_warnings(resolution)) {
      if (!seen.insert(warning).second) continue;
      const bool notice = warning.starts_with("tpujobs:");
      out_.push_back({std::string(path_), call_.line, call_.column,
                      notice ? "tpujobs-notice" : "lightning-warning",
                      notice ? Severity::kNote : Severity::kWarning, warning, "", ""});
    }
  }

  const LightningCall& call_;
  std::string_view path_;
  const ScriptCheckOptions& options_;
  std::vector<Finding>& out_;
  std::map<std::string, std::pair<int, int>> positions_;
  std::set<std::string> unknown_;
  bool splat_ = false;
};

}  // namespace

std::string_view severity_name(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "note";
}

std::vector<Finding> check_script(const SyntaxTree& tree, std::string_view path,
                                  const ScriptCheckOptions& options,
                                  std::vector<std::string>* packages) {
  std::vector<Finding> out;
  for (const SyntaxProblem& problem : tree.problems) {
    out.push_back({std::string(path), problem.line, problem.column, "syntax-error",
                   Severity::kError, "the file does not parse as Python: " + problem.message,
                   "Fix the syntax: Python refuses to run this file with a SyntaxError", ""});
  }
  if (tree.truncated) {
    out.push_back({std::string(path), 1, 1, "not-checked", Severity::kNote,
                   "not checked: parts of this file nest deeper than the check follows", "", ""});
  }
  for (const LightningCall& call : find_lightning_calls(tree.module)) {
    if (call.kind == LightningCall::Kind::kXlaSpawn) {
      check_xla_spawn(call, path, options, &out);
      continue;
    }
    CallChecker(call, path, options, &out).run();
    if (packages && std::find(packages->begin(), packages->end(), call.package) == packages->end())
      packages->push_back(call.package);
  }
  return out;
}

std::vector<Finding> check_environment_pins(const ScriptCheckOptions& options,
                                            const std::vector<std::string>& packages) {
  std::vector<Finding> out;
  const char* kRelevant[] = {"torch", "torch-xla", "lightning", "pytorch-lightning",
                             "lightning-fabric"};
  for (const Requirement& requirement : options.requirements) {
    if (!requirement.version.empty() || std::find(std::begin(kRelevant), std::end(kRelevant),
                                                  requirement.package) == std::end(kRelevant))
      continue;
    out.push_back(
        {requirement.path, requirement.line, requirement.column, "unpinned", Severity::kNote,
         "not checked: " + requirement.package + " is not pinned to one version" +
             (requirement.package == "torch-xla" ? ", so the environment was not checked" : ""),
         "Pin it with `==` (as `pip freeze` prints it) to have its version checked", ""});
  }
  std::set<std::string> reported;
  for (const std::string& package :
       packages.empty() ? std::vector<std::string>{"lightning"} : packages) {
    if (!options.requirements.empty() && !packages.empty() && !options.lightning_version &&
        !find_requirement(options.requirements, distribution(package))) {
      const Requirement& first = options.requirements.front();
      out.push_back(
          {first.path, 1, 1, "unpinned", Severity::kNote,
           "not checked: the scripts import " + package + ", which no requirements file lists: " +
               "checked with the rules of Lightning " + std::string(releases().back().name()),
           "Pin " + std::string(distribution(package)) + " with `==`, or give --lightning", ""});
    }
    TrainerSettings settings;
    settings.lightning_version = options.lightning_version;
    settings.environment = pinned_environment(options, package);
    if (!settings.environment) continue;
    apply_runtime(options, &settings);
    const base::Result<Resolution> resolution = resolve(settings, options.pool);
    if (resolution.ok()) continue;
    for (const base::FieldError& problem : resolution.error().fields) {
      if (!environment_problem(problem)) continue;
      const std::string_view pin =
          problem.field == "environment.torch" ? "torch"
          : problem.field == "environment.torch_xla" || problem.field == kFieldRuntime
              ? "torch-xla"
              : distribution(package);
      const Requirement* at = find_requirement(options.requirements, pin);
      if (!at) at = &options.requirements.front();
      if (!reported.insert(problem.field + problem.message).second) continue;
      std::string hint = problem.hint;
      if (!options.python && problem.field.starts_with("environment."))
        hint += " (Python 3.10 assumed, as on a Cloud TPU VM: --python names another)";
      out.push_back({at->path, at->line, at->column, problem.field, Severity::kError,
                     problem.message, hint, problem.source});
    }
  }
  return out;
}

}  // namespace tpujobs::lightning

namespace tpujobs::lightning {
namespace {

// Valid UTF-8 without NUL bytes: what the check reads as text.
bool is_text(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    // Eight ASCII bytes at a time (no high bit, no NUL), which is most of a
    // script: a tenth of the instructions of the byte-wise walk below.
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
    for (std::uint64_t word; i + 8 <= text.size(); i += 8) {
      std::memcpy(&word, text.data() + i, 8);
      if ((word & kHighs) || ((word - kOnes) & ~word & kHighs)) break;
    }
    if (i == text.size()) break;
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0) return false;
    int length = byte < 0x80           ? 1
                 : (byte >> 5) == 0x6  ? 2
                 : (byte >> 4) == 0xE  ? 3
                 : (byte >> 3) == 0x1E ? 4
                                       : 0;
    if (length == 0 || i + length > text.size()) return false;
    std::uint32_t code = length == 1 ? byte : byte & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next >> 6) != 0x2) return false;
      code = (code << 6) | (next & 0x3F);
    }
    const std::uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < minimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      return false;
    i += static_cast<std::size_t>(length);
  }
  return true;
}

// Why a file is not read, as a finding; nullopt when it is read.
std::optional<Finding> refusal(const SourceFile& file) {
  const std::uint64_t size = std::max<std::uint64_t>(file.size, file.text.size());
  if (size > kMaxSourceBytes) {
    return Finding{file.path,
                   1,
                   1,
                   "file-too-large",
                   Severity::kError,
                   "refused: the file is " + std::to_string(size) + " bytes, more than the " +
                       std::to_string(kMaxSourceBytes / (1024 * 1024)) + " MB the check reads",
                   "Check the training script itself, not generated or data files",
                   ""};
  }
  if (!is_text(file.text)) {
    return Finding{
        file.path,
        1,
        1,
        "file-skipped",
        Severity::kNote,
        "skipped: the file is binary or not UTF-8 text, which Python does not read as source",
        "",
        ""};
  }
  return std::nullopt;
}

bool before(const Finding& a, const Finding& b) {
  return std::tie(a.path, a.line, a.column) < std::tie(b.path, b.line, b.column);
}

// One script's part of the report.
struct ScriptOutcome {
  bool checked = false;  // false: skipped, and `findings` says why
  std::vector<Finding> findings;
  std::vector<std::string> packages;  // the Lightning packages its calls come from
};

ScriptOutcome check_one(const SourceFile& file, const ScriptCheckOptions& options,
                        const PythonParser& parser) {
  ScriptOutcome out;
  if (std::optional<Finding> refused = refusal(file)) {
    out.findings.push_back(std::move(*refused));
    return out;
  }
  const SyntaxTree tree = parser.parse(file.text);
  out.findings = check_script(tree, file.path, options, &out.packages);
  out.checked = true;
  return out;
}

}  // namespace

int CheckReport::count(Severity severity) const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(),
                                        [&](const Finding& f) { return f.severity == severity; }));
}

CheckReport check_sources(const std::vector<SourceFile>& scripts,
                          const std::vector<SourceFile>& requirement_files,
                          ScriptCheckOptions options, const PythonParser& parser,
                          const ForEachScript& for_each) {
  CheckReport report;
  for (const SourceFile& file : requirement_files) {
    if (std::optional<Finding> refused = refusal(file)) {
      report.findings.push_back(std::move(*refused));
      report.skipped.push_back(file.path);
      continue;
    }
    for (Requirement& requirement : parse_requirements(file.text, file.path, &report.findings))
      options.requirements.push_back(std::move(requirement));
  }
  // Each script into its own slot, then the slots merged in the scripts'
  // order: the same report whichever thread checked which script when.
  std::vector<ScriptOutcome> outcomes(scripts.size());
  const std::function<void(std::size_t)> work = [&](std::size_t i) {
    outcomes[i] = check_one(scripts[i], options, parser);
  };
  if (for_each) {
    for_each(scripts.size(), work);
  } else {
    for (std::size_t i = 0; i < scripts.size(); ++i) work(i);
  }
  std::vector<std::string> packages;
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    ScriptOutcome& outcome = outcomes[i];
    (outcome.checked ? report.checked : report.skipped).push_back(scripts[i].path);
    for (Finding& finding : outcome.findings) report.findings.push_back(std::move(finding));
    for (std::string& package : outcome.packages)
      if (std::find(packages.begin(), packages.end(), package) == packages.end())
        packages.push_back(std::move(package));
  }
  for (Finding& finding : check_environment_pins(options, packages))
    report.findings.push_back(std::move(finding));
  std::stable_sort(report.findings.begin(), report.findings.end(), before);
  return report;
}

}  // namespace tpujobs::lightning
