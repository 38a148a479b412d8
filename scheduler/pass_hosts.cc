#include "scheduler/pass_hosts.h"

#include <algorithm>
#include <bit>
#include <tuple>
#include <utility>

namespace tpujobs::scheduler::pass_internal {
namespace {

int block_hosts(const ResourceRequest& shape) {
  return shape.kind == RequestKind::kHost ? 1 : std::max(1, shape.hosts);
}

}  // namespace

CoreTimes::CoreTimes(const std::vector<PassHost>& hosts, PassTime now) : now_(now) {
  const std::size_t n = hosts.size();
  latest_.assign(n, now);
  earliest_.assign(n, now);
  earliest_core_.assign(n, 0);
  busy_.assign(n, 0);
  int total = 0;
  for (const PassHost& host : hosts) {
    first_core_.push_back(total);
    devices_.push_back(static_cast<int>(host.cores.size()));
    total += static_cast<int>(host.cores.size());
  }
  times_.assign(total, now);
}

void CoreTimes::refresh(int host) {
  PassTime latest = now_;
  PassTime earliest = kNever;
  int earliest_core = 0;
  int busy = 0;
  for (int c = 0; c < devices_[host]; ++c) {
    const PassTime time = at(host, c);
    latest = std::max(latest, time);
    if (time < earliest) {
      earliest = time;
      earliest_core = c;
    }
    if (time > now_) ++busy;
  }
  latest_[host] = latest;
  earliest_[host] = earliest;
  earliest_core_[host] = earliest_core;
  busy_[host] = busy;
}

PassHosts::PassHosts(const std::vector<PassHost>& hosts) : hosts_(hosts) {
  for (int h = 0; h < count(); ++h) {
    std::uint32_t free = 0;
    for (int c = 0; c < devices(h); ++c) {
      if (hosts_[h].cores[c] == 0) free |= std::uint32_t{1} << c;
    }
    free_mask_.push_back(free);
    free_count_.push_back(std::popcount(free));
    if (takes_work(h)) free_takers_ += free_count_.back();
    const bool joins = h > 0 && hosts_[h].agent == hosts_[h - 1].agent &&
                       hosts_[h].generation == hosts_[h - 1].generation;
    if (joins) {
      ++runs_.back().host_count;
    } else {
      runs_.push_back(Run{h, 1});
    }
    run_of_.push_back(static_cast<int>(runs_.size()) - 1);
  }
}

bool PassHosts::matches(const ResourceRequest& shape, int host) const {
  if (shape.generation && *shape.generation != hosts_[host].generation) return false;
  if (shape.kind == RequestKind::kSingleCore) {
    return !shape.pinned_core || (*shape.pinned_core >= 0 && *shape.pinned_core < devices(host));
  }
  return shape.devices_per_host == devices(host);
}

bool PassHosts::takes_work(int host, const std::optional<PassTime>& heard_after) const {
  const PassHost& h = hosts_[host];
  if (!h.usable || !h.punctual) return false;
  return !heard_after || (h.heard_at && *h.heard_at > *heard_after);
}

template <class Visit>
void PassHosts::for_each_block(const ResourceRequest& shape, Visit visit) const {
  const int n = block_hosts(shape);
  for (const Run& run : runs_) {
    if (run.host_count < n || !matches(shape, run.first_host)) continue;
    for (int begin = run.first_host; begin + n <= run.first_host + run.host_count; begin += n) {
      if (visit(begin)) return;
    }
  }
}

std::vector<int> PassHosts::free_host_prefix() const {
  std::vector<int> prefix(count() + 1, 0);
  for (int h = 0; h < count(); ++h) {
    const bool free = takes_work(h) && free_count_[h] == devices(h);
    prefix[h + 1] = prefix[h] + (free ? 1 : 0);
  }
  return prefix;
}

int PassHosts::largest_free_block(int begin, int end, const std::vector<int>& free_prefix) const {
  // Grows the aligned block [begin, end) to its buddy parent while the
  // parent is entirely free: how big a free block a placement here breaks.
  const Run& run = runs_[run_of_[begin]];
  int size = end - begin;
  if (free_prefix[end] - free_prefix[begin] != size) return 0;
  for (;;) {
    const int parent = size * 2;
    const int parent_begin = run.first_host + (begin - run.first_host) / parent * parent;
    if (parent_begin + parent > run.first_host + run.host_count) break;
    if (free_prefix[parent_begin + parent] - free_prefix[parent_begin] != parent) break;
    begin = parent_begin;
    size = parent;
  }
  return size;
}

Choice PassHosts::whole_hosts(int first, int n) const {
  Choice choice;
  for (int h = first; h < first + n; ++h) {
    choice.hosts.push_back(h);
    for (int c = 0; c < devices(h); ++c) choice.cores.push_back({h, c});
  }
  return choice;
}

std::optional<Choice> PassHosts::find_free_core(const ResourceRequest& shape,
                                                const std::vector<std::uint32_t>& avoid,
                                                const std::optional<PassTime>& heard_after) const {
  auto open_cores = [&](int h) { return free_mask_[h] & ~(avoid.empty() ? 0u : avoid[h]); };
  auto usable = [&](int h) {
    if (!takes_work(h, heard_after) || !matches(shape, h)) return false;
    const std::uint32_t open = open_cores(h);
    return shape.pinned_core ? ((open >> *shape.pinned_core) & 1u) != 0 : open != 0;
  };
  // Best fit: a host in use with the fewest free cores; failing that, the
  // idle host whose free block is smallest.
  std::optional<std::pair<int, int>> best_used;  // (free cores, host)
  for (int h = 0; h < count(); ++h) {
    if (free_count_[h] == devices(h) || !usable(h)) continue;
    const std::pair<int, int> key{free_count_[h], h};
    if (!best_used || key < *best_used) best_used = key;
    if (key.first == 1) break;  // nothing fits tighter
  }
  std::optional<int> host;
  if (best_used) {
    host = best_used->second;
  } else {
    const std::vector<int> free_prefix = free_host_prefix();
    std::optional<std::pair<int, int>> best_idle;  // (free block broken, host)
    for (int h = 0; h < count(); ++h) {
      if (free_count_[h] != devices(h) || !usable(h)) continue;
      const std::pair<int, int> key{largest_free_block(h, h + 1, free_prefix), h};
      if (!best_idle || key < *best_idle) best_idle = key;
    }
    if (best_idle) host = best_idle->second;
  }
  if (!host) return std::nullopt;
  const int core = shape.pinned_core ? *shape.pinned_core : std::countr_zero(open_cores(*host));
  Choice choice;
  choice.hosts = {*host};
  choice.cores = {CoreRef{*host, core}};
  return choice;
}

std::vector<int> PassHosts::spanning_topology(const ResourceRequest& shape) const {
  std::vector<int> topology;
  for (int h = 0; h < count(); ++h) {
    if (hosts_[h].in_pool && matches(shape, h)) topology.push_back(h);
  }
  return topology;
}

bool PassHosts::spans_agents(const std::vector<int>& topology, std::size_t start, int n) const {
  // One agent alone keeps the alignment rule of its runs.
  const int agent = hosts_[topology[start]].agent;
  for (std::size_t k = start + 1; k < start + n; ++k) {
    if (hosts_[topology[k]].agent != agent) return true;
  }
  return false;
}

std::optional<Choice> PassHosts::find_spanning(const ResourceRequest& shape,
                                               const std::vector<std::uint32_t>& avoid,
                                               const std::optional<PassTime>& heard_after) const {
  const int n = block_hosts(shape);
  const std::vector<int> topology = spanning_topology(shape);
  std::optional<Choice> best;
  for (std::size_t start = 0; start + n <= topology.size(); start += n) {
    Choice choice;
    for (std::size_t k = start; k < start + n; ++k) {
      const int h = topology[k];
      const bool free = free_count_[h] == devices(h) && (avoid.empty() || avoid[h] == 0);
      if (!takes_work(h, heard_after) || !free) break;
      choice.hosts.push_back(h);
      if (choice.parts.empty() || choice.parts.back().first != hosts_[h].agent) {
        choice.parts.push_back({hosts_[h].agent, 0});
      }
      ++choice.parts.back().second;
    }
    // One agent alone keeps the alignment rule of its runs.
    if (static_cast<int>(choice.hosts.size()) < n || choice.parts.size() < 2) continue;
    if (best && best->parts.size() <= choice.parts.size()) continue;
    for (int h : choice.hosts) {
      for (int c = 0; c < devices(h); ++c) choice.cores.push_back({h, c});
    }
    best = std::move(choice);
  }
  return best;
}

std::optional<Choice> PassHosts::find_free(const ResourceRequest& shape,
                                           const std::vector<std::uint32_t>& avoid,
                                           const std::optional<PassTime>& heard_after) const {
  if (shape.kind == RequestKind::kCpu) return std::nullopt;
  if (shape.kind == RequestKind::kSingleCore) return find_free_core(shape, avoid, heard_after);
  const std::vector<int> free_prefix = free_host_prefix();
  const int n = block_hosts(shape);
  std::optional<std::pair<int, int>> best;  // (free block broken, first host)
  for_each_block(shape, [&](int begin) {
    for (int h = begin; h < begin + n; ++h) {
      if (!takes_work(h, heard_after) || free_count_[h] != devices(h)) return false;
      if (!avoid.empty() && avoid[h] != 0) return false;
    }
    const std::pair<int, int> key{largest_free_block(begin, begin + n, free_prefix), begin};
    if (!best || key < *best) best = key;
    return false;
  });
  if (best) return whole_hosts(best->second, n);
  if (shape.kind != RequestKind::kSlice) return std::nullopt;
  return find_spanning(shape, avoid, heard_after);
}

std::optional<Choice> PassHosts::find_earliest(const ResourceRequest& shape,
                                               const CoreTimes& times) const {
  if (shape.kind == RequestKind::kSingleCore) {
    // Earliest core; among equals the busiest host, so single cores pack.
    std::optional<std::tuple<PassTime, int, int>> best;  // (time, -busy, host)
    int best_core = 0;
    for (int h = 0; h < count(); ++h) {
      if (!takes_work(h) || !matches(shape, h)) continue;
      const int core = shape.pinned_core ? *shape.pinned_core : times.earliest_core(h);
      const std::tuple<PassTime, int, int> key{times.at(h, core), -times.busy(h), h};
      if (!best || key < *best) {
        best = key;
        best_core = core;
      }
    }
    if (!best) return std::nullopt;
    const int host = std::get<2>(*best);
    return Choice{{host}, {CoreRef{host, best_core}}, {}, std::get<0>(*best)};
  }
  const int n = block_hosts(shape);
  std::optional<std::tuple<PassTime, int, int>> best;  // (time, busy, first host)
  for_each_block(shape, [&](int begin) {
    PassTime ready{};
    int busy = 0;
    for (int h = begin; h < begin + n; ++h) {
      if (!takes_work(h)) return false;
      ready = std::max(ready, times.latest(h));
      busy += times.busy(h);
    }
    const std::tuple<PassTime, int, int> key{ready, busy, begin};
    if (!best || key < *best) best = key;
    return false;
  });
  if (best) {
    Choice choice = whole_hosts(std::get<2>(*best), n);
    choice.ready = std::get<0>(*best);
    return choice;
  }
  if (shape.kind != RequestKind::kSlice) return std::nullopt;
  // Over several agents: the block of the topology that frees first.
  const std::vector<int> topology = spanning_topology(shape);
  std::optional<Choice> spanning;
  for (std::size_t start = 0; start + n <= topology.size(); start += n) {
    PassTime ready{};
    bool usable = spans_agents(topology, start, n);
    for (std::size_t k = start; k < start + n && usable; ++k) {
      usable = takes_work(topology[k]);
      ready = std::max(ready, times.latest(topology[k]));
    }
    if (!usable || (spanning && spanning->ready <= ready)) continue;
    spanning = Choice{};
    for (std::size_t k = start; k < start + n; ++k) {
      const int h = topology[k];
      spanning->hosts.push_back(h);
      for (int c = 0; c < devices(h); ++c) spanning->cores.push_back({h, c});
    }
    spanning->ready = ready;
  }
  return spanning;
}

bool PassHosts::fits_idle(const ResourceRequest& shape, bool taking_work_only) const {
  if (shape.kind == RequestKind::kCpu) return true;
  auto usable = [&](int h) { return matches(shape, h) && (!taking_work_only || takes_work(h)); };
  if (shape.kind == RequestKind::kSingleCore) {
    for (int h = 0; h < count(); ++h) {
      if (usable(h)) return true;
    }
    return false;
  }
  const int n = block_hosts(shape);
  bool fits = false;
  for_each_block(shape, [&](int begin) {
    fits = true;
    for (int h = begin; h < begin + n && fits; ++h) fits = usable(h);
    return fits;
  });
  if (fits || shape.kind != RequestKind::kSlice) return fits;
  const std::vector<int> topology = spanning_topology(shape);
  for (std::size_t start = 0; start + n <= topology.size(); start += n) {
    fits = spans_agents(topology, start, n);
    for (std::size_t k = start; k < start + n && fits; ++k) fits = usable(topology[k]);
    if (fits) return true;
  }
  return false;
}

std::vector<std::vector<CoreRef>> PassHosts::places(const ResourceRequest& shape) const {
  std::vector<std::vector<CoreRef>> places;
  if (shape.kind == RequestKind::kSingleCore) {
    for (int h = 0; h < count(); ++h) {
      if (!hosts_[h].usable || !matches(shape, h)) continue;
      for (int c = 0; c < devices(h); ++c) {
        if (!shape.pinned_core || *shape.pinned_core == c) places.push_back({CoreRef{h, c}});
      }
    }
    return places;
  }
  if (shape.kind == RequestKind::kCpu) return places;
  const int n = block_hosts(shape);
  for_each_block(shape, [&](int begin) {
    for (int h = begin; h < begin + n; ++h) {
      if (!hosts_[h].usable) return false;
    }
    places.push_back(whole_hosts(begin, n).cores);
    return false;
  });
  return places;
}

void PassHosts::take(const Choice& choice, JobId job) {
  for (const CoreRef& core : choice.cores) {
    hosts_[core.host].cores[core.core] = job;
    const std::uint32_t bit = std::uint32_t{1} << core.core;
    if ((free_mask_[core.host] & bit) == 0) continue;
    free_mask_[core.host] &= ~bit;
    --free_count_[core.host];
    if (takes_work(core.host)) --free_takers_;
  }
}

}  // namespace tpujobs::scheduler::pass_internal
