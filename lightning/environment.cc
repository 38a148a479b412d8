// `environment`: do the versions `pip freeze` shows on the TPU VM go
// together, and which Lightning's rules apply. Every fact is a row of a
// cited table; a mismatch is refused with the error the VM would print.
#include <charconv>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

constexpr std::string_view kFieldPython = "environment.python";
constexpr std::string_view kFieldTorch = "environment.torch";
constexpr std::string_view kFieldTorchXla = "environment.torch_xla";
constexpr std::string_view kFieldLightning = "environment.lightning";

// A version as pip prints it, reduced to what the facts depend on.
struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string text;  // as written
  std::string minor_text() const { return std::to_string(major) + "." + std::to_string(minor); }
  int number() const { return major * 100 + minor; }
};

// "2.1.0", "2.1.0+cpu", "2.1", "3.10", "3.10.12"; nullopt otherwise.
std::optional<Version> parse_version(std::string_view text) {
  Version out;
  out.text = std::string(text);
  const char* at = text.data();
  const char* end = text.data() + text.size();
  int* parts[] = {&out.major, &out.minor, &out.patch};
  for (int i = 0; i < 3; ++i) {
    const auto [next, ec] = std::from_chars(at, end, *parts[i]);
    if (ec != std::errc()) {
      if (i < 2) return std::nullopt;
      break;
    }
    at = next;
    if (at == end || *at != '.') break;
    ++at;
  }
  if (at != end && *at != '+' && *at != 'r' && *at != 'a' && *at != 'b' && *at != '.' &&
      *at != 'p' && *at != 'd') {
    return std::nullopt;
  }
  return out;
}

// torch_xla releases: the torch they are built against, the Pythons they
// have wheels for, and their runtimes.
struct TorchXlaRelease {
  Versions versions;  // torch_xla major*100+minor
  int torch;          // the torch minor version it is built for (same number)
  int python_first;   // Python 3.x, x in [first, last]
  int python_last;
  // The XRT runtime is in the release's wheels. 2.1.0's main wheels are
  // PJRT only (v2.1.0 has no xrt_computation_client); its XRT build is the
  // separate torch_xla 2.1.0+xrt wheel (v2.5.0 README.md:199).
  bool xrt;
  std::string_view undefined_symbol;  // what importing _XLAC against another torch reports
  // What torch_xla prints when XLA_USE_BF16 is set (torch_xla/csrc/dtype.cpp
  // ShouldUseBF16); empty: it says nothing.
  std::string_view xla_use_bf16_notice;
  std::string_view source;
  std::string_view xla_use_bf16_source = {};  // where the notice is printed
  // What it prints when it reads XLA_USE_FP16 true (ShouldUseF16); empty:
  // nothing.
  std::string_view xla_use_fp16_notice = {};
  std::string_view xla_use_fp16_source = {};
  // The warning `import torch_xla` gives when XLA_USE_FP16 is set to any
  // non-empty value (_check_deprecated_env_var); empty: none.
  std::string_view xla_use_fp16_import_warning = {};
  std::string_view xla_use_fp16_import_source = {};
};

// torch_xla 2.1's XRT build: "2.1.0+xrt" as pip shows it.
bool xrt_build(const std::string& version) { return version.find("+xrt") != std::string::npos; }

// The Pythons the 2.1.0+xrt build has wheels for: 3.10 only. pytorch/xla
// v2.5.0:README.md:199 lists that one wheel ("2.1 (XRT + Python 3.10)",
// torch_xla-2.1.0%2Bxrt-cp310-cp310), and the release infrastructure built
// it once, for the TPU VM, with python_version 3.10 (pytorch/xla@f06f6c00:
// infra/tpu-pytorch-releases/artifacts.auto.tfvars:42, xrt_versioned_builds).
constexpr int kXrtBuildPython = 10;

// The symbol import reports depends on which libtorch the wheel meets; the
// ones here are those users reported for that torch_xla release.
constexpr std::string_view kSymbolCpuFallback =
    "_ZN2at6native12cpu_fallbackERKN3c1014OperatorHandleEPSt6vectorINS1_6IValueESaIS6_EEbNS1_"
    "11DispatchKeyE";
constexpr std::string_view kSymbolVariableInfo =
    "_ZN5torch8autograd12VariableInfoC1ERKN2at6TensorE";

