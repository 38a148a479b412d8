#include "service/pool_views.h"

#include <map>
#include <set>
#include <string>

#include "scheduler/generation.h"
#include "service/job_views.h"

namespace tpujobs::service::views {

using nlohmann::json;

json cluster_pool(const std::vector<db::AgentRow>& agents,
                  const std::vector<db::ClusterHostRow>& hosts,
                  const std::vector<db::JobRow>& unfinished) {
  std::map<std::pair<std::string, int>, std::pair<std::int64_t, std::string>>
      core_jobs;  // (host, core) -> job
  std::map<std::string, json> agent_jobs;
  int queued = 0, running = 0, cpu_jobs = 0;
  for (const db::JobRow& row : unfinished) {
    if (row.state == db::JobState::kQueued) {
      ++queued;
      continue;
    }
    ++running;
    // Every agent that runs a part of it: the placed agent, and the other
    // parts of a slice spanning agents.
    std::set<std::string> runners;
    if (row.agent) runners.insert(*row.agent);
    const json allocation = parse_or_null(row.allocation_json);
    if (allocation.is_object() && allocation.contains("slice") && allocation["slice"].is_object()) {
      for (const json& part : allocation["slice"].value("parts", json::array())) {
        if (part.is_object() && part.contains("agent") && part["agent"].is_string())
          runners.insert(part["agent"].get<std::string>());
      }
    }
    for (const std::string& agent : runners) agent_jobs[agent].push_back(row.id);
    if (!allocation.is_object()) continue;
    if (allocation.value("accelerator", "") == "cpu") ++cpu_jobs;
    for (const json& core : allocation.value("cores", json::array())) {
      core_jobs[{core.value("host", ""), core.value("core", -1)}] = {row.id, row.name};
    }
  }
  json host_views = json::array();
  int total = 0, used = 0, healthy = 0;
  for (const db::ClusterHostRow& h : hosts) {
    std::optional<scheduler::Generation> generation = scheduler::parse_generation(h.generation);
    if (!generation) continue;
    const scheduler::GenerationFacts& f = scheduler::facts(*generation);
    json cores = json::array();
    int in_use = 0;
    for (int c = 0; c < f.devices_per_host; ++c) {
      auto it = core_jobs.find({h.name, c});
      if (it != core_jobs.end()) {
        ++in_use;
        cores.push_back({{"core", c}, {"job", it->second.first}, {"job_name", it->second.second}});
      } else {
        cores.push_back({{"core", c}, {"job", nullptr}});
      }
    }
    const bool alive = h.agent_state == "alive";
    // A draining agent's hosts take no new work, as a drained host.
    std::string health = h.agent_state == "lost"           ? "unreachable"
                         : !alive && h.health == "healthy" ? "draining"
                                                           : h.health;
    total += f.devices_per_host;
    used += in_use;
    if (health == "healthy") healthy += f.devices_per_host;
    host_views.push_back({{"name", h.name},
                          {"agent", h.agent},
                          {"agent_state", h.agent_state},
                          {"generation", f.name},
                          {"health", health},
                          {"devices", f.devices_per_host},
                          {"hbm_bytes_per_device", f.hbm_bytes_per_device},
                          {"cores_in_use", in_use},
                          {"utilization", static_cast<double>(in_use) / f.devices_per_host},
                          {"cores", cores}});
  }
  std::map<scheduler::Generation, int> generation_hosts;
  for (const db::ClusterHostRow& h : hosts) {
    if (auto g = scheduler::parse_generation(h.generation)) ++generation_hosts[*g];
  }
  json agent_views = json::array();
  for (const db::AgentRow& a : agents) {
    json names = json::array();
    for (const db::ClusterHostRow& h : hosts) {
      if (h.agent == a.name) names.push_back(h.name);
    }
    auto jobs = agent_jobs.find(a.name);
    agent_views.push_back(
        {{"name", a.name},
         {"state", a.state},
         {"epoch", a.epoch},
         {"workers", a.workers},
         {"last_heartbeat", iso_time(a.last_heartbeat)},
         {"hosts", names},
         {"running_jobs", jobs != agent_jobs.end() ? jobs->second : json::array()}});
  }
  return {{"hosts", host_views},
          {"agents", agent_views},
          {"generations", generation_layouts(generation_hosts)},
          {"total_cores", total},
          {"used_cores", used},
          {"healthy_cores", healthy},
          {"utilization", total ? static_cast<double>(used) / total : 0.0},
          {"queued_jobs", queued},
          {"running_jobs", running},
          {"cpu_jobs_running", cpu_jobs}};
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
