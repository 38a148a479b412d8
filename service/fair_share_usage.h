// The tenants' fair-share factors (scheduler/fair_share.h) from the stored
// accounting: the TPU core-seconds GET /v1/usage sums (job_events spans
// times cores), read for a few consecutive windows of one half-life each and
// decayed by window. Read by the scheduling thread every few seconds (the
// single-process JobManager, the cluster's SchedulerLeader), never per
// request.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "db/result.h"
#include "db/workload_repository.h"

namespace tpujobs::service {

struct FairShareOptions {
  std::chrono::seconds half_life{3600};
  // Windows read: usage older than windows x half_life counts no more
  // (2^-4: about 6% of its weight when it was new).
  int windows = 4;
};

// Every tenant's factor, F = 2^(-(U / sum U) / (1 / N)), over the tenants
// with recent use and those in `active` (waiting or running now, used
// nothing: F = 1), rounded to 1/1000 so that small drifts do not reorder
// the queue each time. Empty (everyone 1) when nobody used anything.
db::Result<std::map<std::string, double>> read_fair_share(db::WorkloadRepository& workload,
                                                          std::chrono::system_clock::time_point now,
                                                          const std::set<std::string>& active,
                                                          const FairShareOptions& options);

}  // namespace tpujobs::service
