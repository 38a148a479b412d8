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
  std::vector<std::string> host_names;
  std::unordered_map<std::string, int> host_index;
  std::unordered_map<std::string, int> agent_index;
  std::unordered_map<std::string, std::int64_t> epoch_of;  // alive agents
  std::set<std::string> failed_hosts;
  scheduler::PoolCapacity capacity;  // every registered host, so a lost agent's jobs wait
};

base::Status SchedulerLeader::add_hosts(PassState& state, const std::vector<db::AgentRow>& agents,
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
    state.agent_index[a.name] = static_cast<int>(snapshot_.agents.size());
    snapshot_.agents.push_back(scheduler::PassAgent{
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
      agent = state.agent_index.emplace(h.agent, snapshot_.agents.size()).first;
      snapshot_.agents.push_back(scheduler::PassAgent{h.agent, 0, false});
    }
    scheduler::PassHost host;
    host.agent = agent->second;
    host.generation = *generation;
    // Agents and hosts are two reads: an agent that registered (first, or
    // again after it was declared lost) between them reads alive here but
    // has no epoch this pass could place under; it gets a job the next pass.
    host.usable =
        h.agent_state == "alive" && state.epoch_of.count(h.agent) > 0 && h.health == "healthy";
    host.in_pool = h.agent_state != "lost";
    if (auto on_time = punctual.find(h.agent); on_time != punctual.end()) {
      host.punctual = on_time->second;
      host.heard_at = heard_at[h.agent];
    }
    host.cores.assign(scheduler::facts(*generation).devices_per_host, 0);
    state.host_index[h.name] = static_cast<int>(snapshot_.hosts.size());
    state.host_names.push_back(h.name);
    snapshot_.hosts.push_back(std::move(host));
  }
  return base::Status::Ok();
}

base::Status SchedulerLeader::add_running(PassState& state, const db::JobRow& row) {
  const json allocation = parse_object(row.allocation_json);
  if (allocation.value("accelerator", "") == "cpu") {
    if (auto a = state.agent_index.find(row.agent.value_or("")); a != state.agent_index.end()) {
      int& slots = snapshot_.agents[a->second].cpu_slots;
      slots = std::max(0, slots - 1);
    }
    return base::Status::Ok();
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
                                facts_of(row.id).preemptible,
                                row.preempted_by.has_value(),
                                std::nullopt,
                                row.started_at ? row.started_at->time_since_epoch().count() : 0};
  // Stopping now for a preemptor: plan_pass counts its cores as the first
  // to free, so the head's reservation covers them and nothing backfills
  // there.
  if (const auto limit = facts_of(row.id).time_limit; limit && row.started_at) {
    entry.expected_end = *row.started_at + wall(*limit);
  }
  int& used = snapshot_.tenants[tenant(row.tenant)].used_cores;
  for (const json& core : allocation.value("cores", json::array())) {
    auto it = state.host_index.find(core.value("host", ""));
    const int c = core.value("core", -1);
    if (it == state.host_index.end()) continue;
    scheduler::PassHost& host = snapshot_.hosts[it->second];
    if (c >= 0 && c < static_cast<int>(host.cores.size())) host.cores[c] = row.id;
    ++used;
  }
  // Only a job placed under an epoch can be asked to stop.
  if (row.placement_epoch) snapshot_.running.push_back(entry);
  return base::Status::Ok();
}

base::Status SchedulerLeader::read_fair_share() {
  if (!fair_share_read_ ||
      options_.clock->now() - *fair_share_read_ >= options_.fair_share_interval) {
    std::set<std::string> active;  // the tenants with unfinished jobs
    for (std::size_t t = 0; t < tenant_jobs_.size(); ++t) {
      if (tenant_jobs_[t] > 0) active.insert(snapshot_.tenants[t].name);
    }
    for (const auto& [id, row] : placed_) active.insert(row.tenant);
    auto factors = store_.fair_share(options_.clock->wall_now(), active, options_.fair_share);
    if (!factors.ok()) return factors.error();
    fair_share_ = std::move(*factors);
    fair_share_read_ = options_.clock->now();
  }
  return base::Status::Ok();
}

