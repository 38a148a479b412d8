// Randomized events against scheduler::plan_pass, checking after every pass
// that its decisions are sound. The pool is kept by the test's PassDriver
// (tests/scheduler/pass_driver.h), which applies each plan as the scheduler
// leader does and decides nothing. The checks re-derive everything from the
// pool layout and the jobs' facts with brute force, independently of the
// policy's own searches.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/scheduler/pass_driver.h"

namespace tpujobs::scheduler {

// For readable gtest failures.
void PrintTo(PendingReason reason, std::ostream* out) { *out << pending_reason_name(reason); }

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kPreemptionMinWait = seconds(60);

// Events per run; fewer under the (Debug) sanitizer build, which is ~40x slower
// (enough that every pending reason, Preempted included, still shows up).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kEvents = 2000;
#else
constexpr int kEvents = 3000;
#endif

using Cores = std::vector<CoreRef>;
using Holders = std::vector<std::vector<std::optional<JobId>>>;  // per host and core

class PropertyRun {
 public:
  PropertyRun(std::string_view pool, std::uint64_t seed)
      : driver_(pool, PassOptions{kPreemptionMinWait, 500}), random_(seed) {
    const PoolLayout& layout = driver_.layout();
    for (std::size_t h = 0; h < layout.hosts.size(); ++h) {
      run_start_.push_back(h > 0 && layout.hosts[h].generation == layout.hosts[h - 1].generation
                               ? run_start_[h - 1]
                               : static_cast<int>(h));
    }
  }

  void run(int events) {
    for (int event = 0; event < events && !::testing::Test::HasFailure(); ++event) {
      step();
      const std::string when = "pass " + std::to_string(event) + " (after " + last_event_ + ")";
      SCOPED_TRACE(when);
      const std::set<JobId> queued = ids_in(base::JobState::kQueued);
      preempting_.clear();  // the jobs marked as being preempted (the leader's preempted_by)
      for (JobId id : ids_in(base::JobState::kRunning)) {
        if (job(id).preempting) preempting_.insert(id);
      }
      const PassSnapshot snapshot = driver_.snapshot();
      const PassPlan& plan = driver_.pass();
      check_holds(snapshot, plan);
      check_starts(plan, queued);
      check_allocations();
      check_waiting(plan);
      check_preemption(plan);
    }
    EXPECT_GT(started_, events / 10) << "the run should exercise placement";
    EXPECT_GT(backfilled_, 0) << "no job ever started ahead of a blocked higher-priority one";
    EXPECT_GT(preempted_, 0) << "no job was ever preempted";
    EXPECT_GT(held_, 0) << "no plan ever held past its pass";
    for (PendingReason reason :
         {PendingReason::kResources, PendingReason::kPriority, PendingReason::kHostUnhealthy,
          PendingReason::kQuota, PendingReason::kPreempted}) {
      EXPECT_GT(seen_[reason], 0) << "no waiting job was ever " << pending_reason_name(reason);
    }
  }

 private:
  int pick(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  int host_count() const { return driver_.host_count(); }
  Generation generation(int host) const { return driver_.layout().hosts[host].generation; }
  int devices(int host) const { return facts(generation(host)).devices_per_host; }

  std::set<JobId> ids_in(base::JobState state) const {
    std::set<JobId> ids;
    for (const auto& [id, job] : driver_.jobs()) {
      if (job.state == state) ids.insert(id);
    }
    return ids;
  }
  JobId random_of(const std::set<JobId>& ids) {
    return *std::next(ids.begin(), pick(static_cast<int>(ids.size())));
  }
  const DriverJob& job(JobId id) const { return *driver_.job(id); }

  ResourceRequest random_request() {
    ResourceRequest request;
    const Generation gen = generation(pick(host_count()));
    const GenerationFacts& f = facts(gen);
    const int kind = pick(100);
    if (kind < 5) return request;  // cpu
    request.generation = gen;
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
        const int n = SliceType{gen, size}.hosts();
        if (n > 1 && n <= 8) hosts.push_back(n);
      }
      request.hosts = hosts[pick(static_cast<int>(hosts.size()))];
    }
    return request;
  }

