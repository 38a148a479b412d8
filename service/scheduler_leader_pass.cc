// One pass of the scheduler leader: the tables read into a
// scheduler::PassSnapshot, scheduler::plan_pass, and its plan written back.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "api/usage.h"
#include "scheduler/generation.h"
#include "service/job_lifecycle.h"
#include "service/preemption_text.h"
#include "service/scheduler_leader.h"

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

json parse_object(const std::optional<std::string>& text) {
  if (!text) return json::object();
  json value = json::parse(*text, nullptr, false);
  return value.is_object() ? value : json::object();
}

std::chrono::system_clock::duration wall(std::chrono::milliseconds span) {
  return std::chrono::duration_cast<std::chrono::system_clock::duration>(span);
}

}  // namespace

struct SchedulerLeader::PassState {
  scheduler::PassSnapshot snapshot;
  std::vector<const db::JobRow*> rows;  // the unfinished jobs, without their specs
  std::unordered_map<std::int64_t, const db::JobRow*> row_of;
  std::vector<std::string> host_names;
  std::map<std::string, int> host_index;
  std::map<std::string, int> agent_index;
  std::map<std::string, std::int64_t> epoch_of;  // alive agents
  std::set<std::string> failed_hosts;
  scheduler::PoolCapacity capacity;  // every registered host, so a lost agent's jobs wait
  std::map<std::string, int> tenant_index;
  std::map<std::tuple<int, int, int, int, int>, int> shape_index;
  std::map<std::string, double> fair_share;

  int tenant(const std::string& name) {
    const auto [it, inserted] =
        tenant_index.emplace(name, static_cast<int>(snapshot.tenants.size()));
    if (inserted) {
      const auto factor = fair_share.find(name);
      snapshot.tenants.push_back(scheduler::PassTenant{
          name, std::nullopt, 0, factor == fair_share.end() ? 1.0 : factor->second});
    }
    return it->second;
  }
  int shape(const scheduler::ResourceRequest& r) {
    const auto key =
        std::tuple(static_cast<int>(r.kind), r.generation ? static_cast<int>(*r.generation) : -1,
                   r.devices_per_host, r.hosts, r.pinned_core.value_or(-1));
    const auto [it, inserted] = shape_index.emplace(key, static_cast<int>(snapshot.shapes.size()));
    if (inserted) snapshot.shapes.push_back(r);
    return it->second;
  }
  const std::string& agent_name(int agent) const { return snapshot.agents[agent].name; }
};

db::Status SchedulerLeader::add_hosts(PassState& state, const std::vector<db::AgentRow>& agents,
                                      const std::vector<db::ClusterHostRow>& hosts) {
  // Heartbeats late, judged like silence only over a span the leader could
  // reach the database. A late agent (killed, or cut off, but not lost yet)
  // is given no new job: one placed there would wait out the agent's
  // silence and end FAILED (or spend a retry) without ever running.
  const bool judge_lateness = options_.clock->now() - reachable_since_ >= options_.late_heartbeat;
  std::map<std::string, bool> punctual;  // alive agents
  std::map<std::string, std::chrono::system_clock::time_point> heard_at;
  for (const db::AgentRow& a : agents) {
    const bool alive = a.state == "alive";  // a draining agent's hosts stay, unusable
    const bool on_time =
        !judge_lateness || std::chrono::milliseconds(a.silent_ms) < options_.late_heartbeat;
    state.agent_index[a.name] = static_cast<int>(state.snapshot.agents.size());
    state.snapshot.agents.push_back(scheduler::PassAgent{
        a.name, alive && on_time ? options_.max_cpu_jobs_per_agent : 0, alive});
    if (!alive) continue;
    state.epoch_of[a.name] = a.epoch;
    punctual[a.name] = on_time;
    heard_at[a.name] = a.last_heartbeat;
  }
  for (const db::ClusterHostRow& h : hosts) {
    if (h.health == "failed") state.failed_hosts.insert(h.name);
    std::optional<scheduler::Generation> generation = scheduler::parse_generation(h.generation);
    if (!generation) continue;
    ++state.capacity.hosts[*generation];
    auto agent = state.agent_index.find(h.agent);
    if (agent == state.agent_index.end()) {
      agent = state.agent_index.emplace(h.agent, state.snapshot.agents.size()).first;
      state.snapshot.agents.push_back(scheduler::PassAgent{h.agent, 0, false});
    }
    scheduler::PassHost host;
    host.agent = agent->second;
    host.generation = *generation;
    host.usable = h.agent_state == "alive" && h.health == "healthy";
    host.in_pool = h.agent_state != "lost";
    if (auto on_time = punctual.find(h.agent); on_time != punctual.end()) {
      host.punctual = on_time->second;
      host.heard_at = heard_at[h.agent];
    }
    host.cores.assign(scheduler::facts(*generation).devices_per_host, 0);
    state.host_index[h.name] = static_cast<int>(state.snapshot.hosts.size());
    state.host_names.push_back(h.name);
    state.snapshot.hosts.push_back(std::move(host));
  }
  return db::Status::Ok();
}

