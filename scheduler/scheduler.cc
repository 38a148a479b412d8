#include "scheduler/scheduler.h"

#include <algorithm>
#include <bit>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <tuple>
#include <utility>

#include "scheduler/preemption.h"

namespace tpujobs::scheduler {
namespace {

constexpr Clock::time_point kNever = Clock::time_point::max();

// Cores a waiting job of this kind will hold, for quota checks.
int requested_cores(RequestKind kind, int devices_per_host, int hosts) {
  switch (kind) {
    case RequestKind::kCpu:
      return 0;
    case RequestKind::kSingleCore:
      return 1;
    case RequestKind::kHost:
      return devices_per_host;
    case RequestKind::kSlice:
      return devices_per_host * hosts;
  }
  return 0;
}

// Hosts a whole-host or slice request spans.
int block_hosts(RequestKind kind, int hosts) { return kind == RequestKind::kHost ? 1 : hosts; }

}  // namespace

std::string_view pending_reason_name(PendingReason reason) {
  switch (reason) {
    case PendingReason::kNone:
      return "None";
    case PendingReason::kResources:
      return "Resources";
    case PendingReason::kPriority:
      return "Priority";
    case PendingReason::kHostUnhealthy:
      return "HostUnhealthy";
    case PendingReason::kQuota:
      return "Quota";
    case PendingReason::kPreempted:
      return "Preempted";
    case PendingReason::kDependency:
      return "Dependency";
  }
  return "None";
}

struct Scheduler::Choice {
  Generation generation = Generation::kV3;
  std::vector<int> hosts;
  std::vector<CoreRef> cores;
  Clock::time_point ready{};  // find_earliest only: when every chosen core is free
};

// When each core of the pool becomes free (kNever: unknown), with per-host
// summaries kept current so a search costs O(hosts), not O(cores).
class Scheduler::CoreTimes {
 public:
  CoreTimes(const Pool& pool, Clock::time_point now)
      : pool_(pool),
        now_(now),
        times_(pool.total_cores(), now),
        latest_(pool.host_count(), now),
        earliest_(pool.host_count(), now),
        earliest_core_(pool.host_count(), 0),
        busy_(pool.host_count(), 0) {}

