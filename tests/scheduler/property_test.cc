// Randomized events against the scheduler, checking after every one that
// its decisions are sound. The checks re-derive everything from the pool
// layout and the test's own model with brute force, independently of the
// scheduler's indexes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/dependencies.h"
#include "scheduler/scheduler.h"

namespace tpujobs::scheduler {

// For readable gtest failures.
void PrintTo(PendingReason reason, std::ostream* out) { *out << pending_reason_name(reason); }

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kLeaseTimeout = seconds(30);
constexpr milliseconds kPreemptionMinWait = seconds(60);

// Events per run; fewer under the (Debug) sanitizer build, which is ~40x slower
// (enough that every pending reason, Preempted included, still shows up).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kEvents = 2000;
#else
constexpr int kEvents = 3000;
#endif

struct RunningJob {
  JobRequest request;
  Placement placement;
  Clock::time_point last_heartbeat;
  bool stuck;  // stops heartbeating, so its lease must be reclaimed
};

class PropertyRun {
 public:
  PropertyRun(std::string_view pool, std::uint64_t seed)
      : layout_(*parse_pool(pool)),
        scheduler_(layout_, SchedulerOptions{kLeaseTimeout, kPreemptionMinWait}),
        random_(seed),
        health_(layout_.hosts.size(), HostHealth::kHealthy) {
    for (std::size_t h = 0; h < layout_.hosts.size(); ++h) {
      run_start_.push_back(h > 0 && layout_.hosts[h].generation == layout_.hosts[h - 1].generation
                               ? run_start_[h - 1]
                               : static_cast<int>(h));
    }
  }

  void run(int events) {
    for (int event = 0; event < events && !::testing::Test::HasFailure(); ++event) {
      step();
      check_allocations("after event " + std::to_string(event) + " (" + last_event_ + ")");
      const std::vector<Placement> started = scheduler_.schedule(now_);
      for (const Placement& placement : started) record_start(placement);
      count_backfills(started);
      check_allocations("after schedule " + std::to_string(event));
      check_waiting("after schedule " + std::to_string(event) + " (" + last_event_ + ")");
      check_preemption("after schedule " + std::to_string(event) + " (" + last_event_ + ")");
    }
    EXPECT_GT(started_, events / 10) << "the run should exercise placement";
    EXPECT_GT(backfilled_, 0) << "no job ever started ahead of a blocked higher-priority one";
    EXPECT_GT(preempted_, 0) << "no job was ever preempted";
    for (PendingReason reason :
         {PendingReason::kResources, PendingReason::kPriority, PendingReason::kHostUnhealthy,
          PendingReason::kQuota, PendingReason::kPreempted}) {
      EXPECT_GT(seen_[reason], 0) << "no waiting job was ever " << pending_reason_name(reason);
    }
  }

