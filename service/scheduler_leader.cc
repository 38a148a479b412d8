#include "service/scheduler_leader.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

#include "api/job_spec.h"
#include "api/resolution.h"
#include "api/usage.h"
#include "base/clock.h"
#include "base/thread_priority.h"
#include "db/listener.h"
#include "scheduler/capacity.h"
#include "scheduler/generation.h"
#include "service/job_lifecycle.h"
#include "service/preemption_text.h"

namespace tpujobs::service {
namespace {

using db::JobState;

std::int64_t thread_cpu_nanos() { return base::this_thread_cpu_time().count(); }

double seconds_of(std::int64_t nanos) { return static_cast<double>(nanos) / 1e9; }

}  // namespace

SchedulerLeader::SchedulerLeader(db::ConnectionPool& pool, SchedulerLeaderOptions options)
    : owned_store_(std::make_unique<RepositoryLeaderStore>(pool)),
      store_(*owned_store_),
      options_(std::move(options)),
      lock_(options_.conninfo, db::LeaderLock::kSchedulerKey, db::LeaderLock::Mode::kExclusive,
            options_.lock_idle_timeout),
      reasons_writer_(reason_hooks(), *options_.clock, kMaxPendingWrites) {}

SchedulerLeader::SchedulerLeader(LeaderStore& store, SchedulerLeaderOptions options)
    : store_(store),
      options_(std::move(options)),
      lock_(options_.conninfo, db::LeaderLock::kSchedulerKey, db::LeaderLock::Mode::kExclusive,
            options_.lock_idle_timeout),
      reasons_writer_(reason_hooks(), *options_.clock, kMaxPendingWrites) {}

SchedulerLeader::~SchedulerLeader() { stop(); }

ReasonWriter::Hooks SchedulerLeader::reason_hooks() {
  ReasonWriter::Hooks hooks;
  hooks.store = [this](const ReasonWriter::Batch& batch, ReasonWriter::Term term) {
    return store_.set_pending(batch, term);
  };
  hooks.stored = [this](const ReasonWriter::Batch& batch) {
    // Stored: this process's views of these jobs take the new reasons.
    if (options_.wake_bus != nullptr)
      options_.wake_bus->publish(kPendingWrittenChannel, format_pending_changes(batch));
  };
  hooks.unknown = [this](const ReasonWriter::Batch& batch) {
    std::vector<std::int64_t> jobs;
    jobs.reserve(batch.size());
    for (const auto& [job, text] : batch) jobs.push_back(job);
    changed(jobs);  // it may have landed: the views read these jobs again
  };
  return hooks;
}

void SchedulerLeader::start() {
  if (options_.wake_bus != nullptr) {
    options_.wake_bus->subscribe(db::kSubmitChannel, [this](const std::string& payload) {
      {
        base::MutexLock lock(mutex_);
        woken_ = true;
        if (payload != db::kSubmitPayload) woken_by_other_ = true;
      }
      wake_.notify_all();
    });
  }
  reasons_writer_.start();
  thread_ = std::thread([this] { loop(); });
}

void SchedulerLeader::notify(const char* channel, const std::string& payload) {
  if (options_.wake_bus != nullptr) {
    options_.wake_bus->publish(channel, payload);
  } else {
    (void)store_.notify(channel, payload);
  }
}

void SchedulerLeader::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  reasons_writer_.stop();
  lock_.release();
  leader_ = false;
}

