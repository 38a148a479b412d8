// The state resolve()'s checks share, and the checks themselves, one file
// per concern: versions.cc (lightning_version, runtime), accelerator.cc,
// devices.cc, slices.cc (accelerator_type, num_nodes, the request),
// precision.cc, strategy.cc. resolve.cc applies them in order (kChecks[]).
// Internal to lightning/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lightning/python.h"
#include "lightning/resolve.h"
#include "lightning/slices.h"
#include "lightning/versions.h"

namespace tpujobs::lightning {

// JSON paths of the settings, as the API layer names them.
inline constexpr std::string_view kFieldAccelerator = "trainer.accelerator";
inline constexpr std::string_view kFieldDevices = "trainer.devices";
inline constexpr std::string_view kFieldTpuCores = "trainer.tpu_cores";
inline constexpr std::string_view kFieldGpus = "trainer.gpus";
inline constexpr std::string_view kFieldIpus = "trainer.ipus";
inline constexpr std::string_view kFieldNumProcesses = "trainer.num_processes";
// 1.x's device-specific flags (device_flags.cc), which Lightning may use in
// place of `devices`.
inline constexpr std::string_view kDeviceFlagFields[] = {kFieldTpuCores, kFieldGpus, kFieldIpus,
                                                         kFieldNumProcesses};
inline constexpr std::string_view kFieldNumNodes = "trainer.num_nodes";
inline constexpr std::string_view kFieldPrecision = "trainer.precision";
inline constexpr std::string_view kFieldStrategy = "trainer.strategy";
inline constexpr std::string_view kFieldRuntime = "runtime";
inline constexpr std::string_view kFieldEnv = "env";
inline constexpr std::string_view kFieldAcceleratorType = "resources.accelerator_type";
inline constexpr std::string_view kFieldTopology = "resources.topology";
inline constexpr std::string_view kFieldWorkers = "resources.workers";
inline constexpr std::string_view kFieldLightningVersion = "lightning_version";
inline constexpr std::string_view kFieldMaxTime = "trainer.max_time";
inline constexpr std::string_view kFieldMaxEpochs = "trainer.max_epochs";

enum class Accelerator { kUnresolved, kTpu, kCpu };

// 1.6's accelerator='ddp_cpu': the strategy flag, which
// _check_strategy_and_fallback refuses on a TPU machine or turns into
// 'ddp_spawn' (accelerator.cc, strategy.cc).
inline constexpr std::string_view kDdpCpu = "ddp_cpu";

// What `devices` / `tpu_cores` asks of one host once Lightning's rules pass.
struct DeviceAsk {
  enum class Kind { kAuto, kCount, kCore } kind = Kind::kAuto;
  std::int64_t count = 0;  // kCount
  std::int64_t core = 0;   // kCore, 0-based
};

// The state the checks share: what earlier checks resolved, for later ones.
struct Context {
  const TrainerSettings& settings;
  const PoolView& pool;
  Resolution& out;
  // Every problem found so far; resolve() refuses the settings with them.
  std::vector<base::FieldError> errors = {};

  // The release whose rules apply (check_lightning_version) and its number
  // (2.1 -> 201), which the rule tables are keyed by.
  const Release* default_release = &releases().back();
  bool release_from_environment = false;  // environment.lightning chose default_release
  const Release* release = default_release;
  int version = release->number();
  // The patch release installed, as patch_number(): 2.5.1 -> 20501; the
  // tag's (20506) when only the minor release is known.
  int patch = patch_number(version, release_patch(release->tag, *release));
  // The newest patch release (a patch_number()) whose texts are all the ones
  // used: a row that holds for some patches of a release only narrows it
  // (use_patch_row), and out.lightning_tag names that release.
  int texts_last_patch = kEveryPatch.last;
  Accelerator accelerator = Accelerator::kUnresolved;
  // A registered accelerator that is not available here ("cuda"): its
  // device check still runs first, as the connector checks devices before it
  // instantiates the accelerator.
  std::string unavailable_accelerator = {};
  // 1.6 dropped the `accelerator` string (not a name it knows): Lightning
  // goes on as if none was given.
  bool accelerator_dropped = false;
  // 1.6 takes an `accelerator` that names a strategy ('ddp') as the
  // strategy, with a deprecation warning; the accelerator flag stays None.
  std::optional<std::string> strategy_from_accelerator = std::nullopt;
  // The accelerator string is refused by name, which Lightning checks with
  // the other flags (_check_config_and_set_final_flags) before it looks at
  // the devices; other accelerator errors come after the device flags.
  bool accelerator_name_refused = false;
  // The strategy setting as Lightning keeps it; nullopt: None.
  const std::optional<std::string>& strategy_flag() const {
    return settings.strategy ? settings.strategy : strategy_from_accelerator;
  }
  // The accelerator flag as Lightning keeps it; nullopt: None.
  std::optional<std::string> accelerator_flag() const {
    return accelerator_dropped ? std::nullopt : settings.accelerator;
  }
  std::vector<Generation> pool_generations = {};  // TPU generations with hosts, oldest first

