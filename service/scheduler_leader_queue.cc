// What the scheduler leader keeps of the unfinished jobs between passes
// (scheduler_leader.h): each job's facts, read once from its spec, and the
// waiting jobs' compact entries in the snapshot plan_pass reads. The rows
// written since the last read update them; a pass over an unchanged queue
// reads them as they are.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/job_spec.h"
#include "api/resolution.h"
#include "base/free_memory.h"
#include "service/scheduler_leader.h"

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

int max_retries_of(const json& spec) {
  if (!spec.is_object()) return 0;
  const auto it = spec.find("max_retries");
  return it != spec.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::chrono::system_clock::duration wall(std::chrono::milliseconds span) {
  return std::chrono::duration_cast<std::chrono::system_clock::duration>(span);
}

}  // namespace

base::Status SchedulerLeader::learn_specs(const std::vector<std::int64_t>& jobs,
                                          std::map<std::int64_t, std::string> texts) {
  // A spec handed over after its job was parsed from its text (read before
  // the hand-over) is not taken: it goes at the next call. One handed over
  // later still stays until newer ones push it out (SubmittedSpecs'
  // capacity).
  if (options_.submitted_specs != nullptr) {
    for (std::int64_t job : parsed_unhanded_) options_.submitted_specs->take(job);
  }
  parsed_unhanded_.clear();
  std::vector<std::int64_t> unknown;
  for (std::int64_t job : jobs) {
    if (!jobs_.count(job)) unknown.push_back(job);
  }
  // Once each: a row since and the sweep's slice may both bring a job.
  std::sort(unknown.begin(), unknown.end());
  unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
  std::map<std::int64_t, PlacementSpec> handed;  // by this process's API
  std::vector<std::int64_t> unread;              // neither handed nor read with its row
  for (std::int64_t job : unknown) {
    if (options_.submitted_specs != nullptr) {
      if (std::optional<PlacementSpec> spec = options_.submitted_specs->take(job)) {
        handed.emplace(job, std::move(*spec));
        continue;
      }
    }
    if (!texts.count(job)) unread.push_back(job);
  }
  if (!unread.empty()) {
    auto stored = store_.job_specs(unread);
    if (!stored.ok()) return stored.error();  // the next read learns them all from their texts
    texts.merge(*stored);
  }
  for (std::int64_t id : unknown) {
    KnownJob& job = jobs_[id];  // a job whose spec is gone: empty facts
    if (auto it = handed.find(id); it != handed.end()) {
      learn(id, job, std::move(it->second));
      ++specs_handed_;
      continue;
    }
    const auto text = texts.find(id);
    if (text == texts.end()) continue;
    ++specs_parsed_;
    if (options_.submitted_specs != nullptr) parsed_unhanded_.push_back(id);
    const json spec_json = json::parse(text->second, nullptr, false);
    job.facts.max_retries = max_retries_of(spec_json);
    auto spec = api::parse_job_spec(spec_json);
    if (!spec.ok()) continue;  // never resolves: waits as HostUnhealthy
    learn(id, job, placement_spec(*spec));
  }
  return base::Status::Ok();
}

void SchedulerLeader::learn(std::int64_t id, KnownJob& job, PlacementSpec spec) {
  job.facts.max_retries = spec.max_retries;
  job.facts.start_by = spec.start_by;
  job.facts.time_limit = spec.time_limit;
  job.facts.preemptible = spec.preemptible;
  if (!spec.depends_on.empty()) {
    if (free_dependency_lists_.empty()) {
      job.facts.dependencies = static_cast<int>(snapshot_.dependencies.size());
      snapshot_.dependencies.push_back(std::move(spec.depends_on));
    } else {
      job.facts.dependencies = free_dependency_lists_.back();
      free_dependency_lists_.pop_back();
      snapshot_.dependencies[job.facts.dependencies] = std::move(spec.depends_on);
    }
  }
  // Its request is resolved against the pool's capacity (resolve).
  unresolved_.emplace(id, std::move(spec.trainer));
  learned_.push_back(id);
}

const SchedulerLeader::JobFacts& SchedulerLeader::facts_of(std::int64_t job) const {
  static const JobFacts kNone{};
  auto it = jobs_.find(job);
  return it == jobs_.end() ? kNone : it->second.facts;
}

