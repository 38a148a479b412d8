#include "service/submitted_specs.h"

#include <utility>

namespace tpujobs::service {

PlacementSpec placement_spec(const api::JobSpec& spec) {
  PlacementSpec placement;
  placement.trainer = spec.trainer;
  placement.start_by = spec.start_by;
  placement.time_limit = spec.training.timeout;
  placement.depends_on = spec.depends_on;
  placement.max_retries = spec.max_retries;
  placement.preemptible = spec.preemptible;
  return placement;
}

void SubmittedSpecs::set_leading(bool leading) {
  base::MutexLock lock(mutex_);
  leading_ = leading;
  if (!leading) specs_.clear();
}

void SubmittedSpecs::put(const db::JobRow& row, PlacementSpec spec) {
  base::MutexLock lock(mutex_);
  if (!leading_) return;
  // As TPUJOBS_JOB_SCHEDULING_COLUMNS reads it.
  db::JobRow kept;
  kept.id = row.id;
  kept.tenant = row.tenant;
  kept.name = row.name;
  kept.priority = row.priority;
  kept.state = row.state;
  kept.allocation_json = row.allocation_json;
  kept.attempt = row.attempt;
  kept.cancel_requested = row.cancel_requested;
  kept.created_at = row.created_at;
  kept.started_at = row.started_at;
  kept.updated_at = row.updated_at;
  kept.agent = row.agent;
  kept.placement_epoch = row.placement_epoch;
  kept.preempted_by = row.preempted_by;
  kept.requeued_at = row.requeued_at;
  kept.unstarted_requeues = row.unstarted_requeues;
  kept.placement = row.placement;
  kept.changed_xid = row.changed_xid;  // the insert's: the leader's read leaves the row out
  specs_.insert_or_assign(row.id, Submitted{std::move(kept), std::move(spec)});
  while (specs_.size() > capacity_) specs_.erase(specs_.begin());
}

std::optional<PlacementSpec> SubmittedSpecs::take(std::int64_t job) {
  base::MutexLock lock(mutex_);
  auto it = specs_.find(job);
  if (it == specs_.end()) return std::nullopt;
  std::optional<PlacementSpec> spec(std::move(it->second.spec));
  specs_.erase(it);
  return spec;
}

std::vector<db::JobRow> SubmittedSpecs::rows_above(std::int64_t id) const {
  base::MutexLock lock(mutex_);
  std::vector<db::JobRow> rows;
  for (auto it = specs_.upper_bound(id); it != specs_.end(); ++it) rows.push_back(it->second.row);
  return rows;
}

std::size_t SubmittedSpecs::size() const {
  base::MutexLock lock(mutex_);
  return specs_.size();
}

}  // namespace tpujobs::service
