// `precision`: the values each Lightning version accepts, the aliases and
// their warnings, and what the TPU precision plugin makes of them. Sources:
// the connector's precision check (1.x `_precision_types`, 1.9
// `supported_precision`, 2.x `_convert_precision_to_unified_args`) and the
// TPU/XLA branch of `_check_and_init_precision` / `_validate_precision_choice`
// or `XLAPrecision.__init__`.
#include <algorithm>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// How a version's TPU plugin treats the (canonical) precision.
enum class TpuPlugin {
  kLegacy,       // 1.x: 32 -> fp32; 16 and 'bf16' -> bf16 (16 with a warning); 64 refused
  kTpuBf16,      // 2.0: '32-true'; '16-mixed' and 'bf16-mixed' -> bf16 (16 with a warning)
  kXlaPrecision  // 2.1+: XLAPrecision accepts '32-true', '16-true', 'bf16-true'
};

struct PrecisionRules {
  Versions versions;
  // Allowed values as the message prints the tuple; strings quoted, ints bare.
  std::string_view allowed;
  bool compare_as_string;  // 1.6-1.8 check str(precision); later versions the value itself
  // 2.x aliases ("16" -> "16-mixed") and the warning they give; {precision}, {canonical}.
  bool aliases;
  std::string_view alias_warning;
  TpuPlugin plugin;
  std::string_view invalid;       // {precision}: repr, {allowed}
  std::string_view not_on_tpu;    // {precision}: repr of the canonical value
  std::string_view fp16_warning;  // 16 on a TPU becomes bf16
  std::string_view source;
  // 1.6-1.8 check str(precision) against the tuple but build the plugin
  // comparing the flag with the ints 16, 32 and 64, so any string but 'bf16'
  // ('16', '32', '64', 1.6-1.7's 'mixed') matches no plugin and
  // _check_and_init_precision ends in RuntimeError("No precision set"), on
  // the TPU as on the CPU. Where that line is; empty when the version
  // converts the flag (1.9: str(precision); 2.x: the aliases).
  std::string_view no_precision_set_source = {};
  // 2.1+: XLAPrecision('16-true') sets XLA_USE_F16=1, a variable torch_xla
  // never reads (it reads XLA_USE_FP16: v1.13 tensor_util.cpp:82, v2.1
  // tensor_util.cpp:50, v2.2-v2.4 dtype.cpp; 2.5 reads neither), and no hook
  // of the Trainer's XLAPrecision uses its _desired_dtype to convert the
  // module or the inputs (the base Precision's convert_module and
  // convert_input return them unchanged): the model trains in float32.
  // Where XLA_USE_F16 is set; empty for releases without '16-true'.
  std::string_view sixteen_true_unread_source = {};
};

constexpr std::string_view kNoPrecisionSet = "No precision set";

constexpr std::string_view kInvalid =
    "Precision {precision} is invalid. Allowed precision values: {allowed}";
constexpr std::string_view kSixtyFour1 =
    "`Trainer(accelerator='tpu', precision=64)` is not implemented. Please, open an issue in "
    "`https://github.com/Lightning-AI/lightning/issues` requesting this feature.";
constexpr std::string_view kFp16Legacy =
    "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
    "Using `precision='bf16'` instead.";
constexpr std::string_view kFp16Cpu1x =
    "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not supported on "
    "CPU. Using `precision='bf16'` instead.";
constexpr std::string_view kFp16Cpu2x =
    "You passed `Trainer(accelerator='cpu', precision='16-mixed')` but AMP with fp16 is not "
    "supported on CPU. Using `precision='bf16-mixed'` instead.";
constexpr std::string_view kFp16Cpu2xSource =
    "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py";
// 2.1+ TransformerEnginePrecision.__init__ without transformer_engine
// installed (str(RequirementCache("transformer_engine>=0.11.0"))).
constexpr std::string_view kTransformerEngineMissing =
    "Requirement 'transformer_engine>=0.11.0' not met. HINT: Try running `pip install -U "
    "'transformer_engine>=0.11.0'`";
