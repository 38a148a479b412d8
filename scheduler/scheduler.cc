#include "scheduler/scheduler.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace tpujobs::scheduler {
namespace {

// The pass plans in PassTime; this class's callers count in steady time. The
// mapping keeps the count since the epoch, so it is exact both ways.
PassTime to_pass(Clock::time_point t) {
  return PassTime(std::chrono::duration_cast<PassTime::duration>(t.time_since_epoch()));
}
Clock::time_point from_pass(PassTime t) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::time_point::duration>(t.time_since_epoch()));
}

}  // namespace

Scheduler::Scheduler(PoolLayout layout, SchedulerOptions options)
    : pool_(std::move(layout)), options_(options) {
  // One member: every cpu job starts at once.
  snapshot_.agents.push_back(PassAgent{"local", std::numeric_limits<int>::max(), true});
  snapshot_.hosts.resize(pool_.host_count());
  for (int h = 0; h < pool_.host_count(); ++h) {
    snapshot_.hosts[h].generation = pool_.generation(h);
    snapshot_.hosts[h].cores.assign(pool_.devices(h), 0);
  }
  snapshot_.options = PassOptions{options_.preemption_min_wait, options_.estimate_horizon};
}

Scheduler::~Scheduler() = default;

int Scheduler::intern_shape(const ResourceRequest& request) {
  Shape shape{request.kind, request.generation, request.devices_per_host, request.hosts,
              request.kind == RequestKind::kSingleCore ? request.pinned_core : std::nullopt};
  if (request.kind == RequestKind::kCpu) shape = Shape{RequestKind::kCpu, {}, 0, 0, {}};
  const auto [it, inserted] =
      shape_index_.emplace(shape, static_cast<int>(snapshot_.shapes.size()));
  if (inserted) {
    ResourceRequest stored = request;
    stored.pinned_core = shape.pinned_core;
    if (request.kind == RequestKind::kCpu) stored = ResourceRequest{};
    snapshot_.shapes.push_back(std::move(stored));
  }
  return it->second;
}

int Scheduler::intern_tenant(const std::string& tenant) {
  const auto [it, inserted] =
      tenant_index_.emplace(tenant, static_cast<int>(snapshot_.tenants.size()));
  if (inserted) snapshot_.tenants.push_back(PassTenant{tenant, std::nullopt, 0, 1.0});
  return it->second;
}

bool Scheduler::submit(JobRequest request) {
  if (jobs_.contains(request.id)) return false;
  const JobId id = request.id;
  Job job;
  job.shape = intern_shape(request.request);
  job.tenant = intern_tenant(request.tenant);
  job.request = std::move(request);
  add_waiting(jobs_.emplace(id, std::move(job)).first->second);
  ++version_;
  return true;
}

void Scheduler::add_waiting(const Job& job) {
  const JobRequest& r = job.request;
  WaitingEntry entry;
  entry.id = r.id;
  entry.order = r.submit_order;
  entry.priority = r.priority;
  entry.tenant = job.tenant;
  entry.shape = job.shape;
  entry.preempted = r.preempted;
  entry.timeout = r.expected_runtime;
  waiting_slot_[r.id] = snapshot_.waiting.size();
  snapshot_.waiting.push_back(entry);
}

void Scheduler::remove_waiting(JobId id) {
  const auto it = waiting_slot_.find(id);
  if (it == waiting_slot_.end()) return;
  std::vector<WaitingEntry>& waiting = snapshot_.waiting;
  const std::size_t slot = it->second;
  waiting_slot_.erase(it);
  if (slot + 1 != waiting.size()) {
    waiting[slot] = waiting.back();
    waiting_slot_[waiting[slot].id] = slot;
  }
  waiting.pop_back();
}

void Scheduler::remove_running(JobId id) {
  const auto it = running_slot_.find(id);
  if (it == running_slot_.end()) return;
  std::vector<RunningEntry>& running = snapshot_.running;
  const std::size_t slot = it->second;
  running_slot_.erase(it);
  if (slot + 1 != running.size()) {
    running[slot] = running.back();
    running_slot_[running[slot].id] = slot;
  }
  running.pop_back();
}

std::vector<Placement> Scheduler::schedule(Clock::time_point now) {
  snapshot_.now = to_pass(now);
  PassPlan plan = plan_pass(snapshot_);
  std::vector<Placement> started;
  started.reserve(plan.starts.size());
  for (const PlannedStart& planned : plan.starts) {
    started.push_back(start(jobs_.at(planned.job), planned, now));
  }
  ++passes_;
  for (const Waiting& w : plan.waiting) {
    Job& job = jobs_.at(w.job);
    job.pending = PendingInfo{w.reason, w.queue_position, std::nullopt};
    if (w.estimated_start) job.pending.estimated_start = from_pass(*w.estimated_start);
    job.pending_pass = passes_;
  }
  reservation_.reset();
  if (plan.reservation) {
    Reservation reservation{plan.reservation->job, std::nullopt, plan.reservation->cores};
    if (plan.reservation->start) reservation.start = from_pass(*plan.reservation->start);
    reservation_ = std::move(reservation);
  }
  preemption_ = std::move(plan.preemption);
  last_pass_ = now;
  ++version_;
  pass_version_ = version_;
  return started;
}