int SchedulerLeader::tenant(const std::string& name) {
  const auto [it, inserted] =
      tenant_index_.emplace(name, static_cast<int>(snapshot_.tenants.size()));
  if (inserted) {
    snapshot_.tenants.push_back(scheduler::PassTenant{name, std::nullopt, 0, 1.0});
    tenant_jobs_.push_back(0);
  }
  return it->second;
}

int SchedulerLeader::shape_index(const scheduler::ResourceRequest& r) {
  const auto key =
      std::tuple(static_cast<int>(r.kind), r.generation ? static_cast<int>(*r.generation) : -1,
                 r.devices_per_host, r.hosts, r.pinned_core.value_or(-1));
  const auto [it, inserted] = shape_index_.emplace(key, static_cast<int>(snapshot_.shapes.size()));
  if (inserted) snapshot_.shapes.push_back(r);
  return it->second;
}

void SchedulerLeader::resolve(const scheduler::PoolCapacity& capacity) {
  std::vector<std::int64_t> tries;
  if (!resolved_against_ || resolved_against_->hosts != capacity.hosts) {
    // Another pool: whatever did not resolve may now.
    for (const auto& [id, trainer] : unresolved_) tries.push_back(id);
    resolved_against_ = capacity;
    learned_.clear();
  } else {
    tries.swap(learned_);
  }
  if (tries.empty()) return;
  const lightning::PoolView view = api::pool_view(capacity);  // one for them all
  for (std::int64_t id : tries) {
    const auto trainer = unresolved_.find(id);
    const auto job = jobs_.find(id);
    if (trainer == unresolved_.end() || job == jobs_.end()) continue;
    const base::Result<api::Resolution> resolution = api::resolve(trainer->second, view);
    if (!resolution.ok()) continue;  // -1: no registered agent has such hosts (yet)
    unresolved_.erase(trainer);
    ++queue_version_;
    job->second.facts.shape = shape_index(resolution->request);
    if (job->second.waiting >= 0)
      snapshot_.waiting[job->second.waiting].shape = job->second.facts.shape;
  }
}

bool SchedulerLeader::set_waiting(KnownJob& job, const db::JobRow& row) {
  scheduler::WaitingEntry entry;
  entry.id = row.id;
  entry.order = row.id;
  entry.priority = row.priority;
  entry.tenant = tenant(row.tenant);
  entry.shape = job.facts.shape;
  entry.preempted = row.preempted_by.has_value();
  entry.timeout = job.facts.time_limit;
  if (row.requeued_at) entry.heard_after = *row.requeued_at;
  if (!row.started_at && job.facts.start_by) {
    entry.start_deadline = row.created_at + wall(*job.facts.start_by);
  }
  if (!row.started_at) entry.dependencies = job.facts.dependencies;
  bool changed = true;
  if (job.waiting >= 0) {
    std::optional<std::int64_t>& preempted_by = waiters_[job.waiting].preempted_by;
    changed = preempted_by != row.preempted_by || !(snapshot_.waiting[job.waiting] == entry);
    preempted_by = row.preempted_by;
    --tenant_jobs_[snapshot_.waiting[job.waiting].tenant];
    snapshot_.waiting[job.waiting] = entry;
  } else {
    job.waiting = static_cast<std::int32_t>(snapshot_.waiting.size());
    snapshot_.waiting.push_back(entry);
    ++entries_added_;
    waiters_.push_back(Waiter{row.preempted_by, {}});
  }
  ++tenant_jobs_[entry.tenant];
  return changed;
}

void SchedulerLeader::drop_waiting(KnownJob& job) {
  if (job.waiting < 0) return;
  std::vector<scheduler::WaitingEntry>& waiting = snapshot_.waiting;
  const auto at = static_cast<std::size_t>(job.waiting);
  --tenant_jobs_[waiting[at].tenant];
  if (at + 1 != waiting.size()) {  // the last entry takes its place
    waiting[at] = waiting.back();
    waiters_[at] = std::move(waiters_.back());
    jobs_.at(waiting[at].id).waiting = job.waiting;
  }
  waiting.pop_back();
  waiters_.pop_back();
  job.waiting = -1;
}