void SchedulerLeader::loop() {
  if (options_.thread_nice != 0) {
    if (base::Status set = base::set_this_thread_nice(options_.thread_nice); !set.ok()) {
      std::cerr << "tpujobs: note: the scheduler leader's passes run at the service's priority: "
                << set.error().message
                << " (a nice below 0 needs CAP_SYS_NICE or a nice limit, as systemd's "
                   "LimitNICE=; docs/deploy.md, \"The scheduler leader's priority\")"
                << std::endl;
    }
  }
  std::optional<db::Listener> listener;
  if (options_.wake_bus == nullptr) listener.emplace(options_.conninfo, db::kSubmitChannel);
  PassPacer pacer(options_.min_pass_interval);
  Housekeeping housekeeping(options_.poll_interval);
  Wake wake;
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      if (stopping_) return;
    }
    const bool housekeep = housekeeping.due(options_.clock->now(), wake.submits_only);
    // A server that cannot be reached leads no one: leadership is given up.
    bool leading = leader_;
    if (housekeep) {
      const base::Result<bool> held = lock_.hold();
      leading = held.ok() && *held;
    }
    if (leading != leader_) {
      leader_ = leading;
      reachable_since_ = options_.clock->now();
      term_.reset();
      if (options_.submitted_specs != nullptr) options_.submitted_specs->set_leading(leading);
      if (!leading) {
        reasons_writer_.drop();
        std::cerr << "tpujobs: " << options_.instance << ": no longer the scheduler leader"
                  << std::endl;
      }
    }
    if (leading && !term_) {
      if (base::Status s = begin_term(); !s.ok()) {
        std::cerr << "tpujobs: scheduler term: " << s.error().message << std::endl;
      } else {
        std::cerr << "tpujobs: " << options_.instance << ": scheduler leader now (term " << *term_
                  << ")" << std::endl;
      }
    }
    const auto pass_began = options_.clock->now();
    bool passed = !leading || term_.has_value();
    if (leading && term_) {
      if (base::Status s = run_pass(housekeep, wake.submits_only); !s.ok()) {
        passed = false;
        std::cerr << "tpujobs: scheduling pass: " << s.error().message << std::endl;
      }
    }
    if (!passed) {
      housekeeping.failed();
    } else if (housekeep) {
      housekeeping.done(pass_began);
    }
    const auto pass_ended = options_.clock->now();
    wake = wait_for_wake(listener);
    const auto due = pacer.next(pass_began, pass_ended, wake.during_pass);
    if (const auto now = options_.clock->now(); now < due) options_.clock->sleep_for(due - now);
  }
}

SchedulerLeader::Wake SchedulerLeader::wait_for_wake(std::optional<db::Listener>& listener) {
  // Woken by a submit or a finished job (NOTIFY), else after the poll
  // interval: a lost notification delays a pass, never loses work.
  auto submits_only = [](const std::vector<db::Notification>& notes) {
    return !notes.empty() && std::all_of(notes.begin(), notes.end(), [](const db::Notification& n) {
      return n.payload == db::kSubmitPayload;
    });
  };
  if (listener) {
    base::Result<std::vector<db::Notification>> pending =
        listener->wait(std::chrono::milliseconds(0));
    if (pending.ok() && !pending->empty()) return Wake{true, submits_only(*pending)};
    if (pending.ok()) {
      base::Result<std::vector<db::Notification>> came = listener->wait(options_.poll_interval);
      if (came.ok()) return Wake{false, submits_only(*came)};
    }
  }
  base::MutexLock lock(mutex_);
  const bool already = woken_;
  options_.clock->wait_for(lock, wake_, options_.poll_interval,
                           [this]() REQUIRES(mutex_) { return stopping_ || woken_; });
  const Wake wake{already, woken_ && !woken_by_other_};
  woken_ = false;
  woken_by_other_ = false;
  return wake;
}

PassPacer::time_point PassPacer::next(time_point began, time_point ended, bool woken_during_pass) {
  const duration bound = min_interval_;
  if (last_ended_) credit_ = std::min(bound, credit_ + std::max(duration(0), began - *last_ended_));
  credit_ = std::max<duration>(-bound, credit_ - (ended - began));
  last_ended_ = ended;
  const bool burst = woken_during_pass && woken_during_previous_;
  woken_during_previous_ = woken_during_pass;
  if (burst) return ended + bound;
  return ended + std::max(duration(0), -credit_);
}

namespace {
std::int64_t value_of(const std::atomic<std::int64_t>& nanos) { return nanos.load(); }
std::int64_t value_of(std::int64_t nanos) { return nanos; }
}  // namespace