constexpr std::string_view kTransformerEngineSource =
    "2.1.4:src/lightning/fabric/plugins/precision/transformer_engine.py";
constexpr std::string_view kAllowed21 =
    "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
    "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')";

constexpr PrecisionRules kPrecisionRules[] = {
    {{106, 106},
     "('16', '32', '64', 'bf16', 'mixed')",
     true,
     false,
     "",
     TpuPlugin::kLegacy,
     kInvalid,
     kSixtyFour1,
     kFp16Legacy,
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py",
     "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:720 "
     "(_check_and_init_precision)"},
    {{107, 107},
     "('16', '32', '64', 'bf16', 'mixed')",
     true,
     false,
     "",
     TpuPlugin::kLegacy,
     kInvalid,
     kSixtyFour1,
     kFp16Legacy,
     "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
     "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:746 "
     "(_check_and_init_precision)"},
    {{108, 108},
     "('16', '32', '64', 'bf16')",
     true,
     false,
     "",
     TpuPlugin::kLegacy,
     kInvalid,
     kSixtyFour1,
     kFp16Legacy,
     "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
     "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:730 "
     "(_check_and_init_precision)"},
    {{109, 109},
     "('64', '32', '16', 'bf16', 64, 32, 16)",
     false,
     false,
     "",
     TpuPlugin::kLegacy,
     kInvalid,
     kSixtyFour1,
     kFp16Legacy,
     "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
    {{200, 200},
     "('16-mixed', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')",
     false,
     true,
     "{precision} is supported for historical reasons but its usage is discouraged. Please set "
     "your precision to {canonical} instead!",
     TpuPlugin::kTpuBf16,
     kInvalid,
     "`Trainer(accelerator='tpu', precision='64-true')` is not implemented. Please, open an issue "
     "in `https://github.com/Lightning-AI/lightning/issues` requesting this feature.",
     "You passed `Trainer(accelerator='tpu', precision='16-mixed')` but AMP with fp16 is not "
     "supported on TPUs. Using `precision='bf16-mixed'` instead.",
     "2.0.9:src/lightning/fabric/connector.py; "
     "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py"},
    {{201, 299},
     kAllowed21,
     false,
     true,
     "`precision={precision}` is supported for historical reasons but its usage is discouraged. "
     "Please set your precision to {canonical} instead!",
     TpuPlugin::kXlaPrecision,
     kInvalid,
     "`precision={precision})` is not supported in XLA. `precision` must be one of: ('32-true', "
     "'16-true', 'bf16-true').",
     "",
     "2.1.4:src/lightning/fabric/connector.py; "
     "2.1.4:src/lightning/pytorch/plugins/precision/xla.py",
     {},
     // The same line in every tag from 2.1.0 to 2.5.6 (and Fabric's
     // plugins/precision/xla.py:51).
     "2.1.4:src/lightning/pytorch/plugins/precision/xla.py:54 (XLAPrecision.__init__)"},
};

// 2.x `_PRECISION_INPUT_STR_ALIAS_CONVERSION`.
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"64", "64-true"}, {"32", "32-true"}, {"16", "16-mixed"}, {"bf16", "bf16-mixed"}};

// tpujobs' own notice (not Lightning's or torch_xla's text) for a
// '16-true' TPU job that trains in float32; {release}, {torch_xla_reads}.
constexpr std::string_view kSixteenTrueRunsInFloat32 =
    "tpujobs: precision='16-true' on a TPU trains in float32 under Lightning {release}, as it "
    "does on a real TPU: Lightning's XLAPrecision sets XLA_USE_F16=1, which torch_xla does not "
    "read ({torch_xla_reads}), and nothing converts the model, so the model stays float32: no "
    "memory saving and no fp16 arithmetic. tpujobs runs and sizes this job in float32. Hint: use "
    "precision \"bf16-true\" for half precision on TPUs.";

constexpr std::string_view kPrecisionHint =
    "Use `precision: \"bf16-true\"` on TPUs (the MXU multiplies in bfloat16), or \"32-true\"; "
    "mixed precision (AMP) does not exist on XLA.";

