#include "service/cluster_placement.h"

#include <algorithm>
#include <set>

#include "scheduler/generation.h"

namespace tpujobs::service {
namespace {

using scheduler::RequestKind;

bool shape_matches(const ClusterHost& host, const scheduler::ResourceRequest& request) {
  if (request.generation && *request.generation != host.generation) return false;
  const int devices = static_cast<int>(host.core_job.size());
  if (request.kind == RequestKind::kSingleCore)
    return !request.pinned_core || *request.pinned_core < devices;
  return devices == request.devices_per_host;
}

// [begin, end) index ranges of each agent's hosts in `hosts`.
std::vector<std::pair<int, int>> agent_ranges(const std::vector<ClusterHost>& hosts) {
  std::vector<std::pair<int, int>> ranges;
  for (int i = 0; i < static_cast<int>(hosts.size()); ++i) {
    if (ranges.empty() || hosts[ranges.back().first].agent != hosts[i].agent)
      ranges.push_back({i, i});
    ranges.back().second = i + 1;
  }
  return ranges;
}

// What find_places looks at.
struct Search {
  bool ignore_use = false;     // as if every core were free
  bool ignore_health = false;  // as if every host were usable
  bool first_only = true;      // stop at the first place
  // Cores that count as taken (the head's reservation); null: none.
  const std::set<std::pair<int, int>>* reserved = nullptr;
  // Only hosts whose agent heartbeated after this (a retry; see
  // WaitingJob::requeued_at). Ignored with ignore_health.
  std::optional<std::chrono::system_clock::time_point> heard_after{};
};

// The places where the request fits, in preference order.
std::vector<ClusterPlacement> find_places(const std::vector<ClusterHost>& hosts,
                                          const scheduler::ResourceRequest& request,
                                          const Search& search) {
  auto usable = [&](const ClusterHost& h) {
    if (search.ignore_health) return true;
    if (!h.usable || !h.punctual) return false;
    return !search.heard_after || (h.heard_at && *h.heard_at > *search.heard_after);
  };
  auto free_core = [&](int host, int core) {
    if (search.ignore_use) return true;
    if (hosts[host].core_job[core] != 0) return false;
    return search.reserved == nullptr || !search.reserved->count({host, core});
  };
  auto free_host = [&](int host) {
    for (int c = 0; c < static_cast<int>(hosts[host].core_job.size()); ++c) {
      if (!free_core(host, c)) return false;
    }
    return true;
  };
  auto whole_hosts = [&](ClusterPlacement& place) {
    for (int i : place.hosts) {
      for (int c = 0; c < static_cast<int>(hosts[i].core_job.size()); ++c)
        place.cores.push_back({i, c});
    }
  };
  std::vector<ClusterPlacement> found;
  if (request.kind == RequestKind::kSingleCore) {
    for (int i = 0; i < static_cast<int>(hosts.size()); ++i) {
      const ClusterHost& h = hosts[i];
      if (!usable(h) || !shape_matches(h, request)) continue;
      for (int c = 0; c < static_cast<int>(h.core_job.size()); ++c) {
        if (request.pinned_core && c != *request.pinned_core) continue;
        if (!free_core(i, c)) continue;
        ClusterPlacement place;
        place.agent = h.agent;
        place.hosts = {i};
        place.cores = {{i, c}};
        place.generation = h.generation;
        found.push_back(std::move(place));
        if (search.first_only) return found;
      }
    }
    return found;
  }
  const int wanted = std::max(1, request.hosts);
  for (const auto& [begin, end] : agent_ranges(hosts)) {
    // Aligned runs of `wanted` positions within one agent.
    for (int start = begin; start + wanted <= end; start += wanted) {
      bool fits = true;
      for (int i = start; i < start + wanted && fits; ++i) {
        fits = usable(hosts[i]) && shape_matches(hosts[i], request) && free_host(i);
      }
      if (!fits) continue;
      ClusterPlacement place;
      place.agent = hosts[start].agent;
      place.generation = hosts[start].generation;
      for (int i = start; i < start + wanted; ++i) place.hosts.push_back(i);
      whole_hosts(place);
      found.push_back(std::move(place));
      if (search.first_only) return found;
    }
  }
  if (request.kind != RequestKind::kSlice || !found.empty()) return found;
  // No agent has the slice alone: an aligned block of the pool's topology
  // over several agents (see cluster_placement.h), the fewest agents first.
  std::vector<int> topology;  // indexes of the hosts of its shape, in pool order
  for (int i = 0; i < static_cast<int>(hosts.size()); ++i) {
    if (hosts[i].in_pool && shape_matches(hosts[i], request)) topology.push_back(i);
  }
  std::vector<ClusterPlacement> spanning;
  for (std::size_t start = 0; start + wanted <= topology.size(); start += wanted) {
    ClusterPlacement place;
    for (std::size_t k = start; k < start + wanted; ++k) {
      const int i = topology[k];
      if (!usable(hosts[i]) || !free_host(i)) break;
      place.hosts.push_back(i);
      if (place.parts.empty() || place.parts.back().first != hosts[i].agent)
        place.parts.push_back({hosts[i].agent, 0});
      ++place.parts.back().second;
    }
    // One agent alone keeps the alignment rule above.
    if (static_cast<int>(place.hosts.size()) < wanted || place.parts.size() < 2) continue;
    place.agent = place.parts.front().first;
    place.generation = hosts[place.hosts.front()].generation;
    whole_hosts(place);
    spanning.push_back(std::move(place));
  }
  std::stable_sort(spanning.begin(), spanning.end(),
                   [](const auto& a, const auto& b) { return a.parts.size() < b.parts.size(); });
  if (search.first_only && spanning.size() > 1) spanning.resize(1);
  for (ClusterPlacement& place : spanning) found.push_back(std::move(place));
  return found;
}

std::optional<ClusterPlacement> find_place(const std::vector<ClusterHost>& hosts,
                                           const scheduler::ResourceRequest& request,
                                           Search search) {
  search.first_only = true;
  std::vector<ClusterPlacement> found = find_places(hosts, request, search);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

// The head's reservation: of the places it could use on healthy hosts, the
// one that frees earliest (see the top of cluster_placement.h).
std::optional<Reservation> reserve(const PlacementInput& input, std::int64_t job,
                                   const scheduler::ResourceRequest& request) {
  using TimePoint = std::chrono::system_clock::time_point;
  std::optional<Reservation> best;
  int best_busy = 0;
  for (ClusterPlacement& place :
       find_places(input.hosts, request, {.ignore_use = true, .first_only = false})) {
    std::optional<TimePoint> start = input.now;
    int busy = 0;
    for (const scheduler::CoreRef& c : place.cores) {
      const std::int64_t holder = input.hosts[c.host].core_job[c.core];
      if (holder == 0) continue;
      ++busy;
      auto end = input.expected_end.find(holder);
      if (end == input.expected_end.end())
        start.reset();  // runs forever as far as planning goes
      else if (start)
        start = std::max(*start, end->second);
    }
    // Known starts before unknown ones; then the earlier; then fewer busy cores.
    const bool better = !best || (start && !best->start) ||
                        (start && best->start &&
                         (*start < *best->start || (*start == *best->start && busy < best_busy))) ||
                        (!start && !best->start && busy < best_busy);
    if (better) {
      best = Reservation{job, std::move(place.cores), start};
      best_busy = busy;
    }
  }
  return best;
}

bool overlaps(const ClusterPlacement& place, const std::set<std::pair<int, int>>& cores) {
  return std::any_of(place.cores.begin(), place.cores.end(), [&](const scheduler::CoreRef& c) {
    return cores.count({c.host, c.core});
  });
}

}  // namespace

PlacementPass place_jobs(PlacementInput& input, const std::vector<WaitingJob>& queue) {
  PlacementPass pass;
  std::set<std::pair<int, int>> reserved;  // the head's cores (host, core)
  for (const WaitingJob& job : queue) {
    const scheduler::ResourceRequest& request = job.request;
    WaitingReason waiting{job.id, scheduler::PendingReason::kResources, 0, {}};
    if (!job.resolvable) {
      waiting.reason = scheduler::PendingReason::kHostUnhealthy;
      waiting.detail = "no registered agent has hosts of its kind";
      pass.waiting.push_back(std::move(waiting));
      continue;
    }
    if (request.kind == RequestKind::kCpu) {
      auto emptiest =
          std::max_element(input.free_cpu_slots.begin(), input.free_cpu_slots.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      if (emptiest != input.free_cpu_slots.end() && emptiest->second > 0) {
        --emptiest->second;
        ClusterPlacement place;
        place.job = job.id;
        place.agent = emptiest->first;
        place.accelerator_type = "cpu";
        pass.placed.push_back(std::move(place));
        continue;
      }
      if (input.free_cpu_slots.empty()) {
        waiting.reason = scheduler::PendingReason::kHostUnhealthy;
        waiting.detail = "no agent is alive";
      }
      pass.waiting.push_back(std::move(waiting));
      continue;
    }
    auto quota = input.quota_left.find(job.tenant);
    if (quota != input.quota_left.end() && request.cores() > quota->second) {
      waiting.reason = scheduler::PendingReason::kQuota;
      pass.waiting.push_back(std::move(waiting));
      continue;
    }
    std::optional<ClusterPlacement> place =
        find_place(input.hosts, request, {.heard_after = job.requeued_at});
    if (place && !reserved.empty() && overlaps(*place, reserved)) {
      // On the head's reserved cores only when it ends by the reserved start.
      const bool ends_in_time = pass.reservation->start && job.expected_runtime &&
                                input.now + *job.expected_runtime <= *pass.reservation->start;
      if (!ends_in_time) {
        place = find_place(input.hosts, request,
                           {.reserved = &reserved, .heard_after = job.requeued_at});
      }
    }
    if (place) {
      place->job = job.id;
      place->accelerator_type = request.accelerator_type;
      for (const scheduler::CoreRef& c : place->cores)
        input.hosts[c.host].core_job[c.core] = job.id;
      if (quota != input.quota_left.end()) quota->second -= request.cores();
      pass.placed.push_back(std::move(*place));
      continue;
    }
    if (find_place(input.hosts, request, {.ignore_use = true})) {
      waiting.reason = scheduler::PendingReason::kResources;
      if (!pass.reservation) {
        pass.reservation = reserve(input, job.id, request);
        if (pass.reservation) {
          waiting.estimated_start = pass.reservation->start;
          for (const scheduler::CoreRef& c : pass.reservation->cores)
            reserved.insert({c.host, c.core});
        }
      }
    } else if (find_place(input.hosts, request, {.ignore_use = true, .ignore_health = true})) {
      waiting.reason = scheduler::PendingReason::kHostUnhealthy;
      waiting.detail = "its hosts belong to a lost agent or are drained or failed";
    } else {
      waiting.reason = scheduler::PendingReason::kHostUnhealthy;
      waiting.detail = "no agent with hosts of its kind is registered";
    }
    pass.waiting.push_back(std::move(waiting));
  }
  for (std::size_t i = 0; i < pass.waiting.size(); ++i)
    pass.waiting[i].queue_position = static_cast<int>(i) + 1;
  return pass;
}

std::optional<ClusterPreemption> choose_cluster_preemption(
    const PlacementInput& input, const PlacementPass& pass, const std::vector<WaitingJob>& queue,
    const std::map<std::int64_t, int>& priority_of,
    const std::function<std::optional<scheduler::RunningJobInfo>(std::int64_t)>& running) {
  const auto head = std::find_if(pass.waiting.begin(), pass.waiting.end(), [](const auto& w) {
    return w.reason == scheduler::PendingReason::kResources;
  });
  if (head == pass.waiting.end()) return std::nullopt;
  const auto job = std::find_if(queue.begin(), queue.end(),
                                [&](const WaitingJob& j) { return j.id == head->job; });
  const auto priority = priority_of.find(head->job);
  if (job == queue.end() || priority == priority_of.end()) return std::nullopt;
  const scheduler::ResourceRequest& request = job->request;
  if (request.kind == RequestKind::kCpu) return std::nullopt;
  // Every place of one agent where the head would fit were its hosts idle.
  const std::vector<ClusterHost>& hosts = input.hosts;
  std::vector<std::vector<std::optional<std::int64_t>>> places;
  auto holder = [&](int host, int core) -> std::optional<std::int64_t> {
    const std::int64_t id = hosts[host].core_job[core];
    return id == 0 ? std::nullopt : std::optional(id);
  };
  if (request.kind == RequestKind::kSingleCore) {
    for (int i = 0; i < static_cast<int>(hosts.size()); ++i) {
      if (!hosts[i].usable || !shape_matches(hosts[i], request)) continue;
      for (int c = 0; c < static_cast<int>(hosts[i].core_job.size()); ++c) {
        if (!request.pinned_core || *request.pinned_core == c) places.push_back({holder(i, c)});
      }
    }
  } else {
    const int wanted = std::max(1, request.hosts);
    for (const auto& [begin, end] : agent_ranges(hosts)) {
      for (int start = begin; start + wanted <= end; start += wanted) {
        std::vector<std::optional<std::int64_t>> place;
        bool fits = true;
        for (int i = start; i < start + wanted && fits; ++i) {
          fits = hosts[i].usable && shape_matches(hosts[i], request);
          for (int c = 0; fits && c < static_cast<int>(hosts[i].core_job.size()); ++c)
            place.push_back(holder(i, c));
        }
        if (fits) places.push_back(std::move(place));
      }
    }
  }
  std::optional<scheduler::VictimChoice> choice =
      scheduler::choose_victims(priority->second, places, running);
  if (!choice || choice->victims.empty()) return std::nullopt;
  return ClusterPreemption{head->job, std::move(choice->victims)};
}

}  // namespace tpujobs::service