void SchedulerLeader::write_part_metrics(std::ostream& out, const LongestPass& longest) const {
  // One series a phase (or step) of the passes, in seconds.
  auto per_part = [&](const char* name, const char* type, const char* help, const char* label,
                      const auto& names, const auto& nanos) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    for (std::size_t p = 0; p < names.size(); ++p) {
      out << name << "{" << label << "=\"" << names[p] << "\"} " << seconds_of(value_of(nanos[p]))
          << "\n";
    }
  };
  per_part("tpujobs_scheduler_pass_phase_seconds_total", "counter",
           "Wall time of the passes' phases: housekeeping (silent agents, orphans), read (the "
           "rows changed since the last pass), plan (the placement policy), write (ends, "
           "placements, preemptions), reasons (the pending reasons that changed, rendered and "
           "handed to their writer).",
           "phase", kPhaseNames, phase_nanos_);
  per_part("tpujobs_scheduler_pass_phase_max_seconds", "gauge",
           "The longest of each phase since this replica started.", "phase", kPhaseNames,
           max_phase_nanos_);
  per_part("tpujobs_scheduler_longest_pass_phase_seconds", "gauge",
           "The phases of the longest pass since this replica started (its wall time is "
           "tpujobs_scheduler_pass_max_seconds).",
           "phase", kPhaseNames, longest.phase_nanos);
  per_part("tpujobs_scheduler_longest_pass_housekeeping_seconds", "gauge",
           "The housekeeping steps of the longest pass since this replica started.", "step",
           kStepNames, longest.step_nanos);
  per_part("tpujobs_scheduler_housekeeping_seconds_total", "counter",
           "Wall time of housekeeping's steps: judge (the agents' silence, one transaction), "
           "orphans (the jobs of agents lost, read and moved off), sweep (old rendezvous keys, "
           "once a minute).",
           "step", kStepNames, step_nanos_);
  per_part("tpujobs_scheduler_housekeeping_max_seconds", "gauge",
           "The longest of each step since this replica started.", "step", kStepNames,
           max_step_nanos_);
}

std::string SchedulerLeader::prometheus_metrics() const {
  const double seconds = seconds_of(pass_nanos_.load());
  LongestPass longest_pass;
  {
    base::MutexLock lock(longest_mutex_);
    longest_pass = longest_;
  }
  const double longest = seconds_of(longest_pass.nanos);
  std::ostringstream out;
  out << "# HELP tpujobs_scheduler_pass_seconds Wall time of the scheduler leader's passes.\n"
      << "# TYPE tpujobs_scheduler_pass_seconds histogram\n";
  std::int64_t at_most = 0;
  for (std::size_t b = 0; b < kPassBuckets.size(); ++b) {
    at_most += passes_by_length_[b].load();
    out << "tpujobs_scheduler_pass_seconds_bucket{le=\"" << kPassBuckets[b] << "\"} " << at_most
        << "\n";
  }
  out << "tpujobs_scheduler_pass_seconds_bucket{le=\"+Inf\"} " << passes_.load() << "\n"
      << "tpujobs_scheduler_pass_seconds_count " << passes_.load() << "\n"
      << "tpujobs_scheduler_pass_seconds_sum " << seconds << "\n"
      << "# HELP tpujobs_scheduler_pass_max_seconds The longest pass since this replica started.\n"
      << "# TYPE tpujobs_scheduler_pass_max_seconds gauge\n"
      << "tpujobs_scheduler_pass_max_seconds " << longest << "\n"
      << "# HELP tpujobs_scheduler_pass_cpu_seconds_total CPU time of the leader's thread in its "
         "passes (the rest of a pass waited: for PostgreSQL, or for a core).\n"
      << "# TYPE tpujobs_scheduler_pass_cpu_seconds_total counter\n"
      << "tpujobs_scheduler_pass_cpu_seconds_total " << seconds_of(pass_cpu_nanos_.load()) << "\n"
      << "# HELP tpujobs_scheduler_pass_max_cpu_seconds CPU time of the leader's thread in the "
         "longest pass since this replica started.\n"
      << "# TYPE tpujobs_scheduler_pass_max_cpu_seconds gauge\n"
      << "tpujobs_scheduler_pass_max_cpu_seconds " << seconds_of(longest_pass.cpu_nanos) << "\n"
      << "# HELP tpujobs_scheduler_longest_pass_read_tables 1 if the longest pass read the "
         "tables, 0 if it placed only the jobs submitted through this replica since the last "
         "read.\n"
      << "# TYPE tpujobs_scheduler_longest_pass_read_tables gauge\n"
      << "tpujobs_scheduler_longest_pass_read_tables " << (longest_pass.read_tables ? 1 : 0) << "\n"
      << "# HELP tpujobs_scheduler_plans_reused_total Passes that found nothing changed since the "
         "last plan and had it again.\n"
      << "# TYPE tpujobs_scheduler_plans_reused_total counter\n"
      << "tpujobs_scheduler_plans_reused_total " << plans_reused_.load() << "\n"
      << "# HELP tpujobs_scheduler_specs_learned_total New jobs' specs the leader learned, by "
         "whether this process's API service handed them over or their stored texts were "
         "parsed.\n"
      << "# TYPE tpujobs_scheduler_specs_learned_total counter\n"
      << "tpujobs_scheduler_specs_learned_total{from=\"handed\"} " << specs_handed_.load() << "\n"
      << "tpujobs_scheduler_specs_learned_total{from=\"text\"} " << specs_parsed_.load() << "\n"
      << "# HELP tpujobs_scheduler_placements_handed_total Placements on the agent in this "
         "process, by whether it took them started as they committed (else it was woken to read "
         "them).\n"
      << "# TYPE tpujobs_scheduler_placements_handed_total counter\n"
      << "tpujobs_scheduler_placements_handed_total{taken=\"true\"} " << handed_taken_.load()
      << "\n"
      << "tpujobs_scheduler_placements_handed_total{taken=\"false\"} " << handed_left_.load()
      << "\n"
      << "# HELP tpujobs_scheduler_reads_skipped_total Passes that only submits to this process "
         "woke, which placed the new jobs without reading the tables.\n"
      << "# TYPE tpujobs_scheduler_reads_skipped_total counter\n"
      << "tpujobs_scheduler_reads_skipped_total " << reads_skipped_.load() << "\n";
  write_part_metrics(out, longest_pass);
  const ReasonWriter& w = reasons_writer_;
  out << "# HELP tpujobs_scheduler_reason_writes_total Statements that wrote pending reasons "
         "(off the passes).\n"
      << "# TYPE tpujobs_scheduler_reason_writes_total counter\n"
      << "tpujobs_scheduler_reason_writes_total " << w.writes() << "\n"
      << "# HELP tpujobs_scheduler_reasons_written_total Pending reasons those statements "
         "stored.\n"
      << "# TYPE tpujobs_scheduler_reasons_written_total counter\n"
      << "tpujobs_scheduler_reasons_written_total " << w.reasons() << "\n"
      << "# HELP tpujobs_scheduler_reason_write_seconds_total Their wall time.\n"
      << "# TYPE tpujobs_scheduler_reason_write_seconds_total counter\n"
      << "tpujobs_scheduler_reason_write_seconds_total " << seconds_of(w.write_nanos()) << "\n"
      << "# HELP tpujobs_scheduler_reason_write_max_seconds The longest since this replica "
         "started.\n"
      << "# TYPE tpujobs_scheduler_reason_write_max_seconds gauge\n"
      << "tpujobs_scheduler_reason_write_max_seconds " << seconds_of(w.max_write_nanos()) << "\n";
  return out.str();
}

