#include "scheduler/fair_share.h"

#include <algorithm>
#include <cmath>

namespace tpujobs::scheduler {

double decayed_core_seconds(int cores, std::chrono::duration<double> began_ago,
                            std::chrono::duration<double> ended_ago,
                            std::chrono::duration<double> half_life) {
  const double h = half_life.count();
  const double a = std::max(0.0, began_ago.count());
  const double b = std::clamp(ended_ago.count(), 0.0, a);
  // The integral of 2^(-age/h) over ages [b, a].
  return cores * h / std::log(2.0) * (std::exp2(-b / h) - std::exp2(-a / h));
}

std::map<std::string, double> fair_share_factors(const std::map<std::string, double>& usage) {
  std::map<std::string, double> factors;
  if (usage.empty()) return factors;
  double total = 0;
  for (const auto& [tenant, used] : usage) total += std::max(0.0, used);
  const double share = 1.0 / static_cast<double>(usage.size());
  for (const auto& [tenant, used] : usage) {
    const double normalized = total > 0 ? std::max(0.0, used) / total : 0.0;
    factors[tenant] = std::exp2(-normalized / share);
  }
  return factors;
}

}  // namespace tpujobs::scheduler
