// Pool views: GET /v1/pool in cluster mode (DESIGN §9), from the agents'
// registrations and the unfinished jobs' placements as stored.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "db/cluster_repository.h"
#include "db/job_repository.h"

namespace tpujobs::service::views {

// Each host with its agent, the agent's state and each core's job; each
// agent with its state, last heartbeat, hosts and running jobs (every job
// it runs a part of, slices spanning agents included); and the totals.
// A lost agent's hosts show health "unreachable".
nlohmann::json cluster_pool(const std::vector<db::AgentRow>& agents,
                            const std::vector<db::ClusterHostRow>& hosts,
                            const std::vector<db::JobRow>& unfinished);

}  // namespace tpujobs::service::views
