#include "tests/scheduler/pass_driver.h"

#include <gtest/gtest.h>

#include <limits>
#include <tuple>
#include <utility>

namespace tpujobs::scheduler {

PassDriver::PassDriver(std::string_view pool, PassOptions options)
    : PassDriver(*parse_pool(pool), options) {}

PassDriver::PassDriver(PoolLayout layout, PassOptions options)
    : layout_(std::move(layout)),
      options_(options),
      health_(layout_.hosts.size(), HostHealth::kHealthy) {
  for (const HostLayout& host : layout_.hosts) {
    cores_.emplace_back(facts(host.generation).devices_per_host, 0);
  }
}

bool PassDriver::submit(JobSpec spec) {
  if (jobs_.contains(spec.id)) return false;
  DriverJob job;
  job.order = ++submits_;
  job.submitted = now_;
  job.spec = std::move(spec);
  jobs_.emplace(job.spec.id, std::move(job));
  return true;
}

// As the leader's read_pass: hosts, tenants with their quotas and fair-share
// factors, deduplicated shapes, the running jobs (cpu jobs take no core and
// are not preemptible) and the queued ones with their verdict inputs.
PassSnapshot PassDriver::snapshot() const {
  PassSnapshot s;
  s.now = now_;
  s.options = options_;
  s.agents.push_back(PassAgent{"local", std::numeric_limits<int>::max(), true});
  for (int h = 0; h < host_count(); ++h) {
    PassHost host;
    host.generation = layout_.hosts[h].generation;
    host.usable = health_[h] == HostHealth::kHealthy;
    host.heard_at = now_;
    host.cores = cores_[h];
    s.hosts.push_back(std::move(host));
  }
  std::map<std::string, int> tenants;
  auto tenant = [&](const std::string& name) {
    const auto [it, inserted] = tenants.emplace(name, static_cast<int>(s.tenants.size()));
    if (inserted) {
      const auto quota = quota_.find(name);
      const auto factor = fair_share_.find(name);
      s.tenants.push_back(PassTenant{name, quota == quota_.end() ? std::nullopt : quota->second, 0,
                                     factor == fair_share_.end() ? 1.0 : factor->second});
    }
    return it->second;
  };
  std::map<std::tuple<int, int, int, int, int>, int> shapes;
  auto shape = [&](const ResourceRequest& r) {
    const auto key =
        std::tuple(static_cast<int>(r.kind), r.generation ? static_cast<int>(*r.generation) : -1,
                   r.devices_per_host, r.hosts, r.pinned_core.value_or(-1));
    const auto [it, inserted] = shapes.emplace(key, static_cast<int>(s.shapes.size()));
    if (inserted) s.shapes.push_back(r);
    return it->second;
  };
  for (const auto& [id, job] : jobs_) {
    const JobSpec& spec = job.spec;
    if (job.state == base::JobState::kRunning && !job.placement->cores.empty()) {
      s.tenants[tenant(spec.tenant)].used_cores += static_cast<int>(job.placement->cores.size());
      std::optional<PassTime> end;
      if (spec.timeout) end = job.started + *spec.timeout;
      s.running.push_back(RunningEntry{id, spec.priority, spec.preemptible, job.preempting, end,
                                       job.started.time_since_epoch().count()});
    }
    if (job.state != base::JobState::kQueued) continue;
    WaitingEntry entry;
    entry.id = id;
    entry.order = job.order;
    entry.priority = spec.priority;
    entry.tenant = tenant(spec.tenant);
    entry.shape = shape(spec.request);
    entry.preempted = job.preempted;
    entry.timeout = spec.timeout;
    entry.heard_after = job.heard_after;
    if (!job.ever_started && spec.start_by) entry.start_deadline = job.submitted + *spec.start_by;
    if (!job.ever_started && !spec.depends_on.empty()) {
      entry.dependencies = static_cast<int>(s.dependencies.size());
      s.dependencies.push_back(spec.depends_on);
      for (const Dependency& d : spec.depends_on) {
        if (const auto target = jobs_.find(d.job); target != jobs_.end()) {
          s.dependency_states[d.job] = target->second.state;
        }
      }
    }
    s.waiting.push_back(entry);
  }
  for (const auto& [name, quota] : quota_) tenant(name);
  return s;
}

const PassPlan& PassDriver::pass() {
  const PassSnapshot given = snapshot();
  plan_ = plan_pass(given);
  // The leader finds each job's last written reason by its entry.
  for (const Waiting& w : plan_.waiting) {
    EXPECT_LT(w.entry, given.waiting.size());
    if (w.entry < given.waiting.size()) {
      EXPECT_EQ(w.job, given.waiting[w.entry].id);
    }
  }
  for (const Held& held : plan_.held) {
    EXPECT_LT(held.entry, given.waiting.size());
    if (held.entry < given.waiting.size()) {
      EXPECT_EQ(held.job, given.waiting[held.entry].id);
    }
  }
  apply(plan_);
  return plan_;
}

// As the leader's write_unstartable, write_starts, write_preemption and
// write_pending, in that order.
void PassDriver::apply(const PassPlan& plan) {
  for (const Ended& ended : plan.unstartable)
    jobs_.at(ended.job).state = base::JobState::kCancelled;
  for (const PlannedStart& start : plan.starts) {
    DriverJob& job = jobs_.at(start.job);
    job.state = base::JobState::kRunning;
    job.ever_started = true;
    job.preempted = false;
    job.started = now_;
    job.placement = start;
    for (const CoreRef& core : start.cores) cores_[core.host][core.core] = start.job;
  }
  if (plan.preemption) {
    for (JobId victim : plan.preemption->victims) jobs_.at(victim).preempting = true;
  }
  for (auto& [id, job] : jobs_) {
    job.waiting.reset();
    job.held.reset();
  }
  for (const Waiting& waiting : plan.waiting) jobs_.at(waiting.job).waiting = waiting;
  for (const Held& held : plan.held) jobs_.at(held.job).held = held.detail;
}

void PassDriver::release(DriverJob& job) {
  if (job.placement) {
    for (const CoreRef& core : job.placement->cores) {
      if (cores_[core.host][core.core] == job.spec.id) cores_[core.host][core.core] = 0;
    }
  }
  job.placement.reset();
  job.preempting = false;
}

bool PassDriver::end(JobId id, base::JobState state) {
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || base::is_terminal(it->second.state)) return false;
  release(it->second);
  it->second.state = state;
  it->second.waiting.reset();
  it->second.held.reset();
  return true;
}