 private:
  int pick(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  int devices(int host) const { return facts(layout_.hosts[host].generation).devices_per_host; }
  int host_count() const { return static_cast<int>(layout_.hosts.size()); }

  ResourceRequest random_request() {
    ResourceRequest request;
    const Generation generation = layout_.hosts[pick(host_count())].generation;
    const GenerationFacts& f = facts(generation);
    const int kind = pick(100);
    if (kind < 5) return request;  // cpu
    request.generation = generation;
    if (kind < 50) {
      request.kind = RequestKind::kSingleCore;
      request.devices_per_host = 1;
      request.hosts = 1;
      if (chance(20)) request.generation.reset();
      if (chance(20)) request.pinned_core = pick(f.devices_per_host);
    } else if (kind < 75) {
      request.kind = RequestKind::kHost;
      request.devices_per_host = f.devices_per_host;
      request.hosts = 1;
    } else {
      request.kind = RequestKind::kSlice;
      request.devices_per_host = f.devices_per_host;
      // Multi-host slice sizes of the generation, up to 8 hosts.
      std::vector<int> hosts;
      for (int size : f.slice_sizes) {
        const int n = SliceType{generation, size}.hosts();
        if (n > 1 && n <= 8) hosts.push_back(n);
      }
      request.hosts = hosts[pick(static_cast<int>(hosts.size()))];
    }
    return request;
  }

  void submit(JobRequest request) {
    ASSERT_TRUE(scheduler_.submit(request)) << request.id;
    waiting_.emplace(request.id, std::move(request));
  }

  void submit_new() {
    JobRequest request;
    request.id = ++last_id_;
    request.submit_order = ++last_order_;
    request.priority = pick(4);
    request.tenant = std::string(1, static_cast<char>('a' + pick(3)));
    request.request = random_request();
    if (chance(70)) request.expected_runtime = seconds(1 + pick(600));
    request.preemptible = chance(80);
    // The service rejects what can never fit.
    if (!scheduler_.can_ever_fit(request.request)) {
      last_event_ = "submit rejected";
      return;
    }
    last_event_ = "submit " + std::to_string(request.id);
    submit(std::move(request));
  }

  void record_start(const Placement& placement) {
    const auto it = waiting_.find(placement.job);
    ASSERT_NE(it, waiting_.end()) << "started a job that was not waiting: " << placement.job;
    for (int host : placement.hosts) {
      EXPECT_EQ(HostHealth::kHealthy, health_[host])
          << "job " << placement.job << " placed on unhealthy host " << host;
    }
    running_.emplace(placement.job, RunningJob{it->second, placement, now_, chance(3)});
    waiting_.erase(it);
    ++started_;
  }

  // Started jobs that overtook a job still blocked for resources.
  void count_backfills(const std::vector<Placement>& started) {
    const std::optional<Reservation> reservation = scheduler_.reservation();
    if (!reservation || !waiting_.contains(reservation->job)) return;
    const JobRequest& head = waiting_.at(reservation->job);
    for (const Placement& placement : started) {
      const JobRequest& job = running_.at(placement.job).request;
      if (std::tuple(-job.priority, job.submit_order) >
          std::tuple(-head.priority, head.submit_order)) {
        ++backfilled_;
      }
    }
  }

  void end_running(JobId id) {
    running_.erase(id);
    preempting_.erase(id);
    end(id);
  }

  // After a pass: the head may preempt. Its victims are running jobs of
  // strictly lower priority, preemptible, not being preempted already, and
  // with the cores already freeing they make a place where the head fits;
  // and it preempts only when its reserved start is unknown or not soon.
  void check_preemption(const std::string& when) {
    SCOPED_TRACE(when);
    const std::optional<Reservation> reservation = scheduler_.reservation();
    const std::optional<Preemption> preemption = scheduler_.preempt(now_);
    if (!preemption) return;
    ASSERT_TRUE(reservation) << "a job preempted without being the head";
    ASSERT_EQ(reservation->job, preemption->preemptor);
    ASSERT_TRUE(waiting_.contains(preemption->preemptor));
    const JobRequest& head = waiting_.at(preemption->preemptor);
    EXPECT_TRUE(!reservation->start || *reservation->start > now_ + kPreemptionMinWait)
        << "job " << head.id << " preempted although its reservation starts soon";
    ASSERT_FALSE(preemption->victims.empty());
    std::set<JobId> freed = preempting_;
    for (JobId id : preemption->victims) {
      ASSERT_TRUE(running_.contains(id)) << "victim " << id << " is not running";
      const JobRequest& victim = running_.at(id).request;
      EXPECT_LT(victim.priority, head.priority)
          << "job " << id << " preempted by job " << head.id << " of no higher priority";
      EXPECT_TRUE(victim.preemptible) << "non-preemptible job " << id << " preempted";
      EXPECT_FALSE(preempting_.contains(id)) << "job " << id << " preempted twice";
      EXPECT_TRUE(scheduler_.preempting(id));
      freed.insert(id);
    }
    const Scheduler::PoolView view = scheduler_.view();
    bool fits = false;
    for (const std::vector<CoreRef>& cores : candidates(head.request, view, /*idle=*/true)) {
      fits = fits || std::all_of(cores.begin(), cores.end(), [&](const CoreRef& core) {
               const std::optional<JobId>& holder = view.hosts[core.host].cores[core.core];
               return !holder || freed.contains(*holder);
             });
    }
    EXPECT_TRUE(fits) << "job " << head.id << "'s victims do not free a place where it fits";
    for (JobId id : preemption->victims) preempting_.insert(id);
    ++preempted_;
  }

  // A preempted job stops at its checkpoint and waits again, keeping its
  // place in line.
  void checkpoint_preempted() {
    if (preempting_.empty()) return;
    const JobId id = *std::next(preempting_.begin(), pick(static_cast<int>(preempting_.size())));
    last_event_ = "preempted " + std::to_string(id) + " stops";
    JobRequest request = running_.at(id).request;
    scheduler_.finish(id);
    end_running(id);
    ended_.erase(id);
    request.preempted = true;
    submit(std::move(request));
  }

  void end(JobId id) {
    ended_.insert(id);
    recently_ended_.push_back(id);
  }

  JobId random_key_of(const std::set<JobId>& ids) {
    // Ids are dense enough that probing from a random start is cheap.
    const JobId probe = *ids.begin() + pick(static_cast<int>(*ids.rbegin() - *ids.begin() + 1));
    return *ids.lower_bound(probe);
  }

  template <typename Map>
  JobId random_key(const Map& map) {
    auto it = map.begin();
    std::advance(it, pick(static_cast<int>(map.size())));
    return it->first;
  }

  void step() {
    const int roll = pick(100);
    if (roll < 30) {
      if (waiting_.size() < 60) submit_new();
    } else if (roll < 45) {
      if (running_.empty()) return;
      const JobId id = random_key(running_);
      last_event_ = "finish " + std::to_string(id);
      scheduler_.finish(id);
      end_running(id);
    } else if (roll < 53) {
      last_event_ = "cancel";
      if (!waiting_.empty() && chance(50)) {
        const JobId id = random_key(waiting_);
        EXPECT_TRUE(scheduler_.cancel(id));
        waiting_.erase(id);
        end(id);
      } else if (!running_.empty()) {
        const JobId id = random_key(running_);
        EXPECT_TRUE(scheduler_.cancel(id));
        end_running(id);
      }
      if (!ended_.empty()) {
        EXPECT_FALSE(scheduler_.cancel(*ended_.begin()));
      }
    } else if (roll < 55) {
      fail_host(pick(host_count()));
    } else if (roll < 63) {
      std::vector<int> unhealthy;
      for (int h = 0; h < host_count(); ++h) {
        if (health_[h] != HostHealth::kHealthy) unhealthy.push_back(h);
      }
      const int host = unhealthy.empty() ? pick(host_count())
                                         : unhealthy[pick(static_cast<int>(unhealthy.size()))];
      last_event_ = "recover " + std::to_string(host);
      EXPECT_TRUE(scheduler_.set_host_health(host, HostHealth::kHealthy).empty());
      health_[host] = HostHealth::kHealthy;
    } else if (roll < 65) {
      const int host = pick(host_count());
      last_event_ = "drain " + std::to_string(host);
      EXPECT_TRUE(scheduler_.set_host_health(host, HostHealth::kDraining).empty());
      health_[host] = HostHealth::kDraining;
    } else if (roll < 75) {
      tick();
    } else if (roll < 83) {
      checkpoint_preempted();
    } else if (roll < 85) {
      const std::string tenant(1, static_cast<char>('a' + pick(3)));
      last_event_ = "fair share " + tenant;
      const double factor = (1 + pick(4)) / 4.0;
      scheduler_.set_fair_share(tenant, factor);
      fair_share_[tenant] = factor;
    } else if (roll < 97) {
      reclaim();
    } else {
      const std::string tenant(1, static_cast<char>('a' + pick(3)));
      const int choice = pick(6);
      const std::optional<int> quota =
          choice < 3 ? std::nullopt : std::optional<int>(16 << (choice - 3));
      last_event_ = "quota " + tenant;
      scheduler_.set_tenant_quota(tenant, quota);
      quota_[tenant] = quota;
    }
  }

  void fail_host(int host) {
    last_event_ = "fail " + std::to_string(host);
    std::vector<JobId> expected;
    for (const auto& [id, job] : running_) {
      for (const CoreRef& core : job.placement.cores) {
        if (core.host == host) {
          expected.push_back(id);
          break;
        }
      }
    }
    const std::vector<JobId> evicted = scheduler_.set_host_health(host, HostHealth::kFailed);
    EXPECT_EQ(expected, evicted);
    health_[host] = HostHealth::kFailed;
    for (JobId id : evicted) {
      JobRequest request = running_.at(id).request;
      end_running(id);
      if (chance(50)) {  // retried from its checkpoint, keeping its place in line
        ended_.erase(id);
        submit(std::move(request));
      }
    }
  }

  void tick() {
    now_ += milliseconds(pick(20000));
    last_event_ = "tick";
    for (auto& [id, job] : running_) {
      if (!job.stuck) {
        scheduler_.heartbeat(id, now_);
        job.last_heartbeat = now_;
      }
    }
  }

  void reclaim() {
    now_ += milliseconds(pick(20000));
    last_event_ = "reclaim";
    std::vector<JobId> expected;
    for (const auto& [id, job] : running_) {
      if (now_ - job.last_heartbeat > kLeaseTimeout) expected.push_back(id);
    }
    EXPECT_EQ(expected, scheduler_.reclaim_expired(now_));
    for (JobId id : expected) end_running(id);
  }

  // Generation and device count rules shared by every kind.
  bool host_matches(const ResourceRequest& request, int host) const {
    const Generation generation = layout_.hosts[host].generation;
    if (request.generation && *request.generation != generation) return false;
    if (request.kind == RequestKind::kSingleCore) {
      return !request.pinned_core || *request.pinned_core < devices(host);
    }
    return request.devices_per_host == devices(host);
  }

  // Every placement `request` could have in the pool as it is (or idle),
  // on healthy hosts, as the list of cores of each.
  std::vector<std::vector<CoreRef>> candidates(const ResourceRequest& request,
                                               const Scheduler::PoolView& view, bool idle) const {
    std::vector<std::vector<CoreRef>> out;
    auto usable = [&](int host, int core) {
      return health_[host] == HostHealth::kHealthy &&
             (idle || !view.hosts[host].cores[core].has_value());
    };
    if (request.kind == RequestKind::kSingleCore) {
      for (int h = 0; h < host_count(); ++h) {
        if (!host_matches(request, h)) continue;
        for (int c = 0; c < devices(h); ++c) {
          if (request.pinned_core && c != *request.pinned_core) continue;
          if (usable(h, c)) out.push_back({{h, c}});
        }
      }
      return out;
    }
    const int n = request.kind == RequestKind::kHost ? 1 : request.hosts;
    for (int first = 0; first + n <= host_count(); ++first) {
      if ((first - run_start_[first]) % n != 0) continue;
      std::vector<CoreRef> cores;
      bool ok = true;
      for (int h = first; h < first + n && ok; ++h) {
        ok = run_start_[h] == run_start_[first] && host_matches(request, h);
        for (int c = 0; ok && c < devices(h); ++c) {
          ok = usable(h, c);
          cores.push_back({h, c});
        }
      }
      if (ok) out.push_back(std::move(cores));
    }
    return out;
  }

  int cores_of(const ResourceRequest& request) const {
    switch (request.kind) {
      case RequestKind::kCpu:
        return 0;
      case RequestKind::kSingleCore:
        return 1;
      case RequestKind::kHost:
        return request.devices_per_host;
      case RequestKind::kSlice:
        return request.devices_per_host * request.hosts;
    }
    return 0;
  }

  bool over_quota(const JobRequest& job) const {
    const auto quota = quota_.find(job.tenant);
    if (quota == quota_.end() || !quota->second || cores_of(job.request) == 0) return false;
    int used = 0;
    for (const auto& [id, running] : running_) {
      if (running.request.tenant == job.tenant) {
        used += static_cast<int>(running.placement.cores.size());
      }
    }
    return used + cores_of(job.request) > *quota->second;
  }

  // No core in two jobs, every placement a whole aligned slice of one
  // generation, nothing held by an ended job, the pool view agrees.
  void check_allocations(const std::string& when) {
    SCOPED_TRACE(when);
    const Scheduler::PoolView view = scheduler_.view();
    std::vector<std::vector<std::optional<JobId>>> owner(host_count());
    for (int h = 0; h < host_count(); ++h) owner[h].resize(devices(h));
    int cpu_jobs = 0;
    for (const auto& [id, job] : running_) {
      const std::optional<Placement> placement = scheduler_.placement(id);
      ASSERT_TRUE(placement) << "job " << id << " should be running";
      ASSERT_EQ(job.placement.cores, placement->cores) << "job " << id << " moved";
      const ResourceRequest& request = job.request.request;
      if (request.kind == RequestKind::kCpu) {
        EXPECT_TRUE(placement->cores.empty());
        ++cpu_jobs;
        continue;
      }
      for (const CoreRef& core : placement->cores) {
        std::optional<JobId>& slot = owner[core.host][core.core];
        ASSERT_FALSE(slot.has_value())
            << "core " << core.host << "." << core.core << " is in two jobs";
        slot = id;
        EXPECT_NE(HostHealth::kFailed, health_[core.host]) << "job " << id << " on failed host";
        EXPECT_TRUE(host_matches(request, core.host)) << "job " << id << " on wrong generation";
      }
      if (request.kind == RequestKind::kSingleCore) {
        ASSERT_EQ(1u, placement->cores.size());
        if (request.pinned_core) {
          EXPECT_EQ(*request.pinned_core, placement->cores[0].core);
        }
        continue;
      }
      const int n = request.kind == RequestKind::kHost ? 1 : request.hosts;
      ASSERT_EQ(static_cast<std::size_t>(n), placement->hosts.size()) << "job " << id;
      const int first = placement->hosts.front();
      EXPECT_EQ(0, (first - run_start_[first]) % n) << "job " << id << " slice is not aligned";
      std::vector<CoreRef> whole;
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(first + i, placement->hosts[i]) << "job " << id << " hosts not consecutive";
        EXPECT_EQ(run_start_[first], run_start_[first + i]) << "job " << id << " spans runs";
        for (int c = 0; c < devices(first + i); ++c) whole.push_back({first + i, c});
      }
      EXPECT_EQ(whole, placement->cores) << "job " << id << " does not hold whole hosts";
    }
    int used = 0;
    for (const Scheduler::HostView& host : view.hosts) {
      EXPECT_EQ(health_[host.index], host.health);
      for (int c = 0; c < static_cast<int>(host.cores.size()); ++c) {
        EXPECT_EQ(owner[host.index][c], host.cores[c]) << "core " << host.index << "." << c;
        used += host.cores[c] ? 1 : 0;
      }
    }
    EXPECT_EQ(used, view.used_cores);
    EXPECT_EQ(static_cast<int>(running_.size()), view.running_jobs);
    EXPECT_EQ(static_cast<int>(waiting_.size()), view.queued_jobs);
    (void)cpu_jobs;
    // Every job ended by this event, and a few older ones.
    std::vector<JobId> ended = recently_ended_;
    recently_ended_.clear();
    for (int i = 0; i < 3 && !ended_.empty(); ++i) ended.push_back(random_key_of(ended_));
    for (JobId id : ended) {
      if (!ended_.contains(id)) continue;  // resubmitted after a host failure
      EXPECT_FALSE(scheduler_.placement(id).has_value()) << "ended job " << id << " holds cores";
      EXPECT_FALSE(scheduler_.pending(id).has_value()) << "ended job " << id << " is waiting";
    }
  }

