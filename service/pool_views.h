// Pool views: GET /v1/pool (a standalone serve's one agent, or a cluster's
// agents), from the agents' registrations and the placed jobs' allocations
// as stored.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "db/cluster_repository.h"
#include "db/job_repository.h"
#include "scheduler/generation.h"

namespace tpujobs::service::views {

// Each host with its agent, the agent's state and each core's job; each
// agent with its state, last heartbeat, hosts and running jobs (every job
// it runs a part of, slices spanning agents included); and the totals.
// A lost agent's hosts show health "unreachable".
// `placed`: the STARTING and RUNNING jobs; `queued`: how many wait.
nlohmann::json cluster_pool(const std::vector<db::AgentRow>& agents,
                            const std::vector<db::ClusterHostRow>& hosts,
                            const std::vector<db::JobRow>& placed, std::int64_t queued);

// The layout of each generation present ("generations" in GET /v1/pool):
// per generation with hosts, its facts (devices per host, TensorCores per
// chip, HBM and the capacity XLA reports, MXU, peak bf16 FLOP/s), the shape
// of one host ("host_block": "2x4" on v5e/v6e, "2x2x1" on v4/v5p; null on
// v2/v3) and of the largest slice its hosts form ("slice": "v5p-32",
// "topology": "2x2x4"; a 3D topology draws as a block of hosts).
nlohmann::json generation_layouts(const std::map<scheduler::Generation, int>& hosts);

}  // namespace tpujobs::service::views