Placement Scheduler::start(Job& job, const PlannedStart& planned, Clock::time_point now) {
  Placement placement;
  placement.job = job.request.id;
  placement.kind = planned.kind;
  placement.generation = planned.generation.value_or(Generation::kV3);
  placement.hosts = planned.hosts;
  placement.cores = planned.cores;
  placement.accelerator_type = planned.accelerator_type;
  for (const CoreRef& core : placement.cores) {
    pool_.assign(core.host, core.core, job.request.id);
    snapshot_.hosts[core.host].cores[core.core] = job.request.id;
  }
  snapshot_.tenants[job.tenant].used_cores += static_cast<int>(placement.cores.size());
  remove_waiting(job.request.id);
  const JobRequest& r = job.request;
  std::optional<PassTime> end;
  if (r.expected_runtime) end = to_pass(now + *r.expected_runtime);
  running_slot_[r.id] = snapshot_.running.size();
  snapshot_.running.push_back(
      RunningEntry{r.id, r.priority, r.preemptible, false, end, now.time_since_epoch().count()});
  job.running = true;
  job.started = now;
  job.last_heartbeat = now;
  job.placement = placement;
  ++running_count_;
  return placement;
}

void Scheduler::release(Job& job) {
  for (const CoreRef& core : job.placement.cores) {
    pool_.release(core.host, core.core);
    snapshot_.hosts[core.host].cores[core.core] = 0;
  }
  remove_running(job.request.id);
  snapshot_.tenants[job.tenant].used_cores -= static_cast<int>(job.placement.cores.size());
  job.running = false;
  job.preempting = false;
  --running_count_;
}

void Scheduler::forget(JobId id) {
  remove_waiting(id);
  if (reservation_ && reservation_->job == id) reservation_.reset();
  jobs_.erase(id);
  ++version_;
}

bool Scheduler::cancel(JobId id) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  if (it->second.running) release(it->second);
  forget(id);
  return true;
}

void Scheduler::finish(JobId id) { cancel(id); }

bool Scheduler::force_release(JobId id) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return false;
  release(it->second);
  forget(id);
  return true;
}

std::optional<PendingInfo> Scheduler::pending(JobId id) const {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.running) return std::nullopt;
  if (it->second.pending_pass == passes_) return it->second.pending;
  if (snapshot_.shapes[it->second.shape].kind == RequestKind::kCpu) {
    return PendingInfo{PendingReason::kNone, 0, last_pass_};
  }
  return PendingInfo{PendingReason::kResources, 0, std::nullopt};
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
  snapshot_.hosts[host].usable = pool_.schedulable(host);
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
  snapshot_.tenants[intern_tenant(tenant)].max_cores = max_cores;
  ++version_;
}

void Scheduler::set_fair_share(const std::string& tenant_name, double factor) {
  const int t = intern_tenant(tenant_name);
  if (snapshot_.tenants[t].fair_share == factor) return;
  snapshot_.tenants[t].fair_share = factor;
  ++version_;
}

double Scheduler::fair_share(const std::string& tenant) const {
  const auto it = tenant_index_.find(tenant);
  return it == tenant_index_.end() ? 1.0 : snapshot_.tenants[it->second].fair_share;
}

std::optional<Preemption> Scheduler::preempt(Clock::time_point /*now*/) {
  if (pass_version_ != version_ || !preemption_) return std::nullopt;
  std::optional<Preemption> preemption = std::move(preemption_);
  preemption_.reset();
  for (JobId id : preemption->victims) {
    jobs_.at(id).preempting = true;
    snapshot_.running[running_slot_.at(id)].preempting = true;
  }
  ++version_;
  return preemption;
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
  view.queued_jobs = static_cast<int>(jobs_.size()) - running_count_;
  view.running_jobs = running_count_;
  return view;
}

bool Scheduler::can_ever_fit(const ResourceRequest& request) const {
  return scheduler::can_ever_fit(snapshot_.hosts, request);
}

std::vector<JobId> Scheduler::queue() const {
  std::vector<const Job*> waiting;
  for (const auto& [id, job] : jobs_) {
    if (!job.running) waiting.push_back(&job);
  }
  auto key = [&](const Job* job) {
    const JobRequest& r = job->request;
    return std::tuple(snapshot_.shapes[job->shape].kind != RequestKind::kCpu, -r.priority,
                      -snapshot_.tenants[job->tenant].fair_share, r.submit_order, r.id);
  };
  std::sort(waiting.begin(), waiting.end(),
            [&](const Job* a, const Job* b) { return key(a) < key(b); });
  std::vector<JobId> ids;
  ids.reserve(waiting.size());
  for (const Job* job : waiting) ids.push_back(job->request.id);
  return ids;
}

}  // namespace tpujobs::scheduler