// Is `written` one of `allowed` (the printed tuple), comparing as Python does?
bool allowed_value(const PrecisionRules& rules, const std::string& written, bool number) {
  const std::string as_str = "'" + written + "'";
  const std::string_view allowed = rules.allowed;
  auto contains = [&](const std::string& item) {
    for (std::size_t at = allowed.find(item); at != std::string_view::npos;
         at = allowed.find(item, at + 1)) {
      const char before = at == 0 ? '(' : allowed[at - 1];
      const char after = at + item.size() < allowed.size() ? allowed[at + item.size()] : ')';
      if ((before == '(' || before == ' ') && (after == ',' || after == ')')) return true;
    }
    return false;
  };
  if (rules.compare_as_string) return contains(as_str);  // str(precision) in the tuple
  return contains(number ? written : as_str);
}

std::string shown(const std::string& written, bool number) {
  return number ? written : py_repr(written);
}

// The last torch_xla that reads XLA_USE_FP16 (v2.4.0 torch_xla/csrc/dtype.cpp:22,
// ShouldUseF16); 2.5 only warns that it is deprecated (v2.5.0
// torch_xla/__init__.py:185).
constexpr int kLastTorchXlaReadingXlaUseFp16 = 204;

// tpujobs' own notice for a TPU job whose float tensors torch_xla stores as
// float16 because of the user's XLA_USE_FP16, whatever `precision` says;
// {torch_xla}, {precision}: Lightning's flag.
constexpr std::string_view kXlaUseFp16Wins =
    "tpujobs: env XLA_USE_FP16 makes {torch_xla} store every float32 tensor on the TPU as "
    "float16 (torch_xla reads it itself, and before XLA_USE_BF16), so this job trains and is "
    "sized in float16, not as precision={precision} says. Unset XLA_USE_FP16 to train in "
    "{precision}.";

// torch_xla (<= 2.4) reads the user's XLA_USE_FP16 when it first places a
// float tensor on the device, and stores every F32 and F64 tensor as F16,
// checked before XLA_USE_BF16 (v2.4.0 torch_xla/csrc/dtype.cpp:169-185,
// MaybeDowncastToXlaDeviceType; v2.2.0-v2.3.0 dtype.cpp, v1.13.0-v2.1.0
// tensor_util.cpp:1150-1166, GetDevicePrimitiveType): whatever Lightning's
// plugin did ('32-true', or XLA_USE_BF16 for bf16), a TPU job trains in fp16.
void apply_xla_use_fp16(Context& c) {
  if (c.accelerator != Accelerator::kTpu ||
      c.out.torch_xla_version > kLastTorchXlaReadingXlaUseFp16 ||
      !env_bool(c.settings.env, "XLA_USE_FP16")) {
    return;
  }
  const Precision asked = c.out.precision;
  c.out.precision = Precision::k16True;
  if (asked == Precision::k16True) return;  // what '16-true' asks for anyway
  const int torch_xla = c.out.torch_xla_version;
  // 1.x's flag is the int 32 or the string 'bf16'.
  const std::string& flag = c.out.lightning_precision;
  const bool number = !flag.empty() && std::all_of(flag.begin(), flag.end(),
                                                   [](char ch) { return ch >= '0' && ch <= '9'; });
  const std::string notice =
      fill(kXlaUseFp16Wins, {{"torch_xla", "torch_xla " + std::to_string(torch_xla / 100) + "." +
                                               std::to_string(torch_xla % 100)},
                             {"precision", number ? flag : py_repr(flag)}});
  c.warn(notice);
  c.out.notices.push_back(notice);
}