  // No waiting job could start now without delaying the head's reservation;
  // reasons and positions say why.
  void check_waiting(const std::string& when) {
    SCOPED_TRACE(when);
    const Scheduler::PoolView view = scheduler_.view();
    std::vector<const JobRequest*> order;
    for (const auto& [id, job] : waiting_) order.push_back(&job);
    std::sort(order.begin(), order.end(), [&](const JobRequest* a, const JobRequest* b) {
      return std::tuple(-a->priority, -fair_share(a->tenant), a->submit_order, a->id) <
             std::tuple(-b->priority, -fair_share(b->tenant), b->submit_order, b->id);
    });
    std::vector<JobId> expected_queue;
    for (const JobRequest* job : order) expected_queue.push_back(job->id);
    ASSERT_EQ(expected_queue, scheduler_.queue());

    const std::optional<Reservation> reservation = scheduler_.reservation();
    std::set<std::pair<int, int>> reserved;
    if (reservation) {
      for (const CoreRef& core : reservation->cores) reserved.insert({core.host, core.core});
    }
    bool past_head = false;
    int position = 0;
    // Placements per request shape: (fits the idle healthy pool, fits now).
    std::map<std::tuple<RequestKind, std::optional<Generation>, int, int, std::optional<int>>,
             std::pair<bool, std::vector<std::vector<CoreRef>>>>
        fits;
    for (const JobRequest* job : order) {
      const std::optional<PendingInfo> info = scheduler_.pending(job->id);
      ASSERT_TRUE(info) << "job " << job->id;
      EXPECT_EQ(++position, info->queue_position) << "job " << job->id;
      ++seen_[info->reason];
      const ResourceRequest& request = job->request;
      ASSERT_NE(RequestKind::kCpu, request.kind) << "cpu jobs always start";
      const bool quota = over_quota(*job);
      const auto key = std::tuple(request.kind, request.generation, request.devices_per_host,
                                  request.hosts, request.pinned_core);
      auto cached = fits.find(key);
      if (cached == fits.end()) {
        cached = fits.emplace(key, std::pair(!candidates(request, view, true).empty(),
                                             candidates(request, view, false)))
                     .first;
      }
      const bool healthy_fit = cached->second.first;
      const std::vector<std::vector<CoreRef>>& now = cached->second.second;
      const bool is_head = reservation && reservation->job == job->id;
      if (is_head) {
        past_head = true;
        EXPECT_TRUE(now.empty()) << "the head job " << job->id << " fits but did not start";
        EXPECT_TRUE(healthy_fit) << "the head must fit the healthy hosts";
        EXPECT_EQ(quota            ? PendingReason::kQuota
                  : job->preempted ? PendingReason::kPreempted
                                   : PendingReason::kResources,
                  info->reason);
        if (!quota) {
          EXPECT_EQ(reservation->start, info->estimated_start);
        }
        continue;
      }
      if (quota) {
        EXPECT_EQ(PendingReason::kQuota, info->reason) << "job " << job->id;
        continue;
      }
      if (!healthy_fit) {
        EXPECT_EQ(PendingReason::kHostUnhealthy, info->reason) << "job " << job->id;
        continue;
      }
      ASSERT_TRUE(past_head) << "job " << job->id
                             << " waits ahead of the head with neither quota nor health reason";
      if (now.empty()) {
        EXPECT_EQ(job->preempted ? PendingReason::kPreempted : PendingReason::kResources,
                  info->reason)
            << "job " << job->id;
        continue;
      }
      // It fits: only the head's reservation may hold it back.
      EXPECT_EQ(job->preempted ? PendingReason::kPreempted : PendingReason::kPriority, info->reason)
          << "job " << job->id;
      for (const std::vector<CoreRef>& cores : now) {
        const bool clear = std::none_of(cores.begin(), cores.end(), [&](const CoreRef& core) {
          return reserved.contains({core.host, core.core});
        });
        EXPECT_FALSE(clear) << "job " << job->id << " fits outside the reservation but waits";
        if (clear) break;
      }
      const bool ends_in_time = reservation->start && job->expected_runtime &&
                                now_ + *job->expected_runtime <= *reservation->start;
      EXPECT_FALSE(ends_in_time) << "job " << job->id << " would end before the head starts";
    }
  }

