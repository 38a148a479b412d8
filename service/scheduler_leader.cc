#include "service/scheduler_leader.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "api/job_spec.h"
#include "api/resolution.h"
#include "api/usage.h"
#include "db/listener.h"
#include "scheduler/capacity.h"
#include "scheduler/generation.h"
#include "service/cluster_placement.h"
#include "service/job_lifecycle.h"
#include "service/preemption_text.h"

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

json parse_object(const std::optional<std::string>& text) {
  if (!text) return json::object();
  json value = json::parse(*text, nullptr, false);
  return value.is_object() ? value : json::object();
}

int max_retries_of(const json& spec) {
  if (!spec.is_object()) return 0;
  const auto it = spec.find("max_retries");
  return it != spec.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

SchedulerLeader::SchedulerLeader(db::ConnectionPool& pool, SchedulerLeaderOptions options)
    : owned_store_(std::make_unique<RepositoryLeaderStore>(pool)),
      store_(*owned_store_),
      options_(std::move(options)),
      lock_(options_.conninfo, db::LeaderLock::kSchedulerKey, db::LeaderLock::Mode::kExclusive,
            options_.lock_idle_timeout) {}

SchedulerLeader::SchedulerLeader(LeaderStore& store, SchedulerLeaderOptions options)
    : store_(store),
      options_(std::move(options)),
      lock_(options_.conninfo, db::LeaderLock::kSchedulerKey, db::LeaderLock::Mode::kExclusive,
            options_.lock_idle_timeout) {}

SchedulerLeader::~SchedulerLeader() { stop(); }

void SchedulerLeader::start() {
  thread_ = std::thread([this] { loop(); });
}

void SchedulerLeader::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  lock_.release();
  leader_ = false;
}

void SchedulerLeader::loop() {
  db::Listener listener(options_.conninfo, db::kSubmitChannel);
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      if (stopping_) return;
    }
    const bool leading = lock_.hold();
    if (leading != leader_) {
      leader_ = leading;
      pending_written_.clear();  // another leader may have written since
      reachable_since_ = options_.clock->now();
      term_.reset();
      if (!leading)
        std::cerr << "tpujobs: " << options_.instance << ": no longer the scheduler leader"
                  << std::endl;
    }
    if (leading && !term_) {
      if (db::Status s = begin_term(); !s.ok()) {
        std::cerr << "tpujobs: scheduler term: " << s.error().message << std::endl;
      } else {
        std::cerr << "tpujobs: " << options_.instance << ": scheduler leader now (term " << *term_
                  << ")" << std::endl;
      }
    }
    if (leading && term_) {
      if (db::Status s = run_pass(); !s.ok()) {
        std::cerr << "tpujobs: scheduling pass: " << s.error().message << std::endl;
      }
    }
    // Woken by a submit or a finished job (NOTIFY), else after the poll
    // interval: a lost notification delays a pass, never loses work.
    // A burst of submits makes one pass, not one each.
    options_.clock->sleep_for(options_.min_pass_interval);
    if (!listener.wait(options_.poll_interval).ok()) {
      base::MutexLock lock(mutex_);
      lock.wait_for(wake_, options_.poll_interval, [this]() REQUIRES(mutex_) { return stopping_; });
    }
  }
}

std::optional<scheduler::ResourceRequest> SchedulerLeader::request_of(
    const db::JobRow& row, const scheduler::PoolCapacity& capacity) {
  if (auto it = requests_.find(row.id); it != requests_.end()) return it->second;
  const SpecFacts& facts = facts_of(row.id);
  if (!facts.trainer) return std::nullopt;
  api::Resolution resolution = api::resolve(*facts.trainer, capacity);
  if (!resolution.errors.empty()) return std::nullopt;
  requests_[row.id] = resolution.request;
  return resolution.request;
}