db::Status SchedulerLeader::add_running(PassState& state, const db::JobRow& row) {
  const json allocation = parse_object(row.allocation_json);
  if (allocation.value("accelerator", "") == "cpu") {
    if (auto a = state.agent_index.find(row.agent.value_or("")); a != state.agent_index.end()) {
      int& slots = state.snapshot.agents[a->second].cpu_slots;
      slots = std::max(0, slots - 1);
    }
    return db::Status::Ok();
  }
  const json slice_hosts = allocation.value("hosts", json::array());
  if (std::any_of(slice_hosts.begin(), slice_hosts.end(), [&](const json& h) {
        return h.is_string() && state.failed_hosts.count(h.get<std::string>());
      })) {
    // DESIGN §4: a job whose host fails is retried from its checkpoint
    // on healthy hosts, or ends UNAVAILABLE.
    return move_off(
        row, "A host of its slice failed; retrying on healthy hosts from its last checkpoint",
        "a host of the job's slice failed; check the slice's hosts (GET /v1/pool), or set "
        "max_retries so the job resumes on healthy hosts from its last checkpoint");
  }
  scheduler::RunningEntry entry{row.id,
                                row.priority,
                                workload_of(row).preemptible,
                                row.preempted_by.has_value(),
                                std::nullopt,
                                row.started_at ? row.started_at->time_since_epoch().count() : 0};
  // Stopping now for a preemptor: plan_pass counts its cores as the first
  // to free, so the head's reservation covers them and nothing backfills
  // there.
  if (const auto limit = workload_of(row).time_limit; limit && row.started_at) {
    entry.expected_end = *row.started_at + wall(*limit);
  }
  int& used = state.snapshot.tenants[state.tenant(row.tenant)].used_cores;
  for (const json& core : allocation.value("cores", json::array())) {
    auto it = state.host_index.find(core.value("host", ""));
    const int c = core.value("core", -1);
    if (it == state.host_index.end()) continue;
    scheduler::PassHost& host = state.snapshot.hosts[it->second];
    if (c >= 0 && c < static_cast<int>(host.cores.size())) host.cores[c] = row.id;
    ++used;
  }
  // Only a job placed under an epoch can be asked to stop.
  if (row.placement_epoch) state.snapshot.running.push_back(entry);
  return db::Status::Ok();
}

db::Status SchedulerLeader::add_job(PassState& state, const db::JobRow& row) {
  state.row_of[row.id] = &row;
  if (row.state != JobState::kQueued) return add_running(state, row);
  if (row.cancel_requested) {
    auto moved = write(lifecycle::cancel_queued(row.id));
    return moved.ok() ? db::Status::Ok() : db::Status(moved.error());
  }
  const WorkloadFields& workload = workload_of(row);
  scheduler::WaitingEntry entry;
  entry.id = row.id;
  entry.order = row.id;
  entry.priority = row.priority;
  entry.tenant = state.tenant(row.tenant);
  entry.preempted = row.preempted_by.has_value();
  entry.timeout = workload.time_limit;
  if (row.requeued_at) entry.heard_after = *row.requeued_at;
  if (!row.started_at && workload.start_by) {
    entry.start_deadline = row.created_at + wall(*workload.start_by);
  }
  if (!row.started_at && !workload.depends_on.empty()) {
    entry.dependencies = static_cast<int>(state.snapshot.dependencies.size());
    state.snapshot.dependencies.push_back(workload.depends_on);
  }
  // -1: no registered agent has hosts it could use (yet).
  if (std::optional<scheduler::ResourceRequest> request = request_of(row, state.capacity)) {
    entry.shape = state.shape(*request);
  }
  state.snapshot.waiting.push_back(entry);
  return db::Status::Ok();
}