  double fair_share(const std::string& tenant) const {
    const auto it = fair_share_.find(tenant);
    return it == fair_share_.end() ? 1.0 : it->second;
  }

  PoolLayout layout_;
  Scheduler scheduler_;
  std::mt19937_64 random_;
  std::vector<int> run_start_;  // per host: the first host of its run
  std::vector<HostHealth> health_;
  std::map<JobId, JobRequest> waiting_;
  std::map<JobId, RunningJob> running_;
  std::set<JobId> preempting_;  // running, asked to stop
  std::map<std::string, double> fair_share_;
  std::set<JobId> ended_;
  std::vector<JobId> recently_ended_;
  std::map<std::string, std::optional<int>> quota_;
  Clock::time_point now_ = Clock::time_point{} + std::chrono::hours(1);
  JobId last_id_ = 0;
  std::int64_t last_order_ = 0;
  int started_ = 0;
  int backfilled_ = 0;
  int preempted_ = 0;
  std::map<PendingReason, int> seen_;
  std::string last_event_;
};

struct Case {
  std::string_view pool;
  std::uint64_t seed;
};

std::ostream& operator<<(std::ostream& out, const Case& c) {
  return out << c.pool << " seed " << c.seed;
}

class SchedulerProperty : public ::testing::TestWithParam<Case> {};

TEST_P(SchedulerProperty, InvariantsHoldAfterEveryEvent) {
  PropertyRun run(GetParam().pool, GetParam().seed);
  run.run(kEvents);
}

INSTANTIATE_TEST_SUITE_P(Pools, SchedulerProperty,
                         ::testing::Values(Case{"v3-32,v3-8,v4-16,v3-64", 1},
                                           Case{"v3-32,v3-8,v4-16,v3-64", 2}, Case{"v3-128", 3},
                                           Case{"v2-32,v4-32,v3-8", 4}, Case{"v4-64", 5}));

// Dependencies: jobs held before the queue as the service holds them (only
// check_dependencies decides), against the test's own reading of Slurm's
// afterok / afternotok / afterany, with preemption sending running jobs back
// to the queue. After every event: no job placed while a job it depends on
// had not ended the way it needed (a preempted one has not), no job
// cancelled as never satisfiable while its dependencies could still be met,
// and no job left held once they are all met.
class DependencyRun {
 public:
  explicit DependencyRun(std::uint64_t seed)
      : scheduler_(*parse_pool("v3-32"), SchedulerOptions{kLeaseTimeout}), random_(seed) {}

