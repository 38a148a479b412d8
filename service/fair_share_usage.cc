#include "service/fair_share_usage.h"

#include <cmath>

#include "scheduler/fair_share.h"

namespace tpujobs::service {

base::Result<std::map<std::string, double>> read_fair_share(
    db::WorkloadRepository& workload, std::chrono::system_clock::time_point now,
    const std::set<std::string>& active, const FairShareOptions& options) {
  // A tenant alone has nobody to share with: its factor (1) orders nothing,
  // and the usage is not read.
  if (active.size() < 2) return std::map<std::string, double>{};
  auto usage = workload.decayed_usage(now, options.half_life,
                                      options.half_life * options.horizon_half_lives);
  if (!usage.ok()) return usage.error();
  for (const std::string& tenant : active) usage->emplace(tenant, 0.0);
  std::map<std::string, double> factors = scheduler::fair_share_factors(*usage);
  for (auto& [tenant, factor] : factors) factor = std::round(factor * 1000) / 1000;
  return factors;
}

}  // namespace tpujobs::service
