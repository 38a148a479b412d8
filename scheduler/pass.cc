#include "scheduler/pass.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "scheduler/pass_hosts.h"
#include "scheduler/preemption.h"

namespace tpujobs::scheduler {

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

namespace {

using pass_internal::Choice;
using pass_internal::CoreTimes;
using pass_internal::kNever;
using pass_internal::PassHosts;

int requested_cores(const ResourceRequest& shape) {
  switch (shape.kind) {
    case RequestKind::kCpu:
      return 0;
    case RequestKind::kSingleCore:
      return 1;
    case RequestKind::kHost:
      return shape.devices_per_host;
    case RequestKind::kSlice:
      return shape.devices_per_host * shape.hosts;
  }
  return 0;
}

PassTime plus(PassTime now, std::chrono::milliseconds span) {
  return now + std::chrono::duration_cast<PassTime::duration>(span);
}

// A waiting entry's place in the pass's order, as compact keys (PassWalk::order).
struct OrderKey {
  std::uint64_t rank;   // higher priority, then higher fair share: lower
  std::uint64_t order;  // lower order: lower
  JobId id;
  std::uint32_t index;
};

// A function object, not a function: the sort and the merge inline it.
constexpr auto before = [](const OrderKey& a, const OrderKey& b) {
  if (a.rank != b.rank) return a.rank < b.rank;
  if (a.order != b.order) return a.order < b.order;
  return a.id < b.id;
};

void put_in_order(std::vector<OrderKey>& keys) {
  // A queue mostly in order is merged, not sorted. The keys that break the
  // order are taken out in one scan, and the rest are kept in order. Where
  // a key falls below the last one kept, the one out of place goes: the
  // kept ones above it when the keys after it run on from it (a few of them
  // moved there), else the larger of the two when the key still follows the
  // one kept before, else the key. Those few are sorted and merged back:
  // O(n + k log k) for the queues a leader keeps (a priority-100 job added
  // last, the last entries moved into the places of placed jobs, a job
  // requeued). A queue with more than n/16 keys out of place is sorted whole
  // (scheduler_bench's PlanPass, InOrderButTheLast, AfterEightPlaced,
  // NearlyInOrder, BigQueueRecovered: bench/RESULTS.md).
  constexpr std::size_t kMostPopped = 64;
  std::vector<OrderKey> out;
  const std::size_t most_out = keys.size() / 16;
  std::size_t kept = 0;  // compacted in place, at the front: kept + out == next
  std::size_t next = 0;
  for (; next < keys.size() && out.size() <= most_out; ++next) {
    const OrderKey key = keys[next];
    if (kept == 0 || !before(key, keys[kept - 1])) {
      keys[kept++] = key;
      continue;
    }
    const auto kept_end = keys.begin() + static_cast<std::ptrdiff_t>(kept);
    if (next + 1 < keys.size() && !before(keys[next + 1], key) &&
        before(keys[next + 1], keys[kept - 1])) {
      const auto above = std::upper_bound(keys.begin(), kept_end, key, before);
      if (kept_end - above <= static_cast<std::ptrdiff_t>(kMostPopped)) {
        out.insert(out.end(), above, kept_end);
        kept = static_cast<std::size_t>(above - keys.begin());
        keys[kept++] = key;
        continue;
      }
    }
    if (kept >= 2 && before(key, keys[kept - 2])) {
      out.push_back(key);
    } else {
      out.push_back(keys[kept - 1]);
      keys[kept - 1] = key;
    }
  }
  const auto first_out = keys.begin() + static_cast<std::ptrdiff_t>(kept);
  if (out.size() > most_out) {
    std::copy(out.begin(), out.end(), first_out);  // the keys are all there again
    std::sort(keys.begin(), keys.end(), before);
  } else if (!out.empty()) {
    std::sort(out.begin(), out.end(), before);
    std::copy(out.begin(), out.end(), first_out);
    std::inplace_merge(keys.begin(), first_out, keys.end(), before);
  }
}

// One pass: the walk of scheduler/pass.h over a working copy of the hosts.
class PassWalk {
 public:
  explicit PassWalk(const PassSnapshot& snapshot)
      : s_(snapshot), hosts_(snapshot.hosts), shape_count_(snapshot.shapes.size()) {
    for (const PassTenant& tenant : s_.tenants) tenant_used_.push_back(tenant.used_cores);
    for (const PassAgent& agent : s_.agents) cpu_slots_.push_back(agent.cpu_slots);
    for (const RunningEntry& job : s_.running) {
      running_[job.id] = &job;
      end_of_[job.id] = job.preempting ? s_.now : job.expected_end.value_or(kNever);
    }
  }