  void run(int events) {
    for (int event = 0; event < events && !::testing::Test::HasFailure(); ++event) {
      const int kind = pick(100);
      if (kind < 45) {
        submit_new();
      } else if (kind < 90) {
        end_running();
      } else {
        cancel_waiting();
      }
      release_held();
      for (const Placement& p : scheduler_.schedule(now_)) {
        check_met(p.job, "placed");
        ASSERT_EQ(states_[p.job], base::JobState::kQueued);
        states_[p.job] = base::JobState::kRunning;
      }
      // A preempted job goes back to the queue (its dependencies were met
      // once and stay met): the jobs depending on it wait on.
      if (const std::optional<Preemption> preemption = scheduler_.preempt(now_)) {
        for (JobId victim : preemption->victims) {
          ASSERT_EQ(states_[victim], base::JobState::kRunning);
          EXPECT_LT(requests_[victim].priority, requests_[preemption->preemptor].priority);
          scheduler_.finish(victim);
          states_[victim] = base::JobState::kQueued;
          requests_[victim].preempted = true;
          ASSERT_TRUE(scheduler_.submit(requests_[victim]));
          ++preempted_;
        }
      }
      now_ += seconds(1);
    }
    EXPECT_GT(preempted_, 0) << "no job was ever preempted";
    EXPECT_GT(released_, events / 20) << "the run should release dependent jobs";
    EXPECT_GT(never_, 0) << "no dependency was ever unsatisfiable";
    EXPECT_GT(held_seen_, 0) << "no job ever waited for a dependency";
  }