constexpr TorchXlaRelease kTorchXlaReleases[] = {
    {{113, 113},
     113,
     7,
     8,
     true,
     kSymbolVariableInfo,
     "",
     "pytorch/xla v2.1.0:README.md (torch_xla-1.13 wheels: cp37, cp38)"},
    {{200, 200},
     200,
     8,
     10,
     true,
     kSymbolVariableInfo,
     "",
     "pytorch/xla v2.1.0:README.md (torch_xla-2.0 wheels: cp38, cp310)"},
    {{201, 201},
     201,
     8,
     11,
     false,
     kSymbolVariableInfo,
     "",
     "pytorch/xla v2.5.0:README.md (torch_xla-2.1.0 wheels; +xrt build for XRT)"},
    {{202, 202},
     202,
     8,
     11,
     false,
     kSymbolVariableInfo,
     "",
     "pytorch/xla v2.5.0:README.md (torch_xla-2.2.0 wheels); XRT removed in 2.2"},
    {{203, 203},
     203,
     8,
     11,
     false,
     kSymbolVariableInfo,
     "",
     "pytorch/xla v2.5.0:README.md (torch_xla-2.3.0 wheels: cp38, cp310, cp311)"},
    {{204, 204},
     204,
     9,
     11,
     false,
     kSymbolCpuFallback,
     "XLA_USE_BF16 will be deprecated after the 2.4 release, please convert your model to bf16 "
     "directly",
     "pytorch/xla v2.5.0:README.md (torch_xla-2.4.0 wheels: cp39, cp310, cp311)",
     "pytorch/xla v2.4.0:torch_xla/csrc/dtype.cpp:14 (ShouldUseBF16)",
     "XLA_USE_FP16 will be deprecated after the 2.4 release, please convert your model to fp16 "
     "directly",
     "pytorch/xla v2.4.0:torch_xla/csrc/dtype.cpp:25 (ShouldUseF16)"},
    {{205, 205},
     205,
     9,
     11,
     false,
     kSymbolCpuFallback,
     "XLA_USE_BF16 will be deprecated after the 2.5 release, please convert your model to bf16 "
     "directly",
     "pytorch/xla v2.5.0:README.md (torch_xla-2.5.0 wheels: cp39, cp310, cp311); "
     "pytorch/xla#8292 (the undefined symbol)",
     "pytorch/xla v2.5.0:torch_xla/csrc/dtype.cpp:14 (ShouldUseBF16)",
     {},
     {},
     "The environment variable 'XLA_USE_FP16' is deprecated Please update your code to avoid "
     "using it.",
     "pytorch/xla v2.5.0:torch_xla/__init__.py:189 (_check_deprecated_env_var)"},
};

// Lightning's torch requirement, by release, as the package pip installs
// declares it. requirements/pytorch/base.txt has an upper bound "only set
// for CI stability, and it is dropped while installing this package" (its
// own note): the 1.x setups drop it (unfreeze=True / "all"), the 2.x ones
// raise it to the next major (unfreeze="major": "<3.0",
// .actions/assistant.py _RequirementWithComment.adjust). No torch line is
// marked strict. So pip refuses only a torch older than the minimum.
struct TorchRequirement {
  Versions versions;
  Versions patches;            // patch_number()s; kEveryPatch for most rows
  std::string_view package;    // what pip installs: pytorch-lightning (1.x), lightning (2.x)
  std::string_view specifier;  // as pip prints it
  int minimum;                 // torch major*100+minor, inclusive
  int below;                   // torch major*100+minor that is too new; 0: no upper bound
  // The newest torch minor of base.txt's own bound, the release's CI: the
  // torch_xla a job gets when it names none (default_torch_xla).
  int newest_tested;
  std::string_view source;
};

