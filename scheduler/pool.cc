#include "scheduler/pool.h"

#include <cassert>
#include <map>
#include <unordered_set>

namespace tpujobs::scheduler {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::uint32_t all_cores_mask(int devices) {
  return devices >= 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << devices) - 1;
}

}  // namespace

std::string_view host_health_name(HostHealth health) {
  switch (health) {
    case HostHealth::kHealthy:
      return "healthy";
    case HostHealth::kDraining:
      return "draining";
    case HostHealth::kFailed:
      return "failed";
  }
  return "unknown";
}

base::Result<PoolLayout> parse_pool(std::string_view text) {
  auto fail = [](std::string message) -> base::Result<PoolLayout> {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  if (trim(text).empty())
    return fail("--pool is empty; expected an accelerator type such as v3-32");

  std::vector<SliceType> parts;
  std::size_t start = 0;
  for (int index = 1;; ++index) {
    const std::size_t comma = text.find(',', start);
    const std::string_view part = trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const std::string where = "--pool part " + std::to_string(index);
    if (part.empty()) return fail(where + " is empty");
    const std::optional<SliceType> slice = parse_slice_type(part);
    if (std::optional<std::string> reason = sub_host_type_reason(part)) {
      return fail(where + " " + *reason);
    }
    if (!slice) {
      return fail(where + " '" + std::string(part) +
                  "' is not an accelerator type (expected <generation>-<size> with a slice "
                  "size the generation has, e.g. v3-8, v3-32, v4-16)");
    }
    if (slice->hosts() < 1) {
      return fail(where + " '" + std::string(part) + "' is smaller than one host");
    }
    parts.push_back(*slice);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }

  std::map<std::string, int> occurrences;
  for (const SliceType& slice : parts) ++occurrences[slice.name()];
  std::map<std::string, int> seen;
  PoolLayout layout;
  for (const SliceType& slice : parts) {
    std::string prefix = slice.name();
    if (occurrences[prefix] > 1) prefix += "." + std::to_string(++seen[slice.name()]);
    for (int h = 0; h < slice.hosts(); ++h) {
      layout.hosts.push_back({prefix + "-h" + std::to_string(h), slice.generation});
    }
  }
  return layout;
}

base::Status validate_pool(const PoolLayout& layout) {
  auto fail = [](std::string message) -> base::Status {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  if (layout.hosts.empty()) return fail("the pool has no hosts");
  std::unordered_set<std::string_view> names;
  for (std::size_t i = 0; i < layout.hosts.size(); ++i) {
    const std::string& name = layout.hosts[i].name;
    if (name.empty()) return fail("host " + std::to_string(i) + " has an empty name");
    if (!names.insert(name).second) return fail("host name '" + name + "' is used twice");
  }
  return base::Status::Ok();
}

std::vector<HostRun> host_runs(const PoolLayout& layout) {
  std::vector<HostRun> runs;
  for (int h = 0; h < static_cast<int>(layout.hosts.size()); ++h) {
    const Generation generation = layout.hosts[h].generation;
    if (runs.empty() || runs.back().generation != generation) {
      runs.push_back({generation, h, 0});
    }
    ++runs.back().host_count;
  }
  return runs;
}

Pool::Pool(PoolLayout layout) : layout_(std::move(layout)), runs_(host_runs(layout_)) {
  hosts_.reserve(layout_.hosts.size());
  for (int h = 0; h < static_cast<int>(layout_.hosts.size()); ++h) {
    const int devices = facts(layout_.hosts[h].generation).devices_per_host;
    assert(devices > 0 && devices <= 32);
    hosts_.push_back(
        {devices, total_cores_, 0, HostHealth::kHealthy, all_cores_mask(devices), devices});
    total_cores_ += devices;
    host_by_name_.emplace(layout_.hosts[h].name, h);  // keeps the first of duplicates
  }
  healthy_cores_ = total_cores_;
  schedulable_free_cores_ = total_cores_;
  for (int r = 0; r < static_cast<int>(runs_.size()); ++r) {
    for (int h = runs_[r].first_host; h < runs_[r].first_host + runs_[r].host_count; ++h) {
      hosts_[h].run = r;
    }
  }
  holders_.resize(total_cores_);
}

std::optional<int> Pool::find_host(std::string_view name) const {
  const auto it = host_by_name_.find(std::string(name));
  if (it == host_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<JobId> Pool::holder(int host, int core) const {
  return holders_[flat_index(host, core)];
}

void Pool::assign(int host, int core, JobId job) {
  HostState& state = hosts_[host];
  assert((state.free_mask >> core) & 1u);
  state.free_mask &= ~(std::uint32_t{1} << core);
  --state.free_count;
  holders_[flat_index(host, core)] = job;
  ++used_cores_;
  if (state.health == HostHealth::kHealthy) --schedulable_free_cores_;
}

void Pool::release(int host, int core) {
  HostState& state = hosts_[host];
  if ((state.free_mask >> core) & 1u) return;
  state.free_mask |= std::uint32_t{1} << core;
  ++state.free_count;
  holders_[flat_index(host, core)].reset();
  --used_cores_;
  if (state.health == HostHealth::kHealthy) ++schedulable_free_cores_;
}

void Pool::set_health(int host, HostHealth health) {
  HostState& state = hosts_[host];
  const int free = state.free_count;
  if (state.health == HostHealth::kHealthy) {
    healthy_cores_ -= state.devices;
    schedulable_free_cores_ -= free;
  }
  state.health = health;
  if (state.health == HostHealth::kHealthy) {
    healthy_cores_ += state.devices;
    schedulable_free_cores_ += free;
  }
}

}  // namespace tpujobs::scheduler