 private:
  int pick(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }

  // The test's own rule: met when the job ended the way the condition names.
  static bool met(DependencyCondition condition, base::JobState state) {
    switch (condition) {
      case DependencyCondition::kSucceeded:
        return state == base::JobState::kSucceeded;
      case DependencyCondition::kFailed:
        return state == base::JobState::kFailed || state == base::JobState::kCancelled;
      case DependencyCondition::kFinished:
        return base::is_terminal(state);
    }
    return false;
  }

  void check_met(JobId id, std::string_view what) {
    for (const Dependency& d : dependencies_[id]) {
      EXPECT_TRUE(met(d.condition, states_[d.job]))
          << "job " << id << " " << what << " while job " << d.job << " is "
          << base::to_string(states_[d.job]) << " and it needed " << condition_name(d.condition);
    }
  }

  void submit_new() {
    const JobId id = ++last_id_;
    std::vector<Dependency>& deps = dependencies_[id];
    const int count = id > 1 ? pick(3) : 0;
    for (int i = 0; i < count; ++i) {
      // Only earlier jobs, as the API allows; recent ones are likelier unfinished.
      const JobId target =
          std::max<JobId>(1, id - 1 - pick(static_cast<int>(std::min<JobId>(id - 1, 12))));
      deps.push_back({target, static_cast<DependencyCondition>(pick(3))});
    }
    states_[id] = base::JobState::kQueued;
    JobRequest request;
    request.id = id;
    request.submit_order = id;
    request.priority = pick(3);
    request.tenant = "t";
    request.request.kind = RequestKind::kSingleCore;
    request.request.devices_per_host = 1;
    request.request.hosts = 1;
    if (pick(3) == 0) {
      request.request.kind = RequestKind::kHost;
      request.request.devices_per_host = 8;
    }
    requests_[id] = request;
    held_.insert(id);
  }