  PassPlan run() {
    order(judge_verdicts());
    started_.assign(queue_.size(), 0);
    start_cpu_jobs();
    walk();
    preempt();
    explain();
    plan_.holds_until = holds_until();
    return std::move(plan_);
  }

 private:
  const ResourceRequest& shape_of(const WaitingEntry& job) const { return s_.shapes[job.shape]; }
  bool over_quota(const WaitingEntry& job) const {
    const std::optional<int>& cap = s_.tenants[job.tenant].max_cores;
    const int cores = requested_cores(shape_of(job));
    return cap && cores > 0 && tenant_used_[job.tenant] + cores > *cap;
  }
  // The indexes of the entries that go to the queue.
  std::vector<std::uint32_t> judge_verdicts();
  // Puts those entries in the pass's order (queue_).
  void order(const std::vector<std::uint32_t>& queued);
  // The i-th job of the pass's order.
  const WaitingEntry& queued(std::size_t i) const { return s_.waiting[queue_[i]]; }
  void start_cpu_jobs();
  void walk();
  void start(const WaitingEntry& job, Choice choice, int rank);
  void reserve(const WaitingEntry& head);
  CoreTimes core_times() const;
  void preempt();
  void explain();
  Waiting reason_of(const WaitingEntry& job);
  PassTime holds_until() const;

