#include "service/pool_views.h"

#include <map>
#include <set>
#include <string>

#include "scheduler/generation.h"
#include "service/job_views.h"

namespace tpujobs::service::views {

using nlohmann::json;

namespace {

// Every agent that runs a part of the job: the placed agent, and the other
// parts of a slice spanning agents.
std::set<std::string> runners_of(const db::JobRow& row, const json& allocation) {
  std::set<std::string> runners;
  if (row.agent) runners.insert(*row.agent);
  if (allocation.is_object() && allocation.contains("slice") && allocation["slice"].is_object()) {
    for (const json& part : allocation["slice"].value("parts", json::array())) {
      if (part.is_object() && part.contains("agent") && part["agent"].is_string())
        runners.insert(part["agent"].get<std::string>());
    }
  }
  return runners;
}

// What the placed jobs hold: each (host, core)'s job, each agent's jobs.
struct Holdings {
  std::map<std::pair<std::string, int>, std::pair<std::int64_t, std::string>> cores;
  std::map<std::string, json> agent_jobs;
  int cpu_jobs = 0;
};

Holdings holdings_of(const std::vector<db::JobRow>& placed) {
  Holdings held;
  for (const db::JobRow& row : placed) {
    const json allocation = parse_or_null(row.allocation_json);
    for (const std::string& agent : runners_of(row, allocation))
      held.agent_jobs[agent].push_back(row.id);
    if (!allocation.is_object()) continue;
    if (allocation.value("accelerator", "") == "cpu") ++held.cpu_jobs;
    for (const json& core : allocation.value("cores", json::array()))
      held.cores[{core.value("host", ""), core.value("core", -1)}] = {row.id, row.name};
  }
  return held;
}

struct PoolTotals {
  int total = 0, used = 0, healthy = 0;
};

// One host's view: its agent, health and each core's job.
json host_view(const db::ClusterHostRow& h, const scheduler::GenerationFacts& f,
               const Holdings& held, PoolTotals& totals) {
  json cores = json::array();
  int in_use = 0;
  for (int c = 0; c < f.devices_per_host; ++c) {
    auto it = held.cores.find({h.name, c});
    if (it != held.cores.end()) {
      ++in_use;
      cores.push_back({{"core", c}, {"job", it->second.first}, {"job_name", it->second.second}});
    } else {
      cores.push_back({{"core", c}, {"job", nullptr}});
    }
  }
  const bool alive = h.agent_state == "alive";
  // A draining agent's hosts take no new work, as a drained host.
  const std::string health = h.agent_state == "lost"           ? "unreachable"
                             : !alive && h.health == "healthy" ? "draining"
                                                               : h.health;
  totals.total += f.devices_per_host;
  totals.used += in_use;
  if (health == "healthy") totals.healthy += f.devices_per_host;
  return {{"name", h.name},
          {"agent", h.agent},
          {"agent_state", h.agent_state},
          {"generation", f.name},
          {"health", health},
          {"devices", f.devices_per_host},
          {"hbm_bytes_per_device", f.hbm_bytes_per_device},
          {"cores_in_use", in_use},
          {"utilization", static_cast<double>(in_use) / f.devices_per_host},
          {"cores", cores}};
}

json agent_view(const db::AgentRow& a, const std::vector<db::ClusterHostRow>& hosts,
                const Holdings& held) {
  json names = json::array();
  for (const db::ClusterHostRow& h : hosts) {
    if (h.agent == a.name) names.push_back(h.name);
  }
  auto jobs = held.agent_jobs.find(a.name);
  return {{"name", a.name},
          {"state", a.state},
          {"epoch", a.epoch},
          {"workers", a.workers},
          {"last_heartbeat", iso_time(a.last_heartbeat)},
          {"hosts", names},
          {"running_jobs", jobs != held.agent_jobs.end() ? jobs->second : json::array()}};
}

}  // namespace

json cluster_pool(const std::vector<db::AgentRow>& agents,
                  const std::vector<db::ClusterHostRow>& hosts,
                  const std::vector<db::JobRow>& placed, std::int64_t queued) {
  const Holdings held = holdings_of(placed);
  json host_views = json::array();
  PoolTotals totals;
  std::map<scheduler::Generation, int> generation_hosts;
  for (const db::ClusterHostRow& h : hosts) {
    std::optional<scheduler::Generation> generation = scheduler::parse_generation(h.generation);
    if (!generation) continue;
    ++generation_hosts[*generation];
    host_views.push_back(host_view(h, scheduler::facts(*generation), held, totals));
  }
  json agent_views = json::array();
  for (const db::AgentRow& a : agents) agent_views.push_back(agent_view(a, hosts, held));
  return {{"hosts", host_views},
          {"agents", agent_views},
          {"generations", generation_layouts(generation_hosts)},
          {"total_cores", totals.total},
          {"used_cores", totals.used},
          {"healthy_cores", totals.healthy},
          {"utilization", totals.total ? static_cast<double>(totals.used) / totals.total : 0.0},
          {"queued_jobs", queued},
          {"running_jobs", static_cast<std::int64_t>(placed.size())},
          {"cpu_jobs_running", held.cpu_jobs}};
}

json generation_layouts(const std::map<scheduler::Generation, int>& hosts) {
  json out = json::array();
  for (const auto& [generation, count] : hosts) {
    if (count <= 0) continue;
    const scheduler::GenerationFacts& f = scheduler::facts(generation);
    std::optional<scheduler::SliceType> largest;
    for (int size : f.slice_sizes) {
      const scheduler::SliceType slice{generation, size};
      if (slice.hosts() <= count) largest = slice;
    }
    const std::optional<scheduler::Topology> block =
        scheduler::SliceType{generation, f.slice_sizes.front()}.topology();
    const std::optional<scheduler::Topology> shape = largest ? largest->topology() : std::nullopt;
    out.push_back({{"generation", f.name},
                   {"type_prefix", f.type_prefix},
                   {"hosts", count},
                   {"devices_per_host", f.devices_per_host},
                   {"tensorcores_per_chip", f.tensorcores_per_chip},
                   {"type_counts", f.tensorcores_per_chip == 1 ? "chips" : "TensorCores"},
                   {"topology_rank", f.topology_rank},
                   {"host_block", block ? json(block->text()) : json(nullptr)},
                   {"slice", largest ? json(largest->name()) : json(nullptr)},
                   {"topology", shape ? json(shape->text()) : json(nullptr)},
                   {"hbm_bytes_per_device", f.hbm_bytes_per_device},
                   {"hbm_reported_bytes", f.hbm_reported_bytes},
                   {"mxu_dim", f.mxu_dim},
                   {"peak_bf16_flops_per_device", f.peak_bf16_flops_per_device},
                   {"gke_devices_per_host", f.gke_devices_per_host},
                   {"source", f.source}});
  }
  return out;
}

}  // namespace tpujobs::service::views