  void submit_new() {
    JobSpec spec;
    spec.id = ++last_id_;
    spec.priority = pick(4);
    spec.tenant = std::string(1, static_cast<char>('a' + pick(3)));
    spec.request = random_request();
    if (chance(70)) spec.timeout = seconds(1 + pick(600));
    spec.preemptible = chance(80);
    // The service rejects what can never fit (whatever the hosts' health).
    if (!can_ever_fit(driver_.snapshot().hosts, spec.request)) {
      last_event_ = "submit rejected";
      return;
    }
    last_event_ = "submit " + std::to_string(spec.id);
    ASSERT_TRUE(driver_.submit(std::move(spec)));
  }

  void step() {
    const int roll = pick(100);
    if (roll < 30) {
      if (ids_in(base::JobState::kQueued).size() < 60) submit_new();
    } else if (roll < 53) {
      end_one(roll < 45);
    } else if (roll < 55) {
      fail_host(pick(host_count()));
    } else if (roll < 63) {
      std::vector<int> unhealthy;
      for (int h = 0; h < host_count(); ++h) {
        if (driver_.health(h) != HostHealth::kHealthy) unhealthy.push_back(h);
      }
      const int host = unhealthy.empty() ? pick(host_count())
                                         : unhealthy[pick(static_cast<int>(unhealthy.size()))];
      last_event_ = "recover " + std::to_string(host);
      EXPECT_TRUE(driver_.set_health(host, HostHealth::kHealthy).empty());
    } else if (roll < 65) {
      const int host = pick(host_count());
      last_event_ = "drain " + std::to_string(host);
      EXPECT_TRUE(driver_.set_health(host, HostHealth::kDraining).empty());
    } else if (roll < 75) {
      driver_.advance(milliseconds(pick(20000)));
      last_event_ = "tick";
    } else if (roll < 83) {
      checkpoint_preempted();
    } else if (roll < 85) {
      const std::string tenant(1, static_cast<char>('a' + pick(3)));
      last_event_ = "fair share " + tenant;
      const double factor = (1 + pick(4)) / 4.0;
      driver_.set_fair_share(tenant, factor);
      fair_share_[tenant] = factor;
    } else if (roll < 97) {
      time_limits();
    } else {
      const std::string tenant(1, static_cast<char>('a' + pick(3)));
      const int choice = pick(6);
      last_event_ = "quota " + tenant;
      quota_[tenant] = choice < 3 ? std::nullopt : std::optional<int>(16 << (choice - 3));
      driver_.set_quota(tenant, quota_[tenant]);
    }
  }

  // A running job finishes, or a queued or running one is cancelled.
  void end_one(bool finish) {
    const std::set<JobId> running = ids_in(base::JobState::kRunning);
    const std::set<JobId> queued = ids_in(base::JobState::kQueued);
    if (finish || queued.empty() || chance(50)) {
      if (running.empty()) return;
      const JobId id = random_of(running);
      last_event_ = (finish ? "finish " : "cancel running ") + std::to_string(id);
      driver_.end(id, finish ? base::JobState::kSucceeded : base::JobState::kCancelled);
    } else {
      const JobId id = random_of(queued);
      last_event_ = "cancel queued " + std::to_string(id);
      driver_.end(id, base::JobState::kCancelled);
    }
  }

  // Time passes; jobs that reach their time limit end.
  void time_limits() {
    driver_.advance(milliseconds(pick(20000)));
    last_event_ = "time limits";
    for (JobId id : ids_in(base::JobState::kRunning)) {
      const DriverJob& j = job(id);
      if (j.spec.timeout && j.started + *j.spec.timeout <= driver_.now()) {
        driver_.end(id, base::JobState::kFailed);
      }
    }
  }

