#include <span>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// ---------------------------------------------------------------------------
// strategy

enum class StrategyKind { kAuto, kXla, kSingleXla, kXlaDebug, kForeign };

struct StrategyRule {
  std::string_view name;
  StrategyKind kind;
  std::string_view class_name;  // kForeign: the class Lightning instantiates
};

// The registered names per version. TPU strategies first; the rest are
// registered but refused on TPU.
constexpr StrategyRule kStrategiesV2[] = {
    {"auto", StrategyKind::kAuto, ""},
    {"xla", StrategyKind::kXla, ""},
    {"single_xla", StrategyKind::kSingleXla, ""},
    {"xla_debug", StrategyKind::kXlaDebug, ""},
    {"ddp", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_spawn", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_fork", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_notebook", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_find_unused_parameters_true", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_find_unused_parameters_false", StrategyKind::kForeign, "DDPStrategy"},
    {"deepspeed", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_1", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_2", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"deepspeed_stage_3", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"fsdp", StrategyKind::kForeign, "FSDPStrategy"},
    {"fsdp_cpu_offload", StrategyKind::kForeign, "FSDPStrategy"},
};
constexpr StrategyRule kStrategiesV1[] = {
    {"auto", StrategyKind::kAuto, ""},
    {"tpu_spawn", StrategyKind::kXla, ""},
    {"single_tpu", StrategyKind::kSingleXla, ""},
    {"tpu_spawn_debug", StrategyKind::kXlaDebug, ""},
    {"ddp", StrategyKind::kForeign, "DDPStrategy"},
    {"ddp_spawn", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_fork", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_notebook", StrategyKind::kForeign, "DDPSpawnStrategy"},
    {"ddp_sharded", StrategyKind::kForeign, "DDPShardedStrategy"},
    {"dp", StrategyKind::kForeign, "DataParallelStrategy"},
    {"deepspeed", StrategyKind::kForeign, "DeepSpeedStrategy"},
    {"fsdp", StrategyKind::kForeign, "DDPFullyShardedStrategy"},
    {"fsdp_native", StrategyKind::kForeign, "DDPFullyShardedNativeStrategy"},
    {"horovod", StrategyKind::kForeign, "HorovodStrategy"},
};

std::span<const StrategyRule> strategy_rules(Version version) {
  if (version == Version::kV2) return kStrategiesV2;
  return kStrategiesV1;
}

std::string tpu_strategy_names(Version version) {
  std::vector<std::string> names;
  for (const StrategyRule& rule : strategy_rules(version)) {
    if (rule.kind != StrategyKind::kForeign) names.emplace_back(rule.name);
  }
  return join(names, ", ");
}

std::string strategy_hint(Version version) {
  return std::string("Remove `strategy` (or use \"auto\"): Lightning picks ") +
         (version == Version::kV2 ? "`XLAStrategy` for several TPU cores and "
                                    "`SingleDeviceXLAStrategy` for one"
                                  : "`TPUSpawnStrategy` for several TPU cores and "
                                    "`SingleTPUStrategy` for one") +
         ". TPU strategies: " + tpu_strategy_names(version) + ".";
}

}  // namespace

void check_strategy(Context& c) {
  const std::string written = c.settings.strategy.value_or("auto");
  if (c.accelerator == Accelerator::kCpu) {
    c.out.strategy = "auto";
    if (written != "auto") {
      c.error(kFieldStrategy,
              "`strategy=" + py_repr(written) +
                  "` is not supported for `accelerator='cpu'` jobs: tpujobs runs them as one "
                  "process on the executor's threads.",
              "Remove `strategy` (or use \"auto\") for a CPU job.");
    }
    return;
  }
  const StrategyRule* rule = nullptr;
  for (const StrategyRule& candidate : strategy_rules(c.version)) {
    if (candidate.name == written) rule = &candidate;
  }
  if (!rule) {
    c.error(kFieldStrategy,
            "You selected an invalid strategy name: `strategy=" + py_repr(written) +
                "`. It must be either a string or an instance of `" +
                (c.version == Version::kV2 ? "lightning.pytorch" : "pytorch_lightning") +
                ".strategies.Strategy`. Valid names on TPUs: " + tpu_strategy_names(c.version) +
                ".",
            strategy_hint(c.version));
    return;
  }
  const bool several = c.request_ok && c.out.world_size > 1;
  switch (rule->kind) {
    case StrategyKind::kAuto:
      c.out.strategy = several || !c.request_ok ? "xla" : "single_xla";
      return;
    case StrategyKind::kXla:
      c.out.strategy = "xla";
      return;
    case StrategyKind::kXlaDebug:
      c.out.strategy = "xla_debug";
      return;
    case StrategyKind::kSingleXla:
      if (several) {
        c.error(kFieldStrategy,
                "`strategy=" + py_repr(written) + "` runs on one TPU core, but " +
                    c.devices_written() + " asks for " + std::to_string(c.out.world_size) + ".",
                "Use `strategy: \"" + std::string(c.version == Version::kV2 ? "xla" : "tpu_spawn") +
                    "\"` (or \"auto\") for several cores, or `devices: 1`.");
        return;
      }
      c.out.strategy = "single_xla";
      return;
    case StrategyKind::kForeign:
      c.error(kFieldStrategy,
              c.version == Version::kV2
                  ? "The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` or "
                    "`XLAStrategy`, found " +
                        std::string(rule->class_name) + "."
                  : "The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
                    "`TPUSpawnStrategy`, found " +
                        std::string(rule->class_name) + ".",
              strategy_hint(c.version));
      return;
  }
}

}  // namespace tpujobs::lightning