  const PassSnapshot& s_;
  PassHosts hosts_;
  std::size_t shape_count_;
  std::vector<int> tenant_used_;
  std::vector<int> cpu_slots_;
  std::unordered_map<JobId, const RunningEntry*> running_;
  std::unordered_map<JobId, PassTime> end_of_;  // holders' expected ends (kNever: unknown)
  // The queue: the waiting entries' indexes in the pass's order, read
  // where they are. A leader keeps them near that order (it adds each new
  // job at the end of its entries), and the walk then reads them in
  // sequence. A queue far from it is read out of sequence: copying it in
  // order first cost more than the walk's misses (100,000 of mixed
  // priorities and tenants: 40-42 against 16-20 ms, scheduler_bench's
  // PlanPass, bench/RESULTS.md).
  std::vector<std::uint32_t> queue_;
  std::vector<char> started_;            // per queue index
  std::vector<std::uint32_t> reserved_;  // per host: the head's cores
  const WaitingEntry* head_ = nullptr;
  std::vector<signed char> healthy_fit_;  // per shape: fits the hosts taking work when idle
  std::vector<signed char> fits_now_;     // per shape, after the walk
  std::vector<signed char> idle_fit_;     // per shape: fits the pool's hosts idle, usable or not
  // What time may change in the plan (PassPlan::holds_until): the first
  // start_by deadline still ahead, whether a waiting job waits for a
  // heartbeat, whether an estimated start is known.
  PassTime next_deadline_ = kNever;
  bool waits_for_heartbeat_ = false;
  bool estimated_ = false;
  PassPlan plan_;
};

// The dependency verdicts of the waiting jobs, transitively in one pass: a
// job this pass ends (its dependency can never be met) counts as CANCELLED
// for the jobs that depend on it, so cancelling the root of a depends_on
// chain ends the whole chain in one pass, not one level a pass (issue 34:
// 10,000 deep took 157 s). Judged in ascending id order: a job depends only
// on jobs submitted before it. A dependency that the CANCELLED would satisfy
// (failed, finished) still waits: the job is queued in the next pass, once
// the end is stored.
// Returned by the waiting entry's index, ascending: only the jobs with
// dependencies, so a long queue without them costs nothing here.
std::vector<std::pair<std::uint32_t, DependencyCheck>> judge_dependencies(const PassSnapshot& s) {
  std::vector<std::pair<std::uint32_t, DependencyCheck>> checks;
  std::vector<std::uint32_t> by_id;
  for (std::uint32_t i = 0; i < s.waiting.size(); ++i) {
    if (s.waiting[i].dependencies >= 0) by_id.push_back(i);
  }
  std::sort(by_id.begin(), by_id.end(),
            [&](std::uint32_t a, std::uint32_t b) { return s.waiting[a].id < s.waiting[b].id; });
  std::unordered_set<JobId> ending;  // ended by this pass
  auto stored = [&](std::int64_t id) -> std::optional<base::JobState> {
    const auto it = s.dependency_states.find(id);
    return it == s.dependency_states.end() ? std::nullopt : std::optional(it->second);
  };
  auto this_pass = [&](std::int64_t id) -> std::optional<base::JobState> {
    return ending.contains(id) ? std::optional(base::JobState::kCancelled) : stored(id);
  };
  for (std::uint32_t i : by_id) {
    const WaitingEntry& job = s.waiting[i];
    if (job.start_deadline && s.now >= *job.start_deadline) {
      ending.insert(job.id);  // ends CANCELLED, StartDeadlineExceeded
      continue;
    }
    const std::vector<Dependency>& list = s.dependencies[job.dependencies];
    DependencyCheck check = check_dependencies(list, this_pass);
    if (check.verdict == DependencyVerdict::kSatisfied &&
        std::any_of(list.begin(), list.end(),
                    [&](const Dependency& d) { return ending.contains(d.job); })) {
      check = check_dependencies(list, stored);  // waits until the end is stored
    }
    if (check.verdict == DependencyVerdict::kNeverSatisfied) ending.insert(job.id);
    checks.emplace_back(i, std::move(check));
  }
  std::sort(checks.begin(), checks.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return checks;
}

std::vector<std::uint32_t> PassWalk::judge_verdicts() {
  std::vector<std::uint32_t> queue;
  queue.reserve(s_.waiting.size());
  std::vector<std::pair<std::uint32_t, DependencyCheck>> checks = judge_dependencies(s_);
  auto next_check = checks.begin();
  for (std::uint32_t i = 0; i < s_.waiting.size(); ++i) {
    const WaitingEntry& job = s_.waiting[i];
    if (job.start_deadline && s_.now >= *job.start_deadline) {
      plan_.unstartable.push_back({job.id, Unstartable::kStartDeadlineExceeded, ""});
      continue;
    }
    if (job.start_deadline) next_deadline_ = std::min(next_deadline_, *job.start_deadline);
    if (job.heard_after) waits_for_heartbeat_ = true;
    while (next_check != checks.end() && next_check->first < i) ++next_check;
    if (next_check != checks.end() && next_check->first == i) {
      DependencyCheck& check = next_check->second;
      if (check.verdict == DependencyVerdict::kNeverSatisfied) {
        plan_.unstartable.push_back(
            {job.id, Unstartable::kDependencyNeverSatisfied, std::move(check.detail)});
        continue;
      }
      if (check.verdict == DependencyVerdict::kWaiting) {
        plan_.held.push_back({job.id, i, std::move(check.detail)});
        continue;
      }
    }
    queue.push_back(i);
  }
  return queue;
}

void PassWalk::order(const std::vector<std::uint32_t>& queued) {
  // Sorted as compact keys: comparing through pointers into the snapshot
  // misses the cache at every step (bench/scheduler/scheduler_bench.cc).
  // Priority and fair share are packed into one integer, the tenants
  // ranked by their factor, so that most comparisons are of two integers;
  // and a queue already in order is only checked.
  std::vector<std::uint32_t> tenants(s_.tenants.size());
  for (std::uint32_t t = 0; t < tenants.size(); ++t) tenants[t] = t;
  std::sort(tenants.begin(), tenants.end(), [&](std::uint32_t a, std::uint32_t b) {
    return s_.tenants[a].fair_share > s_.tenants[b].fair_share;
  });
  std::vector<std::uint32_t> share_rank(tenants.size(), 0);  // equal factors, equal ranks
  for (std::size_t i = 1; i < tenants.size(); ++i) {
    const bool same = !(s_.tenants[tenants[i - 1]].fair_share > s_.tenants[tenants[i]].fair_share);
    share_rank[tenants[i]] = share_rank[tenants[i - 1]] + (same ? 0 : 1);
  }
  // Signed as unsigned, in the same order.
  auto biased32 = [](int v) { return static_cast<std::uint32_t>(v) ^ 0x80000000U; };
  auto biased64 = [](std::int64_t v) { return static_cast<std::uint64_t>(v) ^ (1ULL << 63); };
  std::vector<OrderKey> keys;
  keys.reserve(queued.size());
  for (std::uint32_t i : queued) {
    const WaitingEntry& job = s_.waiting[i];
    const std::uint64_t rank =
        (std::uint64_t{~biased32(job.priority)} << 32) | share_rank[job.tenant];
    keys.push_back({rank, biased64(job.order), job.id, i});
  }
  put_in_order(keys);
  queue_.reserve(keys.size());
  for (const OrderKey& key : keys) queue_.push_back(key.index);
}

void PassWalk::start_cpu_jobs() {
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const WaitingEntry& job = queued(i);
    if (job.shape < 0 || shape_of(job).kind != RequestKind::kCpu) continue;
    // The alive agent with the most slots left (the first among equals).
    int emptiest = -1;
    for (std::size_t a = 0; a < cpu_slots_.size(); ++a) {
      if (!s_.agents[a].alive || cpu_slots_[a] <= 0) continue;
      if (emptiest < 0 || cpu_slots_[a] > cpu_slots_[emptiest]) emptiest = static_cast<int>(a);
    }
    if (emptiest < 0) continue;
    --cpu_slots_[emptiest];
    PlannedStart start;
    start.job = job.id;
    start.agent = emptiest;
    start.accelerator_type = "cpu";
    start.rank = static_cast<int>(i) + 1;
    plan_.starts.push_back(std::move(start));
    started_[i] = 1;
  }
}

void PassWalk::start(const WaitingEntry& job, Choice choice, int rank) {
  const ResourceRequest& shape = shape_of(job);
  const Generation generation = s_.hosts[choice.hosts.front()].generation;
  PlannedStart start;
  start.job = job.id;
  start.kind = shape.kind;
  start.generation = generation;
  start.agent =
      choice.parts.empty() ? s_.hosts[choice.hosts.front()].agent : choice.parts.front().first;
  start.parts = choice.parts;
  if (shape.kind == RequestKind::kSingleCore) {
    start.accelerator_type = std::string(facts(generation).name);
  } else {
    const int size =
        static_cast<int>(choice.cores.size()) * facts(generation).name_units_per_device;
    start.accelerator_type = SliceType{generation, size}.name();
  }
  hosts_.take(choice, job.id);
  tenant_used_[job.tenant] += static_cast<int>(choice.cores.size());
  end_of_[job.id] = job.timeout ? plus(s_.now, *job.timeout) : kNever;
  start.hosts = std::move(choice.hosts);
  start.cores = std::move(choice.cores);
  start.rank = rank;
  plan_.starts.push_back(std::move(start));
}

CoreTimes PassWalk::core_times() const {
  CoreTimes times(s_.hosts, s_.now);
  for (int h = 0; h < hosts_.count(); ++h) {
    for (int c = 0; c < hosts_.devices(h); ++c) {
      const JobId holder = hosts_.holder(h, c);
      if (holder == 0) continue;
      const auto end = end_of_.find(holder);
      times.put(h, c, end == end_of_.end() ? kNever : std::max(end->second, s_.now));
    }
    times.refresh(h);
  }
  return times;
}

void PassWalk::reserve(const WaitingEntry& head) {
  head_ = &head;
  reserved_.assign(hosts_.count(), 0);
  PassReservation reservation{head.id, std::nullopt, {}};
  std::optional<Choice> earliest = hosts_.find_earliest(shape_of(head), core_times());
  if (earliest) {
    if (earliest->ready != kNever) reservation.start = earliest->ready;
    for (const CoreRef& core : earliest->cores)
      reserved_[core.host] |= std::uint32_t{1} << core.core;
    reservation.cores = std::move(earliest->cores);
  }
  plan_.reservation = std::move(reservation);
}

// Every job that may start now, in order; the first that cannot is the head
// (scheduler/pass.h). Per shape, "does not fit" stays true once found (cores
// are only taken during a walk), so each shape is searched O(starts) times;
// a shape is *closed* once no more of its jobs can start, and the walk stops
// when every shape is.
void PassWalk::walk() {
  healthy_fit_.assign(shape_count_, -1);
  std::vector<int> waiting(shape_count_, 0);
  std::vector<std::optional<std::chrono::milliseconds>> shortest(shape_count_);
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const WaitingEntry& job = queued(i);
    if (started_[i] || job.shape < 0 || shape_of(job).kind == RequestKind::kCpu) continue;
    ++waiting[job.shape];
    if (job.timeout)
      shortest[job.shape] = std::min(shortest[job.shape].value_or(*job.timeout), *job.timeout);
  }
  std::vector<char> no_fit(shape_count_, 0), no_fit_outside(shape_count_, 0);
  std::vector<char> closed(shape_count_, 0);
  int open = 0;
  for (std::size_t s = 0; s < shape_count_; ++s) {
    if (waiting[s] > 0) {
      ++open;
    } else {
      closed[s] = 1;
    }
  }
  auto close = [&](int s) {
    if (closed[s]) return;
    closed[s] = 1;
    --open;
  };
  const std::vector<std::uint32_t> avoid_nothing;
  for (std::size_t i = 0; i < queue_.size() && open > 0; ++i) {
    if (head_ && hosts_.free_takers() == 0) break;
    const WaitingEntry& job = queued(i);
    if (started_[i] || job.shape < 0 || shape_of(job).kind == RequestKind::kCpu) continue;
    const int s = job.shape;
    const ResourceRequest& shape = shape_of(job);
    // A job requeued after a failure fits fewer hosts than its shape does:
    // what it finds says nothing of the shape.
    const bool own = job.heard_after.has_value();
    if (healthy_fit_[s] < 0) {
      healthy_fit_[s] = hosts_.fits_idle(shape, true) ? 1 : 0;
      if (!healthy_fit_[s]) close(s);
    }
    std::optional<Choice> choice;
    if (!healthy_fit_[s] || over_quota(job)) {
      // Waits without holding anything back.
    } else if (!head_) {
      if (!no_fit[s] || own) choice = hosts_.find_free(shape, avoid_nothing, job.heard_after);
      if (!choice && !own) no_fit[s] = 1;
      if (!choice) {
        if (!own) close(s);
        reserve(job);
      }
    } else if (!closed[s]) {
      const std::optional<PassTime>& start = plan_.reservation->start;
      if (!no_fit_outside[s] || own) {
        choice = hosts_.find_free(shape, reserved_, job.heard_after);
        if (!choice && !own) {
          no_fit_outside[s] = 1;
          if (!start || !shortest[s] || plus(s_.now, *shortest[s]) > *start) close(s);
        }
      }
      if (!choice && (!no_fit[s] || own) && start && job.timeout &&
          plus(s_.now, *job.timeout) <= *start) {
        choice = hosts_.find_free(shape, avoid_nothing, job.heard_after);
        if (!choice && !own) {
          no_fit[s] = 1;
          close(s);
        }
      }
    }
    if (!choice) continue;
    start(job, std::move(*choice), static_cast<int>(i) + 1);
    started_[i] = 1;
    if (--waiting[s] == 0) close(s);
  }
}

void PassWalk::preempt() {
  if (!head_ || !plan_.reservation) return;
  const std::optional<PassTime>& start = plan_.reservation->start;
  if (start && *start <= plus(s_.now, s_.options.preemption_min_wait)) return;
  std::vector<std::vector<std::optional<std::int64_t>>> holders;
  // Where the head could not start now: no new victims on a host whose
  // agent heartbeats late, and none yet where the cheapest victims are on a
  // host not heard from since the head's own failure.
  std::vector<PlaceStart> starts;
  for (const std::vector<CoreRef>& place : hosts_.places(shape_of(*head_))) {
    const auto all_take = [&](std::optional<PassTime> heard_after) {
      return std::all_of(place.begin(), place.end(), [&](const CoreRef& core) {
        return hosts_.takes_work(core.host, heard_after);
      });
    };
    starts.push_back(!all_take(std::nullopt)         ? PlaceStart::kWaitOnly
                     : !all_take(head_->heard_after) ? PlaceStart::kSoon
                                                     : PlaceStart::kNow);
    std::vector<std::optional<std::int64_t>>& of_place = holders.emplace_back();
    for (const CoreRef& core : place) {
      const JobId holder = hosts_.holder(core.host, core.core);
      of_place.push_back(holder == 0 ? std::nullopt : std::optional<std::int64_t>(holder));
    }
  }
  std::map<JobId, int> cores_of;
  for (int h = 0; h < hosts_.count(); ++h) {
    for (int c = 0; c < hosts_.devices(h); ++c) ++cores_of[hosts_.holder(h, c)];
  }
  const std::optional<VictimChoice> choice = choose_victims(
      head_->priority, holders,
      [&](std::int64_t id) {
        std::optional<RunningJobInfo> info;
        const auto it = running_.find(id);
        if (it == running_.end()) return info;  // started by this pass: never a victim
        const RunningEntry& job = *it->second;
        info = RunningJobInfo{id,          job.priority, job.preemptible, job.preempting,
                              job.started, cores_of[id]};
        return info;
      },
      starts);
  if (!choice || choice->victims.empty()) return;
  plan_.preemption = Preemption{head_->id, choice->victims};
}

Waiting PassWalk::reason_of(const WaitingEntry& job) {
  Waiting waiting{job.id, 0, PendingReason::kResources, 0, std::nullopt, ""};
  if (job.shape < 0) {
    waiting.reason = PendingReason::kHostUnhealthy;
    waiting.detail = "no registered agent has hosts of its kind";
    return waiting;
  }
  const ResourceRequest& shape = shape_of(job);
  if (shape.kind == RequestKind::kCpu) {
    if (std::none_of(s_.agents.begin(), s_.agents.end(),
                     [](const PassAgent& a) { return a.alive; })) {
      waiting.reason = PendingReason::kHostUnhealthy;
      waiting.detail = "no agent is alive";
    }
    return waiting;
  }
  if (over_quota(job)) {
    waiting.reason = PendingReason::kQuota;
    return waiting;
  }
  if (healthy_fit_[job.shape] < 0) healthy_fit_[job.shape] = hosts_.fits_idle(shape, true) ? 1 : 0;
  if (!healthy_fit_[job.shape]) {
    waiting.reason = PendingReason::kHostUnhealthy;
    if (idle_fit_[job.shape] < 0) idle_fit_[job.shape] = hosts_.fits_idle(shape, false) ? 1 : 0;
    waiting.detail = idle_fit_[job.shape]
                         ? "its hosts belong to a lost agent or are drained or failed"
                         : "no agent with hosts of its kind is registered";
    return waiting;
  }
  if (fits_now_[job.shape] < 0) {
    fits_now_[job.shape] = hosts_.find_free(shape, {}, std::nullopt) ? 1 : 0;
  }
  const bool held_back = head_ && head_ != &job && fits_now_[job.shape];
  waiting.reason = held_back ? PendingReason::kPriority : PendingReason::kResources;
  if (job.preempted) waiting.reason = PendingReason::kPreempted;
  return waiting;
}

// Reasons and positions of the jobs left waiting, and estimated starts for
// the first estimate_horizon of them.
void PassWalk::explain() {
  fits_now_.assign(shape_count_, -1);
  idle_fit_.assign(shape_count_, -1);
  plan_.waiting.reserve(queue_.size());
  CoreTimes times = core_times();
  std::vector<char> start_unknown(shape_count_, 0);
  int planned = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (started_[i]) continue;
    const WaitingEntry& job = queued(i);
    Waiting waiting = reason_of(job);
    waiting.entry = queue_[i];
    waiting.queue_position = static_cast<int>(plan_.waiting.size()) + 1;
    const bool tpu = job.shape >= 0 && shape_of(job).kind != RequestKind::kCpu;
    const bool plannable =
        waiting.reason != PendingReason::kQuota && waiting.reason != PendingReason::kHostUnhealthy;
    if (tpu && planned++ < s_.options.estimate_horizon && plannable && !start_unknown[job.shape]) {
      // Planning only makes cores free later: a shape with no known start
      // has none for any later job either.
      const std::optional<Choice> choice = hosts_.find_earliest(shape_of(job), times);
      if (!choice || choice->ready == kNever) {
        start_unknown[job.shape] = 1;
      } else {
        waiting.estimated_start = choice->ready;
        estimated_ = true;
        const PassTime end = job.timeout ? plus(choice->ready, *job.timeout) : kNever;
        for (const CoreRef& core : choice->cores) times.put(core.host, core.core, end);
        for (int host : choice->hosts) times.refresh(host);
      }
    }
    plan_.waiting.push_back(std::move(waiting));
  }
}