  // resources.accelerator_type, when given and valid.
  std::optional<SliceType> named_slice = std::nullopt;
  bool named_slice_ok = true;  // false: invalid, or its generation is not in the pool

  // The device setting in use and what it asks; ask is nullopt when invalid.
  std::string_view devices_field = kFieldDevices;
  const DeviceValue* devices_value = nullptr;
  std::optional<DeviceAsk> ask = std::nullopt;

  // environment lists no torch_xla: the TPU is not usable from Python.
  bool torch_xla_missing = false;
  // environment names a torch_xla tpujobs knows (out.torch_xla_version).
  bool torch_xla_from_environment = false;
  // env XLA_USE_BF16 is set: torch_xla makes every float tensor bf16.
  bool xla_use_bf16 = false;

  // Python's minor version (environment.python; 3.10 when not given): some
  // of Python's own error texts changed between versions.
  int python_minor = 10;

  // What Lightning's `trainer.num_devices` says when it differs from the
  // devices the job runs on (spawn_nprocs.cc: 8 on a 4-device v5p host).
  std::optional<int> lightning_num_devices = std::nullopt;

  // num_nodes as Lightning ends up with it; nullopt when absent or refused.
  std::optional<std::int64_t> num_nodes = std::nullopt;
  bool num_nodes_ok = true;
  bool request_ok = false;

  // An upstream error (one with a `source`) stopped the Trainer before it
  // logged its device lines: pip's, Python's on the call `Trainer(...)`, and
  // every error of the accelerator connector, which Trainer.__init__ builds
  // before it calls _log_device_info (1.6.5 trainer.py:485 then :687, 1.9.5
  // :420 then :546, 2.1.4 :401 then :472). tpujobs' own refusals stop
  // nothing upstream, where Lightning would have logged the lines. (2.1's
  // XRT client error comes later, in the training processes, but only
  // with a TPU job, which has no "TPU available but not used" warning.)
  bool stopped_before_device_info = false;

  // `source`: the "tag:path" of the rule table row whose text `message` is;
  // empty for tpujobs' own messages.
  void error(std::string_view field, std::string message, std::string hint,
             std::string_view source = {}) {
    errors.push_back(
        {std::string(field), std::move(message), std::move(hint), std::string(source)});
    if (!source.empty()) stopped_before_device_info = true;
  }
  void warn(std::string text) { out.warnings.push_back(std::move(text)); }
  bool v1() const { return version < 200; }
  // Notes that a row holding for `patches` supplied texts of this job.
  void use_patch_row(Versions patches) {
    texts_last_patch = std::min(texts_last_patch, patches.last);
  }

  int pool_hosts(Generation generation) const { return std::max(generation->hosts, 0); }
  bool tpu_available() const { return !pool_generations.empty() && !torch_xla_missing; }

  // The generations the device rules are checked against.
  std::vector<Generation> device_generations() const {
    if (named_slice) return {named_slice->generation};
    return pool_generations;
  }