// What torch_xla prints when each process of the job first places a float
// tensor on the TPU (MaybeDowncastToXlaDeviceType, F32: `UseF16() ||
// DowncastF16()` first, then `UseBF16()`, each read once a process; v2.4.0
// torch_xla/csrc/dtype.cpp:180-185): the XLA_USE_FP16 notice when the user's
// XLA_USE_FP16 is true (2.4, dtype.cpp:25; XLA_USE_BF16 is never read then),
// else the XLA_USE_BF16 one when it is true (2.4-2.5, dtype.cpp:14), set by
// the user or by Lightning's bf16 plugin (1.6.5 plugins/precision/tpu_bf16.py:31,
// 2.0.9 :31, 2.1.4 plugins/precision/xla.py:57): a TPU job in bf16 here.
// Call before apply_xla_use_fp16.
void announce_torch_xla_dtype(Context& c) {
  if (c.accelerator != Accelerator::kTpu || !c.torch_xla_from_environment) return;
  const TorchXlaDtypeTexts texts = torch_xla_dtype_texts(c.out.torch_xla_version);
  const bool fp16 = c.out.torch_xla_version <= kLastTorchXlaReadingXlaUseFp16 &&
                    env_bool(c.settings.env, "XLA_USE_FP16");
  const std::string_view notice = fp16                                      ? texts.use_fp16
                                  : c.out.precision == Precision::kBf16True ? texts.use_bf16
                                                                            : std::string_view();
  if (notice.empty()) return;
  c.warn(std::string(notice));
  const int processes = std::max(1, c.out.device.devices_per_host);
  for (int i = 0; i < processes; ++i) c.out.torch_xla_first_tensor_lines.emplace_back(notice);
}

// '16-true' under XLAPrecision: float32 unless the user's own XLA_USE_FP16
// reaches a torch_xla that reads it (up to 2.4), which then stores every
// float tensor as fp16 whatever the plugin did.
void check_sixteen_true_on_tpu(Context& c, const PrecisionRules& rules) {
  // Only an XLA strategy gets XLAPrecision; another one gets the generic
  // HalfPrecision, and the connector refuses the strategy afterwards.
  if (rules.sixteen_true_unread_source.empty() || strategy_build(c) != StrategyBuild::kTpu) return;
  const int torch_xla = c.out.torch_xla_version;
  if (torch_xla <= kLastTorchXlaReadingXlaUseFp16 && env_bool(c.settings.env, "XLA_USE_FP16")) {
    return;
  }
  c.out.precision = Precision::k32True;
  const std::string torch_xla_name =
      "torch_xla " + std::to_string(torch_xla / 100) + "." + std::to_string(torch_xla % 100);
  const std::string reads =
      torch_xla <= kLastTorchXlaReadingXlaUseFp16
          ? torch_xla_name + " reads XLA_USE_FP16"
          : torch_xla_name + " reads neither it nor the deprecated XLA_USE_FP16";
  const std::string notice =
      fill(kSixteenTrueRunsInFloat32, {{"release", c.release->name()}, {"torch_xla_reads", reads}});
  c.warn(notice);
  c.out.notices.push_back(notice);
}

// 1.x's TPUPrecisionPlugin / TPUBf16PrecisionPlugin, built from the ints
// 16, 32, 64 or the string "bf16".
void check_legacy_plugin(Context& c, const PrecisionRules& rules, std::string& canonical,
                         const std::string& written, bool number, bool tpu) {
  if (!rules.no_precision_set_source.empty() && !number && written != "bf16") {
    const bool digits = written == "16" || written == "32" || written == "64";
    c.error(kFieldPrecision, std::string(kNoPrecisionSet),
            "Lightning " + c.release->name() +
                " builds its precision plugin from the ints 16, 32, 64 or the string "
                "\"bf16\": " +
                (digits ? "write `precision: " + written +
                              "` as a JSON number, not a string (16 means bf16 on TPUs)."
                        : std::string("use `precision: \"bf16\"` on TPUs, or 32.")),
            rules.no_precision_set_source);
    return;
  }
  if (canonical == "32") {
    c.out.precision = Precision::k32True;
  } else if (canonical == "bf16") {
    c.out.precision = Precision::kBf16True;
  } else if (canonical == "16") {
    c.out.precision = Precision::kBf16True;
    canonical = "bf16";
    c.warn(std::string(tpu ? rules.fp16_warning : kFp16Cpu1x));
  } else if (tpu && canonical == "64") {
    c.error(kFieldPrecision, std::string(rules.not_on_tpu),
            "Use `precision: \"bf16\"` (or 16, which means bf16 on TPUs) or 32.", rules.source);
  } else {
    c.error(kFieldPrecision,
            "`precision=" + shown(written, number) +
                "` is not supported by the tpujobs executor. `precision` must be one of: "
                "[16, 32, 'bf16'].",
            "Use `precision: 32` or \"bf16\".");
  }
}