db::Status SchedulerLeader::learn_specs(const std::vector<db::JobRow>& rows) {
  std::vector<std::int64_t> unknown;
  for (const db::JobRow& row : rows) {
    if (!specs_.count(row.id)) unknown.push_back(row.id);
  }
  if (unknown.empty()) return db::Status::Ok();
  auto texts = store_.job_specs(unknown);
  if (!texts.ok()) return texts.error();
  for (const auto& [id, text] : *texts) {
    SpecFacts facts;
    const json spec_json = json::parse(text, nullptr, false);
    facts.max_retries = max_retries_of(spec_json);
    std::vector<api::FieldError> errors;
    std::optional<api::JobSpec> spec =
        spec_json.is_discarded() ? std::nullopt : api::parse_job_spec(spec_json, &errors);
    if (spec) {
      facts.trainer = std::move(spec->trainer);
      facts.workload.depends_on = std::move(spec->depends_on);
      facts.workload.start_by = spec->start_by;
      facts.workload.time_limit = spec->training.timeout;
      facts.workload.preemptible = spec->preemptible;
    }
    specs_[id] = std::move(facts);
  }
  return db::Status::Ok();
}

const SchedulerLeader::SpecFacts& SchedulerLeader::facts_of(std::int64_t job) const {
  static const SpecFacts kNone{};
  auto it = specs_.find(job);
  return it == specs_.end() ? kNone : it->second;
}

db::Status SchedulerLeader::begin_term() {
  auto term = store_.begin_term(options_.instance);
  if (!term.ok()) return term.error();
  term_ = *term;
  return db::Status::Ok();
}

db::Result<bool> SchedulerLeader::write(db::Transition t) {
  t.require_leader_term = term_;
  return store_.transition(t);
}

db::Status SchedulerLeader::cancel_unstartable(std::int64_t job, const std::string& reason,
                                               const std::string& detail, const std::string& hint) {
  const db::Transition t = lifecycle::cancel_unstartable(job, reason, detail, hint);
  auto moved = write(t);
  if (!moved.ok()) return moved.error();
  if (*moved) std::cerr << "tpujobs: job " << job << ": " << t.reason << std::endl;
  return db::Status::Ok();
}

db::Status SchedulerLeader::move_off(const db::JobRow& row, const std::string& retry_reason,
                                     const std::string& hint, const std::string& unstarted_reason) {
  // A cancel answered 202 is honoured: the job ends CANCELLED, not
  // requeued or FAILED. A job that never started where it was placed (it
  // still reads STARTING) spent nothing: requeued without a retry, a few
  // times (a job whose start brings its agents down must not loop).
  const bool unstarted = !unstarted_reason.empty() && row.state == JobState::kStarting &&
                         row.placement_epoch &&
                         row.unstarted_requeues < lifecycle::kFreeUnstartedRequeues;
  const db::Transition t =
      row.cancel_requested ? lifecycle::cancel_placed(row.id, row.placement_epoch)
      : unstarted
          ? lifecycle::requeue_unstarted(row.id, unstarted_reason, row.placement_epoch.value_or(0))
      : row.attempt < facts_of(row.id).max_retries
          ? lifecycle::requeue_elsewhere(row.id, retry_reason, row.placement_epoch,
                                         /*retry=*/true, {JobState::kStarting, JobState::kRunning})
          : lifecycle::fail_unavailable(row.id, hint, row.placement_epoch);
  auto moved = write(t);
  if (!moved.ok()) return moved.error();
  if (*moved) {
    std::cerr << "tpujobs: job " << row.id << ": " << t.reason << std::endl;
    requests_.erase(row.id);
    // Its agent, if it still listens, stops its copy now.
    (void)store_.notify(db::kAgentChannel, row.agent.value_or(""));
  }
  return db::Status::Ok();
}

db::Status SchedulerLeader::requeue_orphans() {
  auto orphans = store_.orphaned_jobs();
  if (!orphans.ok()) return orphans.error();
  if (db::Status s = learn_specs(*orphans); !s.ok()) return s;  // their max_retries
  for (const db::JobRow& row : *orphans) {
    const std::string agent = row.agent.value_or("");
    db::Status s =
        move_off(row, "Agent " + agent + " was lost; requeued to resume from its last checkpoint",
                 "the agent running the job (" + agent +
                     ") stopped answering; check it (GET /v1/pool), or set max_retries so the job "
                     "resumes on another agent from its last checkpoint",
                 "Agent " + agent +
                     " was lost before the job started on it; requeued without spending a retry");
    if (!s.ok()) return s;
  }
  return db::Status::Ok();
}