  // A preempted job stops at its checkpoint and waits again, keeping its
  // place in line.
  void checkpoint_preempted() {
    std::set<JobId> preempting;
    for (JobId id : ids_in(base::JobState::kRunning)) {
      if (job(id).preempting) preempting.insert(id);
    }
    if (preempting.empty()) return;
    const JobId id = random_of(preempting);
    last_event_ = "preempted " + std::to_string(id) + " stops";
    driver_.stop_preempted(id);
  }

  void fail_host(int host) {
    last_event_ = "fail " + std::to_string(host);
    const std::vector<JobId> evicted = driver_.set_health(host, HostHealth::kFailed);
    for (JobId id : evicted) {
      // Retried from its checkpoint (keeping its place in line), or FAILED.
      if (chance(50)) driver_.requeue_after_failure(id);
    }
  }

  // Generation and device count rules shared by every kind.
  bool host_matches(const ResourceRequest& request, int host) const {
    if (request.generation && *request.generation != generation(host)) return false;
    if (request.kind == RequestKind::kSingleCore) {
      return !request.pinned_core || *request.pinned_core < devices(host);
    }
    return request.devices_per_host == devices(host);
  }

  Holders holders() const {
    Holders out(host_count());
    for (int h = 0; h < host_count(); ++h) {
      for (int c = 0; c < devices(h); ++c) out[h].push_back(driver_.holder(h, c));
    }
    return out;
  }

