// `accelerator`: Lightning's accelerator registry and its messages, by
// version. Sources: the AcceleratorConnector of each tag
// (`_check_config_and_set_final_flags`, `_choose_gpu_accelerator_backend`,
// `_set_parallel_devices_and_init_accelerator`) and the trainer's setup
// warnings (`_log_device_info`).
#include <algorithm>
#include <cctype>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

struct AcceleratorRules {
  Versions versions;
  // The registry's names in its order (classes registered sorted by class name).
  std::string_view registered;
  std::string_view
      invalid_name;  // {accelerator}: repr; {names}: registered; {names_list}: as a list
  std::string_view not_available;  // {class}, {available}
  std::string_view tpu_class;
  bool gpu_registered;  // 1.6 registers 'gpu'; later 'gpu' picks a backend or fails
  // 1.6 keeps only a registered name (or 'auto') as the accelerator flag and
  // drops any other string that is not a strategy name: the flag stays None
  // and the accelerator is chosen as if none was given
  // (_check_config_and_set_final_flags). Later versions raise `invalid_name`.
  bool unknown_dropped;
  std::string_view no_gpu_backend;
  // accelerator='tpu' without torch_xla installed: the accelerator's own
  // import check (str(_XLA_AVAILABLE)); empty: it is just not available.
  std::string_view xla_missing;
  std::string_view source;
  // Where xla_missing is written: lightning-utilities' RequirementCache /
  // ModuleAvailableCache message, for the connector's `_XLA_AVAILABLE`.
  std::string_view xla_missing_source = {};
  // xla_missing changed within 1.8 and 1.9, with the lightning-utilities
  // their requirements install.
  Versions patches = kEveryPatch;
  // 1.6: `accelerator` naming a strategy; {accelerator}: repr. And the
  // conflict with a different `strategy`; {strategy}, {accelerator}: str.
  std::string_view strategy_deprecated = {};
  std::string_view strategy_conflict = {};
  // xla_missing under Python 3.7, where pip can install no lightning-utilities
  // newer than 0.10.1 (0.11.0 requires Python 3.8); empty: the same text.
  std::string_view xla_missing_python37 = {};
  std::string_view xla_missing_python37_source = {};
};

constexpr std::string_view kNotAvailable =
    "{class} can not run on your system since the accelerator is not available. The following "
    "accelerator(s) is available and can be passed into `accelerator` argument of `Trainer`: "
    "{available}.";
constexpr std::string_view kNotAvailableQuoted =
    "`{class}` can not run on your system since the accelerator is not available. The following "
    "accelerator(s) is available and can be passed into `accelerator` argument of `Trainer`: "
    "{available}.";

constexpr std::string_view kModuleNotFound =
    "Module not found: 'torch_xla'. HINT: Try running `pip install -U torch_xla`";

// A 1.8-1.9 row: the same registry and texts, but for xla_missing.
constexpr AcceleratorRules accelerators18(Versions patches, std::string_view xla_missing,
                                          std::string_view xla_missing_source,
                                          std::string_view xla_missing_python37 = {},
                                          std::string_view xla_missing_python37_source = {}) {
  return {{108, 109},
          "cpu, cuda, hpu, ipu, mps, tpu",
          "You selected an invalid accelerator name: `accelerator={accelerator}`. Available names "
          "are: {names}.",
          kNotAvailableQuoted,
          "TPUAccelerator",
          false,
          false,
          "No supported gpu backend found!",
          xla_missing,
          "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
          xla_missing_source,
          patches,
          {},
          {},
          xla_missing_python37,
          xla_missing_python37_source};
}