  Clock::time_point at(int host, int core) const { return times_[pool_.flat_index(host, core)]; }
  // Sets a core without updating its host's summary; call refresh(host) after.
  void put(int host, int core, Clock::time_point time) {
    times_[pool_.flat_index(host, core)] = time;
  }
  void set(int host, int core, Clock::time_point time) {
    put(host, core, time);
    refresh(host);
  }
  void refresh(int host) {
    Clock::time_point latest = now_;
    Clock::time_point earliest = kNever;
    int earliest_core = 0;
    int busy = 0;
    for (int c = 0; c < pool_.devices(host); ++c) {
      const Clock::time_point time = at(host, c);
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
  // When the whole host is free.
  Clock::time_point latest(int host) const { return latest_[host]; }
  // When its first core is free, and which core that is.
  Clock::time_point earliest(int host) const { return earliest_[host]; }
  int earliest_core(int host) const { return earliest_core_[host]; }
  // Cores not free at `now`.
  int busy(int host) const { return busy_[host]; }

 private:
  const Pool& pool_;
  Clock::time_point now_;
  std::vector<Clock::time_point> times_;
  std::vector<Clock::time_point> latest_;
  std::vector<Clock::time_point> earliest_;
  std::vector<int> earliest_core_;
  std::vector<int> busy_;
};

bool Scheduler::QueueEntry::operator<(const QueueEntry& other) const {
  return std::tie(other.priority, other.fair_share, submit_order, id) <
         std::tie(priority, fair_share, other.submit_order, other.id);
}

// An ordered set whose nodes also count their subtrees, so a job's rank is
// O(log n) (libstdc++'s policy-based red-black tree). Erasing an entry
// leaves the iterators to the others valid, as std::set does.
class Scheduler::Queue : public __gnu_pbds::tree<QueueEntry, __gnu_pbds::null_type,
                                                 std::less<QueueEntry>, __gnu_pbds::rb_tree_tag,
                                                 __gnu_pbds::tree_order_statistics_node_update> {};

// The estimated starts of the waiting jobs, planned in queue order from the
// state at `version` (see plan_through). Any change starts a new plan.
struct Scheduler::Plan {
  explicit Plan(CoreTimes core_times) : times(std::move(core_times)) {}
  std::uint64_t version = 0;
  CoreTimes times;                       // when each core frees up, as planned so far
  std::vector<signed char> healthy_fit;  // per waiting shape: fits the healthy hosts when idle
  std::vector<signed char> fits_now;     // per shape: fits the free cores; -1 not yet known
  // Per shape: no later job of it gets a known start (times only grow while
  // planning, so once unknown it stays so).
  std::vector<char> start_unknown;
  int open_shapes = 0;         // waiting shapes that may still get a known start
  int walked = 0;              // jobs planned so far, up to the estimate horizon
  Queue::const_iterator next;  // the first waiting job not planned yet
};

Scheduler::Scheduler(PoolLayout layout, SchedulerOptions options)
    : pool_(std::move(layout)),
      options_(options),
      core_end_(pool_.total_cores(), kNever),
      queue_(std::make_unique<Queue>()) {}

Scheduler::~Scheduler() = default;

int Scheduler::intern_shape(const ResourceRequest& request) {
  Shape shape{request.kind, request.generation, request.devices_per_host, request.hosts,
              request.kind == RequestKind::kSingleCore ? request.pinned_core : std::nullopt};
  if (request.kind == RequestKind::kCpu) shape = Shape{RequestKind::kCpu, {}, 0, 0, {}};
  const auto [it, inserted] = shape_index_.emplace(shape, static_cast<int>(shapes_.size()));
  if (inserted) shapes_.push_back(shape);
  return it->second;
}

int Scheduler::intern_tenant(const std::string& tenant) {
  const auto [it, inserted] = tenant_index_.emplace(tenant, static_cast<int>(tenants_.size()));
  if (inserted) tenants_.push_back(Tenant{tenant, std::nullopt, 0});
  return it->second;
}

bool Scheduler::generation_matches(const Shape& shape, int host) const {
  const Generation generation = pool_.generation(host);
  if (shape.generation && *shape.generation != generation) return false;
  if (shape.kind == RequestKind::kSingleCore) {
    return !shape.pinned_core ||
           (*shape.pinned_core >= 0 && *shape.pinned_core < pool_.devices(host));
  }
  return shape.devices_per_host == pool_.devices(host);
}

template <class Visit>
void Scheduler::for_each_block(const Shape& shape, Visit visit) const {
  const int n = block_hosts(shape.kind, shape.hosts);
  if (n < 1) return;
  for (const HostRun& run : pool_.runs()) {
    if (run.host_count < n || !generation_matches(shape, run.first_host)) continue;
    for (int begin = run.first_host; begin + n <= run.first_host + run.host_count; begin += n) {
      if (visit(begin)) return;
    }
  }
}

bool Scheduler::fits_idle(const Shape& shape, bool healthy_only) const {
  if (shape.kind == RequestKind::kCpu) return true;
  auto usable = [&](int host) {
    return generation_matches(shape, host) && (!healthy_only || pool_.schedulable(host));
  };
  if (shape.kind == RequestKind::kSingleCore) {
    for (int h = 0; h < pool_.host_count(); ++h) {
      if (usable(h)) return true;
    }
    return false;
  }
  const int n = block_hosts(shape.kind, shape.hosts);
  bool fits = false;
  for_each_block(shape, [&](int begin) {
    fits = true;
    for (int h = begin; h < begin + n && fits; ++h) fits = usable(h);
    return fits;
  });
  return fits;
}

bool Scheduler::can_ever_fit(const ResourceRequest& request) const {
  if (request.kind == RequestKind::kCpu) return true;
  const Shape shape{request.kind, request.generation, request.devices_per_host, request.hosts,
                    request.kind == RequestKind::kSingleCore ? request.pinned_core : std::nullopt};
  return fits_idle(shape, false);
}

int Scheduler::largest_free_block(int host_begin, int host_end,
                                  const std::vector<int>& free_prefix) const {
  // Grows the aligned block [host_begin, host_end) to its buddy parent while
  // the parent is entirely free; the result says how big a free block a
  // placement here would break.
  const HostRun* run = &pool_.runs()[pool_.run_of(host_begin)];
  int size = host_end - host_begin;
  if (free_prefix[host_end] - free_prefix[host_begin] != size) return 0;
  int begin = host_begin;
  for (;;) {
    const int parent = size * 2;
    const int parent_begin = run->first_host + (begin - run->first_host) / parent * parent;
    if (parent_begin + parent > run->first_host + run->host_count) break;
    if (free_prefix[parent_begin + parent] - free_prefix[parent_begin] != parent) break;
    begin = parent_begin;
    size = parent;
  }
  return size;
}

std::optional<Scheduler::Choice> Scheduler::find_free(
    const Shape& shape, const std::vector<std::uint32_t>& avoid) const {
  const int host_count = pool_.host_count();
  auto avoided = [&](int host) { return avoid.empty() ? std::uint32_t{0} : avoid[host]; };
  // free_prefix[h]: healthy, entirely free hosts among 0..h-1.
  std::vector<int> free_prefix;
  auto count_free_hosts = [&] {
    free_prefix.assign(host_count + 1, 0);
    for (int h = 0; h < host_count; ++h) {
      free_prefix[h + 1] = free_prefix[h] + (pool_.schedulable(h) && pool_.fully_free(h) ? 1 : 0);
    }
  };

  if (shape.kind == RequestKind::kSingleCore) {
    // Best fit: a host already in use with the fewest free cores; failing
    // that, the idle host whose free block is smallest.
    auto usable = [&](int h) {
      if (!pool_.schedulable(h) || !generation_matches(shape, h)) return false;
      const std::uint32_t open = pool_.free_mask(h) & ~avoided(h);
      return shape.pinned_core ? ((open >> *shape.pinned_core) & 1u) != 0 : open != 0;
    };
    std::optional<std::pair<int, int>> best_used;  // (free cores, host)
    for (int h = 0; h < host_count; ++h) {
      if (pool_.fully_free(h) || !usable(h)) continue;
      const std::pair<int, int> key{pool_.free_cores(h), h};
      if (!best_used || key < *best_used) best_used = key;
      if (key.first == 1) break;  // nothing fits tighter
    }
    std::optional<int> host;
    if (best_used) {
      host = best_used->second;
    } else {
      count_free_hosts();
      std::optional<std::pair<int, int>> best_idle;  // (free block broken, host)
      for (int h = 0; h < host_count; ++h) {
        if (!pool_.fully_free(h) || !usable(h)) continue;
        const std::pair<int, int> key{largest_free_block(h, h + 1, free_prefix), h};
        if (!best_idle || key < *best_idle) best_idle = key;
      }
      if (best_idle) host = best_idle->second;
    }
    if (!host) return std::nullopt;
    const std::uint32_t open = pool_.free_mask(*host) & ~avoided(*host);
    const int core = shape.pinned_core ? *shape.pinned_core : std::countr_zero(open);
    return Choice{pool_.generation(*host), {*host}, {CoreRef{*host, core}}, {}};
  }

  count_free_hosts();
  const int n = block_hosts(shape.kind, shape.hosts);
  std::optional<std::pair<int, int>> best;  // (free block broken, first host)
  for_each_block(shape, [&](int begin) {
    if (free_prefix[begin + n] - free_prefix[begin] != n) return false;
    for (int h = begin; h < begin + n; ++h) {
      if (avoided(h) != 0) return false;
    }
    const std::pair<int, int> key{largest_free_block(begin, begin + n, free_prefix), begin};
    if (!best || key < *best) best = key;
    return false;
  });
  if (!best) return std::nullopt;
  Choice choice;
  choice.generation = pool_.generation(best->second);
  for (int h = best->second; h < best->second + n; ++h) {
    choice.hosts.push_back(h);
    for (int c = 0; c < pool_.devices(h); ++c) choice.cores.push_back({h, c});
  }
  return choice;
}

std::optional<Scheduler::Choice> Scheduler::find_earliest(const Shape& shape,
                                                          const CoreTimes& times) const {
  if (shape.kind == RequestKind::kSingleCore) {
    // Earliest core; among equals the busiest host, so single cores pack.
    std::optional<std::tuple<Clock::time_point, int, int>> best;  // (time, -busy, host)
    int best_core = 0;
    for (int h = 0; h < pool_.host_count(); ++h) {
      if (!pool_.schedulable(h) || !generation_matches(shape, h)) continue;
      const int core = shape.pinned_core ? *shape.pinned_core : times.earliest_core(h);
      const std::tuple<Clock::time_point, int, int> key{times.at(h, core), -times.busy(h), h};
      if (!best || key < *best) {
        best = key;
        best_core = core;
      }
    }
    if (!best) return std::nullopt;
    const int host = std::get<2>(*best);
    return Choice{pool_.generation(host), {host}, {CoreRef{host, best_core}}, std::get<0>(*best)};
  }

  const int n = block_hosts(shape.kind, shape.hosts);
  std::optional<std::tuple<Clock::time_point, int, int>> best;  // (time, busy, first host)
  for_each_block(shape, [&](int begin) {
    Clock::time_point ready{};
    int busy = 0;
    for (int h = begin; h < begin + n; ++h) {
      if (!pool_.schedulable(h)) return false;
      ready = std::max(ready, times.latest(h));
      busy += times.busy(h);
    }
    const std::tuple<Clock::time_point, int, int> key{ready, busy, begin};
    if (!best || key < *best) best = key;
    return false;
  });
  if (!best) return std::nullopt;
  Choice choice;
  const int first = std::get<2>(*best);
  choice.generation = pool_.generation(first);
  choice.ready = std::get<0>(*best);
  for (int h = first; h < first + n; ++h) {
    choice.hosts.push_back(h);
    for (int c = 0; c < pool_.devices(h); ++c) choice.cores.push_back({h, c});
  }
  return choice;
}

bool Scheduler::over_quota(const Job& job) const {
  const Tenant& tenant = tenants_[job.tenant];
  if (!tenant.max_cores) return false;
  const Shape& shape = shapes_[job.shape];
  const int cores = requested_cores(shape.kind, shape.devices_per_host, shape.hosts);
  return cores > 0 && tenant.used_cores + cores > *tenant.max_cores;
}

bool Scheduler::submit(JobRequest request) {
  if (jobs_.contains(request.id)) return false;
  const JobId id = request.id;
  Job job;
  job.shape = intern_shape(request.request);
  job.tenant = intern_tenant(request.tenant);
  job.fair_share = tenants_[job.tenant].fair_share;
  job.request = std::move(request);
  Job& stored = jobs_.emplace(id, std::move(job)).first->second;
  const QueueEntry entry = entry_of(stored);
  if (shapes_[stored.shape].kind == RequestKind::kCpu) {
    cpu_queue_.insert(entry);
  } else {
    queue_->insert(entry);
    shape_waiting_.resize(shapes_.size(), 0);
    shape_runtimes_.resize(shapes_.size());
    ++shape_waiting_[stored.shape];
    if (stored.request.expected_runtime) {
      shape_runtimes_[stored.shape].insert(*stored.request.expected_runtime);
    }
  }
  ++version_;
  return true;
}

Scheduler::QueueEntry Scheduler::entry_of(const Job& job) const {
  return QueueEntry{job.request.priority, job.fair_share, job.request.submit_order, job.request.id,
                    const_cast<Job*>(&job)};
}

void Scheduler::dequeue(Job& job) {
  const QueueEntry entry = entry_of(job);
  if (shapes_[job.shape].kind == RequestKind::kCpu) {
    cpu_queue_.erase(entry);
  } else {
    queue_->erase(entry);
    --shape_waiting_[job.shape];
    if (job.request.expected_runtime) {
      std::multiset<std::chrono::milliseconds>& runtimes = shape_runtimes_[job.shape];
      runtimes.erase(runtimes.find(*job.request.expected_runtime));
    }
  }
}

Placement Scheduler::start(Job& job, Choice choice, Clock::time_point now) {
  const Shape& shape = shapes_[job.shape];
  Placement placement;
  placement.job = job.request.id;
  placement.kind = shape.kind;
  placement.generation = choice.generation;
  switch (shape.kind) {
    case RequestKind::kCpu:
      placement.accelerator_type = "cpu";
      break;
    case RequestKind::kSingleCore:
      placement.accelerator_type = std::string(facts(choice.generation).name);
      break;
    case RequestKind::kHost:
    case RequestKind::kSlice: {
      const GenerationFacts& generation = facts(choice.generation);
      const int size = static_cast<int>(choice.cores.size()) * generation.name_units_per_device;
      placement.accelerator_type = SliceType{choice.generation, size}.name();
      break;
    }
  }
  const Clock::time_point end =
      job.request.expected_runtime ? now + *job.request.expected_runtime : kNever;
  for (const CoreRef& core : choice.cores) {
    pool_.assign(core.host, core.core, job.request.id);
    core_end_[pool_.flat_index(core.host, core.core)] = end;
  }
  placement.hosts = std::move(choice.hosts);
  placement.cores = std::move(choice.cores);
  tenants_[job.tenant].used_cores += static_cast<int>(placement.cores.size());
  job.running = true;
  job.started = now;
  job.last_heartbeat = now;
  job.placement = placement;
  ++running_count_;
  return placement;
}

void Scheduler::release(Job& job) {
  for (const CoreRef& core : job.placement.cores) pool_.release(core.host, core.core);
  tenants_[job.tenant].used_cores -= static_cast<int>(job.placement.cores.size());
  job.running = false;
  job.preempting = false;
  --running_count_;
}

std::vector<Placement> Scheduler::schedule(Clock::time_point now) {
  ++version_;
  last_pass_ = now;
  reservation_.reset();
  std::vector<Placement> started;
  for (const QueueEntry& entry : cpu_queue_) started.push_back(start(*entry.job, Choice{}, now));
  cpu_queue_.clear();

  // Per shape, for this pass. Cores are only taken during a pass, so "does
  // not fit" stays true once found and each shape is searched O(starts)
  // times. A shape is *closed* once no more of its jobs can start; when every
  // waiting shape is closed (or no healthy core is free) the walk stops.
  const std::size_t shape_count = shapes_.size();
  shape_waiting_.resize(shape_count, 0);
  shape_runtimes_.resize(shape_count);
  std::vector<signed char> healthy_fit(shape_count, -1);
  std::vector<char> no_fit(shape_count, 0);
  std::vector<char> no_fit_outside_reservation(shape_count, 0);
  std::vector<char> closed(shape_count, 0);
  int open_shapes = 0;
  for (std::size_t s = 0; s < shape_count; ++s) {
    if (shape_waiting_[s] > 0) {
      ++open_shapes;
    } else {
      closed[s] = 1;
    }
  }
  auto close = [&](int s) {
    if (!closed[s]) {
      closed[s] = 1;
      --open_shapes;
    }
  };
  const std::vector<std::uint32_t> avoid_nothing;
  std::vector<std::uint32_t> reserved;  // per host: cores reserved for the head
  bool have_head = false;

  for (auto it = queue_->begin(); it != queue_->end();) {
    // Every waiting shape closed: nothing further can start (with no head,
    // say, when no waiting shape fits the healthy hosts at all).
    if (open_shapes == 0) break;
    if (have_head && pool_.schedulable_free_cores() == 0) break;
    Job& job = *it->job;
    const int s = job.shape;
    const Shape& shape = shapes_[s];
    if (healthy_fit[s] < 0) {
      healthy_fit[s] = fits_idle(shape, /*healthy_only=*/true) ? 1 : 0;
      if (!healthy_fit[s]) close(s);
    }
    std::optional<Choice> choice;
    if (!healthy_fit[s] || over_quota(job)) {
      // Waits without holding anything back.
    } else if (!have_head) {
      if (!no_fit[s]) {
        choice = find_free(shape, avoid_nothing);
        if (!choice) no_fit[s] = 1;
      }
      if (!choice) {
        have_head = true;
        close(s);
        reserved.assign(pool_.host_count(), 0);
        reservation_ = reserve(job, now, reserved);
      }
    } else if (!closed[s]) {
      if (!no_fit_outside_reservation[s]) {
        choice = find_free(shape, reserved);
        if (!choice) {
          no_fit_outside_reservation[s] = 1;
          const std::multiset<std::chrono::milliseconds>& runtimes = shape_runtimes_[s];
          if (!reservation_->start || runtimes.empty() ||
              now + *runtimes.begin() > *reservation_->start) {
            close(s);
          }
        }
      }
      const std::optional<std::chrono::milliseconds>& runtime = job.request.expected_runtime;
      if (!choice && !no_fit[s] && reservation_->start && runtime &&
          now + *runtime <= *reservation_->start) {
        choice = find_free(shape, avoid_nothing);
        if (!choice) {
          no_fit[s] = 1;
          close(s);
        }
      }
    }

    if (choice) {
      Job& starting = job;
      ++it;
      dequeue(starting);
      started.push_back(start(starting, std::move(*choice), now));
      if (shape_waiting_[s] == 0) close(s);
      continue;
    }
    ++it;
  }
  return started;
}

Reservation Scheduler::reserve(const Job& head, Clock::time_point now,
                               std::vector<std::uint32_t>& reserved) const {
  Reservation reservation{head.request.id, std::nullopt, {}};
  std::optional<Choice> earliest = find_earliest(shapes_[head.shape], core_times(now));
  if (!earliest) return reservation;  // not reached: the head fits the healthy hosts
  if (earliest->ready != kNever) reservation.start = earliest->ready;
  for (const CoreRef& core : earliest->cores) reserved[core.host] |= std::uint32_t{1} << core.core;
  reservation.cores = std::move(earliest->cores);
  return reservation;
}

Scheduler::CoreTimes Scheduler::core_times(Clock::time_point now) const {
  CoreTimes times(pool_, now);
  for (int h = 0; h < pool_.host_count(); ++h) {
    const std::uint32_t free = pool_.free_mask(h);
    for (int c = 0; c < pool_.devices(h); ++c) {
      if (((free >> c) & 1u) == 0) {
        times.put(h, c, std::max(core_end_[pool_.flat_index(h, c)], now));
      }
    }
    times.refresh(h);
  }
  return times;
}

Scheduler::Plan& Scheduler::current_plan() const {
  if (plan_ && plan_->version == version_) return *plan_;
  plan_ = std::make_unique<Plan>(core_times(last_pass_));
  Plan& plan = *plan_;
  plan.version = version_;
  const std::size_t shape_count = shapes_.size();
  plan.healthy_fit.assign(shape_count, 0);
  plan.fits_now.assign(shape_count, -1);
  plan.start_unknown.assign(shape_count, 0);
  // Only the shapes with waiting jobs matter (pending() asks about those).
  for (std::size_t s = 0; s < std::min(shape_count, shape_waiting_.size()); ++s) {
    if (shape_waiting_[s] == 0) continue;
    plan.healthy_fit[s] = fits_idle(shapes_[s], /*healthy_only=*/true) ? 1 : 0;
    if (!plan.healthy_fit[s]) continue;
    // A shape with no known start now has none later either: planning only
    // makes cores free later.
    const std::optional<Choice> first = find_earliest(shapes_[s], plan.times);
    if (first && first->ready != kNever) {
      ++plan.open_shapes;
    } else {
      plan.start_unknown[s] = 1;
    }
  }
  plan.next = queue_->begin();
  return plan;
}

void Scheduler::plan_through(const Job& target) const {
  Plan& plan = *plan_;
  while (target.planned != plan.version && plan.open_shapes > 0 && plan.next != queue_->end() &&
         plan.walked < options_.estimate_horizon) {
    Job& job = *plan.next->job;
    ++plan.next;
    ++plan.walked;
    job.planned = plan.version;
    job.estimated_start.reset();
    const int s = job.shape;
    // Jobs held by quota or an unhealthy pool take no cores in the plan.
    if (over_quota(job) || !plan.healthy_fit[s] || plan.start_unknown[s]) continue;
    const std::optional<Choice> choice = find_earliest(shapes_[s], plan.times);
    if (!choice || choice->ready == kNever) {
      plan.start_unknown[s] = 1;
      --plan.open_shapes;
      continue;
    }
    job.estimated_start = choice->ready;
    const Clock::time_point end =
        job.request.expected_runtime ? choice->ready + *job.request.expected_runtime : kNever;
    for (const CoreRef& core : choice->cores) plan.times.put(core.host, core.core, end);
    for (int host : choice->hosts) plan.times.refresh(host);
  }
}

bool Scheduler::cancel(JobId id) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  Job& job = it->second;
  if (job.running) {
    release(job);
  } else {
    dequeue(job);
    if (reservation_ && reservation_->job == id) reservation_.reset();
  }
  jobs_.erase(it);
  ++version_;
  return true;
}

void Scheduler::finish(JobId id) { cancel(id); }

bool Scheduler::force_release(JobId id) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return false;
  release(it->second);
  jobs_.erase(it);
  ++version_;
  return true;
}

std::optional<PendingInfo> Scheduler::pending(JobId id) const {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.running) return std::nullopt;
  const Job& job = it->second;
  const int s = job.shape;
  // A cpu job starts at the next pass.
  if (shapes_[s].kind == RequestKind::kCpu) return PendingInfo{PendingReason::kNone, 0, last_pass_};
  Plan& plan = current_plan();
  PendingInfo info;
  info.queue_position = static_cast<int>(queue_->order_of_key(entry_of(job))) + 1;
  if (over_quota(job)) {
    info.reason = PendingReason::kQuota;
    return info;
  }
  if (!plan.healthy_fit[s]) {
    info.reason = PendingReason::kHostUnhealthy;
    return info;
  }
  // After a pass, a job that fits now but did not start is held back by
  // the head's reservation.
  if (plan.fits_now[s] < 0) plan.fits_now[s] = find_free(shapes_[s], {}) ? 1 : 0;
  const bool held_back = reservation_ && reservation_->job != id && plan.fits_now[s];
  info.reason = held_back ? PendingReason::kPriority : PendingReason::kResources;
  if (job.request.preempted) info.reason = PendingReason::kPreempted;
  plan_through(job);
  if (job.planned == plan.version) info.estimated_start = job.estimated_start;
  return info;
}