db::Status SchedulerLeader::read_fair_share(PassState& state,
                                            const std::vector<const db::JobRow*>& rows) {
  if (!fair_share_read_ ||
      options_.clock->now() - *fair_share_read_ >= options_.fair_share_interval) {
    std::set<std::string> active;
    for (const db::JobRow* row : rows) active.insert(row->tenant);
    auto factors = store_.fair_share(options_.clock->wall_now(), active, options_.fair_share);
    if (!factors.ok()) return factors.error();
    fair_share_ = std::move(*factors);
    fair_share_read_ = options_.clock->now();
  }
  state.fair_share = fair_share_;
  return db::Status::Ok();
}

db::Status SchedulerLeader::read_unfinished(std::vector<const db::JobRow*>& rows) {
  const auto now = options_.clock->now();
  std::optional<std::string> since = low_water_;
  if (now - complete_read_at_ >= options_.complete_read_interval) since.reset();
  auto read = store_.read_to_schedule(since);
  if (!read.ok()) return read.error();
  if (read->complete) {
    unfinished_.clear();
    complete_read_at_ = now;
  }
  const bool moved = read->complete || !read->rows.empty();
  std::vector<std::int64_t> fresh;  // read now: their specs may be new to the leader
  for (db::JobRow& row : read->rows) {
    const std::int64_t id = row.id;
    if (base::is_terminal(row.state)) {
      // What the leader holds per job goes with the job.
      unfinished_.erase(id);
      requests_.erase(id);
      specs_.erase(id);
    } else {
      unfinished_[id] = std::move(row);
      fresh.push_back(id);
    }
  }
  low_water_ = std::move(read->low_water);
  if (read->complete) {
    std::erase_if(requests_, [&](const auto& r) { return !unfinished_.count(r.first); });
    std::erase_if(specs_, [&](const auto& f) { return !unfinished_.count(f.first); });
  }
  if (moved) {  // else the order of the last pass stands (a map's nodes stay put)
    order_.clear();
    order_.reserve(unfinished_.size());
    for (const auto& [id, row] : unfinished_) order_.push_back(&row);
    std::stable_sort(order_.begin(), order_.end(), [](const db::JobRow* a, const db::JobRow* b) {
      return a->priority > b->priority;  // then by id, as the map holds them
    });
  }
  rows = order_;
  return learn_specs(fresh);
}

db::Status SchedulerLeader::read_pass(PassState& state) {
  auto agents = store_.list_agents();
  if (!agents.ok()) return agents.error();
  auto hosts = store_.list_hosts();
  if (!hosts.ok()) return hosts.error();
  if (db::Status s = read_unfinished(state.rows); !s.ok()) return s;
  state.row_of.reserve(state.rows.size());
  auto quotas = store_.load_quotas();
  if (!quotas.ok()) return quotas.error();
  if (db::Status s = read_fair_share(state, state.rows); !s.ok()) return s;
  if (db::Status s = add_hosts(state, *agents, *hosts); !s.ok()) return s;
  state.snapshot.now = options_.clock->wall_now();
  state.snapshot.options.preemption_min_wait = options_.preemption_min_wait;
  for (const auto& [tenant, max_cores] : *quotas) {
    state.snapshot.tenants[state.tenant(tenant)].max_cores = max_cores;
  }
  for (const db::JobRow* row : state.rows) {
    if (db::Status s = add_job(state, *row); !s.ok()) return s;
  }
  // The jobs the queued ones depend on, in one read.
  std::vector<std::int64_t> targets;
  for (const std::vector<scheduler::Dependency>& list : state.snapshot.dependencies) {
    for (const scheduler::Dependency& d : list) targets.push_back(d.job);
  }
  auto target_states = store_.job_states(targets);
  if (!target_states.ok()) return target_states.error();
  state.snapshot.dependency_states.insert(target_states->begin(), target_states->end());
  return db::Status::Ok();
}

db::Status SchedulerLeader::write_unstartable(const PassState& state,
                                              const scheduler::PassPlan& plan) {
  for (const scheduler::Ended& ended : plan.unstartable) {
    db::Status s = db::Status::Ok();
    if (ended.why == scheduler::Unstartable::kStartDeadlineExceeded) {
      const auto start_by = workload_of(*state.row_of.at(ended.job)).start_by;
      s = cancel_unstartable(
          ended.job, "StartDeadlineExceeded",
          "the job did not start within its start_by of " +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                 start_by.value_or(std::chrono::milliseconds(0)))
                                 .count()) +
              " s",
          "raise start_by, lower the resources it asks for, or raise its priority");
    } else {
      s = cancel_unstartable(ended.job, "DependencyNeverSatisfied", ended.detail,
                             "the job it depends on ended otherwise; fix that job and submit both "
                             "again, or depend on it with another condition (succeeded, failed, "
                             "finished)");
    }
    if (!s.ok()) return s;
  }
  return db::Status::Ok();
}

