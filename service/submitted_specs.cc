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

void SubmittedSpecs::put(std::int64_t job, PlacementSpec spec) {
  base::MutexLock lock(mutex_);
  if (!leading_) return;
  specs_.insert_or_assign(job, std::move(spec));
  while (specs_.size() > capacity_) specs_.erase(specs_.begin());
}

std::optional<PlacementSpec> SubmittedSpecs::take(std::int64_t job) {
  base::MutexLock lock(mutex_);
  auto it = specs_.find(job);
  if (it == specs_.end()) return std::nullopt;
  std::optional<PlacementSpec> spec(std::move(it->second));
  specs_.erase(it);
  return spec;
}

std::size_t SubmittedSpecs::size() const {
  base::MutexLock lock(mutex_);
  return specs_.size();
}

}  // namespace tpujobs::service
