// The strategy registry of each Lightning version and the strategy classes'
// __init__ on a TPU VM (lightning/strategy_registry.h).
#include "lightning/strategy_registry.h"

#include <algorithm>
#include <vector>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

constexpr Versions k1x{106, 109};
constexpr Versions k2x{200, 299};
constexpr Versions kAll{106, 299};

// The registries, from each tag's strategies/*.py register_strategies.
constexpr RegisteredStrategy kRegistry[] = {
    {"bagua", k1x, "BaguaStrategy", StrategyKind::kOther},
    {"colossalai", {108, 109}, "ColossalAIStrategy", StrategyKind::kOther},
    {"ddp", kAll, "DDPStrategy", StrategyKind::kOther},
    {"ddp2", {106, 106}, "DDP2Strategy", StrategyKind::kOther},
    {"ddp_find_unused_parameters_false", kAll, "DDPStrategy", StrategyKind::kOther},
    {"ddp_find_unused_parameters_true", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_fork", {107, 109}, "DDPSpawnStrategy", StrategyKind::kOther},
    {"ddp_fork", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_fork_find_unused_parameters_false", {107, 109}, "DDPSpawnStrategy", StrategyKind::kOther},
    {"ddp_fork_find_unused_parameters_false", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_fork_find_unused_parameters_true", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_fully_sharded", k1x, "DDPFullyShardedStrategy", StrategyKind::kOther},
    {"ddp_notebook", {107, 109}, "DDPSpawnStrategy", StrategyKind::kOther},
    {"ddp_notebook", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_notebook_find_unused_parameters_false",
     {107, 109},
     "DDPSpawnStrategy",
     StrategyKind::kOther},
    {"ddp_notebook_find_unused_parameters_false", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_notebook_find_unused_parameters_true", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_sharded", k1x, "DDPShardedStrategy", StrategyKind::kOther},
    {"ddp_sharded_find_unused_parameters_false", k1x, "DDPShardedStrategy", StrategyKind::kOther},
    {"ddp_sharded_spawn", k1x, "DDPSpawnShardedStrategy", StrategyKind::kOther},
    {"ddp_sharded_spawn_find_unused_parameters_false", k1x, "DDPSpawnShardedStrategy",
     StrategyKind::kOther},
    {"ddp_spawn", k1x, "DDPSpawnStrategy", StrategyKind::kOther},
    {"ddp_spawn", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_spawn_find_unused_parameters_false", k1x, "DDPSpawnStrategy", StrategyKind::kOther},
    {"ddp_spawn_find_unused_parameters_false", k2x, "DDPStrategy", StrategyKind::kOther},
    {"ddp_spawn_find_unused_parameters_true", k2x, "DDPStrategy", StrategyKind::kOther},
    {"deepspeed", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_1", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_2", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_2_offload", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_3", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_3_offload", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"deepspeed_stage_3_offload_nvme", kAll, "DeepSpeedStrategy", StrategyKind::kDeepSpeed},
    {"dp", k1x, "DataParallelStrategy", StrategyKind::kOther},
    {"fsdp", k1x, "DDPFullyShardedStrategy", StrategyKind::kOther},
    {"fsdp", k2x, "FSDPStrategy", StrategyKind::kFsdp},
    {"fsdp_cpu_offload", k2x, "FSDPStrategy", StrategyKind::kFsdp},
    {"fsdp_native", {107, 109}, "DDPFullyShardedNativeStrategy", StrategyKind::kFsdp},
    {"fsdp_native_full_shard_offload",
     {107, 109},
     "DDPFullyShardedNativeStrategy",
     StrategyKind::kFsdp},
    {"horovod", k1x, "HorovodStrategy", StrategyKind::kOther},
    {"hpu_parallel", {106, 200}, "HPUParallelStrategy", StrategyKind::kOther},
    {"hpu_single", {106, 200}, "SingleHPUStrategy", StrategyKind::kOther},
    {"ipu_strategy", {106, 200}, "IPUStrategy", StrategyKind::kOther},
    {"single_device", kAll, "SingleDeviceStrategy", StrategyKind::kOther},
    {"single_tpu", {106, 200}, "SingleTPUStrategy", StrategyKind::kSingleXla},
    {"single_xla", {201, 299}, "SingleDeviceXLAStrategy", StrategyKind::kSingleXla},
    {"tpu_spawn", k1x, "TPUSpawnStrategy", StrategyKind::kTpuSpawn},
    {"tpu_spawn_debug", k1x, "TPUSpawnStrategy", StrategyKind::kXlaDebug},
    {"xla", k2x, "XLAStrategy", StrategyKind::kXla},
    {"xla_debug", k2x, "XLAStrategy", StrategyKind::kXlaDebug},
};

constexpr ClassInit kClassInit[] = {
    {"BaguaStrategy",
     {106, 109},
     true,
     "To use the `BaguaStrategy`, you must have `Bagua` installed. Use `pip install bagua` to "
     "install it.",
     "1.9.5:src/pytorch_lightning/strategies/bagua.py"},
    {"ColossalAIStrategy",
     {108, 109},
     true,
     "To use the `ColossalAIStrategy`, please install `colossalai` first. Download `colossalai` by "
     "consulting `https://colossalai.org/download`.",
     "1.9.5:src/pytorch_lightning/strategies/colossalai.py"},
    {"HorovodStrategy",
     {109, 109},
     true,
     "Requested `strategy=\"horovod\"`, but Horovod is not installed. Install with "
     "`HOROVOD_WITH_PYTORCH=1 pip install horovod[pytorch]`",
     "1.9.5:src/pytorch_lightning/strategies/horovod.py"},
    {"HPUParallelStrategy",
     {106, 200},
     true,
     "`HPUParallelStrategy` requires HPU devices to run",
     "2.0.9:src/lightning/pytorch/strategies/hpu_parallel.py"},
    {"SingleHPUStrategy",
     {106, 200},
     true,
     "`SingleHPUStrategy` requires HPU devices to run",
     "2.0.9:src/lightning/pytorch/strategies/single_hpu.py"},
    {"IPUStrategy",
     {106, 200},
     true,
     "The IPU Accelerator requires IPU devices to run. Learn more or get started with IPUs at "
     "https://www.graphcore.ai/getstarted",
     "2.0.9:src/lightning/pytorch/strategies/ipu.py"},
};

// 1.9 deprecates the FairScale strategies in their __init__.
constexpr std::string_view kFairScaleDeprecated =
    "PyTorch Lightning's sharded implementation using FairScale has been deprecated in v1.9.0 and "
    "will be removed in v2.0.0. You can try using the `Trainer(strategy='fsdp_native')` instead. "
    "The difference is that native FSDP uses PyTorch's implementation and the current strategy "
    "uses FairScale's implementation (which was upstreamed to PyTorch). After removal, "
    "`strategy='fsdp'` will use the native version by default.";
constexpr ClassInit kClassInitWarnings[] = {
    {"DDPShardedStrategy",
     {109, 109},
     false,
     kFairScaleDeprecated,
     "1.9.5:src/pytorch_lightning/strategies/sharded.py"},
    {"DDPSpawnShardedStrategy",
     {109, 109},
     false,
     kFairScaleDeprecated,
     "1.9.5:src/pytorch_lightning/strategies/sharded_spawn.py"},
    {"DDPFullyShardedStrategy",
     {109, 109},
     false,
     kFairScaleDeprecated,
     "1.9.5:src/pytorch_lightning/strategies/fully_sharded.py"},
};

const ClassInit* class_init(std::span<const ClassInit> table, std::string_view class_name,
                            int version) {
  for (const ClassInit& row : table) {
    if (row.class_name == class_name && row.versions.contains(version)) return &row;
  }
  return nullptr;
}

}  // namespace

const ClassInit* init_error(std::string_view class_name, int version) {
  return class_init(kClassInit, class_name, version);
}
const ClassInit* init_warning(std::string_view class_name, int version) {
  return class_init(kClassInitWarnings, class_name, version);
}
std::span<const ClassInit> init_errors() { return kClassInit; }
std::span<const ClassInit> init_warnings() { return kClassInitWarnings; }

const RegisteredStrategy* find_registered(std::string_view name, int version) {
  for (const RegisteredStrategy& entry : kRegistry) {
    if (entry.name == name && entry.versions.contains(version)) return &entry;
  }
  return nullptr;
}

std::string registry_names(int version) {
  std::vector<std::string> names;
  for (const RegisteredStrategy& entry : kRegistry) {
    if (entry.versions.contains(version)) names.emplace_back(entry.name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return join(names, ", ");
}

std::string tpu_strategy_names(int version) {
  std::vector<std::string> names;
  for (const RegisteredStrategy& entry : kRegistry) {
    const bool tpu = entry.kind == StrategyKind::kXla || entry.kind == StrategyKind::kSingleXla ||
                     entry.kind == StrategyKind::kXlaDebug;
    if (tpu && entry.versions.contains(version)) names.emplace_back(entry.name);
  }
  return join(names, ", ");
}

bool is_registered_strategy(std::string_view name, int version) {
  return find_registered(name, version) != nullptr;
}

}  // namespace tpujobs::lightning