db::Result<nlohmann::json> SchedulerLeader::slice_allocation(const PassState& state,
                                                             const scheduler::PlannedStart& p) {
  auto placement = store_.next_slice_placement();
  if (!placement.ok()) return placement.error();
  json parts = json::array();
  int first_host = 0;
  for (const auto& [agent, hosts] : p.parts) {
    const std::string& name = state.agent_name(agent);
    parts.push_back({{"agent", name},
                     {"epoch", state.epoch_of.at(name)},
                     {"first_host", first_host},
                     {"hosts", hosts}});
    first_host += hosts;
  }
  return json{{"placement", *placement}, {"parts", parts}};
}

std::string SchedulerLeader::describe_parts(const PassState& state,
                                            const scheduler::PlannedStart& p) {
  std::string out;
  for (const auto& [agent, hosts] : p.parts) {
    out += (out.empty() ? "" : ", ") + std::to_string(hosts) + " host(s) on agent " +
           state.agent_name(agent);
  }
  return out + " (" + std::to_string(p.cores.size()) + " cores)";
}

db::Status SchedulerLeader::write_starts(const PassState& state, const scheduler::PassPlan& plan,
                                         std::set<std::string>& woken) {
  for (const scheduler::PlannedStart& p : plan.starts) {
    const std::string& agent = state.agent_name(p.agent);
    json allocation = {{"accelerator", "cpu"}, {"agent", agent}};
    if (p.generation) {
      json host_names = json::array();
      for (int h : p.hosts) host_names.push_back(state.host_names[h]);
      json cores = json::array();
      for (const scheduler::CoreRef& c : p.cores)
        cores.push_back({{"host", state.host_names[c.host]}, {"core", c.core}});
      allocation = {{"generation", std::string(scheduler::facts(*p.generation).name)},
                    {"accelerator_type", p.kind == scheduler::RequestKind::kSingleCore
                                             ? json(nullptr)
                                             : json(p.accelerator_type)},
                    {"hosts", host_names},
                    {"cores", cores},
                    {"agent", agent}};
      if (!p.parts.empty()) {
        auto slice = slice_allocation(state, p);
        if (!slice.ok()) return slice.error();
        allocation["slice"] = std::move(*slice);
      }
    }
    std::string reason = p.generation
                             ? "Placed on agent " + agent + ": " + std::to_string(p.cores.size()) +
                                   " cores on " + std::to_string(p.hosts.size()) + " host(s)"
                             : "Placed on agent " + agent + "'s CPU threads";
    if (!p.parts.empty()) reason = "Placed across agents: " + describe_parts(state, p);
    std::vector<std::pair<std::string, std::int64_t>> parts;
    for (const auto& [part, hosts] : p.parts) {
      parts.emplace_back(state.agent_name(part), state.epoch_of.at(state.agent_name(part)));
    }
    auto moved = write(lifecycle::place_on_agent(p.job, std::move(reason), allocation.dump(), agent,
                                                 state.epoch_of.at(agent), parts));
    if (!moved.ok()) return moved.error();
    if (!*moved) continue;
    woken.insert(agent);
    for (const auto& [part, epoch] : parts) woken.insert(part);
  }
  return db::Status::Ok();
}

db::Status SchedulerLeader::write_preemption(const PassState& state,
                                             const scheduler::PassPlan& plan,
                                             std::set<std::string>& woken) {
  // The victims are marked under their placement epochs, then their agents
  // woken to stop them at a checkpoint.
  if (!plan.preemption) return db::Status::Ok();
  const scheduler::Preemption& preemption = *plan.preemption;
  bool first = true;
  for (std::int64_t victim : preemption.victims) {
    const db::JobRow& row = *state.row_of.at(victim);
    auto marked = store_.request_preemption(victim, *row.placement_epoch, preemption.preemptor,
                                            first ? preempting_reason(preemption.victims) : "",
                                            preempting_detail(preemption.victims), term_);
    if (!marked.ok()) return marked.error();
    if (!*marked) continue;
    first = false;
    std::cerr << "tpujobs: job " << victim << ": preempted by job " << preemption.preemptor
              << std::endl;
    woken.insert(row.agent.value_or(""));
  }
  return db::Status::Ok();
}

