// The strategy registry of each Lightning version, and what the strategy
// classes' __init__ do on a TPU VM: the tables lightning/strategy.cc's
// connector checks look names up in. Sources: the `register_strategies` of
// each strategy class (`src/.../strategies/*.py`) and the classes' __init__.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "lightning/versions.h"

namespace tpujobs::lightning {

enum class StrategyKind {
  kXla,        // XLAStrategy / TPUSpawnStrategy: every device of the hosts
  kSingleXla,  // one device
  kXlaDebug,   // XLAStrategy(debug=True): adds the torch_xla metrics report
  kTpuSpawn,   // 1.x 'tpu_spawn': refused by the connector
  kFsdp,       // FSDP: refused first by its GPU check
  kDeepSpeed,  // refused first: DeepSpeed is not installed on a TPU VM
  kOther,      // registered, but not a TPU strategy
};

struct RegisteredStrategy {
  std::string_view name;
  Versions versions;
  std::string_view class_name;
  StrategyKind kind;
};

// What a strategy class's __init__ raises (or warns) on a TPU VM, where its
// library or its devices are missing: the registry instantiates the class
// before the connector looks at the accelerator.
struct ClassInit {
  std::string_view class_name;
  Versions versions;
  bool raises;  // false: a warning, and the strategy is built
  std::string_view text;
  std::string_view source;
};

// The registry's row for `name` in `version`, nullptr when not registered.
const RegisteredStrategy* find_registered(std::string_view name, int version);
// The registry's names, sorted, as StrategyRegistry.get lists them.
std::string registry_names(int version);
// The TPU strategy names of a version, for hints.
std::string tpu_strategy_names(int version);

// What the __init__ of `class_name` raises on a TPU VM in `version`, and
// what it only warns; nullptr when nothing.
const ClassInit* init_error(std::string_view class_name, int version);
const ClassInit* init_warning(std::string_view class_name, int version);
// Every row of each, for the rule texts.
std::span<const ClassInit> init_errors();
std::span<const ClassInit> init_warnings();

}  // namespace tpujobs::lightning