db::Result<nlohmann::json> SchedulerLeader::slice_allocation(
    const ClusterPlacement& p, const std::map<std::string, std::int64_t>& epoch_of) {
  auto placement = store_.next_slice_placement();
  if (!placement.ok()) return placement.error();
  json parts = json::array();
  int first_host = 0;
  for (const auto& [agent, hosts] : p.parts) {
    parts.push_back({{"agent", agent},
                     {"epoch", epoch_of.at(agent)},
                     {"first_host", first_host},
                     {"hosts", hosts}});
    first_host += hosts;
  }
  return json{{"placement", *placement}, {"parts", parts}};
}

std::string SchedulerLeader::describe_parts(const ClusterPlacement& p) {
  std::string out;
  for (const auto& [agent, hosts] : p.parts) {
    out += (out.empty() ? "" : ", ") + std::to_string(hosts) + " host(s) on agent " + agent;
  }
  return out + " (" + std::to_string(p.cores.size()) + " cores)";
}

db::Status SchedulerLeader::run_pass() {
  db::Status s = pass();
  // Only when the database could not be reached: a statement it refused
  // does not make the agents' silence unknown (and a leader whose passes
  // fail so would never declare an agent lost).
  if (!s.ok() && s.code() == db::ErrorCode::kUnavailable) reachable_since_ = options_.clock->now();
  return s;
}