void SchedulerLeader::order_added(std::size_t added) {
  // A read adds its new jobs' entries after the others, in id order (the
  // last ones, unless a job that left the queue took one's place): the
  // pass's order when priorities and tenants are the same, which plan_pass
  // then only checks. Two committers commit their batches in either order,
  // so a read in a burst of submits brings jobs below the last ones added:
  // the entries from the first of those on are put in id order, with their
  // notes. A pass over the queue that burst leaves then needs no sort
  // (bench/RESULTS.md, issue 29). Entries further back than kMostMoved are
  // left where they are: plan_pass sorts them.
  constexpr std::size_t kMostMoved = 4096;
  std::vector<scheduler::WaitingEntry>& waiting = snapshot_.waiting;
  if (added == 0 || added >= waiting.size()) return;
  auto by_order = [](const scheduler::WaitingEntry& a, const scheduler::WaitingEntry& b) {
    return a.order < b.order;
  };
  const std::int64_t lowest =
      std::min_element(waiting.begin() + added, waiting.end(), by_order)->order;
  std::size_t from = added;
  while (from > 0 && waiting.size() - from < kMostMoved && waiting[from - 1].order > lowest) --from;
  if (from > 0 && waiting[from - 1].order > lowest) return;  // further back than kMostMoved
  if (from == added && std::is_sorted(waiting.begin() + added, waiting.end(), by_order)) return;
  std::vector<std::uint32_t> at(waiting.size() - from);
  for (std::uint32_t i = 0; i < at.size(); ++i) at[i] = static_cast<std::uint32_t>(from + i);
  std::sort(at.begin(), at.end(),
            [&](std::uint32_t a, std::uint32_t b) { return by_order(waiting[a], waiting[b]); });
  std::vector<scheduler::WaitingEntry> entries;
  std::vector<Waiter> waiters;
  entries.reserve(at.size());
  waiters.reserve(at.size());
  for (std::uint32_t i : at) {
    entries.push_back(waiting[i]);
    waiters.push_back(std::move(waiters_[i]));
  }
  for (std::size_t i = 0; i < at.size(); ++i) {
    waiting[from + i] = entries[i];
    waiters_[from + i] = std::move(waiters[i]);
    jobs_.at(entries[i].id).waiting = static_cast<std::int32_t>(from + i);
  }
}

std::vector<std::int64_t> SchedulerLeader::kept_waiting() const {
  std::vector<std::int64_t> ids;
  for (const scheduler::WaitingEntry& entry : snapshot_.waiting) ids.push_back(entry.id);
  return ids;
}

bool SchedulerLeader::forget(std::int64_t id) {
  placed_.erase(id);
  unresolved_.erase(id);
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return false;
  drop_waiting(it->second);
  if (const int list = it->second.facts.dependencies; list >= 0) {
    std::vector<scheduler::Dependency>().swap(snapshot_.dependencies[list]);
    free_dependency_lists_.push_back(list);
  }
  jobs_.erase(it);
  return true;
}

bool SchedulerLeader::apply(db::JobRow& row, std::uint32_t seen) {
  if (base::is_terminal(row.state)) {
    return forget(row.id);  // what the leader holds per job goes with the job
  }
  const auto it = jobs_.find(row.id);
  if (it == jobs_.end()) return false;  // learn_specs knows every job read
  KnownJob& job = it->second;
  if (seen != 0) job.seen = seen;
  if (row.state != JobState::kQueued) {
    const bool was_waiting = job.waiting >= 0;
    drop_waiting(job);
    // A placed job's row is compared with the last plan's (plan_holds).
    placed_[row.id] = std::move(row);
    return was_waiting;
  }
  const bool was_placed = placed_.erase(row.id) != 0;
  if (row.cancel_requested) {
    drop_waiting(job);
    cancels_.push_back(row.id);
    return true;
  }
  return set_waiting(job, row) || was_placed;
}

std::optional<db::JobRepository::ScheduleSince> SchedulerLeader::schedule_since() const {
  if (!low_water_) return std::nullopt;
  db::JobRepository::ScheduleSince since{*low_water_, highest_read_};
  if (options_.clock->now() - swept_at_ >= options_.sweep_interval)
    since.sweep = db::JobRepository::Sweep{sweep_after_, options_.sweep_rows};
  since.held_ids.reserve(held_.size());
  since.held_xids.reserve(held_.size());
  for (const auto& [job, xid] : held_) {
    since.held_ids.push_back(job);
    since.held_xids.push_back(xid);
  }
  return since;
}

base::Status SchedulerLeader::read_unfinished(db::JobRepository::ScheduleRead read) {
  bool complete = false;
  base::Status s = read_rows(std::move(read), complete);
  // A complete read's rows (every unfinished job's, and the result they
  // were read from) are freed by now; without this their pages stay with
  // the process, between the kept jobs (bench/RESULTS.md, issue 29).
  if (complete) base::return_free_memory();
  return s;
}