constexpr AcceleratorRules kAcceleratorRules[] = {
    {{106, 106},
     "cpu, gpu, hpu, ipu, tpu",
     "When passing string value for the `accelerator` argument of `Trainer`, it can only be one of "
     "{names_list}.",
     kNotAvailable,
     "TPUAccelerator",
     true,
     true,
     "",
     "",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py",
     {},
     kEveryPatch,
     "Passing `Trainer(accelerator={accelerator})` has been deprecated in v1.5 and will be removed "
     "in v1.7. Use `Trainer(strategy={accelerator})` instead.",
     "strategy {strategy} already set through `strategy` flag, but have also passed {accelerator} "
     "in through the accelerator flag."},
    {{107, 107},
     "cpu, cuda, hpu, ipu, mps, tpu",
     "You selected an invalid accelerator name: `accelerator={accelerator}`. Available names are: "
     "{names}.",
     kNotAvailable,
     "TPUAccelerator",
     false,
     false,
     "No supported gpu backend found!",
     "",
     "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    // 1.8 and 1.9: TPUAccelerator.__init__ raises ModuleNotFoundError(str(_XLA_AVAILABLE))
    // (1.9.5 src/pytorch_lightning/accelerators/tpu.py:28-29) when the registry builds it, before
    // the connector asks is_available(). _XLA_AVAILABLE is RequirementCache("torch_xla") up to
    // 1.9.0 and ModuleAvailableCache("torch_xla") from 1.9.1 (the fabric's tpu.py:120).
    // 1.8.0-1.8.3 pin lightning-utilities==0.3.*, whose RequirementCache words pkg_resources'
    // DistributionNotFound; 1.8.4 on allow the newest (the upper bound is dropped at install:
    // 1.8.4 requirements/pytorch/base.txt:13 ">=0.3.0, !=0.4.0, <0.5.0", and .actions/
    // setup_tools.py:84-85 removes "<0.5.0" under unfreeze="all"; 1.9.0 ">=0.4.2, <0.6.0"
    // likewise): the newest is 0.15.3 on Python 3.10+, 0.15.2 on 3.9, 0.11.9 on 3.8, all with
    // the same text, but 0.10.1 on Python 3.7 (0.11.0 requires 3.8), which still words
    // pkg_resources' DistributionNotFound.
    accelerators18({10800, 10803},
                   "Requirement 'torch_xla' not met, DistributionNotFound: The 'torch_xla' "
                   "distribution was not found and is required by the application",
                   "Lightning-AI/utilities v0.3.0:src/lightning_utilities/core/imports.py:98 "
                   "(RequirementCache(\"torch_xla\"), 1.8.3:src/lightning_lite/accelerators/"
                   "tpu.py:120; pkg_resources.DistributionNotFound: the application)"),
    accelerators18({10804, 10900},
                   "Requirement 'torch_xla' not met. HINT: Try running `pip install -U "
                   "'torch_xla'`",
                   "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
                   "(RequirementCache(\"torch_xla\"), 1.9.0:src/lightning_fabric/accelerators/"
                   "tpu.py:120)",
                   "DistributionNotFound: The 'torch_xla' distribution was not found and is "
                   "required by the application. HINT: Try running `pip install -U 'torch_xla'`",
                   "Lightning-AI/utilities v0.10.1:src/lightning_utilities/core/imports.py:137 "
                   "(RequirementCache(\"torch_xla\") on Python 3.7, 1.9.0:src/lightning_fabric/"
                   "accelerators/tpu.py:120; pkg_resources.DistributionNotFound: the application)"),
    accelerators18({10901, kEveryPatch.last}, kModuleNotFound,
                   "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:158 "
                   "(ModuleAvailableCache(\"torch_xla\"), 1.9.5:src/lightning_fabric/"
                   "accelerators/tpu.py:120)"),
    {{200, 200},
     "cpu, cuda, hpu, ipu, mps, tpu",
     "You selected an invalid accelerator name: `accelerator={accelerator}`. Available names are: "
     "auto, {names}.",
     kNotAvailableQuoted,
     "TPUAccelerator",
     false,
     false,
     "No supported gpu backend found!",
     kModuleNotFound,
     "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:158 "
     "(ModuleAvailableCache(\"torch_xla\"), 2.0.9:src/lightning/fabric/accelerators/tpu.py:125)"},
    {{201, 299},
     "cpu, cuda, mps, tpu",
     "You selected an invalid accelerator name: `accelerator={accelerator}`. Available names are: "
     "auto, {names}.",
     kNotAvailableQuoted,
     "XLAAccelerator",
     false,
     false,
     "No supported gpu backend found!",
     "Requirement 'torch_xla>=1.13' not met. HINT: Try running `pip install -U 'torch_xla>=1.13'`",
     "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"torch_xla>=1.13\", \"torch_xla\"), "
     "2.1.4:src/lightning/fabric/accelerators/xla.py:102)"},
};

// The class Lightning instantiates for a registered name other than tpu/cpu.
constexpr std::pair<std::string_view, std::string_view> kAcceleratorClasses[] = {
    {"gpu", "GPUAccelerator"}, {"cuda", "CUDAAccelerator"}, {"mps", "MPSAccelerator"},
    {"hpu", "HPUAccelerator"}, {"ipu", "IPUAccelerator"},
};

std::vector<std::string> split_names(std::string_view names) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < names.size()) {
    const std::size_t comma = std::min(names.find(", ", start), names.size());
    out.emplace_back(names.substr(start, comma - start));
    start = comma + 2;
  }
  return out;
}

