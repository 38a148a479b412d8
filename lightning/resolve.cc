#include "lightning/resolve.h"

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// Every check, in the order its problems are reported. Later checks read what
// earlier ones resolved (the accelerator, the devices, the world size).
using Check = void (*)(Context&);
constexpr Check kChecks[] = {
    check_lightning_version, check_accelerator, check_accelerator_type,
    check_devices,           check_num_nodes,   check_request,
    check_precision,         check_strategy,    check_runtime,
};

}  // namespace

Resolution resolve(const TrainerSettings& settings, const PoolView& pool) {
  Resolution out;
  Context context{settings, pool, out};
  for (const TpuGeneration& generation : pool.generations) {
    if (generation.hosts > 0) context.pool_generations.push_back(&generation);
  }
  for (Check check : kChecks) check(context);
  return out;
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