  // Every placement `request` could have in the pool as it is (or idle),
  // on healthy hosts, as the list of cores of each.
  std::vector<Cores> candidates(const ResourceRequest& request, const Holders& holder,
                                bool idle) const {
    std::vector<Cores> out;
    auto usable = [&](int host, int core) {
      return driver_.health(host) == HostHealth::kHealthy && (idle || !holder[host][core]);
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
      Cores cores;
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

  static int cores_of(const ResourceRequest& request) {
    return request.kind == RequestKind::kCpu ? 0 : request.cores();
  }

  // Cores held per tenant.
  std::map<std::string, int> usage() const {
    std::map<std::string, int> used;
    for (JobId id : ids_in(base::JobState::kRunning)) {
      used[job(id).spec.tenant] += static_cast<int>(job(id).placement->cores.size());
    }
    return used;
  }

  bool over_quota(const DriverJob& j, std::map<std::string, int>& used) const {
    const auto quota = quota_.find(j.spec.tenant);
    if (quota == quota_.end() || !quota->second || cores_of(j.spec.request) == 0) return false;
    return used[j.spec.tenant] + cores_of(j.spec.request) > *quota->second;
  }

  // A plan holds until its holds_until: the same snapshot planned at the
  // last instant before it (or a year on, when it holds for ever) plans the
  // same, and at holds_until itself a start_by deadline has passed.
  void check_holds(PassSnapshot snapshot, const PassPlan& plan) {
    if (plan.holds_until <= snapshot.now) return;
    ++held_;
    const PassTime planned_at = snapshot.now;
    const bool for_ever = plan.holds_until == PassTime::max();
    snapshot.now = for_ever ? planned_at + std::chrono::hours(24 * 365)
                            : plan.holds_until - PassTime::duration(1);
    EXPECT_TRUE(plan_pass(snapshot) == plan) << "a plan changed before its holds_until";
    if (for_ever) return;
    snapshot.now = plan.holds_until;
    EXPECT_FALSE(plan_pass(snapshot).unstartable.empty())
        << "a plan that holds until a time other than a start_by deadline's";
  }

  // The one agent heartbeats at every pass: a job requeued after a failure
  // takes no host until time has passed since.
  bool waits_for_heartbeat(const DriverJob& j) const {
    return j.heard_after && *j.heard_after >= driver_.now();
  }

  bool touches(const Cores& cores, const std::set<std::pair<int, int>>& reserved) const {
    return std::any_of(cores.begin(), cores.end(), [&](const CoreRef& core) {
      return reserved.contains({core.host, core.core});
    });
  }

  std::set<std::pair<int, int>> reserved_cores(const PassPlan& plan) const {
    std::set<std::pair<int, int>> reserved;
    if (plan.reservation) {
      for (const CoreRef& core : plan.reservation->cores) reserved.insert({core.host, core.core});
    }
    return reserved;
  }

  // Started jobs were queued, went to healthy hosts, and no start ranked
  // after the head delays it: it keeps off the reserved cores, or ends by
  // the reserved start.
  void check_starts(const PassPlan& plan, const std::set<JobId>& queued) {
    const std::set<std::pair<int, int>> reserved = reserved_cores(plan);
    for (const PlannedStart& start : plan.starts) {
      ASSERT_TRUE(queued.contains(start.job)) << "started job " << start.job << " was not queued";
      ++started_;
      for (int host : start.hosts) {
        EXPECT_EQ(HostHealth::kHealthy, driver_.health(host))
            << "job " << start.job << " placed on unhealthy host " << host;
      }
      EXPECT_FALSE(waits_for_heartbeat(job(start.job)))
          << "job " << start.job << " retried before its hosts were heard from";
      if (!plan.reservation || start.cores.empty()) continue;
      const DriverJob& j = job(start.job);
      const DriverJob& head = job(plan.reservation->job);
      if (std::tuple(-j.spec.priority, -fair_share(j.spec.tenant), j.order) <
          std::tuple(-head.spec.priority, -fair_share(head.spec.tenant), head.order)) {
        continue;  // ahead of the head in line
      }
      ++backfilled_;
      const bool ends_in_time = plan.reservation->start && j.spec.timeout &&
                                driver_.now() + *j.spec.timeout <= *plan.reservation->start;
      EXPECT_TRUE(!touches(start.cores, reserved) || ends_in_time)
          << "job " << start.job << " backfilled onto the head's cores and ends too late";
    }
  }

  // After a pass: the head may preempt. Its victims are running jobs of
  // strictly lower priority, preemptible, not being preempted already, and
  // with the cores already freeing they make a place where the head fits;
  // and it preempts only when its reserved start is unknown or not soon.
  void check_preemption(const PassPlan& plan) {
    if (!plan.preemption) return;
    const Preemption& preemption = *plan.preemption;
    ASSERT_TRUE(plan.reservation) << "a job preempted without being the head";
    ASSERT_EQ(plan.reservation->job, preemption.preemptor);
    const DriverJob& head = job(preemption.preemptor);
    ASSERT_EQ(base::JobState::kQueued, head.state);
    EXPECT_TRUE(!plan.reservation->start ||
                *plan.reservation->start > driver_.now() + kPreemptionMinWait)
        << "job " << head.spec.id << " preempted although its reservation starts soon";
    ASSERT_FALSE(preemption.victims.empty());
    std::set<JobId> freed = preempting_;
    for (JobId id : preemption.victims) {
      const DriverJob& victim = job(id);
      ASSERT_EQ(base::JobState::kRunning, victim.state) << "victim " << id << " is not running";
      EXPECT_LT(victim.spec.priority, head.spec.priority)
          << "job " << id << " preempted by job " << head.spec.id << " of no higher priority";
      EXPECT_TRUE(victim.spec.preemptible) << "non-preemptible job " << id << " preempted";
      EXPECT_FALSE(preempting_.contains(id)) << "job " << id << " preempted twice";
      freed.insert(id);
    }
    const Holders holder = holders();
    bool fits = false;
    for (const Cores& cores : candidates(head.spec.request, holder, /*idle=*/true)) {
      fits = fits || std::all_of(cores.begin(), cores.end(), [&](const CoreRef& core) {
               const std::optional<JobId>& id = holder[core.host][core.core];
               return !id || freed.contains(*id);
             });
    }
    EXPECT_TRUE(fits) << "job " << head.spec.id << "'s victims do not free a place where it fits";
    ++preempted_;
  }

  // No core in two jobs, every placement a whole aligned slice of one
  // generation on a host that has not failed, the pool agrees.
  void check_allocations() {
    Holders owner(host_count());
    for (int h = 0; h < host_count(); ++h) owner[h].resize(devices(h));
    for (JobId id : ids_in(base::JobState::kRunning)) {
      const DriverJob& j = job(id);
      ASSERT_TRUE(j.placement) << "job " << id;
      const PlannedStart& placement = *j.placement;
      const ResourceRequest& request = j.spec.request;
      if (request.kind == RequestKind::kCpu) {
        EXPECT_TRUE(placement.cores.empty());
        continue;
      }
      for (const CoreRef& core : placement.cores) {
        std::optional<JobId>& slot = owner[core.host][core.core];
        ASSERT_FALSE(slot.has_value())
            << "core " << core.host << "." << core.core << " is in jobs " << *slot << " and " << id;
        slot = id;
        EXPECT_NE(HostHealth::kFailed, driver_.health(core.host)) << "job " << id << " on failed";
        EXPECT_TRUE(host_matches(request, core.host)) << "job " << id << " on wrong generation";
      }
      if (request.kind == RequestKind::kSingleCore) {
        ASSERT_EQ(1u, placement.cores.size());
        if (request.pinned_core) {
          EXPECT_EQ(*request.pinned_core, placement.cores[0].core);
        }
        continue;
      }
      check_slice(id, request, placement);
    }
    EXPECT_EQ(owner, holders()) << "the pool's holders disagree with the placements";
  }

  void check_slice(JobId id, const ResourceRequest& request, const PlannedStart& placement) {
    const int n = request.kind == RequestKind::kHost ? 1 : request.hosts;
    ASSERT_EQ(static_cast<std::size_t>(n), placement.hosts.size()) << "job " << id;
    const int first = placement.hosts.front();
    EXPECT_EQ(0, (first - run_start_[first]) % n) << "job " << id << " slice is not aligned";
    Cores whole;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(first + i, placement.hosts[i]) << "job " << id << " hosts not consecutive";
      EXPECT_EQ(run_start_[first], run_start_[first + i]) << "job " << id << " spans runs";
      for (int c = 0; c < devices(first + i); ++c) whole.push_back({first + i, c});
    }
    EXPECT_EQ(whole, placement.cores) << "job " << id << " does not hold whole hosts";
  }

  // No waiting job could start now without delaying the head's reservation;
  // reasons and positions say why.
  void check_waiting(const PassPlan& plan) {
    std::vector<const DriverJob*> order;
    for (JobId id : ids_in(base::JobState::kQueued)) order.push_back(&job(id));
    std::sort(order.begin(), order.end(), [&](const DriverJob* a, const DriverJob* b) {
      return std::tuple(-a->spec.priority, -fair_share(a->spec.tenant), a->order, a->spec.id) <
             std::tuple(-b->spec.priority, -fair_share(b->spec.tenant), b->order, b->spec.id);
    });
    std::vector<JobId> expected_queue, queue;
    for (const DriverJob* j : order) expected_queue.push_back(j->spec.id);
    for (const Waiting& w : plan.waiting) queue.push_back(w.job);
    ASSERT_EQ(expected_queue, queue);

    const std::set<std::pair<int, int>> reserved = reserved_cores(plan);
    const Holders holder = holders();
    std::map<std::string, int> used = usage();
    bool past_head = false;
    // Placements per request shape: (fits the idle healthy pool, fits now).
    std::map<std::tuple<RequestKind, std::optional<Generation>, int, int, std::optional<int>>,
             std::pair<bool, std::vector<Cores>>>
        fits;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const DriverJob& j = *order[i];
      const Waiting& info = plan.waiting[i];
      EXPECT_EQ(static_cast<int>(i) + 1, info.queue_position) << "job " << j.spec.id;
      ++seen_[info.reason];
      const ResourceRequest& request = j.spec.request;
      ASSERT_NE(RequestKind::kCpu, request.kind) << "cpu jobs always start";
      const auto key = std::tuple(request.kind, request.generation, request.devices_per_host,
                                  request.hosts, request.pinned_core);
      auto cached = fits.find(key);
      if (cached == fits.end()) {
        cached = fits.emplace(key, std::pair(!candidates(request, holder, true).empty(),
                                             candidates(request, holder, false)))
                     .first;
      }
      const bool healthy_fit = cached->second.first;
      const std::vector<Cores>& now = cached->second.second;
      const bool quota = over_quota(j, used);
      const bool is_head = plan.reservation && plan.reservation->job == j.spec.id;
      const PendingReason waits =
          j.preempted ? PendingReason::kPreempted : PendingReason::kResources;
      if (is_head) {
        past_head = true;
        EXPECT_TRUE(now.empty() || waits_for_heartbeat(j))
            << "the head job " << j.spec.id << " fits but did not start";
        EXPECT_TRUE(healthy_fit) << "the head must fit the healthy hosts";
        EXPECT_EQ(quota ? PendingReason::kQuota : waits, info.reason);
        if (!quota) {
          EXPECT_EQ(plan.reservation->start, info.estimated_start);
        }
        continue;
      }
      if (quota || !healthy_fit) {
        EXPECT_EQ(quota ? PendingReason::kQuota : PendingReason::kHostUnhealthy, info.reason)
            << "job " << j.spec.id;
        continue;
      }
      ASSERT_TRUE(past_head) << "job " << j.spec.id
                             << " waits ahead of the head with neither quota nor health reason";
      if (now.empty()) {
        EXPECT_EQ(waits, info.reason) << "job " << j.spec.id;
        continue;
      }
      // Its shape fits: only the head's reservation (or, for a retry, hosts
      // not heard from since its failure) may hold it back.
      EXPECT_EQ(j.preempted ? PendingReason::kPreempted : PendingReason::kPriority, info.reason)
          << "job " << j.spec.id;
      if (waits_for_heartbeat(j)) continue;
      for (const Cores& cores : now) {
        EXPECT_TRUE(touches(cores, reserved))
            << "job " << j.spec.id << " fits outside the reservation but waits";
        if (!touches(cores, reserved)) break;
      }
      const bool ends_in_time = plan.reservation->start && j.spec.timeout &&
                                driver_.now() + *j.spec.timeout <= *plan.reservation->start;
      EXPECT_FALSE(ends_in_time) << "job " << j.spec.id << " would end before the head starts";
    }
  }