db::Status SchedulerLeader::write_pending(const PassState& state, const scheduler::PassPlan& plan) {
  // Only the reasons that changed since the last pass are rendered and
  // written: with a long queue most stay as they were.
  const std::uint64_t pass = ++pending_passes_;
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> pending;
  auto changed_note = [&](std::int64_t job, scheduler::PendingReason reason, int position,
                          double fair_share, const std::string& detail,
                          const std::optional<scheduler::PassTime>& estimated_start,
                          const std::optional<std::int64_t>& preempted_by) -> PendingNote* {
    auto [it, added] = pending_written_.try_emplace(job);
    PendingNote& n = it->second;
    n.pass = pass;
    if (!added && n.reason == reason && n.queue_position == position &&
        n.fair_share == fair_share && n.detail == detail && n.estimated_start == estimated_start &&
        n.preempted_by == preempted_by) {
      return nullptr;
    }
    n.reason = reason;
    n.queue_position = position;
    n.fair_share = fair_share;
    n.detail = detail;
    n.estimated_start = estimated_start;
    n.preempted_by = preempted_by;
    return &n;
  };
  for (const scheduler::Waiting& w : plan.waiting) {
    const db::JobRow& row = *state.row_of.at(w.job);
    const double share = state.snapshot.tenants[state.tenant_index.at(row.tenant)].fair_share;
    if (!changed_note(w.job, w.reason, w.queue_position, share, w.detail, w.estimated_start,
                      row.preempted_by)) {
      continue;
    }
    json reason = {{"reason", std::string(scheduler::pending_reason_name(w.reason))},
                   {"queue_position", w.queue_position},
                   {"fair_share", share}};
    if (!w.detail.empty()) reason["detail"] = w.detail;
    if (w.estimated_start) reason["estimated_start"] = api::rfc3339(*w.estimated_start);
    if (row.preempted_by) {
      reason["preempted_by"] = *row.preempted_by;
      if (w.reason == scheduler::PendingReason::kPreempted) {
        reason["detail"] = preempted_pending_detail(*row.preempted_by);
      }
    }
    pending.emplace_back(w.job, reason.dump());
  }
  constexpr auto kDependency = scheduler::PendingReason::kDependency;
  for (const scheduler::Held& held : plan.held) {
    if (!changed_note(held.job, kDependency, 0, 0, held.detail, std::nullopt, std::nullopt)) {
      continue;
    }
    pending.emplace_back(held.job,
                         json{{"reason", std::string(scheduler::pending_reason_name(kDependency))},
                              {"queue_position", nullptr},  // not in the queue yet
                              {"detail", held.detail}}
                             .dump());
  }
  db::Status stored = store_.set_pending(pending);
  if (stored.ok()) {
    std::erase_if(pending_written_, [pass](const auto& n) { return n.second.pass != pass; });
  } else {
    pending_written_.clear();  // unknown: every reason is written again
  }
  std::vector<std::int64_t> jobs;
  jobs.reserve(pending.size());
  for (const auto& [job, text] : pending) jobs.push_back(job);
  changed(jobs);  // also when the write failed: it may have landed
  return stored;
}

db::Status SchedulerLeader::pass() {
  // Silence is judged only over a span the leader itself could reach the
  // database: after an outage (or a takeover) every heartbeat looks old. A
  // judgement the database answers late is dropped as an outage: a stalled
  // server held the heartbeats up as well, and writes them only now.
  // While it may not judge, the leader still sends the judgement, of no
  // one: a write, it fails as the agents' heartbeats do while the database
  // takes no writes (read-only, full), and so keeps the judgement off until
  // writes have been taken for a whole silence (run_pass), not only reads.
  constexpr std::chrono::milliseconds kNoOne = std::chrono::hours(24 * 365 * 100);
  const bool judge = options_.clock->now() - reachable_since_ >= options_.agent_silence;
  auto lost = store_.mark_lost(judge ? options_.agent_silence : kNoOne, options_.agent_silence / 4);
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
  PassState state;
  if (db::Status s = read_pass(state); !s.ok()) return s;
  const scheduler::PassPlan plan = scheduler::plan_pass(state.snapshot);
  if (db::Status s = write_unstartable(state, plan); !s.ok()) return s;
  std::set<std::string> woken;
  if (db::Status s = write_starts(state, plan, woken); !s.ok()) return s;
  if (db::Status s = write_preemption(state, plan, woken); !s.ok()) return s;
  // Committed: now the agents may act.
  for (const std::string& agent : woken) notify(db::kAgentChannel, agent);
  return write_pending(state, plan);
}

}  // namespace tpujobs::service
