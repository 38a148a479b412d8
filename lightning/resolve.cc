#include "lightning/resolve.h"

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// Every check, in the order its problems are reported. Later checks read what
// earlier ones resolved (the accelerator, the devices, the world size).
using Check = void (*)(Context&);
constexpr Check kChecks[] = {
    check_environment, check_lightning_version, check_removed_arguments,
    check_accelerator, check_accelerator_type,  check_devices,
    check_num_nodes,   check_request,           check_torch_xla_knows_chips,
    check_precision,   check_strategy,          check_runtime,
    check_device_info, name_lightning_tag,      check_loop_limits,
    check_workers,
};

}  // namespace

std::vector<RuleText> all_rule_texts() {
  std::vector<RuleText> out;
  for (auto texts :
       {accelerator_rule_texts, device_rule_texts, device_flag_rule_texts, precision_rule_texts,
        strategy_rule_texts, runtime_rule_texts, environment_rule_texts, num_nodes_rule_texts,
        device_info_rule_texts, loop_limit_rule_texts, xla_spawn_rule_texts}) {
    for (const RuleText& text : texts()) out.push_back(text);
  }
  return out;
}

base::Result<Resolution> resolve(const TrainerSettings& settings, const PoolView& pool) {
  Resolution out;
  Context context{settings, pool, out};
  for (const TpuGeneration& generation : pool.generations) {
    if (generation.hosts > 0) context.pool_generations.push_back(&generation);
  }
  for (Check check : kChecks) check(context);
  if (context.errors.empty()) return out;
  base::Error refused = base::invalid_fields(std::move(context.errors));
  refused.warnings = std::move(out.warnings);
  return refused;
}

const std::vector<std::string>& resolution_warnings(const base::Result<Resolution>& resolution) {
  return resolution.ok() ? resolution->warnings : resolution.error().warnings;
}

std::string rules_release(const TrainerSettings& settings) {
  // The two checks that choose the release (environment.lightning first).
  Resolution out;
  const PoolView pool;
  Context context{settings, pool, out};
  check_environment(context);
  check_lightning_version(context);
  return out.lightning_version;
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::k32True:
      return "32-true";
    case Precision::k16True:
      return "16-true";
    case Precision::kBf16True:
      return "bf16-true";
  }
  return "32-true";
}

}  // namespace tpujobs::lightning