std::optional<Placement> Scheduler::placement(JobId id) const {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return std::nullopt;
  return it->second.placement;
}

std::optional<Reservation> Scheduler::reservation() const { return reservation_; }

std::vector<JobId> Scheduler::set_host_health(int host, HostHealth health) {
  std::vector<JobId> evicted;
  if (host < 0 || host >= pool_.host_count()) return evicted;
  if (health == HostHealth::kFailed) {
    for (int c = 0; c < pool_.devices(host); ++c) {
      const std::optional<JobId> holder = pool_.holder(host, c);
      if (holder && std::find(evicted.begin(), evicted.end(), *holder) == evicted.end()) {
        evicted.push_back(*holder);
      }
    }
    std::sort(evicted.begin(), evicted.end());
    for (JobId id : evicted) force_release(id);
  }
  pool_.set_health(host, health);
  ++version_;
  return evicted;
}

std::optional<int> Scheduler::find_host(std::string_view name) const {
  return pool_.find_host(name);
}

void Scheduler::heartbeat(JobId id, Clock::time_point now) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return;
  it->second.last_heartbeat = std::max(it->second.last_heartbeat, now);
}

std::vector<JobId> Scheduler::reclaim_expired(Clock::time_point now) {
  std::vector<JobId> expired;
  for (const auto& [id, job] : jobs_) {
    if (job.running && now - job.last_heartbeat > options_.lease_timeout) expired.push_back(id);
  }
  std::sort(expired.begin(), expired.end());
  for (JobId id : expired) force_release(id);
  return expired;
}