std::vector<db::JobRow> SchedulerLeader::submitted_rows(bool submits_only) const {
  if (!submits_only || options_.wake_bus == nullptr || options_.submitted_specs == nullptr ||
      !kept_read_ || !low_water_ || kept_read_->writes != writes_ ||
      options_.clock->now() - kept_read_->at >= options_.poll_interval)
    return {};
  return handed_rows();
}

std::vector<db::JobRow> SchedulerLeader::handed_rows() const {
  if (options_.submitted_specs == nullptr) return {};
  // Of jobs above every id read: a job read before its hand-over is known,
  // one that ended since is not and must not come back.
  std::vector<db::JobRow> rows = options_.submitted_specs->rows_above(highest_read_);
  std::erase_if(rows, [&](const db::JobRow& row) { return jobs_.count(row.id) > 0; });
  return rows;
}

base::Result<db::SchedulingRead> SchedulerLeader::read_since(
    db::JobRepository::ScheduleSince since) {
  // Taken before the read: each was committed before its snapshot, so the
  // read returns it if anything wrote it since its insert.
  std::vector<db::JobRow> handed = handed_rows();
  std::erase_if(handed, [](const db::JobRow& row) { return row.changed_xid == 0; });
  for (const db::JobRow& row : handed) {
    since.held_ids.push_back(row.id);
    since.held_xids.push_back(row.changed_xid);
  }
  auto read = store_.read_pass(since);
  if (!read.ok()) return read.error();
  std::set<std::int64_t> written;
  for (const db::JobRow& row : read->queue.rows) written.insert(row.id);
  std::erase_if(handed, [&](const db::JobRow& row) { return written.count(row.id) > 0; });
  hold(handed);
  read->queue.rows.insert(read->queue.rows.end(), std::make_move_iterator(handed.begin()),
                          std::make_move_iterator(handed.end()));
  return read;
}

void SchedulerLeader::hold(const std::vector<db::JobRow>& rows) {
  for (const db::JobRow& row : rows) {
    if (row.changed_xid != 0) held_.insert_or_assign(row.id, row.changed_xid);
  }
}

void SchedulerLeader::prune_held() {
  std::erase_if(held_, [&](const auto& entry) {
    return !jobs_.count(entry.first) || !low_water_ || xid_below(entry.second, *low_water_);
  });
}

base::Status SchedulerLeader::read_pass(PassState& state, std::vector<db::JobRow> submitted) {
  const bool quick = !submitted.empty();
  const auto began = options_.clock->now();
  db::SchedulingRead read;
  if (quick) {
    read.agents = kept_read_->agents;
    const auto since =
        std::chrono::duration_cast<std::chrono::milliseconds>(began - kept_read_->at);
    for (db::AgentRow& a : read.agents) a.silent_ms += since.count();
    read.hosts = kept_read_->hosts;
    read.quotas = kept_read_->quotas;
    hold(submitted);  // the next read leaves them out while they are so
    read.queue.rows = std::move(submitted);
    read.queue.low_water = *low_water_;
    ++reads_skipped_;
  } else {
    pass_read_tables_ = true;
    std::optional<db::JobRepository::ScheduleSince> since = schedule_since();
    if (!since) held_.clear();  // a complete read: every row comes again
    auto fresh = since ? read_since(std::move(*since)) : store_.read_pass(std::nullopt);
    if (!fresh.ok()) return fresh.error();
    read = std::move(*fresh);
  }
  snapshot_.agents.clear();
  snapshot_.hosts.clear();
  snapshot_.running.clear();
  if (!quick) snapshot_.dependency_states.clear();
  if (base::Status s = add_hosts(state, read.agents, read.hosts); !s.ok()) return s;
  if (base::Status s = read_unfinished(std::move(read.queue)); !s.ok()) return s;
  if (!quick) prune_held();
  if (!quick) {
    kept_read_ =
        KeptRead{std::move(read.agents), std::move(read.hosts), read.quotas, began, writes_};
  }
  resolve(state.capacity);
  if (base::Status s = read_fair_share(); !s.ok()) return s;
  for (scheduler::PassTenant& t : snapshot_.tenants) {
    const auto factor = fair_share_.find(t.name);
    t.fair_share = factor == fair_share_.end() ? 1.0 : factor->second;
    t.max_cores.reset();
    t.used_cores = 0;
  }
  for (const auto& [name, max_cores] : read.quotas)
    snapshot_.tenants[tenant(name)].max_cores = max_cores;
  snapshot_.now = options_.clock->wall_now();
  snapshot_.options.preemption_min_wait = options_.preemption_min_wait;
  std::vector<std::int64_t> cancels;
  cancels.swap(cancels_);
  // A row since and the sweep's may both ask for the same one.
  std::sort(cancels.begin(), cancels.end());
  cancels.erase(std::unique(cancels.begin(), cancels.end()), cancels.end());
  for (std::int64_t job : cancels) {
    auto moved = write(lifecycle::cancel_queued(job));
    if (!moved.ok()) return moved.error();
  }
  for (const auto& [id, row] : placed_) {
    if (base::Status s = add_running(state, row); !s.ok()) return s;
  }
  // The jobs the queued ones depend on, in one read (without one, only
  // those of new jobs' dependencies that the last read did not bring).
  std::vector<std::int64_t> targets;
  for (const std::vector<scheduler::Dependency>& list : snapshot_.dependencies) {
    for (const scheduler::Dependency& d : list) {
      if (!snapshot_.dependency_states.count(d.job)) targets.push_back(d.job);
    }
  }
  if (targets.empty()) return base::Status::Ok();
  auto target_states = store_.job_states(targets);
  if (!target_states.ok()) return target_states.error();
  snapshot_.dependency_states.insert(target_states->begin(), target_states->end());
  return base::Status::Ok();
}