  double fair_share(const std::string& tenant) const {
    const auto it = fair_share_.find(tenant);
    return it == fair_share_.end() ? 1.0 : it->second;
  }

  PassDriver driver_;
  std::mt19937_64 random_;
  std::vector<int> run_start_;  // per host: the first host of its run
  std::set<JobId> preempting_;  // running, asked to stop
  std::map<std::string, double> fair_share_;
  std::map<std::string, std::optional<int>> quota_;
  JobId last_id_ = 0;
  int started_ = 0;
  int backfilled_ = 0;
  int preempted_ = 0;
  int held_ = 0;  // plans that held past their pass
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

class PlanPassProperty : public ::testing::TestWithParam<Case> {};

TEST_P(PlanPassProperty, InvariantsHoldAfterEveryPass) {
  PropertyRun run(GetParam().pool, GetParam().seed);
  run.run(kEvents);
}

INSTANTIATE_TEST_SUITE_P(Pools, PlanPassProperty,
                         ::testing::Values(Case{"v3-32,v3-8,v4-16,v3-64", 1},
                                           Case{"v3-32,v3-8,v4-16,v3-64", 2}, Case{"v3-128", 3},
                                           Case{"v2-32,v4-32,v3-8", 4}, Case{"v4-64", 5}));

}  // namespace
}  // namespace tpujobs::scheduler