bool SchedulerLeader::xid_below(std::int64_t xid, const std::string& low_water) {
  std::int64_t water = 0;
  const char* end = low_water.data() + low_water.size();
  const auto [at, error] = std::from_chars(low_water.data(), end, water);
  return error != std::errc() || at != end || xid < water;
}

base::Status SchedulerLeader::begin_term() {
  auto term = store_.begin_term(options_.instance);
  if (!term.ok()) {
    low_water_.reset();
    return term.error();
  }
  // Another leader took a term since this one's last: it may have written
  // about any job, so every job is read again. So after the server
  // recovered from a crash (which ended the lock's session): the recovery
  // may have undone placements committed without waiting for the disk,
  // whose rows are then older than the low water, and may give their
  // transaction ids out again, to writes the low water would skip (the
  // term's own id tells that too). A term that follows this replica's own
  // with no recovery in between (its lock lapsed during a long pass, and
  // no one took over; or a clean restart) keeps what it read.
  const bool own_next = last_term_ && term->term == *last_term_ + 1;
  if (!own_next || term->recovered_at != last_recovered_at_ ||
      (low_water_ && xid_below(term->xid, *low_water_))) {
    low_water_.reset();
    // The placement numbers left of its block, too: a server that failed
    // over to a standby the reservation had not reached may give the same
    // block to the leader between.
    next_placement_ = placements_end_ = 0;
  }
  // Every pending reason is written again in either case: reasons are
  // committed without waiting for the disk (JobRepository::set_pending),
  // and a database that restarted, which ends the lock's session, may
  // have lost the last ones.
  pending_written_ = 0;
  kept_read_.reset();
  term_ = term->term;
  last_term_ = term->term;
  last_recovered_at_ = term->recovered_at;
  return base::Status::Ok();
}