// 2.0's TPUBf16PrecisionPlugin. Returns whether it decided the precision
// (false: the generic plugin's rules apply).
bool check_tpu_bf16_plugin(Context& c, const PrecisionRules& rules, std::string& canonical,
                           bool tpu) {
  if (canonical == "32-true") {
    c.out.precision = Precision::k32True;
    return true;
  }
  if (tpu && (canonical == "16-mixed" || canonical == "bf16-mixed")) {
    // TPUBf16PrecisionPlugin sets XLA_USE_BF16=1: every tensor is bf16.
    if (canonical == "16-mixed") c.warn(std::string(rules.fp16_warning));
    canonical = "bf16-mixed";
    c.out.precision = Precision::kBf16True;
    return true;
  }
  if (tpu && canonical == "64-true") {
    c.error(kFieldPrecision, std::string(rules.not_on_tpu),
            "Use `precision: \"bf16-mixed\"` (bfloat16 on TPUs) or \"32-true\".", rules.source);
    return true;
  }
  return false;
}

// XLAPrecision (2.1 and later). Returns whether it decided the precision
// (false: the generic plugin's rules apply).
bool check_xla_precision_plugin(Context& c, const PrecisionRules& rules,
                                const std::string& canonical, bool tpu, StrategyBuild build) {
  if (canonical == "32-true" || canonical == "16-true" || canonical == "bf16-true") {
    c.out.precision = canonical == "32-true"   ? Precision::k32True
                      : canonical == "16-true" ? Precision::k16True
                                               : Precision::kBf16True;
    if (tpu && canonical == "16-true") check_sixteen_true_on_tpu(c, rules);
    return true;
  }
  // Only an XLA strategy gets XLAPrecision; another strategy (or the
  // CPU) gets the generic plugin, and the connector refuses the strategy
  // afterwards. Transformer Engine needs a library no TPU VM has.
  if ((!tpu || build == StrategyBuild::kOther) && canonical.starts_with("transformer-engine")) {
    c.error(kFieldPrecision, std::string(kTransformerEngineMissing),
            "Transformer Engine is NVIDIA's FP8 library (Hopper GPUs); on TPUs use `precision: "
            "\"bf16-true\"`.",
            kTransformerEngineSource);
    return true;
  }
  if (tpu && build == StrategyBuild::kOther) return true;
  if (tpu) {
    c.error(kFieldPrecision, fill(rules.not_on_tpu, {{"precision", py_repr(canonical)}}),
            std::string(kPrecisionHint), rules.source);
    return true;
  }
  return false;
}

// 2.x on the CPU: fp16 AMP becomes bf16 AMP with a warning (every 2.x
// release). tpujobs' CPU executor runs bf16 AMP as bf16 arithmetic.
void check_generic_plugin(Context& c, std::string& canonical, bool tpu) {
  if (!tpu && canonical == "16-mixed") {
    c.warn(std::string(kFp16Cpu2x));
    canonical = "bf16-mixed";
  }
  if (!tpu && canonical == "bf16-mixed") {
    c.out.precision = Precision::kBf16True;
    return;
  }
  c.error(kFieldPrecision,
          "`precision=" + py_repr(canonical) +
              "` is not supported by the tpujobs CPU executor. `precision` must be one of: "
              "('32-true', '16-true', 'bf16-true', 'bf16-mixed').",
          "Use `precision: \"32-true\"` or \"bf16-true\" for a CPU job.");
}