void Scheduler::set_tenant_quota(std::string tenant, std::optional<int> max_cores) {
  tenants_[intern_tenant(tenant)].max_cores = max_cores;
  ++version_;
}

void Scheduler::set_fair_share(const std::string& tenant_name, double factor) {
  const int t = intern_tenant(tenant_name);
  if (tenants_[t].fair_share == factor) return;
  tenants_[t].fair_share = factor;
  for (auto& [id, job] : jobs_) {
    if (job.tenant != t || job.running) continue;
    if (shapes_[job.shape].kind == RequestKind::kCpu) {
      cpu_queue_.erase(entry_of(job));
      job.fair_share = factor;
      cpu_queue_.insert(entry_of(job));
    } else {
      queue_->erase(entry_of(job));
      job.fair_share = factor;
      queue_->insert(entry_of(job));
    }
  }
  ++version_;
}

double Scheduler::fair_share(const std::string& tenant) const {
  const auto it = tenant_index_.find(tenant);
  return it == tenant_index_.end() ? 1.0 : tenants_[it->second].fair_share;
}

std::optional<Preemption> Scheduler::preempt(Clock::time_point now) {
  if (!reservation_) return std::nullopt;
  const auto head_it = jobs_.find(reservation_->job);
  if (head_it == jobs_.end() || head_it->second.running) return std::nullopt;
  const Job& head = head_it->second;
  if (reservation_->start && *reservation_->start <= now + options_.preemption_min_wait) {
    return std::nullopt;
  }
  // Every place of the head's shape on the schedulable hosts, busy or not.
  const Shape& shape = shapes_[head.shape];
  std::vector<std::vector<CoreRef>> places;
  if (shape.kind == RequestKind::kSingleCore) {
    for (int h = 0; h < pool_.host_count(); ++h) {
      if (!pool_.schedulable(h) || !generation_matches(shape, h)) continue;
      for (int c = 0; c < pool_.devices(h); ++c) {
        if (!shape.pinned_core || *shape.pinned_core == c) places.push_back({CoreRef{h, c}});
      }
    }
  } else if (shape.kind != RequestKind::kCpu) {
    const int n = block_hosts(shape.kind, shape.hosts);
    for_each_block(shape, [&](int begin) {
      std::vector<CoreRef> cores;
      for (int h = begin; h < begin + n; ++h) {
        if (!pool_.schedulable(h)) return false;
        for (int c = 0; c < pool_.devices(h); ++c) cores.push_back({h, c});
      }
      places.push_back(std::move(cores));
      return false;
    });
  }
  std::vector<std::vector<std::optional<std::int64_t>>> holders;
  holders.reserve(places.size());
  for (const std::vector<CoreRef>& place : places) {
    std::vector<std::optional<std::int64_t>>& of_place = holders.emplace_back();
    for (const CoreRef& core : place) of_place.push_back(pool_.holder(core.host, core.core));
  }
  const std::optional<VictimChoice> choice =
      choose_victims(head.request.priority, holders, [&](std::int64_t id) {
        std::optional<RunningJobInfo> info;
        const auto it = jobs_.find(id);
        if (it == jobs_.end() || !it->second.running) return info;
        const Job& job = it->second;
        info = RunningJobInfo{id,
                              job.request.priority,
                              job.request.preemptible,
                              job.preempting,
                              job.started.time_since_epoch().count(),
                              static_cast<int>(job.placement.cores.size())};
        return info;
      });
  if (!choice || choice->victims.empty()) return std::nullopt;
  for (JobId id : choice->victims) {
    Job& victim = jobs_.at(id);
    victim.preempting = true;
    // Its cores free at once as far as reservations and backfill go.
    for (const CoreRef& core : victim.placement.cores) {
      core_end_[pool_.flat_index(core.host, core.core)] = now;
    }
  }
  ++version_;
  return Preemption{head.request.id, choice->victims};
}