void SchedulerLeader::fence(db::Transition& t) {
  t.require_leader_term = term_;
  ++queue_version_;
  ++writes_;
}

base::Result<db::TransitionOutcome> SchedulerLeader::write(db::Transition t) {
  fence(t);
  const db::BatchedTransition one[] = {{std::move(t)}};
  base::Result<std::vector<db::TransitionOutcome>> moved = store_.transitions(one);
  const bool applied = moved.ok() && moved->front().applied;
  const std::int64_t job = one[0].transition.job_id;
  if (!moved.ok() || applied) changed({job});  // a failed write may have landed
  // An end the leader wrote (a cancel, a start_by, a lost agent's job) is
  // announced as an agent announces the ends it writes.
  if (applied && db::is_terminal(one[0].transition.to)) ended_.push_back(job);
  if (!moved.ok()) return moved.error();
  return moved->front();
}

void SchedulerLeader::announce_ended() {
  constexpr std::size_t kIdsPerNotification = 300;  // 20 bytes an id at most: under 8,000
  for (std::size_t first = 0; first < ended_.size(); first += kIdsPerNotification) {
    const std::size_t last = std::min(ended_.size(), first + kIdsPerNotification);
    notify(db::kLogChannel, format_job_ids({ended_.begin() + static_cast<std::ptrdiff_t>(first),
                                            ended_.begin() + static_cast<std::ptrdiff_t>(last)}));
  }
  ended_.clear();
}

void SchedulerLeader::changed(const std::vector<std::int64_t>& jobs) {
  if (options_.wake_bus != nullptr && !jobs.empty()) {
    options_.wake_bus->publish(kJobsChangedChannel, format_job_ids(jobs));
  }
}

base::Status SchedulerLeader::cancel_unstartable(std::int64_t job, const std::string& reason,
                                                 const std::string& detail,
                                                 const std::string& hint) {
  const db::Transition t = lifecycle::cancel_unstartable(job, reason, detail, hint);
  auto moved = write(t);
  if (!moved.ok()) return moved.error();
  if (moved->applied) std::cerr << "tpujobs: job " << job << ": " << t.reason << std::endl;
  return base::Status::Ok();
}

base::Status SchedulerLeader::move_off(const db::JobRow& row, const std::string& retry_reason,
                                       const std::string& hint,
                                       const std::string& unstarted_reason) {
  // A cancel answered 202 is honoured: the job ends CANCELLED, not
  // requeued or FAILED. A job that never started where it was placed (it
  // still reads STARTING) spent nothing: requeued without a retry, a few
  // times (a job whose start brings its agents down must not loop).
  const bool unstarted = !unstarted_reason.empty() && row.state == JobState::kStarting &&
                         row.placement_epoch &&
                         row.unstarted_requeues < lifecycle::kFreeUnstartedRequeues;
  const db::Transition t =
      row.cancel_requested ? lifecycle::cancel_placed(row.id, row.placement)
      : unstarted
          ? lifecycle::requeue_unstarted(row.id, unstarted_reason, row.placement.value_or(0))
      : row.attempt < facts_of(row.id).max_retries
          ? lifecycle::requeue_elsewhere(row.id, retry_reason, row.placement,
                                         /*retry=*/true, {JobState::kStarting, JobState::kRunning})
          : lifecycle::fail_unavailable(row.id, hint, row.placement);
  auto moved = write(t);
  if (!moved.ok()) return moved.error();
  if (moved->applied) {
    // A cancel stored since the read ended it CANCELLED instead.
    const std::string& reason = moved->cancelled_instead && t.if_cancel_requested
                                    ? t.if_cancel_requested->reason
                                    : t.reason;
    std::cerr << "tpujobs: job " << row.id << ": " << reason << std::endl;
    // Its agent, if it still listens, stops its copy now.
    notify(db::kAgentChannel, row.agent.value_or(""));
  }
  return base::Status::Ok();
}