// The plugin the connector builds for `canonical` (the flag after the alias
// conversion), which it may change as Lightning does ('16' -> 'bf16' in 1.x).
void check_precision_plugin(Context& c, const PrecisionRules& rules, std::string& canonical,
                            const std::string& written, bool number) {
  const bool tpu = c.accelerator != Accelerator::kCpu;
  // The registry builds the strategy first: when that fails, Lightning never
  // gets to the precision plugin (_init_strategy, then _check_and_init_precision).
  const StrategyBuild build = strategy_build(c);
  if (build == StrategyBuild::kFails) return;
  switch (rules.plugin) {
    case TpuPlugin::kLegacy:
      check_legacy_plugin(c, rules, canonical, written, number, tpu);
      return;
    case TpuPlugin::kTpuBf16:
      if (check_tpu_bf16_plugin(c, rules, canonical, tpu)) return;
      break;
    case TpuPlugin::kXlaPrecision:
      if (check_xla_precision_plugin(c, rules, canonical, tpu, build)) return;
      break;
  }
  check_generic_plugin(c, canonical, tpu);
}

}  // namespace

bool precision_refused_with_the_flags(const Context& c) {
  const PrecisionRules& rules = *row_for<PrecisionRules>(kPrecisionRules, c.version);
  return c.settings.precision &&
         !allowed_value(rules, *c.settings.precision, c.settings.precision_is_number);
}

void check_precision(Context& c) {
  const PrecisionRules& rules = *row_for<PrecisionRules>(kPrecisionRules, c.version);
  if (!c.settings.precision) {
    const bool bf16 = c.xla_use_bf16 && c.accelerator == Accelerator::kTpu;
    c.out.precision = bf16 ? Precision::kBf16True : Precision::k32True;
    c.out.lightning_precision = c.v1() ? "32" : "32-true";
    announce_torch_xla_dtype(c);
    apply_xla_use_fp16(c);
    return;
  }
  const std::string& written = *c.settings.precision;
  const bool number = c.settings.precision_is_number;
  if (!allowed_value(rules, written, number)) {
    c.error(kFieldPrecision,
            fill(rules.invalid,
                 {{"precision", shown(written, number)}, {"allowed", std::string(rules.allowed)}}),
            c.v1() ? "Lightning " + c.release->name() +
                         " takes 16, 32, 64 or \"bf16\" (the \"-true\"/\"-mixed\" names came in "
                         "2.0): use \"bf16\" on TPUs."
                   : std::string(kPrecisionHint),
            rules.source);
    return;
  }
  std::string canonical = written;
  if (rules.aliases) {
    for (const auto& [alias, target] : kAliases) {
      if (alias != written) continue;
      canonical = target;
      if (!written.starts_with("32") && !written.starts_with("64")) {
        c.warn(fill(rules.alias_warning, {{"precision", written}, {"canonical", canonical}}));
      }
    }
  }
  check_precision_plugin(c, rules, canonical, written, number);
  c.out.lightning_precision = canonical;
  if (c.xla_use_bf16 && c.accelerator == Accelerator::kTpu) c.out.precision = Precision::kBf16True;
  announce_torch_xla_dtype(c);
  apply_xla_use_fp16(c);
}

std::vector<RuleText> precision_rule_texts() {
  std::vector<RuleText> out = {
      {"warning", kFp16Cpu1x,
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py"},
      {"warning", kFp16Cpu2x, kFp16Cpu2xSource},
      {kFieldPrecision, kTransformerEngineMissing, kTransformerEngineSource}};
  for (const PrecisionRules& rules : kPrecisionRules) {
    out.push_back({kFieldPrecision, rules.invalid, rules.source});
    out.push_back({kFieldPrecision, rules.not_on_tpu, rules.source});
    if (!rules.alias_warning.empty()) out.push_back({"warning", rules.alias_warning, rules.source});
    if (!rules.fp16_warning.empty()) out.push_back({"warning", rules.fp16_warning, rules.source});
    if (!rules.no_precision_set_source.empty()) {
      out.push_back({kFieldPrecision, kNoPrecisionSet, rules.no_precision_set_source});
    }
  }
  return out;
}

}  // namespace tpujobs::lightning
