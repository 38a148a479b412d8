#include "service/run_supervisor.h"

#include <nlohmann/json.hpp>

namespace tpujobs::service {

using nlohmann::json;

std::optional<SliceRole> slice_role(const db::JobRow& row, const std::string& agent,
                                    std::int64_t epoch) {
  const json allocation = json::parse(row.allocation_json.value_or("{}"), nullptr, false);
  if (!allocation.is_object() || !allocation.contains("slice") || !allocation["slice"].is_object())
    return std::nullopt;
  const json& slice = allocation["slice"];
  const json parts = slice.value("parts", json::array());
  std::optional<SliceRole> role;
  SliceRole found;
  found.placement = slice.value("placement", std::int64_t{0});
  for (std::size_t rank = 0; rank < parts.size(); ++rank) {
    const json& part = parts[rank];
    if (!part.is_object()) return std::nullopt;
    found.hosts_per_rank.push_back(part.value("hosts", 0));
    if (part.value("agent", "") == agent && part.value("epoch", std::int64_t{-1}) == epoch) {
      found.rank = static_cast<int>(rank);
      found.first_host = part.value("first_host", 0);
      found.hosts = part.value("hosts", 0);
      role = found;
    }
  }
  if (role) role->hosts_per_rank = found.hosts_per_rank;
  return role;
}

SupervisionPlan plan_supervision(const std::string& agent, std::int64_t epoch,
                                 const std::vector<db::JobRow>& placed,
                                 const std::vector<db::JobRow>& parts,
                                 const std::map<std::int64_t, RunningCopy>& runs,
                                 const std::set<std::int64_t>& ended_slice_placements) {
  SupervisionPlan plan;
  // The jobs a copy should run for now, with this agent's part of each.
  std::map<std::int64_t, const db::JobRow*> current;
  std::map<std::int64_t, std::optional<SliceRole>> roles;
  for (const db::JobRow& row : placed) {
    if (row.placement_epoch == epoch) current[row.id] = &row;
  }
  for (const db::JobRow& row : parts) current[row.id] = &row;
  std::set<std::int64_t> listed;  // placements still STARTING or RUNNING
  for (auto it = current.begin(); it != current.end();) {
    std::optional<SliceRole> role = slice_role(*it->second, agent, epoch);
    if (role) listed.insert(role->placement);
    const bool peer_of_another_epoch = it->second->agent != agent && !role;
    if (peer_of_another_epoch || (role && ended_slice_placements.count(role->placement))) {
      it = current.erase(it);
      continue;
    }
    roles[it->first] = std::move(role);
    ++it;
  }
  // A placement no longer listed never comes back: forget it.
  for (std::int64_t placement : ended_slice_placements) {
    if (listed.count(placement)) plan.ended_slice_placements.insert(placement);
  }

  for (const auto& [id, run] : runs) {
    if (run.handed_since_read) continue;  // the next read judges it
    const auto it = current.find(id);
    const bool peer = run.slice && run.slice->rank > 0;
    StopRun stop{id, RunStop::kNone};
    if (it == current.end() || run.epoch != epoch ||
        run.placement != it->second->placement.value_or(kNoPlacement) ||
        run.slice.has_value() != roles[id].has_value()) {
      // Requeued, cancelled, released or failed elsewhere, or placed again:
      // here, after a requeue or after a database crash undid the placement
      // it started with (a placement commits without waiting for the disk),
      // or as another slice. This copy is stale.
      stop.why = RunStop::kMovedOn;
    } else if (it->second->cancel_requested && !peer) {
      // The first part stops at a step boundary and closes its collective;
      // the other parts end on that (a part stopping first would fail the
      // first part's step instead).
      stop.why = RunStop::kUserCancel;
    } else if (it->second->preempted_by && !peer) {
      // Preempted: stops at a checkpoint, as at a shutdown, and is requeued.
      stop = {id, RunStop::kPreempted, *it->second->preempted_by};
    }
    // A copy still stopping for the reason it was given is not named again.
    if (stop.why != RunStop::kNone && stop.why != run.named) plan.stop.push_back(stop);
  }
  for (const auto& [id, row] : current) {
    if (!runs.count(id)) plan.start.push_back(start_of(*row, roles[id]));
  }
  return plan;
}

StartRun start_of(const db::JobRow& row, std::optional<SliceRole> slice) {
  StartRun start{row, std::move(slice)};
  const bool peer = start.slice && start.slice->rank > 0;
  if (row.cancel_requested && !peer) {
    start.stop = RunStop::kUserCancel;
  } else if (row.preempted_by && !peer) {
    start.stop = RunStop::kPreempted;
    start.preempted_by = *row.preempted_by;
  }
  return start;
}

std::vector<LeftBehind> left_behind(const std::string& agent, std::int64_t epoch,
                                    const std::vector<db::JobRow>& placed,
                                    const std::vector<db::JobRow>& parts) {
  std::vector<LeftBehind> out;
  for (const db::JobRow& row : placed) {
    if (row.agent == agent && row.placement_epoch == epoch)
      out.push_back({row.id, row.placement.value_or(kNoPlacement)});
  }
  for (const db::JobRow& row : parts) {
    if (row.placement && slice_role(row, agent, epoch)) out.push_back({row.id, *row.placement});
  }
  return out;
}

}  // namespace tpujobs::service