base::Status SchedulerLeader::requeue_orphans() {
  auto orphans = store_.orphaned_jobs();
  if (!orphans.ok()) return orphans.error();
  std::vector<std::int64_t> orphan_ids;
  for (const db::JobRow& row : *orphans) orphan_ids.push_back(row.id);
  if (base::Status s = learn_specs(orphan_ids); !s.ok()) return s;  // their max_retries
  for (const db::JobRow& row : *orphans) {
    const std::string agent = row.agent.value_or("");
    base::Status s =
        move_off(row, "Agent " + agent + " was lost; requeued to resume from its last checkpoint",
                 "the agent running the job (" + agent +
                     ") stopped answering; check it (GET /v1/pool), or set max_retries so the job "
                     "resumes on another agent from its last checkpoint",
                 "Agent " + agent +
                     " was lost before the job started on it; requeued without spending a retry");
    if (!s.ok()) return s;
  }
  return base::Status::Ok();
}

base::Status SchedulerLeader::run_pass(bool housekeeping, bool submits_only) {
  const auto began = options_.clock->now();
  const std::int64_t cpu_began = thread_cpu_nanos();
  std::array<std::int64_t, kPhases> phases_before;
  for (std::size_t p = 0; p < kPhases; ++p) phases_before[p] = phase_nanos_[p];
  pass_step_nanos_ = {};
  pass_read_tables_ = false;
  base::Status s = pass(housekeeping, submits_only);
  announce_ended();  // also after a failed pass: its ends that landed
  const std::int64_t nanos = std::chrono::nanoseconds(options_.clock->now() - began).count();
  const std::int64_t cpu = thread_cpu_nanos() - cpu_began;
  if (nanos >= std::chrono::nanoseconds(kSlowPass).count())
    tell_slow_pass(nanos, cpu, phases_before);
  ++passes_;
  pass_nanos_ += nanos;
  pass_cpu_nanos_ += cpu;
  {
    base::MutexLock lock(longest_mutex_);
    if (nanos > longest_.nanos) {
      longest_.nanos = nanos;
      longest_.cpu_nanos = cpu;
      for (std::size_t p = 0; p < kPhases; ++p)
        longest_.phase_nanos[p] = phase_nanos_[p] - phases_before[p];
      longest_.step_nanos = pass_step_nanos_;
      longest_.read_tables = pass_read_tables_;
    }
  }
  const double took = seconds_of(nanos);
  for (std::size_t b = 0; b < kPassBuckets.size(); ++b) {
    if (took <= kPassBuckets[b]) {
      ++passes_by_length_[b];
      break;
    }
  }
  // A failed pass may have left its writes unknown: read every job again,
  // and plan again (its plan, if it made one, was not kept: planned()).
  if (!s.ok()) {
    low_water_.reset();
    kept_read_.reset();
    planned_holds_until_.reset();
  }
  // Only when the database could not be reached: a statement it refused
  // does not make the agents' silence unknown (and a leader whose passes
  // fail so would never declare an agent lost).
  if (!s.ok() && s.code() == base::ErrorCode::kUnavailable)
    reachable_since_ = options_.clock->now();
  return s;
}

void SchedulerLeader::tell_slow_pass(std::int64_t nanos, std::int64_t cpu,
                                     const std::array<std::int64_t, kPhases>& before) {
  const auto now = options_.clock->now();
  if (slow_told_ && now - *slow_told_ < kSlowPassesApart) {
    ++slow_untold_;
    return;
  }
  auto ms = [](std::int64_t n) { return std::to_string(n / 1'000'000); };
  std::string line = "tpujobs: a scheduling pass took " + ms(nanos) + " ms (" + ms(cpu) +
                     " on this thread's CPU); its phases in ms:";
  for (std::size_t p = 0; p < kPhases; ++p) {
    line +=
        std::string(p == 0 ? " " : ", ") + kPhaseNames[p] + " " + ms(phase_nanos_[p] - before[p]);
    if (p == kHousekeeping && phase_nanos_[p] > before[p]) {
      line += " (";
      for (std::size_t step = 0; step < kSteps; ++step) {
        line += std::string(step == 0 ? "" : ", ") + kStepNames[step] + " " +
                ms(pass_step_nanos_[step]);
      }
      line += ")";
    }
  }
  line += "; jobs waiting at its start: " + std::to_string(snapshot_.waiting.size());
  if (slow_untold_ > 0) {
    line += "; " + std::to_string(slow_untold_) + " more passes over " +
            std::to_string(kSlowPass.count()) + " ms since the last one told";
  }
  std::cerr << line << std::endl;
  slow_told_ = now;
  slow_untold_ = 0;
}

}  // namespace tpujobs::service