std::string py_str_list(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& name : names) quoted.push_back(py_repr(name));
  return "[" + join(quoted, ", ") + "]";
}

// What `available_accelerator` lists: the registered names that run here.
std::string available_list(const Context& c, const AcceleratorRules& rules) {
  std::vector<std::string> available;
  for (const std::string& name : split_names(rules.registered)) {
    if (name == "cpu" || (name == "tpu" && c.tpu_available())) available.push_back(name);
  }
  return py_str_list(available);
}

const AcceleratorRules& rules_for(const Context& c) {
  return *row_for<AcceleratorRules>(kAcceleratorRules, c.version, c.patch);
}

constexpr std::string_view kGpuHint =
    "tpujobs emulates TPU hosts, not GPUs: use `accelerator: \"tpu\"` (or \"auto\") and drop "
    "GPU-only settings.";

void refuse_unavailable(Context& c, std::string_view accelerator_class, std::string_view field) {
  const AcceleratorRules& rules = rules_for(c);
  c.error(field,
          fill(rules.not_available, {{"class", std::string(accelerator_class)},
                                     {"available", available_list(c, rules)}}),
          std::string(kGpuHint), rules.source);
}

// The accelerator flag Lightning goes on with (*flag) and the setting an
// accelerator error names: `accelerator`, or the 1.x device flag that chose
// it (tpu_cores=8 names the TPU, gpus=8 CUDA).
std::string_view accelerator_flag(const Context& c, std::string* flag) {
  if (c.settings.accelerator && !c.accelerator_dropped) {
    *flag = *c.settings.accelerator;
    return kFieldAccelerator;
  }
  if (!c.v1()) {
    *flag = "auto";
    return kFieldAccelerator;
  }
  // 1.x: no accelerator means the CPU, unless a device flag names one.
  if (const std::optional<DeviceFlag> from_flag = accelerator_from_device_flags(c, flag)) {
    return from_flag->field;
  }
  *flag = "cpu";
  return kFieldAccelerator;
}

}  // namespace

namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// 1.6.5 accelerator_connector.py:293-302: a string that is neither a
// registered accelerator nor 'auto' leaves the flag None; a strategy name
// becomes the strategy, with a deprecation warning (:296-301). Returns
// whether the job is refused (a strategy named twice, differently).
bool refused_as_a_strategy(Context& c, const AcceleratorRules& rules,
                           const std::vector<std::string>& names) {
  c.accelerator_dropped = c.settings.accelerator && rules.unknown_dropped &&
                          *c.settings.accelerator != "auto" &&
                          !listed(names, *c.settings.accelerator);
  // 1.6 keeps accelerator='ddp_cpu' (no registered name) as the strategy
  // flag when no strategy is given, without a warning (1.6.5
  // accelerator_connector.py:302); check_strategy falls back from it.
  if (c.accelerator_dropped && *c.settings.accelerator == kDdpCpu && !c.settings.strategy) {
    c.strategy_from_accelerator = std::string(kDdpCpu);
  }
  if (!c.accelerator_dropped || !is_registered_strategy(*c.settings.accelerator, c.version)) {
    return false;
  }
  const std::string& accelerator = *c.settings.accelerator;
  std::string strategy = c.settings.strategy.value_or(accelerator);
  // 1.6.0 compares the strategy as written: 'DDP' beside accelerator='ddp'
  // conflicts there (1.6.0 accelerator_connector.py:265-269), not from 1.6.1.
  if (c.settings.strategy && strategy_lowercased(c)) {
    std::transform(strategy.begin(), strategy.end(), strategy.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  }
  if (strategy != accelerator) {
    // :274-278, before the accelerator is looked at.
    c.error(kFieldAccelerator,
            fill(rules.strategy_conflict, {{"strategy", strategy}, {"accelerator", accelerator}}),
            "Name the strategy once, in `strategy`; `accelerator` takes \"tpu\", \"cpu\" or "
            "\"auto\".",
            rules.source);
    return true;
  }
  c.warn(fill(rules.strategy_deprecated, {{"accelerator", py_repr(accelerator)}}));
  c.strategy_from_accelerator = accelerator;
  return false;
}

// accelerator='tpu': refused without torch_xla or without TPU hosts.
// Returns whether the job runs on the TPU.
bool tpu_usable(Context& c, const AcceleratorRules& rules, std::string_view field) {
  if (c.torch_xla_missing && !rules.xla_missing.empty()) {
    c.use_patch_row(rules.patches);
    const int xla = default_torch_xla(c.version);
    const std::string version = std::to_string(xla / 100) + "." + std::to_string(xla % 100);
    const bool python37 = c.python_minor <= 7 && !rules.xla_missing_python37.empty();
    c.error(field, std::string(python37 ? rules.xla_missing_python37 : rules.xla_missing),
            "`environment` lists no torch_xla: install it with the torch of the same minor "
            "version (pip install torch~=" +
                version + ".0 'torch_xla[tpu]~=" + version +
                ".0' -f https://storage.googleapis.com/libtpu-releases/index.html).",
            python37 ? rules.xla_missing_python37_source : rules.xla_missing_source);
    return false;
  }
  if (!c.tpu_available()) {
    c.error(field,
            fill(rules.not_available, {{"class", std::string(rules.tpu_class)},
                                       {"available", available_list(c, rules)}}),
            "This pool has no TPU hosts: use `accelerator: \"cpu\"` (or \"auto\", which falls "
            "back to the CPU), or submit to a service started with TPU hosts (--pool v3-8).",
            rules.source);
    return false;
  }
  return true;
}

}  // namespace

