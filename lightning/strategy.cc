// `strategy`: what the connector says about a strategy name on a TPU, by
// Lightning version; the registry it looks names up in is
// lightning/strategy_registry.cc. Sources: the connector's
// `_check_config_and_set_final_flags` (lower-casing, invalid names, 1.x
// `tpu_spawn`), `_check_strategy_and_fallback` (FSDP on a non-GPU
// accelerator), `_lazy_init_strategy` (TPU accelerator with another
// strategy) and DeepSpeedStrategy.__init__ (DeepSpeed not installed).
#include <algorithm>
#include <cctype>

#include "lightning/checks.h"
#include "lightning/strategy_registry.h"

namespace tpujobs::lightning {
namespace {

struct StrategyRules {
  Versions versions;
  bool auto_registered;      // 'auto' is a valid value (1.9+); before, absent means auto
  std::string_view invalid;  // {strategy}: repr; {names}: the sorted registry
  std::string_view tpu_spawn;
  std::string_view fsdp_on_tpu;  // {name}: FSDP's strategy_name
  std::string_view fsdp_name;
  std::string_view deepspeed_missing;
  std::string_view wrong_strategy;  // {class}
  std::string_view source;
  Versions patches = kEveryPatch;
  // Where `invalid` comes from when not the connector (`source`).
  std::string_view invalid_source = {};
};

// 1.6-1.8: StrategyRegistry.get raises KeyError(text), and str() of a
// KeyError is the repr of its text: in double quotes, as the text holds
// single quotes. kNotFound is what a user reads; kNotFoundKey the KeyError's
// argument.
constexpr std::string_view kNotFound =
    "\"'{strategy}' not found in registry. Available names: {names}\"";
constexpr std::string_view kNotFoundKey =
    "'{strategy}' not found in registry. Available names: {names}";
constexpr std::string_view kTpuSpawn =
    "`Trainer(strategy='tpu_spawn')` is not a valid strategy, you can use "
    "`Trainer(strategy='ddp_spawn', accelerator='tpu')` instead.";
constexpr std::string_view kDeepSpeed17 =
    "To use the `DeepSpeedStrategy`, you must have DeepSpeed installed. Install it by running "
    "`pip install -U deepspeed`.";
constexpr std::string_view kWrong1x =
    "The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or `TPUSpawnStrategy`, "
    "found {class}.";
constexpr std::string_view kFsdp =
    "You selected strategy to be `{name}`, but GPU accelerator is not used.";

constexpr std::string_view kFsdpGotAccelerator =
    "The strategy `{name}` requires a GPU accelerator, but got: {accelerator}";

constexpr std::string_view kInvalid2x =
    "You selected an invalid strategy name: `strategy={strategy}`. It must be either a string or "
    "an instance of `lightning.pytorch.strategies.Strategy`. Example choices: auto, ddp, "
    "ddp_spawn, deepspeed, ... Find a complete list of options in our documentation at "
    "https://lightning.ai";
constexpr std::string_view kInvalid19 =
    "You selected an invalid strategy name: `strategy={strategy}`. It must be either a string or "
    "an instance of `pytorch_lightning.strategies.Strategy`. Example choices: ddp, ddp_spawn, "
    "deepspeed, dp, ... Find a complete list of options in our documentation at "
    "https://lightning.ai";
constexpr std::string_view kWrongXla =
    "The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` or `XLAStrategy`, "
    "found {class}.";

// A 1.9 row: the releases' texts but for the name check, which changed in
// its patch releases.
constexpr StrategyRules rules19(Versions patches, bool auto_registered, std::string_view invalid,
                                std::string_view source, std::string_view invalid_source) {
  return {{109, 109},   auto_registered, invalid, kTpuSpawn, kFsdp,         "fsdp_native",
          kDeepSpeed17, kWrong1x,        source,  patches,   invalid_source};
}

constexpr StrategyRules kStrategyRules[] = {
    {{106, 106},
     false,
     kNotFound,
     kTpuSpawn,
     "",
     "",
     "To use the DeepSpeed plugin, you must have DeepSpeed installed. pip install deepspeed",
     kWrong1x,
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py",
     kEveryPatch,
     "1.6.5:pytorch_lightning/strategies/strategy_registry.py:99 (StrategyRegistry.get)"},
    {{107, 108},
     false,
     kNotFound,
     kTpuSpawn,
     kFsdp,
     "fsdp_native",
     kDeepSpeed17,
     kWrong1x,
     "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
     kEveryPatch,
     "1.8.6:src/lightning_lite/strategies/registry.py:98 (StrategyRegistry.get; 1.7.7: "
     "src/pytorch_lightning/strategies/strategy_registry.py:99)"},
    // 1.9 per patch release: 1.9.0 and 1.9.1 check no name (an unknown one,
    // 'auto' too, is the registry's KeyError, 1.9.1
    // src/lightning_fabric/strategies/registry.py:98); 1.9.2 added the check
    // with 2.0's class path (accelerator_connector.py:279), 1.9.3 wrote
    // pytorch_lightning's; only 1.9.4 let 'auto' through (:277).
    rules19({10900, 10901}, false, kNotFound,
            "1.9.1:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
            "1.9.1:src/lightning_fabric/strategies/registry.py:98 (StrategyRegistry.get, from "
            "_init_strategy)"),
    rules19({10902, 10902}, false,
            "You selected an invalid strategy name: `strategy={strategy}`. It must be either a "
            "string or an instance of `lightning.pytorch.strategies.Strategy`. Example choices: "
            "ddp, ddp_spawn, deepspeed, dp, ... Find a complete list of options in our "
            "documentation at https://lightning.ai",
            "1.9.2:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
            "1.9.2:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:278"),
    rules19({10903, 10903}, false, kInvalid19,
            "1.9.3:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
            "1.9.3:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:278"),
    {{109, 109},
     true,
     kInvalid19,
     kTpuSpawn,
     kFsdp,
     "fsdp_native",
     kDeepSpeed17,
     kWrong1x,
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{200, 200},
     true,
     "You selected an invalid strategy name: `strategy={strategy}`. It must be either a string or "
     "an instance of `lightning.pytorch.strategies.Strategy`. Example choices: auto, ddp, "
     "ddp_spawn, deepspeed, ... Find a complete list of options in our documentation at "
     "https://lightning.ai",
     "",
     kFsdp,
     "fsdp",
     kDeepSpeed17,
     "The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or `XLAStrategy`, found "
     "{class}.",
     "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
    {{201, 202},
     true,
     kInvalid2x,
     "",
     kFsdp,
     "fsdp",
     kDeepSpeed17,
     kWrongXla,
     "2.2.5:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
    // 2.5.0 to 2.5.2 too: their text is 2.4's (2.5.2 accelerator_connector.py:464); 2.5.3
    // rewrote it.
    {{203, 205},
     true,
     kInvalid2x,
     "",
     kFsdpGotAccelerator,
     "fsdp",
     kDeepSpeed17,
     kWrongXla,
     "2.4.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
     {0, 20502}},
    {{205, 299},
     true,
     kInvalid2x,
     "",
     "The strategy `{name}` requires a GPU accelerator, but received "
     "`accelerator={accelerator_repr}`. "
     "Please set `accelerator='cuda'`, `accelerator='gpu'`, or pass a `CUDAAccelerator()` instance "
     "to use FSDP.",
     "fsdp",
     kDeepSpeed17,
     kWrongXla,
     "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
};

std::string_view invalid_source(const StrategyRules& rules) {
  return rules.invalid_source.empty() ? rules.source : rules.invalid_source;
}

std::string strategy_hint(const Context& c) {
  return std::string("Remove `strategy` (or use \"auto\"): Lightning picks ") +
         (c.version >= 201   ? "`XLAStrategy` for several TPU cores and `SingleDeviceXLAStrategy`"
          : c.version >= 200 ? "`XLAStrategy` for several TPU cores and `SingleTPUStrategy`"
                             : "`TPUSpawnStrategy` for several TPU cores and `SingleTPUStrategy`") +
         " for one. TPU strategies of Lightning " + c.release->name() + ": " +
         tpu_strategy_names(c.version) + ".";
}

// Whether the connector lower-cases `strategy` first: every release but
// 1.6.0 (1.6.1 added `strategy = strategy.lower()`, 1.6.5
// accelerator_connector.py:255), where 'DDP' is the registry's KeyError.
struct Lowercasing {
  Versions versions;
  Versions patches;
  bool lowercases;
};
constexpr Lowercasing kLowercasing[] = {
    {{106, 106}, {10600, 10600}, false},
    {{106, 299}, kEveryPatch, true},
};

bool has_upper(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char ch) { return std::isupper(ch); });
}

// The strategy setting as the connector sees it: lower-cased (every
// version but 1.6.0 does so first), and its registry row.
constexpr RegisteredStrategy kTpuSpawnFromAccelerator = {
    "tpu_spawn", {106, 106}, "TPUSpawnStrategy", StrategyKind::kXla};

struct WrittenStrategy {
  std::string name;
  const StrategyRules* rules;
  bool automatic;                   // absent, or 'auto' where 'auto' is registered
  const RegisteredStrategy* entry;  // nullptr when automatic or not registered
};

// 1.6's _check_strategy_and_fallback on the 'ddp_cpu' flag (from
// accelerator='ddp_cpu'): refused where a TPU is available, otherwise
// 'ddp_spawn'. The URL changed in 1.6.5; the text is at :579 in 1.6.0, :602
// in 1.6.1-1.6.3, :607 in 1.6.4-1.6.5.
struct DdpCpuOnTpu {
  Versions versions;
  Versions patches;
  std::string_view text;
  std::string_view source;
};
constexpr DdpCpuOnTpu kDdpCpuOnTpu[] = {
    {{106, 106},
     {10600, 10604},
     "`accelerator='ddp_cpu'` is not supported on TPU machines. Learn more: "
     "https://github.com/PyTorchLightning/pytorch-lightning/issues/7810",
     "1.6.4:pytorch_lightning/trainer/connectors/accelerator_connector.py:607 "
     "(_check_strategy_and_fallback)"},
    {{106, 106},
     kEveryPatch,
     "`accelerator='ddp_cpu'` is not supported on TPU machines. Learn more: "
     "https://github.com/Lightning-AI/lightning/issues/7810",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:607 "
     "(_check_strategy_and_fallback)"},
};

// 1.x refuses `strategy='ddp_cpu'` (lower-cased first, but in 1.6.0) in
// _check_config_and_set_final_flags, before 'tpu_spawn' and any name check;
// 2.0 dropped the check ('ddp_cpu' is then just not a registered name).
struct DdpCpuStrategy {
  Versions versions;
  std::string_view text;
  std::string_view source;
};
constexpr DdpCpuStrategy kDdpCpuStrategy[] = {
    {{106, 106},
     "`Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
     "`Trainer(strategy='ddp'|'ddp_spawn', accelerator='cpu')` instead.",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:259 "
     "(_check_config_and_set_final_flags)"},
    {{107, 109},
     "`Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
     "`Trainer(strategy='ddp'|'ddp_spawn'|'ddp_fork', accelerator='cpu')` instead.",
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:265 "
     "(_check_config_and_set_final_flags)"},
};

// 2.0-2.2 moved ColossalAI and Bagua to their own packages and check for
// them right after lower-casing the name, before any name check
// (_check_config_and_set_final_flags): ModuleNotFoundError(str(
// RequirementCache("lightning-colossalai"))), "lightning-bagua" likewise
// (2.0.1 on; 2.0.0 has no Bagua check: 'bagua' is an invalid name there).
// The text is lightning-utilities' for a package that is not installed;
// Lightning 2.0-2.2 allow any lightning-utilities below 1.0 once
// __setup__.py raises the upper bound (unfreeze="major"), so pip installs
// the newest for the Python: 0.11.9 on 3.8, 0.15.2 on 3.9, 0.15.3 on 3.10+,
// which all word it so (v0.11.5 and later: imports.py:148-149 in v0.12.0).
// The connector lines: colossalai 2.0.0-2.0.6 :202-203, 2.1.0-2.1.2
// :201-202; bagua 2.0.1-2.0.6 :205-206, 2.1.0-2.1.2 :204-205.
struct ExternalStrategy {
  std::string_view name;
  Versions versions;
  Versions patches;
  std::string_view text;  // empty: these patches do not check the name
  std::string_view source;
};
constexpr std::string_view kColossalAiMissing =
    "Requirement 'lightning-colossalai' not met. HINT: Try running `pip install -U "
    "'lightning-colossalai'`";
constexpr std::string_view kBaguaMissing =
    "Requirement 'lightning-bagua' not met. HINT: Try running `pip install -U 'lightning-bagua'`";
constexpr ExternalStrategy kExternalStrategies[] = {
    {"colossalai",
     {200, 200},
     kEveryPatch,
     kColossalAiMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-colossalai\"), 2.0.9:src/lightning/pytorch/utilities/"
     "imports.py:28, raised at 2.0.9:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:203-204)"},
    {"colossalai",
     {201, 201},
     kEveryPatch,
     kColossalAiMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-colossalai\"), 2.1.4:src/lightning/pytorch/utilities/"
     "imports.py:29, raised at 2.1.4:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:195-196)"},
    {"colossalai",
     {202, 202},
     kEveryPatch,
     kColossalAiMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-colossalai\"), 2.2.5:src/lightning/pytorch/utilities/"
     "imports.py:31, raised at 2.2.5:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:196-197)"},
    {"bagua", {200, 200}, {20000, 20000}, "", ""},
    {"bagua",
     {200, 200},
     kEveryPatch,
     kBaguaMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-bagua\"), 2.0.9:src/lightning/pytorch/utilities/"
     "imports.py:29, raised at 2.0.9:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:206-207)"},
    {"bagua",
     {201, 201},
     kEveryPatch,
     kBaguaMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-bagua\"), 2.1.4:src/lightning/pytorch/utilities/"
     "imports.py:30, raised at 2.1.4:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:198-199)"},
    {"bagua",
     {202, 202},
     kEveryPatch,
     kBaguaMissing,
     "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148 "
     "(RequirementCache(\"lightning-bagua\"), 2.2.5:src/lightning/pytorch/utilities/"
     "imports.py:32, raised at 2.2.5:src/lightning/pytorch/trainer/connectors/"
     "accelerator_connector.py:199-200)"},
};

const ExternalStrategy* external_strategy(std::string_view name, int version, int patch) {
  for (const ExternalStrategy& row : kExternalStrategies) {
    if (row.name == name && row.versions.contains(version) && row.patches.contains(patch)) {
      return &row;
    }
  }
  return nullptr;
}

bool ddp_cpu_flag(const Context& c) {
  return !c.settings.strategy && c.strategy_from_accelerator == kDdpCpu;
}

WrittenStrategy written_strategy(const Context& c) {
  WrittenStrategy w;
  w.name = ddp_cpu_flag(c) ? "ddp_spawn" : c.strategy_flag().value_or("auto");
  if (row_for<Lowercasing>(kLowercasing, c.version, c.patch)->lowercases) {
    std::transform(w.name.begin(), w.name.end(), w.name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  }
  w.rules = row_for<StrategyRules>(kStrategyRules, c.version, c.patch);
  w.automatic = !c.strategy_flag() || (w.name == "auto" && w.rules->auto_registered);
  w.entry = w.automatic ? nullptr : find_registered(w.name, c.version);
  // 1.x refuses 'tpu_spawn' only as `strategy` (1.6.5 accelerator_connector.py:264); 1.6's
  // accelerator='tpu_spawn' reaches the registry, which builds TPUSpawnStrategy.
  if (w.entry && w.entry->kind == StrategyKind::kTpuSpawn && !c.settings.strategy) {
    w.entry = &kTpuSpawnFromAccelerator;
  }
  return w;
}

// Where the connector refuses a name it does not know: in
// _check_config_and_set_final_flags from 1.9.2 (1.9.5
// accelerator_connector.py:276-284), before the device flags; up to 1.9.1 it
// is StrategyRegistry.get's KeyError from _init_strategy, after them.
bool names_checked_with_the_flags(const StrategyRules& rules) { return rules.invalid != kNotFound; }

}  // namespace

bool strategy_refused_with_the_flags(const Context& c) {
  if (!c.settings.strategy) return false;
  const WrittenStrategy w = written_strategy(c);
  if (row_for<DdpCpuStrategy>(kDdpCpuStrategy, c.version) && w.name == kDdpCpu) return true;
  if (w.entry && w.entry->kind == StrategyKind::kTpuSpawn) return true;
  return !w.automatic && !w.entry && names_checked_with_the_flags(*w.rules);
}

StrategyChoice strategy_choice(const Context& c) {
  const WrittenStrategy w = written_strategy(c);
  if (w.automatic) return StrategyChoice::kAutomatic;
  const StrategyKind kind = w.entry ? w.entry->kind : StrategyKind::kOther;
  if (kind == StrategyKind::kXla || kind == StrategyKind::kXlaDebug) {
    return StrategyChoice::kXlaParallel;
  }
  return kind == StrategyKind::kSingleXla ? StrategyChoice::kXlaSingle : StrategyChoice::kOther;
}

bool strategy_lowercased(Context& c) {
  const Lowercasing& row = *row_for<Lowercasing>(kLowercasing, c.version, c.patch);
  c.use_patch_row(row.patches);
  return row.lowercases;
}

StrategyBuild strategy_build(const Context& c) {
  const WrittenStrategy w = written_strategy(c);
  if (w.automatic) return StrategyBuild::kTpu;
  if (!w.entry) return StrategyBuild::kFails;
  switch (w.entry->kind) {
    case StrategyKind::kXla:
    case StrategyKind::kSingleXla:
    case StrategyKind::kXlaDebug:
      return StrategyBuild::kTpu;
    case StrategyKind::kTpuSpawn:
    case StrategyKind::kDeepSpeed:
      return StrategyBuild::kFails;
    case StrategyKind::kFsdp:
      return w.rules->fsdp_on_tpu.empty() ? StrategyBuild::kOther : StrategyBuild::kFails;
    case StrategyKind::kOther:
      break;
  }
  const ClassInit* init = init_error(w.entry->class_name, c.version);
  return init && init->raises ? StrategyBuild::kFails : StrategyBuild::kOther;
}

namespace {

// The strategy's name: 'ddp_cpu' where a release refuses it, a strategy
// built from a package a TPU VM lacks, a name not registered. Returns
// whether it refused the job.
bool refused_by_name(Context& c, const WrittenStrategy& w) {
  const std::string& written = w.name;
  const StrategyRules& rules = *w.rules;
  const DdpCpuStrategy* ddp_cpu = row_for<DdpCpuStrategy>(kDdpCpuStrategy, c.version);
  if (ddp_cpu && c.settings.strategy && written == kDdpCpu) {
    c.error(kFieldStrategy, std::string(ddp_cpu->text), strategy_hint(c), ddp_cpu->source);
    return true;
  }
  if (const ExternalStrategy* external =
          c.settings.strategy ? external_strategy(written, c.version, c.patch) : nullptr) {
    c.use_patch_row(external->patches);
    if (!external->text.empty()) {
      c.error(kFieldStrategy, std::string(external->text),
              "Lightning " + c.release->name() + " builds `strategy='" + written +
                  "'` from a separate package for GPUs, not installed on a TPU VM. " +
                  strategy_hint(c),
              external->source);
      return true;
    }
  }
  if (!w.automatic && !w.entry) {
    const std::string names = registry_names(c.version);
    c.error(kFieldStrategy,
            !names_checked_with_the_flags(rules)
                ? py_repr(fill(kNotFoundKey, {{"strategy", written}, {"names", names}}))
                : fill(rules.invalid, {{"strategy", py_repr(written)}, {"names", names}}),
            strategy_hint(c), invalid_source(rules));
    return true;
  }
  return false;
}

// The registered class: one a TPU job cannot build (TPUSpawn, FSDP without
// a GPU, DeepSpeed without deepspeed) or whose __init__ needs what a TPU VM
// lacks. Returns whether it refused the job.
bool refused_by_class(Context& c, const StrategyRules& rules, const RegisteredStrategy& entry) {
  if (entry.kind == StrategyKind::kTpuSpawn) {
    c.error(kFieldStrategy, std::string(rules.tpu_spawn), strategy_hint(c), rules.source);
    return true;
  }
  if (entry.kind == StrategyKind::kFsdp && !rules.fsdp_on_tpu.empty()) {
    // _check_strategy_and_fallback: FSDP without a GPU fails first, on the
    // CPU as on the TPU; the flag is the accelerator 'auto' resolved to.
    const std::string accelerator = c.accelerator == Accelerator::kCpu ? "cpu" : "tpu";
    c.error(kFieldStrategy,
            fill(rules.fsdp_on_tpu, {{"name", std::string(rules.fsdp_name)},
                                     {"accelerator", accelerator},
                                     {"accelerator_repr", py_repr(accelerator)}}),
            strategy_hint(c), rules.source);
    return true;
  }
  if (entry.kind == StrategyKind::kDeepSpeed) {
    // The registry instantiates DeepSpeedStrategy, which needs deepspeed
    // installed, whatever the accelerator.
    c.error(kFieldStrategy, std::string(rules.deepspeed_missing), strategy_hint(c), rules.source);
    return true;
  }
  // Other classes whose __init__ needs a library or device a TPU VM lacks.
  if (const ClassInit* init = init_error(entry.class_name, c.version)) {
    c.error(kFieldStrategy, std::string(init->text), strategy_hint(c), init->source);
    return true;
  }
  if (const ClassInit* init = init_warning(entry.class_name, c.version)) {
    c.warn(std::string(init->text));
  }
  return false;
}

// The strategy a TPU job runs with, for a name that passed the checks.
void choose_tpu_strategy(Context& c, const WrittenStrategy& w) {
  const std::string& written = w.name;
  const StrategyRules& rules = *w.rules;
  const bool several = c.request_ok && c.out.world_size > 1;
  if (w.automatic) {
    c.out.strategy = several || !c.request_ok ? "xla" : "single_xla";
    return;
  }
  switch (w.entry->kind) {
    case StrategyKind::kXla:
      c.out.strategy = "xla";
      return;
    case StrategyKind::kXlaDebug:
      c.out.strategy = "xla_debug";
      c.out.pt_xla_debug = true;  // the strategy's setup sets PT_XLA_DEBUG=1
      return;
    case StrategyKind::kSingleXla:
      if (several) {
        c.error(kFieldStrategy,
                "`strategy=" + py_repr(written) + "` runs on one TPU core, but " +
                    c.devices_written() + " asks for " + std::to_string(c.out.world_size) + ".",
                "Use `strategy: \"auto\"` for several cores, or `devices: 1`.");
        return;
      }
      c.out.strategy = "single_xla";
      return;
    case StrategyKind::kFsdp:
      c.error(kFieldStrategy, fill(rules.fsdp_on_tpu, {{"name", std::string(rules.fsdp_name)}}),
              strategy_hint(c), rules.source);
      return;
    case StrategyKind::kDeepSpeed:
      c.error(kFieldStrategy, std::string(rules.deepspeed_missing), strategy_hint(c), rules.source);
      return;
    case StrategyKind::kTpuSpawn:
    case StrategyKind::kOther:
      c.error(kFieldStrategy,
              fill(rules.wrong_strategy, {{"class", std::string(w.entry->class_name)}}),
              strategy_hint(c), rules.source);
      return;
  }
}

}  // namespace

void check_strategy(Context& c) {
  if (ddp_cpu_flag(c) && c.tpu_available()) {
    const DdpCpuOnTpu& row = *row_for<DdpCpuOnTpu>(kDdpCpuOnTpu, c.version, c.patch);
    c.use_patch_row(row.patches);
    c.error(kFieldAccelerator, std::string(row.text),
            "`ddp_cpu` is a CPU strategy of Lightning 1.5: use `accelerator: \"tpu\"` with "
            "`devices` on TPU hosts.",
            row.source);
    return;
  }
  const WrittenStrategy w = written_strategy(c);
  c.use_patch_row(w.rules->patches);
  if (c.strategy_flag() && has_upper(*c.strategy_flag())) {
    c.use_patch_row(row_for<Lowercasing>(kLowercasing, c.version, c.patch)->patches);
  }
  if (refused_by_name(c, w)) return;
  if (w.entry && refused_by_class(c, *w.rules, *w.entry)) return;
  if (c.accelerator == Accelerator::kCpu) {
    c.out.strategy = "auto";
    if (!w.automatic) {
      c.error(kFieldStrategy,
              "`strategy=" + py_repr(w.name) +
                  "` is not supported for `accelerator='cpu'` jobs: tpujobs runs them as one "
                  "process on the executor's threads.",
              "Remove `strategy` (or use \"auto\") for a CPU job.");
    }
    return;
  }
  choose_tpu_strategy(c, w);
}

std::vector<RuleText> strategy_rule_texts() {
  std::vector<RuleText> out;
  for (const DdpCpuOnTpu& row : kDdpCpuOnTpu)
    out.push_back({kFieldAccelerator, row.text, row.source});
  for (const DdpCpuStrategy& row : kDdpCpuStrategy)
    out.push_back({kFieldStrategy, row.text, row.source});
  for (const ExternalStrategy& row : kExternalStrategies) {
    if (!row.text.empty()) out.push_back({kFieldStrategy, row.text, row.source});
  }
  for (const ClassInit& init : init_errors())
    out.push_back({kFieldStrategy, init.text, init.source});
  for (const ClassInit& init : init_warnings()) out.push_back({"warning", init.text, init.source});
  for (const StrategyRules& rules : kStrategyRules) {
    out.push_back({kFieldStrategy, rules.invalid, invalid_source(rules)});
    for (std::string_view text :
         {rules.tpu_spawn, rules.fsdp_on_tpu, rules.deepspeed_missing, rules.wrong_strategy}) {
      if (!text.empty()) out.push_back({kFieldStrategy, text, rules.source});
    }
  }
  return out;
}

}  // namespace tpujobs::lightning