constexpr TorchRequirement kTorchRequirements[] = {
    {{106, 106},
     kEveryPatch,
     "pytorch-lightning",
     "torch>=1.8.*",
     108,
     0,
     111,
     "1.6.5:requirements/base.txt, its upper bound dropped by setup.py "
     "(pytorch_lightning/setup_tools.py _load_requirements, unfreeze=True)"},
    {{107, 107},
     kEveryPatch,
     "pytorch-lightning",
     "torch>=1.9.*",
     109,
     0,
     112,
     "1.7.7:requirements/pytorch/base.txt, its upper bound dropped by "
     "src/pytorch_lightning/__setup__.py (.actions/setup_tools.py, unfreeze=True)"},
    // 1.8.0-1.8.3 kept 1.7's "torch>=1.9.*"; 1.8.4 wrote "torch>=1.9.0".
    {{108, 108},
     {10800, 10803},
     "pytorch-lightning",
     "torch>=1.9.*",
     109,
     0,
     113,
     "1.8.3:requirements/pytorch/base.txt:5, its upper bound dropped by "
     "src/pytorch_lightning/__setup__.py (unfreeze=\"all\")"},
    {{108, 108},
     kEveryPatch,
     "pytorch-lightning",
     "torch>=1.9.0",
     109,
     0,
     113,
     "1.8.6:requirements/pytorch/base.txt, its upper bound dropped by "
     "src/pytorch_lightning/__setup__.py (unfreeze=\"all\")"},
    {{109, 109},
     kEveryPatch,
     "pytorch-lightning",
     "torch>=1.10.0",
     110,
     0,
     200,
     "1.9.5:requirements/pytorch/base.txt, its upper bound dropped by "
     "src/pytorch_lightning/__setup__.py (unfreeze=\"all\")"},
    {{200, 200},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=1.11.0",
     111,
     300,
     200,
     "2.0.9:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
    {{201, 201},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=1.12.0",
     112,
     300,
     201,
     "2.1.4:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
    {{202, 202},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=1.13.0",
     113,
     300,
     202,
     "2.2.5:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
    {{203, 203},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=2.0.0",
     200,
     300,
     203,
     "2.3.3:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
    {{204, 204},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=2.1.0",
     201,
     300,
     204,
     "2.4.0:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
    {{205, 205},
     kEveryPatch,
     "lightning",
     "torch<3.0,>=2.1.0",
     201,
     300,
     208,
     "2.5.6:requirements/pytorch/base.txt, its upper bound raised by src/lightning/__setup__.py "
     "(unfreeze=\"major\")"},
};

// Lightning's python_requires, by release (the setup of the package pip
// installs: pytorch_lightning's for 1.x, lightning's for 2.x).
struct PythonRequirement {
  Versions versions;
  int minimum;  // Python 3.x, x >= minimum
  std::string_view specifier;
  std::string_view source;
};

constexpr PythonRequirement kPythonRequirements[] = {
    {{106, 106}, 7, ">=3.7", "1.6.5:setup.py (python_requires)"},
    {{107, 109}, 7, ">=3.7", "1.9.5:src/pytorch_lightning/__setup__.py (python_requires)"},
    {{200, 203}, 8, ">=3.8", "2.3.3:src/lightning/__setup__.py (python_requires)"},
    {{204, 299}, 9, ">=3.9", "2.5.6:src/lightning/__setup__.py (python_requires)"},
};

// pip's own messages (pip >= 20.3, the resolver of every Python tpujobs knows).
constexpr std::string_view kPipSource = "pip (install and resolver messages)";

constexpr std::string_view kImportError =
    "ImportError: /usr/local/lib/python{python}/dist-packages/_XLAC.cpython-{abi}-x86_64-linux-gnu"
    ".so: undefined symbol: {symbol}";
constexpr std::string_view kNoDistribution =
    "ERROR: No matching distribution found for torch_xla=={torch_xla}";
constexpr std::string_view kNoLightningDistribution =
    "ERROR: No matching distribution found for {package}=={lightning}";
constexpr std::string_view kResolverConflict =
    "ERROR: pip's dependency resolver does not currently take into account all the packages that "
    "are installed. This behaviour is the source of the following dependency conflicts.\n"
    "{package} {lightning} requires {specifier}, but you have torch {torch} which is "
    "incompatible.";

std::optional<Version> read(Context& c, std::string_view field,
                            const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::optional<Version> version = parse_version(*text);
  if (!version) {
    c.error(field,
            "`" + std::string(field) + "` must be a version as `pip freeze` prints it, got " +
                py_repr(*text) + ".",
            "Write the version `pip show " + std::string(field.substr(field.find('.') + 1)) +
                "` prints, e.g. \"2.1.0\".");
  }
  return version;
}

std::string install_hint(int torch_xla_minor_number, int python_minor) {
  const std::string version = std::to_string(torch_xla_minor_number / 100) + "." +
                              std::to_string(torch_xla_minor_number % 100) + ".0";
  return "torch_xla " + version + " is built for torch " + version + " (Python 3." +
         std::to_string(python_minor) + " wheels exist): pip install torch==" + version +
         " 'torch_xla[tpu]==" + version +
         "' -f https://storage.googleapis.com/libtpu-releases/index.html";
}

}  // namespace

// torch_xla's sys_util::GetEnvBool: "true", "false", or a number (non-zero).
bool env_bool(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return false;
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  const std::optional<std::int64_t> number = py_int(it->second);
  return number && *number != 0;
}

TorchXlaDtypeTexts torch_xla_dtype_texts(int torch_xla_version) {
  const TorchXlaRelease* row = row_for<TorchXlaRelease>(kTorchXlaReleases, torch_xla_version);
  if (!row) return {};
  return {row->xla_use_bf16_notice, row->xla_use_fp16_notice, row->xla_use_fp16_import_warning};
}

std::string torch_xla_wheels_from(int first) {
  const auto name = [](int v) { return std::to_string(v / 100) + "." + std::to_string(v % 100); };
  std::vector<std::string> parts;
  const TorchXlaRelease* run = nullptr;  // the first release of a run of equal Python ranges
  int last = 0;
  const auto flush = [&] {
    if (!run) return;
    const int from = run->versions.first;
    parts.push_back((from == last ? name(from) : name(from) + "-" + name(last)) + " for Python 3." +
                    std::to_string(run->python_first) + "-3." + std::to_string(run->python_last));
  };
  for (const TorchXlaRelease& r : kTorchXlaReleases) {
    if (r.versions.first < first) continue;
    if (run && (r.python_first != run->python_first || r.python_last != run->python_last)) {
      flush();
      run = nullptr;
    }
    if (!run) run = &r;
    last = r.versions.first;
  }
  flush();
  return join(parts, ", ");
}

int default_torch_xla(int lightning_version) {
  const TorchRequirement* requirement =
      row_for<TorchRequirement>(kTorchRequirements, lightning_version);
  int chosen = kTorchXlaReleases[0].torch;
  for (const TorchXlaRelease& release : kTorchXlaReleases) {
    const int t = release.torch;
    if (t >= requirement->minimum && t <= requirement->newest_tested)
      chosen = release.versions.first;
  }
  return chosen;
}

namespace {

// environment.lightning selects the rules.
void check_lightning_release(Context& c, const Version& lightning) {
  const Release* release = find_release(lightning.text);
  if (!release) {
    c.error(kFieldLightning,
            "Lightning " + lightning.text + " is not a release tpujobs reproduces (" +
                release_names() + ").",
            "Use a Lightning between 1.6 and 2.5.");
    return;
  }
  c.default_release = release;
  c.release_from_environment = true;
  const std::optional<std::string>& asked = c.settings.lightning_version;
  const Release* asked_release = asked ? find_release(*asked) : nullptr;
  if (asked_release && asked_release != release) {
    c.error(kFieldLightningVersion,
            "`lightning_version` " + py_repr(*asked) + " selects the rules of Lightning " +
                asked_release->name() + ", but `environment.lightning` is " + lightning.text + ".",
            "Drop `lightning_version` (environment.lightning selects the rules), or make them "
            "agree: `lightning_version: \"" +
                release->name() + "\"`.");
  }
}

// The Lightning release's python_requires.
void check_python_requirement(Context& c, const Version& python, const Version& lightning,
                              int python_minor) {
  const Release* release = find_release(lightning.text);
  const PythonRequirement* requirement =
      release ? row_for<PythonRequirement>(kPythonRequirements, release->number()) : nullptr;
  const TorchRequirement* torch_requirement =
      release ? row_for<TorchRequirement>(kTorchRequirements, release->number()) : nullptr;
  if (requirement &&
      (python.major < 3 || (python.major == 3 && python_minor < requirement->minimum))) {
    c.error(kFieldLightning,
            fill(kNoLightningDistribution, {{"package", std::string(torch_requirement->package)},
                                            {"lightning", lightning.text}}),
            std::string(torch_requirement->package) + " " + lightning.text + " requires Python " +
                std::string(requirement->specifier) + " (python_requires), not " + python.text +
                ": use a newer Python, or an older Lightning.",
            requirement->source);
  }
}

// Whether pip finds a torch_xla wheel for this Python, and whether it
// imports beside this torch. Returns the wheel's row (null: none known).
const TorchXlaRelease* check_torch_xla_wheel(Context& c, const Version& torch_xla,
                                             const std::optional<Version>& torch,
                                             const std::optional<Version>& python,
                                             int python_minor) {
  const TorchXlaRelease* wheel = row_for<TorchXlaRelease>(kTorchXlaReleases, torch_xla.number());
  if (!wheel) {
    // tpujobs' own words: pip may well install it (torch_xla 2.6 and later
    // exist), tpujobs has no rules for it.
    c.error(kFieldTorchXla,
            "torch_xla " + torch_xla.text +
                " is not a release tpujobs reproduces (1.13, and 2.0 to 2.5).",
            "Use one of those, with the torch of the same minor version.");
  } else if (wheel->versions.first == 201 && xrt_build(torch_xla.text) &&
             python_minor != kXrtBuildPython) {
    c.error(kFieldTorchXla, fill(kNoDistribution, {{"torch_xla", torch_xla.text}}),
            "torch_xla 2.1.0+xrt has a wheel for Python 3." + std::to_string(kXrtBuildPython) +
                " only, not " + python->text +
                ": use Python 3.10, or torch_xla 2.1.0 with `runtime: \"pjrt\"`.",
            kPipSource);
  } else if (python_minor < wheel->python_first || python_minor > wheel->python_last) {
    c.error(kFieldTorchXla, fill(kNoDistribution, {{"torch_xla", torch_xla.text}}),
            "torch_xla " + torch_xla.minor_text() + " has wheels for Python 3." +
                std::to_string(wheel->python_first) + " to 3." +
                std::to_string(wheel->python_last) + ", not " +
                (python ? python->text : std::string("3.10")) + ".",
            kPipSource);
  } else if (torch && torch->number() != wheel->torch) {
    // The extension's ABI tag: CPython 3.7 and older add "m" (pymalloc),
    // 3.8 dropped it ("cpython-37m", "cpython-38").
    const std::string abi = "3" + std::to_string(python_minor) + (python_minor <= 7 ? "m" : "");
    c.error(kFieldTorchXla,
            fill(kImportError, {{"python", "3." + std::to_string(python_minor)},
                                {"abi", abi},
                                {"symbol", std::string(wheel->undefined_symbol)}}),
            "torch " + torch->text + " and torch_xla " + torch_xla.text +
                " are of different minor versions: " + install_hint(wheel->torch, python_minor) +
                ".",
            wheel->source);
  }
  return wheel;
}

// What a known torch_xla wheel does on import and which runtimes it has.
void check_torch_xla_runtime(Context& c, const Version& torch_xla, const TorchXlaRelease& wheel) {
  // `import torch_xla` warns about a deprecated XLA_USE_FP16 set to anything
  // (`if os.environ.get(env_var)`), whatever the job then does.
  if (!wheel.xla_use_fp16_import_warning.empty()) {
    const auto fp16 = c.settings.env.find("XLA_USE_FP16");
    if (fp16 != c.settings.env.end() && !fp16->second.empty()) {
      c.warn(std::string(wheel.xla_use_fp16_import_warning));
      c.out.torch_xla_import_lines.emplace_back(wheel.xla_use_fp16_import_warning);
    }
  }
  c.out.torch_xla_version = wheel.versions.first;
  c.torch_xla_from_environment = true;
  const bool xrt = wheel.xrt || (wheel.versions.first == 201 && xrt_build(torch_xla.text));
  if (!xrt && c.settings.runtime == "xrt") {
    const bool v21 = wheel.versions.first == 201;
    c.error(kFieldRuntime,
            "torch_xla " + torch_xla.text + " has no XRT runtime (" +
                (v21 ? "only the 2.1.0+xrt build has it)." : "removed in torch_xla 2.2)."),
            v21 ? "Use `runtime: \"pjrt\"` (PJRT_DEVICE=TPU), or install torch_xla 2.1.0+xrt: "
                  "https://storage.googleapis.com/pytorch-xla-releases/wheels/xrt/tpuvm/"
                  "torch_xla-2.1.0%2Bxrt-cp310-cp310-manylinux_2_28_x86_64.whl"
                : "Use `runtime: \"pjrt\"` (PJRT_DEVICE=TPU).");
  }
}

// The torch range the Lightning release (at its patch) requires.
void check_torch_requirement(Context& c, const Version& torch, const Version& lightning) {
  const Release* release = find_release(lightning.text);
  const TorchRequirement* requirement =
      release ? row_for<TorchRequirement>(
                    kTorchRequirements, release->number(),
                    patch_number(release->number(), release_patch(lightning.text, *release)))
              : nullptr;
  if (!requirement) return;
  const int t = torch.number();
  const bool too_new = requirement->below != 0 && t >= requirement->below;
  if (t < requirement->minimum || too_new) {
    c.error(kFieldTorch,
            fill(kResolverConflict, {{"package", std::string(requirement->package)},
                                     {"lightning", lightning.text},
                                     {"specifier", std::string(requirement->specifier)},
                                     {"torch", torch.text}}),
            std::string(requirement->package) + " " + lightning.text + " needs " +
                std::string(requirement->specifier) +
                "; install a torch in that range (and the "
                "torch_xla of the same minor version).",
            requirement->source);
    c.use_patch_row(requirement->patches);
  }
}

}  // namespace

void check_environment(Context& c) {
  // XLA_USE_BF16 stores every float tensor as bf16, whatever the precision.
  c.xla_use_bf16 = env_bool(c.settings.env, "XLA_USE_BF16");
  // torch_xla reads these itself (sys_util::GetEnvBool in StepMarker;
  // debug/metrics_saver.py).
  c.out.pt_xla_debug = env_bool(c.settings.env, "PT_XLA_DEBUG");
  if (const auto it = c.settings.env.find("XLA_METRICS_FILE"); it != c.settings.env.end()) {
    c.out.xla_metrics_file = it->second;
  }
  if (!c.settings.environment) return;
  const Environment& env = *c.settings.environment;
  const std::optional<Version> python = read(c, kFieldPython, env.python);
  const std::optional<Version> torch = read(c, kFieldTorch, env.torch);
  const std::optional<Version> torch_xla = read(c, kFieldTorchXla, env.torch_xla);
  const std::optional<Version> lightning = read(c, kFieldLightning, env.lightning);

  if (lightning) check_lightning_release(c, *lightning);
  const int python_minor = python && python->major == 3 ? python->minor : 10;
  c.python_minor = python_minor;
  if (python && lightning) check_python_requirement(c, *python, *lightning, python_minor);
  if (!torch_xla) {
    c.torch_xla_missing = true;  // a TPU job fails the way Lightning does without it
  } else if (const TorchXlaRelease* wheel =
                 check_torch_xla_wheel(c, *torch_xla, torch, python, python_minor)) {
    check_torch_xla_runtime(c, *torch_xla, *wheel);
  }
  if (torch && lightning) check_torch_requirement(c, *torch, *lightning);
}

std::vector<RuleText> environment_rule_texts() {
  std::vector<RuleText> out;
  for (const TorchXlaRelease& row : kTorchXlaReleases) {
    out.push_back({kFieldTorchXla, kImportError, row.source});
    if (!row.xla_use_bf16_notice.empty()) {
      out.push_back({"warning", row.xla_use_bf16_notice, row.xla_use_bf16_source});
    }
    if (!row.xla_use_fp16_notice.empty()) {
      out.push_back({"warning", row.xla_use_fp16_notice, row.xla_use_fp16_source});
    }
    if (!row.xla_use_fp16_import_warning.empty()) {
      out.push_back({"warning", row.xla_use_fp16_import_warning, row.xla_use_fp16_import_source});
    }
  }
  out.push_back({kFieldTorchXla, kNoDistribution, kPipSource});
  for (const TorchRequirement& row : kTorchRequirements) {
    out.push_back({kFieldTorch, kResolverConflict, row.source});
  }
  for (const PythonRequirement& row : kPythonRequirements) {
    out.push_back({kFieldLightning, kNoLightningDistribution, row.source});
  }
  return out;
}

}  // namespace tpujobs::lightning