void check_accelerator(Context& c) {
  const AcceleratorRules& rules = rules_for(c);
  const std::vector<std::string> names = split_names(rules.registered);
  if (refused_as_a_strategy(c, rules, names)) return;
  std::string flag;
  const std::string_view field = accelerator_flag(c, &flag);
  const bool registered = listed(names, flag);
  if (!registered && flag != "auto" && !(flag == "gpu" && !rules.gpu_registered)) {
    c.accelerator_name_refused = true;
    c.error(kFieldAccelerator,
            fill(rules.invalid_name, {{"accelerator", py_repr(flag)},
                                      {"names", std::string(rules.registered)},
                                      {"names_list", py_str_list(names)}}),
            "tpujobs emulates TPUs: use `accelerator: \"tpu\"` (or \"auto\"), or \"cpu\".",
            rules.source);
    return;
  }
  if (flag == "auto") {
    c.accelerator = c.tpu_available() ? Accelerator::kTpu : Accelerator::kCpu;
  } else if (flag == "cpu") {
    c.accelerator = Accelerator::kCpu;
  } else if (flag == "tpu") {
    if (!tpu_usable(c, rules, field)) return;
    c.accelerator = Accelerator::kTpu;
  } else if (flag == "gpu" && !rules.gpu_registered) {
    c.error(kFieldAccelerator, std::string(rules.no_gpu_backend), std::string(kGpuHint),
            rules.source);
    return;
  } else {
    for (const auto& [name, accelerator_class] : kAcceleratorClasses) {
      if (name == flag) refuse_unavailable(c, accelerator_class, field);
    }
    c.unavailable_accelerator = flag;
    return;
  }
  c.out.accelerator = c.accelerator == Accelerator::kTpu ? "tpu" : "cpu";
  c.out.tpu_available = c.tpu_available();
}

namespace {

// Lightning's `_log_device_info`: the lines each release prints at fit
// start. The GPU, IPU and HPU ones never change here (no GPU, IPU or HPU).
struct DeviceInfoRules {
  Versions versions;
  bool ipu_line;                // 2.3 dropped the IPU line (lightning_graphcore moved out)
  bool hpu_line;                // 2.5.6 dropped the HPU line
  std::string_view tpu_unused;  // the warning for a CPU job where a TPU is available; {count}
  std::string_view source;
  Versions patches = kEveryPatch;
};

constexpr std::string_view kTpuUnused1 =
    "TPU available but not used. Set `accelerator` and `devices` using "
    "`Trainer(accelerator='tpu', devices={count})`.";
constexpr std::string_view kTpuUnused2 =
    "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`.";

constexpr std::string_view kGpuLine = "GPU available: False, used: False";
constexpr std::string_view kTpuLine = "TPU available: {available}, using: {count} TPU cores";
constexpr std::string_view kIpuLine = "IPU available: False, using: 0 IPUs";
constexpr std::string_view kHpuLine = "HPU available: False, using: 0 HPUs";

constexpr DeviceInfoRules kDeviceInfoRules[] = {
    {{106, 106},
     true,
     true,
     kTpuUnused1,
     "1.6.5:pytorch_lightning/trainer/trainer.py (_log_device_info)"},
    {{107, 107},
     true,
     true,
     kTpuUnused1,
     "1.7.7:src/pytorch_lightning/trainer/trainer.py (_log_device_info)"},
    {{108, 109},
     true,
     true,
     kTpuUnused1,
     "1.9.5:src/pytorch_lightning/trainer/setup.py (_log_device_info)"},
    {{200, 200},
     true,
     true,
     kTpuUnused1,
     "2.0.9:src/lightning/pytorch/trainer/setup.py (_log_device_info)"},
    {{201, 202},
     true,
     true,
     kTpuUnused2,
     "2.2.5:src/lightning/pytorch/trainer/setup.py (_log_device_info)"},
    {{203, 204},
     false,
     true,
     kTpuUnused2,
     "2.4.0:src/lightning/pytorch/trainer/setup.py (_log_device_info)"},
    // 2.5.0 to 2.5.5 still print the HPU line; 2.5.6 dropped it.
    {{205, 205},
     false,
     true,
     kTpuUnused2,
     "2.5.5:src/lightning/pytorch/trainer/setup.py:169 (_log_device_info)",
     {20500, 20505}},
    {{205, 299},
     false,
     false,
     kTpuUnused2,
     "2.5.6:src/lightning/pytorch/trainer/setup.py (_log_device_info)"},
};

}  // namespace