base::Status SchedulerLeader::write_unstartable(const scheduler::PassPlan& plan) {
  for (const scheduler::Ended& ended : plan.unstartable) {
    base::Status s = base::Status::Ok();
    if (ended.why == scheduler::Unstartable::kStartDeadlineExceeded) {
      const auto start_by = facts_of(ended.job).start_by;
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
  return base::Status::Ok();
}

base::Result<std::int64_t> SchedulerLeader::next_placement() {
  if (next_placement_ == placements_end_) {
    auto first = store_.reserve_placements();
    if (!first.ok()) return first.error();
    next_placement_ = *first;
    placements_end_ = *first + db::ClusterRepository::kPlacementBlock;
  }
  return next_placement_++;
}

json SchedulerLeader::slice_allocation(const PassState& state, const scheduler::PlannedStart& p,
                                       std::int64_t placement) const {
  json parts = json::array();
  int first_host = 0;
  for (const auto& [agent, hosts] : p.parts) {
    const std::string& name = snapshot_.agents[agent].name;
    parts.push_back({{"agent", name},
                     {"epoch", state.epoch_of.at(name)},
                     {"first_host", first_host},
                     {"hosts", hosts}});
    first_host += hosts;
  }
  return json{{"placement", placement}, {"parts", parts}};
}

std::string SchedulerLeader::describe_parts(const scheduler::PlannedStart& p) const {
  std::string out;
  for (const auto& [agent, hosts] : p.parts) {
    out += (out.empty() ? "" : ", ") + std::to_string(hosts) + " host(s) on agent " +
           snapshot_.agents[agent].name;
  }
  return out + " (" + std::to_string(p.cores.size()) + " cores)";
}

base::Result<db::Transition> SchedulerLeader::placement(const PassState& state,
                                                        const scheduler::PlannedStart& p) {
  const std::string& agent = snapshot_.agents[p.agent].name;
  auto placement = next_placement();
  if (!placement.ok()) return placement.error();
  json allocation = {{"accelerator", "cpu"}, {"agent", agent}};
  if (p.generation) {
    json host_names = json::array();
    for (int h : p.hosts) host_names.push_back(state.host_names[h]);
    json cores = json::array();
    for (const scheduler::CoreRef& c : p.cores)
      cores.push_back({{"host", state.host_names[c.host]}, {"core", c.core}});
    allocation = {
        {"generation", std::string(scheduler::facts(*p.generation).name)},
        {"accelerator_type",
         p.kind == scheduler::RequestKind::kSingleCore ? json(nullptr) : json(p.accelerator_type)},
        {"hosts", host_names},
        {"cores", cores},
        {"agent", agent}};
    if (!p.parts.empty()) allocation["slice"] = slice_allocation(state, p, *placement);
  }
  std::string reason = p.generation
                           ? "Placed on agent " + agent + ": " + std::to_string(p.cores.size()) +
                                 " cores on " + std::to_string(p.hosts.size()) + " host(s)"
                           : "Placed on agent " + agent + "'s CPU threads";
  if (!p.parts.empty()) reason = "Placed across agents: " + describe_parts(p);
  std::vector<std::pair<std::string, std::int64_t>> parts;
  for (const auto& [part, hosts] : p.parts) {
    parts.emplace_back(snapshot_.agents[part].name, state.epoch_of.at(snapshot_.agents[part].name));
  }
  return lifecycle::place_on_agent(p.job, std::move(reason), allocation.dump(), agent,
                                   state.epoch_of.at(agent), *placement, parts);
}

base::Status SchedulerLeader::write_starts(const PassState& state, const scheduler::PassPlan& plan,
                                           std::set<std::string>& woken) {
  // The pass's placements commit together: one wait for the WAL, not one a
  // placement (after a host's recovery, a pass's placements, a commit
  // each, took up to 52 ms; bench/RESULTS.md, session 58).
  LocalAgent* local = options_.local_agent;
  std::vector<db::BatchedTransition> batch;
  // Whole on this process's agent (a slice spanning agents is read by each).
  auto runs_here = [&](std::size_t i) {
    return local != nullptr && plan.starts[i].parts.empty() &&
           batch[i].transition.agent == local->name();
  };
  batch.reserve(plan.starts.size());
  for (const scheduler::PlannedStart& p : plan.starts) {
    auto t = placement(state, p);
    if (!t.ok()) return t.error();
    batch.push_back({std::move(*t)});
  }
  if (batch.empty()) return base::Status::Ok();
  // Only now, with nothing left to fail before the write: this process's
  // agent starts what it promises to as the placements commit; it reads
  // the rest when woken.
  bool promised = false;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    db::Transition& t = batch[i].transition;
    batch[i].with_work =
        runs_here(i) && local->promise_start(t.job_id, t.placement_epoch.value_or(0));
    if (batch[i].with_work) t = lifecycle::place_started(std::move(t), "agent " + local->name());
    promised = promised || batch[i].with_work;
    fence(t);
  }
  auto outcomes = store_.transitions(batch);
  std::vector<std::int64_t> moved;
  if (!outcomes.ok()) {
    // They may have landed: the agent's look then finds its jobs RUNNING
    // there with no copy, and starts them.
    for (const db::BatchedTransition& b : batch) {
      moved.push_back(b.transition.job_id);
      if (b.with_work) local->forgo(b.transition.job_id);
    }
    changed(moved);
    if (promised) notify(db::kAgentChannel, local->name());
    return outcomes.error();
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const db::Transition& t = batch[i].transition;
    db::TransitionOutcome& outcome = (*outcomes)[i];
    if (batch[i].with_work && !outcome.applied) local->forgo(t.job_id);
    if (!outcome.applied) continue;
    // The agent hands its API service the RUNNING view the statement answered.
    if (batch[i].with_work && local->take_placed(std::move(*outcome.work))) {
      ++handed_taken_;
      continue;
    }
    moved.push_back(t.job_id);
    if (runs_here(i)) ++handed_left_;
    woken.insert(*t.agent);
    for (const auto& [part, epoch] : t.require_alive) woken.insert(part);
  }
  changed(moved);
  return base::Status::Ok();
}

base::Status SchedulerLeader::write_preemption(const scheduler::PassPlan& plan,
                                               std::set<std::string>& woken) {
  // The victims are marked under their placements, then their agents
  // woken to stop them at a checkpoint.
  if (!plan.preemption) return base::Status::Ok();
  const scheduler::Preemption& preemption = *plan.preemption;
  bool first = true;
  for (std::int64_t victim : preemption.victims) {
    const db::JobRow& row = placed_.at(victim);  // plan_pass names only running jobs
    auto marked = store_.request_preemption(victim, row.placement.value_or(0), preemption.preemptor,
                                            first ? preempting_reason(preemption.victims) : "",
                                            preempting_detail(preemption.victims), term_);
    changed({victim, preemption.preemptor});  // a failed write may have landed
    ++writes_;
    if (!marked.ok()) return marked.error();
    ++queue_version_;
    if (!*marked) continue;
    first = false;
    std::cerr << "tpujobs: job " << victim << ": preempted by job " << preemption.preemptor
              << std::endl;
    woken.insert(row.agent.value_or(""));
  }
  return base::Status::Ok();
}

base::Status SchedulerLeader::write_pending(const scheduler::PassPlan& plan) {
  // Only the reasons that changed since the last pass are rendered and
  // written: with a long queue most stay as they were.
  const std::uint64_t pass = ++pending_passes_;
  pending_deferred_ = false;
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> pending;
  auto changed_note = [&](PendingNote& n, const PendingNote& now) {
    const bool same = n.pass != 0 && n.pass == pending_written_ && n.reason == now.reason &&
                      n.queue_position == now.queue_position && n.fair_share == now.fair_share &&
                      n.detail == now.detail && n.held == now.held &&
                      n.estimated_start == now.estimated_start &&
                      n.preempted_by == now.preempted_by;
    if (same) {
      n.pass = pass;
    } else if (pending.size() < kMaxPendingWrites) {
      n = now;
      n.pass = pass;
    } else {
      n.pass = 0;  // not written: the next pass writes it
      pending_deferred_ = true;
      return false;
    }
    return !same;
  };
  // plan_pass names the waiting entries of this snapshot, unchanged since.
  for (const scheduler::Waiting& w : plan.waiting) {
    Waiter& job = waiters_[w.entry];
    const double share = snapshot_.tenants[snapshot_.waiting[w.entry].tenant].fair_share;
    if (!changed_note(job.note, PendingNote{pass,
                                            w.reason,
                                            w.queue_position,
                                            share,
                                            w.detail,
                                            {},
                                            w.estimated_start,
                                            job.preempted_by})) {
      continue;
    }
    json reason = {{"reason", std::string(scheduler::pending_reason_name(w.reason))},
                   {"queue_position", w.queue_position},
                   {"fair_share", share}};
    if (!w.detail.empty()) reason["detail"] = std::string(w.detail);
    if (w.estimated_start) reason["estimated_start"] = api::rfc3339(*w.estimated_start);
    if (job.preempted_by) {
      reason["preempted_by"] = *job.preempted_by;
      if (w.reason == scheduler::PendingReason::kPreempted) {
        reason["detail"] = preempted_pending_detail(*job.preempted_by);
      }
    }
    pending.emplace_back(w.job, reason.dump());
  }
  constexpr auto kDependency = scheduler::PendingReason::kDependency;
  for (const scheduler::Held& held : plan.held) {
    if (!changed_note(waiters_[held.entry].note,
                      PendingNote{pass, kDependency, 0, 0, {}, held.detail, {}, {}})) {
      continue;
    }
    pending.emplace_back(held.job,
                         json{{"reason", std::string(scheduler::pending_reason_name(kDependency))},
                              {"queue_position", nullptr},  // not in the queue yet
                              {"detail", held.detail}}
                             .dump());
  }
  // Handed over: a write that fails is told at the next pass (pass()),
  // and every reason is then written again.
  reasons_writer_.hand(std::move(pending), term_);
  reasons_writer_.flush();  // here, unless the writer's thread runs
  pending_written_ = pass;
  return base::Status::Ok();
}

base::Status SchedulerLeader::judge_silence() {
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
  auto lost = store_.mark_lost(judge ? options_.agent_silence : kNoOne,
                               options_.late_answer.value_or(options_.agent_silence / 4));
  if (!lost.ok()) return lost.error();
  for (const std::string& name : *lost)
    std::cerr << "tpujobs: agent " << name << " is lost" << std::endl;
  return base::Status::Ok();
}

namespace {
// Adds the wall time of its scope to `total` (and to `*pass`, if given), and
// keeps the longest in `longest`: whatever the scope returns. One thread
// makes the passes.
class ScopeTimer {
 public:
  ScopeTimer(base::Clock& clock, std::atomic<std::int64_t>& total,
             std::atomic<std::int64_t>& longest, std::int64_t* pass = nullptr)
      : clock_(clock), total_(total), longest_(longest), pass_(pass), began_(clock.now()) {}
  ScopeTimer(const ScopeTimer&) = delete;
  ScopeTimer& operator=(const ScopeTimer&) = delete;
  ~ScopeTimer() {
    const std::int64_t nanos = std::chrono::nanoseconds(clock_.now() - began_).count();
    total_ += nanos;
    if (nanos > longest_) longest_ = nanos;
    if (pass_ != nullptr) *pass_ += nanos;
  }

 private:
  base::Clock& clock_;
  std::atomic<std::int64_t>& total_;
  std::atomic<std::int64_t>& longest_;
  std::int64_t* pass_;
  base::Clock::time_point began_;
};
}  // namespace

template <typename Part>
decltype(auto) SchedulerLeader::timed(Phase phase, Part&& part) {
  ScopeTimer timer(*options_.clock, phase_nanos_[phase], max_phase_nanos_[phase]);
  return part();
}

template <typename Part>
decltype(auto) SchedulerLeader::timed(Step step, Part&& part) {
  ScopeTimer timer(*options_.clock, step_nanos_[step], max_step_nanos_[step],
                   &pass_step_nanos_[step]);
  return part();
}

base::Status SchedulerLeader::pass(bool housekeeping, bool submits_only) {
  if (housekeeping) {
    base::Status kept = timed(kHousekeeping, [&] {
      if (base::Status s = timed(kJudge, [&] { return judge_silence(); }); !s.ok()) return s;
      if (base::Status s = timed(kOrphans, [&] { return requeue_orphans(); }); !s.ok()) return s;
      if (options_.clock->now() - rendezvous_swept_ < std::chrono::minutes(1))
        return base::Status::Ok();
      // A rendezvous is over once its slice connected or failed (within the
      // collective deadline): old keys only take room.
      base::Status s =
          timed(kSweep, [&] { return store_.forget_rendezvous_before(std::chrono::hours(1)); });
      if (s.ok()) rendezvous_swept_ = options_.clock->now();
      return s;
    });
    if (!kept.ok()) return kept;
  }
  // A reasons' write failed since the last pass: every reason is written again.
  if (reasons_writer_.take_failure()) pending_written_ = 0;
  PassState state;
  std::vector<db::JobRow> submitted;
  if (!housekeeping) submitted = submitted_rows(submits_only);
  if (base::Status s = timed(kRead, [&] { return read_pass(state, std::move(submitted)); });
      !s.ok())
    return s;
  if (plan_holds()) {
    ++plans_reused_;
    return base::Status::Ok();
  }
  const scheduler::PassPlan plan = timed(kPlan, [&] { return scheduler::plan_pass(snapshot_); });
  std::set<std::string> woken;
  base::Status written = timed(kWrite, [&] {
    if (base::Status s = write_unstartable(plan); !s.ok()) return s;
    if (base::Status s = write_starts(state, plan, woken); !s.ok()) return s;
    return write_preemption(plan, woken);
  });
  if (!written.ok()) return written;
  // Committed: now the agents may act.
  for (const std::string& agent : woken) notify(db::kAgentChannel, agent);
  if (base::Status s = timed(kReasons, [&] { return write_pending(plan); }); !s.ok()) return s;
  planned(plan);
  return base::Status::Ok();
}

bool SchedulerLeader::plan_holds() const {
  // Every pending reason of the last plan is stored (none deferred, the
  // write landed), and nothing the plan read changed but the time.
  return planned_holds_until_ && snapshot_.now < *planned_holds_until_ &&
         planned_version_ == queue_version_ && pending_written_ == pending_passes_ &&
         !pending_deferred_ && scheduler::same_surroundings(snapshot_, planned_);
}

void SchedulerLeader::planned(const scheduler::PassPlan& plan) {
  planned_version_ = queue_version_;
  planned_holds_until_ = plan.holds_until;
  planned_.agents = snapshot_.agents;
  planned_.hosts = snapshot_.hosts;
  planned_.tenants = snapshot_.tenants;
  planned_.running = snapshot_.running;
  planned_.dependency_states = snapshot_.dependency_states;
  planned_.options = snapshot_.options;
}

}  // namespace tpujobs::service
