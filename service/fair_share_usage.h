// The tenants' fair-share factors (scheduler/fair_share.h) from the stored
// accounting: the TPU core-seconds GET /v1/usage counts (job_events spans
// times cores), each second decayed with the half-life
// (WorkloadRepository::decayed_usage, one statement). Read by the
// scheduler leader every few seconds, never per request.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "base/result.h"
#include "db/workload_repository.h"

namespace tpujobs::service {

struct FairShareOptions {
  std::chrono::seconds half_life{3600};
  // Use older than this many half-lives counts no more (2^-8: 0.4% of its
  // weight when it was new).
  int horizon_half_lives = 8;
};

// Every tenant's factor, F = 2^(-(U / sum U) / (1 / N)), over the tenants
// with recent use and those in `active` (waiting or running now, used
// nothing: F = 1), rounded to 1/1000 so that small drifts do not reorder
// the queue each time. Empty (everyone 1) when nobody used anything, and
// without a read when fewer than two tenants are active.
base::Result<std::map<std::string, double>> read_fair_share(
    db::WorkloadRepository& workload, std::chrono::system_clock::time_point now,
    const std::set<std::string>& active, const FairShareOptions& options);

}  // namespace tpujobs::service