void check_device_info(Context& c) {
  const DeviceInfoRules& rules = *row_for<DeviceInfoRules>(kDeviceInfoRules, c.version, c.patch);
  // Trainer.__init__ calls _log_device_info once the connector is done
  // (2.1.4 trainer.py:401 then :472): its warning comes after the
  // connector's (precision, strategy), and an error of the connector (or
  // earlier) means no lines and no warning at all.
  if (c.stopped_before_device_info) return;
  c.use_patch_row(rules.patches);
  if (c.accelerator == Accelerator::kCpu && c.tpu_available()) {
    // Before 2.1 TPUAccelerator.auto_device_count() is always 8.
    c.warn(fill(rules.tpu_unused, {{"count", "8"}}));
  }
  // trainer.num_devices: the devices of one node (host), not the world size.
  const int count = c.out.accelerator != "tpu" ? 0
                    : c.lightning_num_devices  ? *c.lightning_num_devices
                                               : c.out.device.devices_per_host;
  std::vector<std::string>& lines = c.out.device_info;
  lines.emplace_back(kGpuLine);
  lines.push_back(fill(kTpuLine, {{"available", c.tpu_available() ? "True" : "False"},
                                  {"count", std::to_string(count)}}));
  if (rules.ipu_line) lines.emplace_back(kIpuLine);
  if (rules.hpu_line) lines.emplace_back(kHpuLine);
}

std::vector<RuleText> device_info_rule_texts() {
  std::vector<RuleText> out;
  for (const DeviceInfoRules& rules : kDeviceInfoRules) {
    out.push_back({"log", kGpuLine, rules.source});
    out.push_back({"log", kTpuLine, rules.source});
    if (rules.ipu_line) out.push_back({"log", kIpuLine, rules.source});
    if (rules.hpu_line) out.push_back({"log", kHpuLine, rules.source});
    out.push_back({"warning", rules.tpu_unused, rules.source});
  }
  return out;
}

std::vector<RuleText> accelerator_rule_texts() {
  std::vector<RuleText> out;
  for (const AcceleratorRules& rules : kAcceleratorRules) {
    for (std::string_view text : {rules.invalid_name, rules.not_available, rules.no_gpu_backend}) {
      if (!text.empty()) out.push_back({kFieldAccelerator, text, rules.source});
    }
    out.push_back({kFieldTpuCores, rules.not_available, rules.source});
    if (rules.versions.first < 200) {  // 1.x: gpus=8 sets CUDA (1.6: GPU), ipus=8 the IPU
      out.push_back({kFieldGpus, rules.not_available, rules.source});
      out.push_back({kFieldIpus, rules.not_available, rules.source});
    }
    if (!rules.strategy_deprecated.empty()) {
      out.push_back({"warning", rules.strategy_deprecated, rules.source});
      out.push_back({kFieldAccelerator, rules.strategy_conflict, rules.source});
    }
    if (!rules.xla_missing.empty()) {
      out.push_back({kFieldAccelerator, rules.xla_missing, rules.xla_missing_source});
      if (rules.versions.first < 200) {  // tpu_cores names the TPU up to 1.9
        out.push_back({kFieldTpuCores, rules.xla_missing, rules.xla_missing_source});
      }
    }
    if (!rules.xla_missing_python37.empty()) {
      for (std::string_view field : {kFieldAccelerator, kFieldTpuCores}) {
        out.push_back({field, rules.xla_missing_python37, rules.xla_missing_python37_source});
      }
    }
  }
  return out;
}

}  // namespace tpujobs::lightning