  // "devices", "tpu_cores", "gpus", ...: the Trainer argument devices_field names.
  std::string_view devices_name() const {
    return devices_field.substr(devices_field.find('.') + 1);
  }
  // "`devices=8`" as written, for tpujobs' own messages.
  std::string devices_written() const {
    const bool absent = !devices_value || devices_value->kind == DeviceValue::Kind::kAbsent;
    return "`" + std::string(devices_name()) + "=" +
           (absent ? std::string("'auto'") : py_repr(*devices_value)) + "`";
  }
};

// A message text of a rule table with its {placeholders}, the field its
// errors name, and the upstream "tag:path" it quotes, so tests can check that
// every message comes from a table row and docs can list them.
struct RuleText {
  std::string_view field;
  std::string_view text;
  std::string_view source;
};

// Every text of every table, by concern (each defined beside its table).
std::vector<RuleText> accelerator_rule_texts();
std::vector<RuleText> device_rule_texts();
std::vector<RuleText> device_flag_rule_texts();  // device_flags.cc
std::vector<RuleText> precision_rule_texts();
std::vector<RuleText> strategy_rule_texts();
std::vector<RuleText> runtime_rule_texts();
std::vector<RuleText> environment_rule_texts();
std::vector<RuleText> num_nodes_rule_texts();
std::vector<RuleText> device_info_rule_texts();
std::vector<RuleText> loop_limit_rule_texts();
std::vector<RuleText> xla_spawn_rule_texts();  // script_xla.cc: xmp.spawn in scripts

// All of them.
std::vector<RuleText> all_rule_texts();

// One check of one concern. Each reports its problems through the context
// and records what it resolved there for the checks after it.
void check_environment(Context& c);        // environment.cc
void check_lightning_version(Context& c);  // versions.cc
void check_accelerator(Context& c);        // accelerator.cc
void check_accelerator_type(Context& c);   // slices.cc
// resources.topology (topology.cc): false after reporting an error; else,
// when accelerator_type is absent, *accelerator_type is the type it names.
bool check_topology(Context& c, std::optional<std::string>* accelerator_type);
// environment.torch_xla too old to find the job's generation's chips
// (torch_xla_devices.cc): v6e before torch_xla 2.5.
void check_torch_xla_knows_chips(Context& c);
void check_devices(Context& c);    // devices.cc
void check_num_nodes(Context& c);  // slices.cc
void check_request(Context& c);    // slices.cc
// Lightning 1.x / 2.0's `devices=8` on v5e/v5p/v6e hosts of fewer devices
// (spawn_nprocs.cc): torch_xla's PJRT spawn ignores nprocs=8 and runs one
// process per device. follow_ turns c.ask into every device of a host (true
// when it applies); note_ adds torch_xla's line and tpujobs' notice once the
// request resolved.
bool follow_spawn_nprocs(Context& c);
// torch_xla's PJRT spawn given an nprocs other than 1 and None: refused (a
// ValueError, 2.6+) or a logged warning, its text (`{nprocs}`) and source;
// nullopt where tpujobs has no row (script_xla.cc; 1.13 says nothing).
struct PjrtSpawnNprocs {
  bool refused;
  std::string_view text;
  std::string_view source;
};
std::optional<PjrtSpawnNprocs> pjrt_spawn_nprocs(int torch_xla);
void note_spawn_nprocs(Context& c);
void check_precision(Context& c);     // precision.cc
void check_strategy(Context& c);      // strategy.cc
void check_runtime(Context& c);       // versions.cc
void check_device_info(Context& c);   // accelerator.cc
void name_lightning_tag(Context& c);  // versions.cc: the tag the texts came from
void check_loop_limits(Context& c);   // loop_limits.cc: max_epochs' default, max_time

// `gpus`, `ipus`, `num_processes` (device_flags.cc): Python's TypeError
// under 2.x; 1.x maps them (mapped_device_flag).
void check_removed_arguments(Context& c);

// resources.workers (workers.cc): every index a worker of the resolved
// slice; fewer than all of a multi-host slice's workers: out.launch_failure.
void check_workers(Context& c);

// What building the `strategy` comes to, which decides whether Lightning
// ever builds a precision plugin and which (strategy.cc): the registry
// instantiates the strategy before the precision plugin, and from 2.1 only
// an XLA strategy gets XLAPrecision.
enum class StrategyBuild {
  kTpu,    // auto or an XLA strategy: the TPU precision plugin
  kOther,  // a registered non-TPU strategy: built; the connector refuses it afterwards
  kFails,  // refused before the precision plugin (invalid name, DeepSpeed, FSDP, ...)
};
StrategyBuild strategy_build(const Context& c);

// Lightning 1.x's device-specific flags (device_flags.cc). One of them and
// the value Lightning takes from it.
struct DeviceFlag {
  std::string_view field;  // kFieldTpuCores, kFieldGpus, ...
  const DeviceValue* value;
};
// Python's truth value of a flag (None, 0, 0.0, False, '', [], {} are false).
bool py_truthy(const DeviceValue& value);
// 1.x: the flag Lightning puts in place of `devices`, `num_processes or gpus
// or ipus or tpu_cores`, when that is true and not "0" (1.9.5
// accelerator_connector.py:494-495); nullopt under 2.x or when none is.
std::optional<DeviceFlag> mapped_device_flag(const Context& c);
// 1.x with `accelerator` None: the accelerator the flags set (*name "ipu",
// "tpu", "cuda" ("gpu" in 1.6) or "cpu", the last true of ipus, tpu_cores,
// gpus, num_processes: 1.9.5 :510-519) and the flag that set it; nullopt
// when mapped_device_flag() is.
std::optional<DeviceFlag> accelerator_from_device_flags(const Context& c, std::string* name);
// 1.7-1.9's deprecation warnings, and 1.x's "will be ignored" and "more
// than one device specific flag" warnings (check_devices calls it first).
void warn_device_flags(Context& c);
// A flag refused in _check_config_and_set_final_flags, before the device
// flags are looked at: no device-flag warning comes with it.
bool flags_refused_first(const Context& c);
// "Trainer.__init__" (Python 3.10+) or "__init__": how Python's TypeError
// names the Trainer's constructor.
std::string init_qualname(const Context& c);
// devices.cc: None; and the connector's `devices in ([], 0, "0")`.
bool is_none(const DeviceValue& value);
bool is_zero(const DeviceValue& value);

// The connector lower-cases the `strategy` string before it checks it
// (every release but 1.6.0); notes the patch row used (strategy.cc).
bool strategy_lowercased(Context& c);

// The connector refuses the `strategy` string in
// _check_config_and_set_final_flags, before it looks at any device flag:
// 1.x's 'ddp_cpu' and 'tpu_spawn', and from 1.9.2 a name it does not know
// (strategy.cc).
bool strategy_refused_with_the_flags(const Context& c);

// The connector refuses the `precision` value in
// _check_config_and_set_final_flags: not one of the release's (precision.cc).
bool precision_refused_with_the_flags(const Context& c);

// Lightning 2.0 and older take int(num_nodes) first in
// _check_device_config_and_set_final_flags, and Python refuses it (slices.cc).
bool num_nodes_refused_by_int(const Context& c);

// What the `strategy` setting names, for the checks before check_strategy
// (strategy.cc).
enum class StrategyChoice {
  kAutomatic,    // absent, or 'auto' where registered: Lightning picks one
  kXlaParallel,  // XLAStrategy / TPUSpawnStrategy by name: 'xla', 'xla_debug', ...
  kXlaSingle,    // 'single_tpu' / 'single_xla'
  kOther,        // anything else, which check_strategy refuses on a TPU
};
StrategyChoice strategy_choice(const Context& c);

// `name` is in the strategy registry of `version` (strategy.cc).
bool is_registered_strategy(std::string_view name, int version);

// The torch_xla (major*100+minor) a release runs with when `environment`
// names none: the newest whose torch the release's requirement allows
// (environment.cc).
int default_torch_xla(int lightning_version);

// The torch_xla releases from `first` (major*100+minor) on, with the
// Pythons their wheels are for: "2.1-2.3 for Python 3.8-3.11, 2.4-2.5 for
// Python 3.9-3.11" (environment.cc).
std::string torch_xla_wheels_from(int first);

// torch_xla's sys_util::GetEnvBool on `env`: "true", "false", or a number
// (non-zero is true); false when unset (environment.cc).
bool env_bool(const std::map<std::string, std::string>& env, const std::string& name);

// What torch_xla (major*100+minor) prints about its dtype variables; each
// empty when that release prints nothing (environment.cc).
struct TorchXlaDtypeTexts {
  std::string_view use_bf16;                 // stdout, when it first reads XLA_USE_BF16 true
  std::string_view use_fp16;                 // stdout, when it first reads XLA_USE_FP16 true
  std::string_view use_fp16_import_warning;  // `import torch_xla`, XLA_USE_FP16 set at all
};
TorchXlaDtypeTexts torch_xla_dtype_texts(int torch_xla_version);

}  // namespace tpujobs::lightning