base::Status SchedulerLeader::read_rows(db::JobRepository::ScheduleRead read, bool& was_complete) {
  const auto now = options_.clock->now();
  std::vector<std::int64_t> unfinished;
  std::map<std::int64_t, std::string> texts;  // the new jobs' specs, read with their rows
  std::int64_t highest = highest_read_;
  for (db::JobRow& row : read.rows) {
    highest = std::max(highest, row.id);
    if (base::is_terminal(row.state)) continue;
    unfinished.push_back(row.id);
    if (!row.spec_json.empty()) texts.emplace(row.id, std::move(row.spec_json));
  }
  // A job the sweep finds that no read since brought is learned too.
  if (read.swept) {
    for (const db::JobRow& row : read.swept->rows) unfinished.push_back(row.id);
  }
  // Read before anything changes: a failed read leaves the jobs as they were.
  if (base::Status s = learn_specs(unfinished, std::move(texts)); !s.ok()) return s;
  highest_read_ = highest;
  if (read.complete || !read.rows.empty()) ++queue_version_;
  was_complete = read.complete;
  // The reasons last written, by job: they stay with the jobs still waiting.
  std::unordered_map<std::int64_t, PendingNote> notes;
  if (read.complete) {
    // Every entry is made again from the rows; the facts stay. The sweep
    // starts again after it.
    sweep_ = ++reads_numbered_;
    sweep_after_ = 0;
    swept_at_ = now;
    notes.reserve(waiters_.size());
    for (std::size_t i = 0; i < waiters_.size(); ++i)
      notes.emplace(snapshot_.waiting[i].id, std::move(waiters_[i].note));
    snapshot_.waiting.clear();
    waiters_.clear();
    snapshot_.tenants.clear();
    tenant_index_.clear();
    tenant_jobs_.clear();
    placed_.clear();
    cancels_.clear();
    for (auto& [id, job] : jobs_) job.waiting = -1;
  } else if (read.swept && read.swept->after == 0) {
    sweep_ = ++reads_numbered_;  // a new sweep
  }
  // New entries are added in id order, which is the pass's order within a
  // priority and tenant: plan_pass then only checks it (scheduler/pass.cc).
  // The rows stay where they are; their indexes are sorted.
  std::vector<std::uint32_t> by_id(read.rows.size());
  for (std::uint32_t i = 0; i < by_id.size(); ++i) by_id[i] = i;
  std::sort(by_id.begin(), by_id.end(),
            [&](std::uint32_t a, std::uint32_t b) { return read.rows[a].id < read.rows[b].id; });
  // A job a read since returns was unfinished during this sweep: it is not
  // dropped at its end, even if its slice was read before it was committed.
  entries_added_ = 0;
  for (std::uint32_t i : by_id) apply(read.rows[i], sweep_);
  order_added(snapshot_.waiting.size() - entries_added_);
  for (std::size_t i = 0; i < waiters_.size() && !notes.empty(); ++i) {
    if (auto note = notes.find(snapshot_.waiting[i].id); note != notes.end())
      waiters_[i].note = std::move(note->second);
  }
  if (read.complete) forget_unseen();
  if (read.swept && apply_swept(*read.swept)) ++queue_version_;
  low_water_ = std::move(read.low_water);
  return base::Status::Ok();
}

bool SchedulerLeader::apply_swept(db::JobRepository::ScheduleRead::Swept& swept) {
  swept_at_ = options_.clock->now();
  bool changed = false;
  // Read after the rows since (a later snapshot): no older than what they said.
  for (db::JobRow& row : swept.rows) {
    sweep_after_ = row.id;
    changed = apply(row, sweep_) || changed;
  }
  if (!swept.to_end) return changed;
  // The sweep is whole: a job it did not find, and no read since returned
  // during it, is no longer unfinished.
  sweep_after_ = 0;
  return forget_unseen() || changed;
}

bool SchedulerLeader::forget_unseen() {
  std::vector<std::int64_t> gone;
  for (const auto& [id, job] : jobs_) {
    if (job.seen != sweep_) gone.push_back(id);
  }
  for (std::int64_t id : gone) forget(id);
  return !gone.empty();
}

}  // namespace tpujobs::service