PassTime PassWalk::holds_until() const {
  const bool acts = !plan_.starts.empty() || plan_.preemption || !plan_.unstartable.empty();
  const bool reserved_start = plan_.reservation && plan_.reservation->start;
  const bool ends_known =
      std::any_of(s_.running.begin(), s_.running.end(),
                  [](const RunningEntry& r) { return r.preempting || r.expected_end; });
  if (acts || reserved_start || ends_known || estimated_ || waits_for_heartbeat_) return s_.now;
  return next_deadline_;
}

bool same_host(const PassHost& a, const PassHost& b) {
  return a.agent == b.agent && a.generation == b.generation && a.usable == b.usable &&
         a.punctual == b.punctual && a.in_pool == b.in_pool && a.cores == b.cores;
}

}  // namespace

PassPlan plan_pass(const PassSnapshot& snapshot) { return PassWalk(snapshot).run(); }

bool same_surroundings(const PassSnapshot& a, const PassSnapshot& b) {
  return a.agents == b.agents &&
         std::equal(a.hosts.begin(), a.hosts.end(), b.hosts.begin(), b.hosts.end(), same_host) &&
         a.tenants == b.tenants && a.running == b.running &&
         a.dependency_states == b.dependency_states && a.options == b.options;
}

bool can_ever_fit(const std::vector<PassHost>& hosts, const ResourceRequest& shape) {
  return PassHosts(hosts).fits_idle(shape, false);
}

}  // namespace tpujobs::scheduler