bool Scheduler::preempting(JobId id) const {
  const auto it = jobs_.find(id);
  return it != jobs_.end() && it->second.running && it->second.preempting;
}

Scheduler::PoolView Scheduler::view() const {
  PoolView view;
  view.hosts.reserve(pool_.host_count());
  for (int h = 0; h < pool_.host_count(); ++h) {
    HostView host{h, pool_.layout(h).name, pool_.generation(h), pool_.health(h), {}};
    host.cores.reserve(pool_.devices(h));
    for (int c = 0; c < pool_.devices(h); ++c) host.cores.push_back(pool_.holder(h, c));
    view.hosts.push_back(std::move(host));
  }
  view.total_cores = pool_.total_cores();
  view.used_cores = pool_.used_cores();
  view.healthy_cores = pool_.healthy_cores();
  view.queued_jobs = static_cast<int>(queue_->size() + cpu_queue_.size());
  view.running_jobs = running_count_;
  return view;
}

std::vector<JobId> Scheduler::queue() const {
  std::vector<JobId> ids;
  ids.reserve(queue_->size() + cpu_queue_.size());
  for (const QueueEntry& entry : cpu_queue_) ids.push_back(entry.id);
  for (const QueueEntry& entry : *queue_) ids.push_back(entry.id);
  return ids;
}

}  // namespace tpujobs::scheduler
