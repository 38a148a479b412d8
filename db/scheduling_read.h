// What one scheduling pass reads, in one round trip: the agents, their
// hosts, the unfinished jobs (JobRepository::schedule_statements) and the
// quotas. Five statements, sent together (Connection::execute_pipeline):
// a pass that came for one submitted job waits on the database once for
// them, not five times.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/cluster_repository.h"
#include "db/connection_pool.h"
#include "db/job_repository.h"

namespace tpujobs::db {

struct SchedulingRead {
  std::vector<AgentRow> agents{};
  std::vector<ClusterHostRow> hosts{};
  JobRepository::ScheduleRead queue{};
  std::map<std::string, int> quotas{};  // tenant -> max_cores
};

// Each statement takes its own snapshot, in this order: agents, hosts, the
// queue's low water, its rows, quotas (as the separate reads did).
// `since`: where the last read left off (none: every unfinished job).
base::Result<SchedulingRead> read_for_scheduling(
    ConnectionPool& pool, const std::optional<JobRepository::ScheduleSince>& since,
    std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5));

}  // namespace tpujobs::db
