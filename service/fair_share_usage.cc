#include "service/fair_share_usage.h"

#include <cmath>
#include <vector>

#include "scheduler/fair_share.h"

namespace tpujobs::service {

db::Result<std::map<std::string, double>> read_fair_share(db::WorkloadRepository& workload,
                                                          std::chrono::system_clock::time_point now,
                                                          const std::set<std::string>& active,
                                                          const FairShareOptions& options) {
  std::vector<std::map<std::string, double>> windows;
  for (int i = 0; i < options.windows; ++i) {
    const auto to = now - i * options.half_life;
    auto rows =
        workload.usage(to - options.half_life, to, /*by_label=*/false, std::nullopt, std::nullopt);
    if (!rows.ok()) return rows.error();
    std::map<std::string, double>& window = windows.emplace_back();
    for (const db::UsageRow& row : *rows) window[row.group] += row.core_seconds;
  }
  std::map<std::string, double> usage = scheduler::decayed_usage_from_windows(windows);
  for (const std::string& tenant : active) usage.emplace(tenant, 0.0);
  std::map<std::string, double> factors = scheduler::fair_share_factors(usage);
  for (auto& [tenant, factor] : factors) factor = std::round(factor * 1000) / 1000;
  return factors;
}

}  // namespace tpujobs::service