void PassDriver::stop_preempted(JobId id) {
  DriverJob& job = jobs_.at(id);
  release(job);
  job.state = base::JobState::kQueued;
  job.preempted = true;
}

std::vector<JobId> PassDriver::set_health(int host, HostHealth health) {
  std::vector<JobId> evicted;
  health_[host] = health;
  if (health != HostHealth::kFailed) return evicted;
  for (auto& [id, job] : jobs_) {
    if (job.state != base::JobState::kRunning || !job.placement) continue;
    for (const CoreRef& core : job.placement->cores) {
      if (core.host != host) continue;
      evicted.push_back(id);
      release(job);
      job.state = base::JobState::kFailed;
      break;
    }
  }
  return evicted;
}

void PassDriver::requeue_after_failure(JobId id) {
  DriverJob& job = jobs_.at(id);
  job.state = base::JobState::kQueued;
  job.heard_after = now_;
}

void PassDriver::set_quota(const std::string& tenant, std::optional<int> max_cores) {
  quota_[tenant] = max_cores;
}

void PassDriver::set_fair_share(const std::string& tenant, double factor) {
  fair_share_[tenant] = factor;
}

const DriverJob* PassDriver::job(JobId id) const {
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::optional<JobId> PassDriver::holder(int host, int core) const {
  const JobId id = cores_[host][core];
  return id == 0 ? std::nullopt : std::optional<JobId>(id);
}

}  // namespace tpujobs::scheduler