db::Status SchedulerLeader::pass() {
  // Silence is judged only over a span the leader itself could reach the
  // database: after an outage (or a takeover) every heartbeat looks old. A
  // judgement the database answers late is dropped as an outage: a stalled
  // server held the heartbeats up as well, and writes them only now.
  std::vector<std::string> none;
  const bool judge = options_.clock->now() - reachable_since_ >= options_.agent_silence;
  auto lost = judge ? store_.mark_lost(options_.agent_silence, options_.agent_silence / 4)
                    : db::Result<std::vector<std::string>>(none);
  if (!lost.ok()) return lost.error();
  for (const std::string& name : *lost)
    std::cerr << "tpujobs: agent " << name << " is lost" << std::endl;
  if (db::Status s = requeue_orphans(); !s.ok()) return s;
  if (options_.clock->now() - rendezvous_swept_ >= std::chrono::minutes(1)) {
    // A rendezvous is over once its slice connected or failed (within the
    // collective deadline): old keys only take room.
    if (db::Status s = store_.forget_rendezvous_before(std::chrono::hours(1)); !s.ok()) return s;
    rendezvous_swept_ = options_.clock->now();
  }

  auto agents = store_.list_agents();
  if (!agents.ok()) return agents.error();
  auto hosts = store_.list_hosts();
  if (!hosts.ok()) return hosts.error();
  auto unfinished = store_.load_unfinished_to_schedule();
  if (!unfinished.ok()) return unfinished.error();
  if (db::Status s = learn_specs(*unfinished); !s.ok()) return s;
  auto quotas = store_.load_quotas();
  if (!quotas.ok()) return quotas.error();

  // Heartbeats late, judged like silence only over a span the leader could
  // reach the database. A late agent (killed, or cut off, but not lost yet)
  // is given no new job: one placed there would wait out the agent's
  // silence and end FAILED (or spend a retry) without ever running.
  const bool judge_lateness = options_.clock->now() - reachable_since_ >= options_.late_heartbeat;
  auto punctual = [&](const db::AgentRow& a) {
    return !judge_lateness || std::chrono::milliseconds(a.silent_ms) < options_.late_heartbeat;
  };
  std::map<std::string, std::int64_t> epoch_of;      // alive agents
  std::map<std::string, const db::AgentRow*> alive;  // by name
  PlacementInput input;
  for (const db::AgentRow& a : *agents) {
    if (a.state != "alive") continue;  // a draining agent's hosts stay, unusable
    epoch_of[a.name] = a.epoch;
    alive[a.name] = &a;
    input.free_cpu_slots[a.name] = punctual(a) ? options_.max_cpu_jobs_per_agent : 0;
  }
  scheduler::PoolCapacity capacity;  // every registered host, so a lost agent's jobs wait
  std::map<std::string, int> host_index;
  std::set<std::string> failed_hosts;
  for (const db::ClusterHostRow& h : *hosts) {
    if (h.health == "failed") failed_hosts.insert(h.name);
    std::optional<scheduler::Generation> generation = scheduler::parse_generation(h.generation);
    if (!generation) continue;
    ++capacity.hosts[*generation];
    ClusterHost host;
    host.name = h.name;
    host.agent = h.agent;
    host.generation = *generation;
    host.usable = h.agent_state == "alive" && h.health == "healthy";
    host.in_pool = h.agent_state != "lost";
    if (auto a = alive.find(h.agent); a != alive.end()) {
      host.punctual = punctual(*a->second);
      host.heard_at = a->second->last_heartbeat;
    }
    host.core_job.assign(scheduler::facts(*generation).devices_per_host, 0);
    host_index[h.name] = static_cast<int>(input.hosts.size());
    input.hosts.push_back(std::move(host));
  }
  // The jobs the queued ones depend on, in one read.
  std::vector<std::int64_t> targets;
  for (const db::JobRow& row : *unfinished) {
    if (row.state != JobState::kQueued || row.started_at) continue;
    for (const scheduler::Dependency& d : workload_of(row).depends_on) targets.push_back(d.job);
  }
  auto target_states = store_.job_states(targets);
  if (!target_states.ok()) return target_states.error();
  auto state_of = [&](std::int64_t id) -> std::optional<JobState> {
    auto it = target_states->find(id);
    return it == target_states->end() ? std::nullopt : std::optional<JobState>(it->second);
  };
  const base::Clock::wall_time_point wall_now = options_.clock->wall_now();
  std::vector<std::pair<std::int64_t, std::string>> held;  // (job, why): waits for a dependency

  if (!fair_share_read_ ||
      options_.clock->now() - *fair_share_read_ >= options_.fair_share_interval) {
    std::set<std::string> active;
    for (const db::JobRow& row : *unfinished) active.insert(row.tenant);
    auto factors = store_.fair_share(wall_now, active, options_.fair_share);
    if (!factors.ok()) return factors.error();
    fair_share_ = std::move(*factors);
    fair_share_read_ = options_.clock->now();
  }
  auto fair_share_of = [&](const std::string& tenant) {
    auto it = fair_share_.find(tenant);
    return it == fair_share_.end() ? 1.0 : it->second;
  };

  std::map<std::string, int> tenant_cores;
  std::vector<WaitingJob> queue;
  std::set<std::int64_t> unfinished_ids;
  std::map<std::int64_t, const db::JobRow*> row_of;
  std::map<std::int64_t, int> priority_of;
  std::map<std::int64_t, scheduler::RunningJobInfo> running_info;  // jobs holding cores
  for (const db::JobRow& row : *unfinished) {
    unfinished_ids.insert(row.id);
    row_of[row.id] = &row;
    priority_of[row.id] = row.priority;
    if (row.state != JobState::kQueued) {
      // Running: its cores are taken.
      const json allocation = parse_object(row.allocation_json);
      if (allocation.value("accelerator", "") == "cpu") {
        if (auto slot = input.free_cpu_slots.find(row.agent.value_or(""));
            slot != input.free_cpu_slots.end()) {
          --slot->second;
        }
        continue;
      }
      const json slice_hosts = allocation.value("hosts", json::array());
      if (std::any_of(slice_hosts.begin(), slice_hosts.end(), [&](const json& h) {
            return h.is_string() && failed_hosts.count(h.get<std::string>());
          })) {
        // DESIGN §4: a job whose host fails is retried from its checkpoint
        // on healthy hosts, or ends UNAVAILABLE.
        db::Status s = move_off(
            row, "A host of its slice failed; retrying on healthy hosts from its last checkpoint",
            "a host of the job's slice failed; check the slice's hosts (GET /v1/pool), or set "
            "max_retries so the job resumes on healthy hosts from its last checkpoint");
        if (!s.ok()) return s;
        continue;
      }
      if (row.preempted_by) {
        // Stopping now for a preemptor: its cores are the first to free, so
        // the head's reservation covers them and nothing backfills there.
        input.expected_end[row.id] = wall_now;
      } else if (const auto limit = workload_of(row).time_limit; limit && row.started_at) {
        input.expected_end[row.id] =
            *row.started_at +
            std::chrono::duration_cast<std::chrono::system_clock::duration>(*limit);
      }
      scheduler::RunningJobInfo info{
          row.id,
          row.priority,
          workload_of(row).preemptible,
          row.preempted_by.has_value(),
          row.started_at ? row.started_at->time_since_epoch().count() : 0,
          0};
      for (const json& core : allocation.value("cores", json::array())) {
        auto it = host_index.find(core.value("host", ""));
        const int c = core.value("core", -1);
        if (it == host_index.end()) continue;
        ClusterHost& host = input.hosts[it->second];
        if (c >= 0 && c < static_cast<int>(host.core_job.size())) host.core_job[c] = row.id;
        ++tenant_cores[row.tenant];
        ++info.cores;
      }
      if (row.placement_epoch) running_info[row.id] = info;
      continue;
    }
    if (row.cancel_requested) {
      if (auto moved = write(lifecycle::cancel_queued(row.id)); !moved.ok()) return moved.error();
      continue;
    }
    const WorkloadFields& workload = workload_of(row);
    if (!row.started_at &&
        scheduler::start_deadline_passed(row.created_at, workload.start_by, wall_now)) {
      db::Status s = cancel_unstartable(
          row.id, "StartDeadlineExceeded",
          "the job did not start within its start_by of " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(*workload.start_by).count()) +
              " s",
          "raise start_by, lower the resources it asks for, or raise its priority");
      if (!s.ok()) return s;
      continue;
    }
    if (!row.started_at && !workload.depends_on.empty()) {
      const scheduler::DependencyCheck check =
          scheduler::check_dependencies(workload.depends_on, state_of);
      if (check.verdict == scheduler::DependencyVerdict::kWaiting) {
        held.emplace_back(row.id, check.detail);
        continue;
      }
      if (check.verdict == scheduler::DependencyVerdict::kNeverSatisfied) {
        db::Status s = cancel_unstartable(
            row.id, "DependencyNeverSatisfied", check.detail,
            "the job it depends on ended otherwise; fix that job and submit both "
            "again, or depend on it with another condition (succeeded, failed, "
            "finished)");
        if (!s.ok()) return s;
        continue;
      }
    }
    std::optional<scheduler::ResourceRequest> request = request_of(row, capacity);
    if (!request) {
      // No registered agent has hosts it could use (yet).
      queue.push_back({row.id, row.tenant, {}, /*resolvable=*/false});
      continue;
    }
    queue.push_back(
        {row.id, row.tenant, *request, /*resolvable=*/true, workload.time_limit, row.requeued_at});
  }
  for (auto it = requests_.begin(); it != requests_.end();) {
    it = unfinished_ids.count(it->first) ? std::next(it) : requests_.erase(it);
  }
  for (auto it = specs_.begin(); it != specs_.end();) {
    it = unfinished_ids.count(it->first) ? std::next(it) : specs_.erase(it);
  }
  for (const auto& [tenant, max_cores] : *quotas)
    input.quota_left[tenant] = max_cores - tenant_cores[tenant];
  // Fair share among equal priorities (the rows come priority first, then id).
  std::stable_sort(queue.begin(), queue.end(), [&](const WaitingJob& a, const WaitingJob& b) {
    const db::JobRow& ra = *row_of.at(a.id);
    const db::JobRow& rb = *row_of.at(b.id);
    return std::pair(-ra.priority, -fair_share_of(ra.tenant)) <
           std::pair(-rb.priority, -fair_share_of(rb.tenant));
  });

  input.now = wall_now;
  PlacementPass pass = place_jobs(input, queue);
  std::set<std::string> woken;
  for (const ClusterPlacement& p : pass.placed) {
    json allocation;
    if (!p.generation) {
      allocation = {{"accelerator", "cpu"}, {"agent", p.agent}};
    } else {
      json host_names = json::array();
      for (int h : p.hosts) host_names.push_back(input.hosts[h].name);
      json cores = json::array();
      for (const scheduler::CoreRef& c : p.cores)
        cores.push_back({{"host", input.hosts[c.host].name}, {"core", c.core}});
      allocation = {{"generation", std::string(scheduler::facts(*p.generation).name)},
                    {"accelerator_type",
                     p.accelerator_type.empty() ? json(nullptr) : json(p.accelerator_type)},
                    {"hosts", host_names},
                    {"cores", cores},
                    {"agent", p.agent}};
      if (!p.parts.empty()) {
        auto slice = slice_allocation(p, epoch_of);
        if (!slice.ok()) return slice.error();
        allocation["slice"] = std::move(*slice);
      }
    }
    std::string reason = p.generation ? "Placed on agent " + p.agent + ": " +
                                            std::to_string(p.cores.size()) + " cores on " +
                                            std::to_string(p.hosts.size()) + " host(s)"
                                      : "Placed on agent " + p.agent + "'s CPU threads";
    if (!p.parts.empty()) reason = "Placed across agents: " + describe_parts(p);
    std::vector<std::pair<std::string, std::int64_t>> parts;
    for (const auto& [agent, hosts] : p.parts) parts.emplace_back(agent, epoch_of.at(agent));
    auto moved = write(lifecycle::place_on_agent(p.job, std::move(reason), allocation.dump(),
                                                 p.agent, epoch_of.at(p.agent), parts));
    if (!moved.ok()) return moved.error();
    if (*moved) woken.insert(p.agent);
    for (const auto& [agent, hosts] : p.parts) {
      if (*moved) woken.insert(agent);
    }
  }
  // Preemption: the victims are marked under their placement epochs, then
  // their agents woken to stop them at a checkpoint. Not when the head's
  // reserved start is known and near: waiting is cheaper than a checkpoint
  // and a requeue (as in one process, scheduler/preemption.h).
  const bool start_is_near = pass.reservation && pass.reservation->start &&
                             *pass.reservation->start - wall_now < options_.preemption_min_wait;
  const std::optional<ClusterPreemption> preemption =
      start_is_near
          ? std::nullopt
          : choose_cluster_preemption(
                input, pass, queue, priority_of,
                [&](std::int64_t id) -> std::optional<scheduler::RunningJobInfo> {
                  auto it = running_info.find(id);
                  return it == running_info.end() ? std::nullopt : std::optional(it->second);
                });
  if (preemption) {
    bool first = true;
    for (std::int64_t victim : preemption->victims) {
      const db::JobRow& row = *row_of.at(victim);
      auto marked = store_.request_preemption(victim, *row.placement_epoch, preemption->preemptor,
                                              first ? preempting_reason(preemption->victims) : "",
                                              preempting_detail(preemption->victims), term_);
      if (!marked.ok()) return marked.error();
      if (!*marked) continue;
      first = false;
      std::cerr << "tpujobs: job " << victim << ": preempted by job " << preemption->preemptor
                << std::endl;
      woken.insert(row.agent.value_or(""));
    }
  }
  // Committed: now the agents may act.
  for (const std::string& agent : woken) (void)store_.notify(db::kAgentChannel, agent);

  // Only the reasons that changed since the last pass are written.
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> pending;
  std::map<std::int64_t, std::string> written;
  for (const WaitingReason& w : pass.waiting) {
    const db::JobRow& row = *row_of.at(w.job);
    scheduler::PendingReason why = w.reason;
    const bool preempted = row.preempted_by && (why == scheduler::PendingReason::kResources ||
                                                why == scheduler::PendingReason::kPriority);
    if (preempted) why = scheduler::PendingReason::kPreempted;
    json reason = {{"reason", std::string(scheduler::pending_reason_name(why))},
                   {"queue_position", w.queue_position},
                   {"fair_share", fair_share_of(row.tenant)}};
    if (!w.detail.empty()) reason["detail"] = w.detail;
    if (w.estimated_start) reason["estimated_start"] = api::rfc3339(*w.estimated_start);
    if (row.preempted_by) {
      reason["preempted_by"] = *row.preempted_by;
      if (preempted) {
        reason["detail"] = preempted_pending_detail(*row.preempted_by);
      }
    }
    std::string text = reason.dump();
    auto before = pending_written_.find(w.job);
    if (before == pending_written_.end() || before->second != text)
      pending.emplace_back(w.job, text);
    written.emplace(w.job, std::move(text));
  }
  for (const auto& [job, detail] : held) {
    std::string text = json{
        {"reason",
         std::string(scheduler::pending_reason_name(scheduler::PendingReason::kDependency))},
        {"queue_position", nullptr},  // not in the queue yet, as in one process
        {"detail", detail}}.dump();
    auto before = pending_written_.find(job);
    if (before == pending_written_.end() || before->second != text) pending.emplace_back(job, text);
    written.emplace(job, std::move(text));
  }
  db::Status stored = store_.set_pending(pending);
  pending_written_ = stored.ok() ? std::move(written) : std::map<std::int64_t, std::string>{};
  return stored;
}

}  // namespace tpujobs::service