  void release_held() {
    auto state_of = [this](std::int64_t job) -> std::optional<base::JobState> {
      auto it = states_.find(job);
      return it == states_.end() ? std::nullopt : std::optional<base::JobState>(it->second);
    };
    for (auto it = held_.begin(); it != held_.end();) {
      const JobId id = *it;
      const DependencyCheck check = check_dependencies(dependencies_[id], state_of);
      if (check.verdict == DependencyVerdict::kWaiting) {
        ++held_seen_;
        ++it;
        continue;
      }
      it = held_.erase(it);
      if (check.verdict == DependencyVerdict::kSatisfied) {
        check_met(id, "released");
        if (!dependencies_[id].empty()) ++released_;
        ASSERT_TRUE(scheduler_.submit(requests_[id]));
        continue;
      }
      ++never_;
      const bool impossible =
          std::any_of(dependencies_[id].begin(), dependencies_[id].end(), [&](const Dependency& d) {
            return base::is_terminal(states_[d.job]) && !met(d.condition, states_[d.job]);
          });
      EXPECT_TRUE(impossible) << "job " << id
                              << " cancelled as never satisfiable: " << check.detail;
      states_[id] = base::JobState::kCancelled;
    }
    // Liveness: what is still held has a dependency that has not ended.
    for (JobId id : held_) {
      const bool waits =
          std::any_of(dependencies_[id].begin(), dependencies_[id].end(),
                      [&](const Dependency& d) { return !base::is_terminal(states_[d.job]); });
      EXPECT_TRUE(waits) << "job " << id << " held although every job it depends on has ended";
    }
  }

  void end_running() {
    std::vector<JobId> running;
    for (const auto& [id, state] : states_) {
      if (state == base::JobState::kRunning) running.push_back(id);
    }
    if (running.empty()) return;
    const JobId id = running[pick(static_cast<int>(running.size()))];
    const base::JobState ends[] = {base::JobState::kSucceeded, base::JobState::kSucceeded,
                                   base::JobState::kFailed, base::JobState::kCancelled};
    states_[id] = ends[pick(4)];
    scheduler_.finish(id);
  }

  void cancel_waiting() {
    std::vector<JobId> waiting;
    for (const auto& [id, state] : states_) {
      if (state == base::JobState::kQueued) waiting.push_back(id);
    }
    if (waiting.empty()) return;
    const JobId id = waiting[pick(static_cast<int>(waiting.size()))];
    states_[id] = base::JobState::kCancelled;
    held_.erase(id);
    scheduler_.cancel(id);
  }

  Scheduler scheduler_;
  std::mt19937_64 random_;
  std::map<JobId, base::JobState> states_;
  std::map<JobId, std::vector<Dependency>> dependencies_;
  std::map<JobId, JobRequest> requests_;
  std::set<JobId> held_;
  Clock::time_point now_ = Clock::time_point{} + std::chrono::hours(1);
  JobId last_id_ = 0;
  int released_ = 0;
  int preempted_ = 0;
  int never_ = 0;
  int held_seen_ = 0;
};

TEST(DependencyProperty, NoDependencyIsReleasedEarlyOrCancelledWhileItCouldBeMet) {
  for (std::uint64_t seed : {11, 12, 13}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    DependencyRun run(seed);
    run.run(kEvents);
  }
}

}  // namespace
}  // namespace tpujobs::scheduler
