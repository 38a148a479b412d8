#include "service/agent.h"

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "api/job_spec.h"
#include "api/resolution.h"
#include "base/prometheus.h"
#include "base/thread_priority.h"
#include "db/listener.h"
#include "scheduler/capacity.h"
#include "scheduler/generation.h"
#include "service/database_datasets.h"
#include "service/device_facts.h"
#include "service/gloo_collective.h"
#include "service/heartbeat_lateness.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

// A part of a slice other than the first writes nothing about the job: the
// first part's copy computes the same bits and reports them.
class DiscardSink final : public executor::TrainingSink {
 public:
  void log(std::string_view) override {}
  void metrics(const executor::MetricPoint&) override {}
  void checkpoint(std::shared_ptr<const executor::Checkpoint>) override {}
  bool ready_for_checkpoint() override { return false; }  // none is stored
  void progress(const executor::Progress&) override {}
};

}  // namespace

// The rendezvous keys of one placement, in PostgreSQL.
class Agent::RendezvousRows final : public RendezvousKeys {
 public:
  RendezvousRows(db::ClusterRepository& cluster, std::int64_t placement)
      : cluster_(cluster), placement_(placement) {}
  base::Status set(const std::string& key, const std::string& value) override {
    return cluster_.set_rendezvous_key(placement_, key, value);
  }
  base::Result<std::optional<std::string>> get(const std::string& key) override {
    return cluster_.get_rendezvous_key(placement_, key);
  }

 private:
  db::ClusterRepository& cluster_;
  std::int64_t placement_;
};

// One copy of a job running here, under the placement epoch it was given.
struct Agent::Run {
  db::JobRow row;
  std::int64_t epoch = 0;
  std::atomic<bool> cancel{false};
  std::atomic<bool> checkpoint_on_cancel{false};
  std::atomic<StopReason> stop_reason{StopReason::kNone};
  std::atomic<std::int64_t> preempted_by{0};  // kPreempted: by which job
  std::thread thread;
  // The runner thread's own.
  std::int64_t next_log_seq = 1;
  std::int64_t next_metric_seq = 1;
  std::int64_t skip_metric_points = 0;
  std::map<std::string, double> latest_metrics;
  std::optional<executor::Progress> progress;
  // Where it resumes, when read with the work that started it.
  std::optional<db::JobOutputRepository::ResumePoint> resume_point;
  // A slice spanning agents: this agent's part. A part other than the
  // first (rank > 0) writes nothing about the job.
  std::optional<SliceRole> slice;
  bool peer() const { return slice && slice->rank > 0; }

  // Asks the copy to stop at its next step boundary; the first reason given
  // is the one it ends with. A shutdown or a preemption (`by`: the
  // preemptor) stops at a checkpoint.
  void stop(StopReason why, std::int64_t by = 0) {
    // Set before the reason is published; read only when it is kPreempted.
    if (why == StopReason::kPreempted && stop_reason == StopReason::kNone) preempted_by = by;
    StopReason none = StopReason::kNone;
    const bool first = stop_reason.compare_exchange_strong(none, why);
    if (why == StopReason::kPreempted && !first) return;
    if (why == StopReason::kShutdown || why == StopReason::kPreempted) checkpoint_on_cancel = true;
    cancel = true;
  }
};

// Routes the executor's output to the telemetry writer, every item fenced
// by the run's placement epoch.
class Agent::Sink final : public executor::TrainingSink {
 public:
  Sink(Agent& agent, Run& run) : agent_(agent), run_(run) {}

  void log(std::string_view line) override {
    run_.next_log_seq =
        agent_.telemetry_.log({run_.row.id, run_.next_log_seq, agent_.options_.clock->wall_now(),
                               std::string(line), run_.epoch});
  }

  void metrics(const executor::MetricPoint& point) override {
    for (const auto& [name, value] : point.values) run_.latest_metrics[name] = value;
    if (run_.skip_metric_points > 0) {  // recorded before the resume
      --run_.skip_metric_points;
      return;
    }
    agent_.telemetry_.metric({run_.row.id, run_.next_metric_seq++, point.step, point.epoch,
                              agent_.options_.clock->wall_now(), metric_values_json(point.values),
                              run_.epoch});
  }

  // Stored after the lines and points queued before it (see
  // service/telemetry_writer.h).
  void checkpoint(std::shared_ptr<const executor::Checkpoint> checkpoint) override {
    agent_.telemetry_.checkpoint(run_.row.id, run_.epoch, std::move(checkpoint));
  }
  bool ready_for_checkpoint() override {
    return agent_.telemetry_.ready_for_checkpoint(run_.row.id);
  }

  void progress(const executor::Progress& progress) override {
    run_.progress = progress;
    const auto now = agent_.options_.clock->now();
    // Other processes show it from the table: often enough to follow.
    if (now - last_write_ < std::chrono::milliseconds(250)) return;
    last_write_ = now;
    record_progress();
    agent_.keep_live_view(run_);
  }

  void record_progress() {
    if (!run_.progress) return;
    agent_.telemetry_.progress(run_.row.id, run_.epoch, progress_json(*run_.progress),
                               metric_values_json(run_.latest_metrics));
  }

 private:
  Agent& agent_;
  Run& run_;
  base::Clock::time_point last_write_{};
};

namespace {

std::vector<db::AgentHost> agent_hosts(const scheduler::PoolLayout& layout) {
  std::vector<db::AgentHost> hosts;
  for (const scheduler::HostLayout& h : layout.hosts) {
    hosts.push_back({h.name, std::string(scheduler::facts(h.generation).name)});
  }
  return hosts;
}

}  // namespace

Agent::Agent(db::ConnectionPool& pool, AgentOptions options)
    : pool_(pool),
      repo_(pool),
      cluster_(pool),
      options_(std::move(options)),
      workers_(options_.workers, [this] { train_below(); }),
      datasets_(std::make_unique<DatabaseDatasets>(repo_.datasets)) {}

Agent::~Agent() { stop(); }

base::Status Agent::start() {
  auto heartbeat_pool = db::ConnectionPool::create(pool_.conninfo(), 1);
  if (!heartbeat_pool.ok()) return heartbeat_pool.error();
  heartbeat_pool_ = std::move(*heartbeat_pool);
  const std::vector<db::AgentHost> hosts = agent_hosts(options_.layout);
  auto epoch = cluster_.register_agent(options_.name, hosts, options_.workers);
  if (!epoch.ok()) return epoch.error();
  epoch_ = *epoch;
  std::cerr << "tpujobs: agent " << options_.name << " registered " << hosts.size()
            << " host(s), epoch " << *epoch << std::endl;
  started_ = true;
  if (options_.wake_bus != nullptr) {
    options_.wake_bus->subscribe(db::kAgentChannel, [this](const std::string& payload) {
      if (!payload.empty() && payload != options_.name) return;
      {
        base::MutexLock lock(mutex_);
        woken_ = true;
      }
      wake_.notify_all();
    });
  }
  supervisor_ = std::thread([this] { supervise_loop(); });
  heartbeater_ = std::thread([this] { heartbeat_loop(); });
  telemetry_.start();
  return base::Status::Ok();
}

void Agent::stop() {
  if (!started_) return;
  std::vector<std::thread> threads;
  std::vector<std::pair<std::int64_t, std::int64_t>> parts;  // (job, placement epoch)
  {
    base::MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    for (const auto& [id, run] : runs_) {
      // Fenced by the job's placement epoch: the first part's agent's.
      if (run->peer()) parts.emplace_back(id, run->row.placement_epoch.value_or(run->epoch));
    }
  }
  // Draining: once this commits no job is placed here (a placement requires
  // its agent alive), and the heartbeat goes on until the agent leaves, so
  // a stop that waits long for checkpoints is not taken for a loss.
  const std::int64_t epoch = epoch_;
  if (auto drained = cluster_.drain(options_.name, epoch); drained.ok() && *drained) {
    std::cerr << "tpujobs: agent " << options_.name
              << " draining: no new job; stopping its copies at a checkpoint" << std::endl;
  }
  // A slice spanning agents with a later part here is requeued before that
  // part stops: the first part's step then fails on a job that moved on, so
  // its fenced retry does not land and the stop costs no attempt. A first
  // part here stops at a checkpoint and requeues the job itself, as a job
  // running whole does.
  for (const auto& [id, fence] : parts) (void)write(shutdown_requeue(id, fence));
  {
    base::MutexLock lock(mutex_);
    stop_all_locked(StopReason::kShutdown);
  }
  wake_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  {
    base::MutexLock lock(mutex_);
    for (auto& [id, run] : runs_) {
      if (run->thread.joinable()) threads.push_back(std::move(run->thread));
    }
    for (std::thread& t : ended_) threads.push_back(std::move(t));
    ended_.clear();
  }
  for (std::thread& t : threads) t.join();
  telemetry_.stop();  // after one last flush
  // What is still placed here: jobs placed before the drain that no copy
  // started, and any whose end could not be written. Requeued now, without
  // a retry, rather than found by the leader after the leave (a retry
  // spent, or FAILED without one).
  auto work = repo_.jobs.work_on_agent(options_.name);
  if (work.ok()) {
    for (const LeftBehind& job : left_behind(options_.name, epoch, work->placed, work->slice_parts))
      (void)write(shutdown_requeue(job.job, job.fence));
  }
  {
    base::MutexLock lock(mutex_);
    heartbeat_stopping_ = true;
  }
  heartbeat_wake_.notify_all();
  if (heartbeater_.joinable()) heartbeater_.join();
  (void)cluster_.leave(options_.name, epoch);
  notify(db::kSubmitChannel, "agent-left");
}

void Agent::stop_all_locked(StopReason reason) {
  for (auto& [id, run] : runs_) run->stop(reason);
}

void Agent::heartbeat_loop() {
  db::ClusterRepository cluster(*heartbeat_pool_);
  base::Clock& clock = *options_.clock;
  auto last_heartbeat = clock.now();
  HeartbeatLateness lateness(options_.heartbeat_interval, last_heartbeat);
  base::MutexLock lock(mutex_);
  while (!heartbeat_stopping_) {
    const auto due = last_heartbeat + options_.heartbeat_interval;
    if (clock.now() < due) {
      clock.wait_for(lock, heartbeat_wake_, due - clock.now() + std::chrono::milliseconds(1),
                     [this]() REQUIRES(mutex_) { return heartbeat_stopping_; });
      continue;
    }
    const auto gap = clock.now() - last_heartbeat;  // since the one before was sent
    last_heartbeat = clock.now();
    const std::int64_t epoch = epoch_;
    lock.unlock();
    auto alive = cluster.heartbeat(options_.name, epoch);
    if (auto line = lateness.note(gap, clock.now() - last_heartbeat,
                                  alive.ok() ? "" : alive.error().message, clock.now())) {
      std::cerr << "tpujobs: agent " << options_.name << "'s heartbeat is " << *line << std::endl;
    }
    lock.lock();
    if (alive.ok() && !*alive) {
      lost_epoch_ = epoch;
      wake_.notify_all();
    }
  }
}

void Agent::rejoin() {
  std::cerr << "tpujobs: agent " << options_.name << " was declared lost (epoch " << epoch_
            << "); stopping its copies and registering again" << std::endl;
  std::vector<std::thread> threads;
  {
    base::MutexLock lock(mutex_);
    stop_all_locked(StopReason::kMovedOn);
    for (auto& [id, run] : runs_) {
      if (run->thread.joinable()) threads.push_back(std::move(run->thread));
    }
  }
  for (std::thread& t : threads) t.join();
  {
    base::MutexLock lock(mutex_);
    runs_.clear();
  }
  const std::vector<db::AgentHost> hosts = agent_hosts(options_.layout);
  auto epoch = cluster_.register_agent(options_.name, hosts, options_.workers);
  if (epoch.ok()) {
    epoch_ = *epoch;
    std::cerr << "tpujobs: agent " << options_.name << " rejoined, epoch " << *epoch << std::endl;
  }
}

base::Result<bool> Agent::write(const db::Transition& t) {
  base::Result<bool> moved = repo_.jobs.transition(t);
  // This process's API service serves a STARTING job's view from memory
  // (service/view_cache.h): it forgets it now. A failed write may have landed.
  if (options_.wake_bus != nullptr)
    options_.wake_bus->publish(kJobsChangedChannel, format_job_ids({t.job_id}));
  return moved;
}

base::Result<bool> Agent::write_start(const db::Transition& t) {
  if (options_.started_views == nullptr) return write(t);
  const std::uint64_t seen = options_.started_views->views_generation();
  auto job = repo_.jobs.transition_with_view(t);
  if (!job.ok() || !*job) {
    if (options_.wake_bus != nullptr)  // a failed write may have landed
      options_.wake_bus->publish(kJobsChangedChannel, format_job_ids({t.job_id}));
    if (!job.ok()) return job.error();
    return false;
  }
  options_.started_views->started(seen, **job);
  return true;
}

void Agent::notify(const char* channel, const std::string& payload) {
  if (options_.wake_bus != nullptr) {
    options_.wake_bus->publish(channel, payload);
  } else {
    (void)cluster_.notify(channel, payload);
  }
}

void Agent::supervise_loop() {
  std::optional<db::Listener> listener;
  if (options_.wake_bus == nullptr) listener.emplace(options_.conninfo, db::kAgentChannel);
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      if (stopping_) return;
    }
    // Declared lost while silent: every job here has moved on (or will be
    // moved by the leader); stop the copies, and join again (until that
    // succeeds).
    if (lost_epoch_ != 0 && lost_epoch_ == epoch_) rejoin();
    reconcile();
    const auto wait = options_.poll_interval;
    // Any payload wakes it: one look costs one query.
    if (!listener || !listener->wait(wait).ok()) {
      base::MutexLock lock(mutex_);
      options_.clock->wait_for(lock, wake_, wait,
                               [this]() REQUIRES(mutex_) { return stopping_ || woken_; });
      woken_ = false;
    }
  }
}

void Agent::reconcile() {
  auto work = repo_.jobs.work_on_agent(options_.name);
  if (!work.ok()) return;  // the database is away: the runs go on, their writes wait
  std::vector<std::thread> ended;
  {
    base::MutexLock lock(mutex_);
    ended.swap(ended_);
  }
  for (std::thread& t : ended) t.join();  // runners that ended: they need no lock to finish
  base::MutexLock lock(mutex_);
  if (stopping_) return;
  const std::int64_t epoch = epoch_;
  std::map<std::int64_t, RunningCopy> copies;
  for (const auto& [id, run] : runs_) copies[id] = {run->epoch, run->slice};
  SupervisionPlan plan = plan_supervision(options_.name, epoch, work->placed, work->slice_parts,
                                          copies, ended_slice_placements_);
  ended_slice_placements_ = std::move(plan.ended_slice_placements);
  for (const StopRun& stop : plan.stop) runs_.at(stop.job)->stop(stop.why, stop.preempted_by);
  for (StartRun& start : plan.start) {
    auto run = std::make_shared<Run>();
    run->row = std::move(start.row);
    run->epoch = epoch;
    run->slice = std::move(start.slice);
    if (auto point = work->resume_points.find(run->row.id); point != work->resume_points.end())
      run->resume_point = point->second;
    if (start.stop != StopReason::kNone) run->stop(start.stop, start.preempted_by);
    runs_[run->row.id] = run;
    run->thread = std::thread([this, run] { run_job(run); });
  }
}

executor::DeviceFacts Agent::device_for(const db::JobRow& row) const {
  std::optional<scheduler::Generation> generation;
  json allocation = json::parse(row.allocation_json.value_or("{}"), nullptr, false);
  if (allocation.is_object() && allocation.contains("generation") &&
      allocation["generation"].is_string()) {
    generation = scheduler::parse_generation(allocation["generation"].get<std::string>());
  }
  if (!generation && !options_.layout.hosts.empty())
    generation = options_.layout.hosts.front().generation;
  return generation ? device_facts(*generation) : executor::DeviceFacts{};
}

TelemetryWriterOptions Agent::telemetry_options(const AgentOptions& options) {
  TelemetryWriterOptions telemetry{options.telemetry_interval, options.clock};
  telemetry.output_per_second = options.output_per_second;
  return telemetry;
}

std::string Agent::prometheus_metrics() {
  return "# HELP tpujobs_telemetry_queued_bytes Bytes of job log lines and metric points held "
         "for the database.\n"
         "# TYPE tpujobs_telemetry_queued_bytes gauge\n"
         "tpujobs_telemetry_queued_bytes " +
         std::to_string(telemetry_.queued_line_bytes()) + "\n" +
         base::counter_family("tpujobs_telemetry_dropped_total",
                              "Job log lines and metric points dropped at the bound while the "
                              "database was unreachable (each job's log marks where).",
                              "kind",
                              {{"log_line", telemetry_.dropped_lines()},
                               {"metric_point", telemetry_.dropped_points()}}) +
         base::counter_family("tpujobs_job_output_limited_total",
                              "Job log lines and metric points dropped past --job-output-rate "
                              "(each job's log says how many).",
                              "kind",
                              {{"log_line", telemetry_.limited_lines()},
                               {"metric_point", telemetry_.limited_points()}});
}

void Agent::keep_live_view(const Run& run) {
  if (run.peer() || !run.progress) return;
  nlohmann::json view = views::render_row(run.row);
  view["state"] = "RUNNING";
  view["progress"] = views::progress_view(*run.progress, std::nullopt);
  view["metrics"] = run.latest_metrics;
  base::MutexLock lock(live_mutex_);
  live_views_[run.row.id] = {run.row.tenant, views::response_body(view)};
}

std::optional<std::pair<std::string, std::string>> Agent::live_view(std::int64_t job) {
  base::MutexLock lock(live_mutex_);
  auto it = live_views_.find(job);
  if (it == live_views_.end()) return std::nullopt;
  return it->second;
}

base::Result<std::optional<executor::Checkpoint>> Agent::resume_of(Run& run) {
  // Read with the work that started it (else now), and the checkpoint's
  // bytes only when there is one.
  const std::int64_t id = run.row.id;
  base::Result<db::JobOutputRepository::ResumePoint> point =
      run.resume_point ? base::Result<db::JobOutputRepository::ResumePoint>(*run.resume_point)
                       : repo_.outputs.resume_point(id);
  run.resume_point.reset();
  if (!point.ok()) return point.error();
  run.next_log_seq = point->max_log_seq + 1;
  run.next_metric_seq = point->max_metric_seq + 1;
  run.skip_metric_points = point->metrics_after_checkpoint;
  if (!point->checkpoint_step) return std::optional<executor::Checkpoint>();
  auto checkpoint = repo_.outputs.latest_checkpoint(id);
  if (!checkpoint.ok()) return checkpoint.error();
  if (!*checkpoint) {
    return base::make_error(base::ErrorCode::kUnavailable,
                            "job " + std::to_string(id) + ": its checkpoint went while read");
  }
  executor::Checkpoint resume{(*checkpoint)->step, (*checkpoint)->epoch,
                              std::move((*checkpoint)->bytes)};
  if (resume.step != *point->checkpoint_step) {  // a newer one came in between
    auto recorded = repo_.outputs.count_metrics_after_step(id, resume.step);
    run.skip_metric_points = recorded.ok() ? *recorded : 0;
  }
  return std::optional<executor::Checkpoint>(std::move(resume));
}

void Agent::train_below() {
  if (options_.training_nice == 0) return;
  if (base::Status lowered = base::set_this_thread_nice(options_.training_nice); !lowered.ok()) {
    // Training still runs, at the service's priority.
    std::call_once(nice_refused_, [&lowered] {
      std::cerr << "tpujobs agent: training threads keep the service's priority: "
                << lowered.error().message << "\n";
    });
  }
}

void Agent::run_job(std::shared_ptr<Run> run) {
  run_placed(*run);
  {
    base::MutexLock live(live_mutex_);
    live_views_.erase(run->row.id);
  }
  base::MutexLock lock(mutex_);
  auto it = runs_.find(run->row.id);
  if (it != runs_.end() && it->second == run) {
    if (run->thread.joinable()) ended_.push_back(std::move(run->thread));
    runs_.erase(it);
  }
}

void Agent::run_placed(Run& run) {
  std::optional<api::JobSpec> spec = placed_spec(run);
  if (!spec) return;

  // Resume from the last checkpoint and continue the sequence numbers.
  auto resumed = resume_of(run);
  if (!resumed.ok()) return;  // cannot tell where to start: leave it to the next look
  const std::optional<executor::Checkpoint> resume = std::move(*resumed);
  if (!run.peer()) {
    const std::string where = run.slice ? "agents of its slice" : "agent " + options_.name;
    auto moved =
        write_start(lifecycle::run(run.row.id,
                                   resume ? "Resumed from the checkpoint at step " +
                                                std::to_string(resume->step) + " on " + where
                                          : "Training started on " + where,
                                   run.epoch));
    // Moved on meanwhile, or the database is away: the next look decides.
    if (!moved.ok() || !*moved) return;
  }

  train_below();  // its steps, checkpoints and telemetry; not its start (agent.h)
  Sink sink(*this, run);
  DiscardSink discard;
  executor::TrainingSink& output =
      run.peer() ? static_cast<executor::TrainingSink&>(discard) : sink;
  const executor::TrainingResult result = train(run, *spec, resume, output);
  if (run.peer()) return;  // the first part writes the job's end
  sink.record_progress();
  telemetry_.flush_job(run.row.id);
  if (std::optional<db::Transition> end = end_of(run, result, spec->max_retries)) {
    (void)write(*end);
    notify(db::kSubmitChannel, "finished");  // cores freed: wake the leader
    // Waits and log followers of the job, on every replica, look now.
    (void)cluster_.notify(db::kLogChannel, std::to_string(run.row.id));
  }
}

std::optional<api::JobSpec> Agent::placed_spec(Run& run) {
  json spec_json = json::parse(run.row.spec_json, nullptr, false);
  std::optional<api::JobSpec> spec;
  if (auto parsed = api::parse_job_spec(spec_json); parsed.ok()) spec = std::move(*parsed);
  scheduler::PoolCapacity capacity;
  for (const scheduler::HostLayout& h : options_.layout.hosts) ++capacity.hosts[h.generation];
  if (run.slice) {
    // The slice's hosts, most of them another agent's, are what it resolves against.
    const executor::DeviceFacts device = device_for(run.row);
    if (auto generation = scheduler::parse_generation(device.generation)) {
      int hosts = 0;
      for (int part : run.slice->hosts_per_rank) hosts += part;
      capacity.hosts[*generation] = std::max(capacity.hosts[*generation], hosts);
    }
  }
  std::string why = "the stored spec does not parse";
  if (spec) {
    base::Result<api::Resolution> resolution = api::resolve(spec->trainer, capacity);
    if (resolution.ok()) return api::apply_resolution(*resolution, std::move(*spec));
    const base::Error& refused = resolution.error();
    why = refused.fields.empty() ? refused.message : refused.fields.front().message;
  }
  if (!run.peer()) {  // the first part reports it
    (void)write(lifecycle::reject(run.row.id, {JobState::kStarting, JobState::kRunning}, "by agent",
                                  why, run.epoch));
  }
  return std::nullopt;
}

executor::TrainingResult Agent::train(Run& run, const api::JobSpec& spec,
                                      const std::optional<executor::Checkpoint>& resume,
                                      executor::TrainingSink& output) {
  executor::RunControl control;
  control.cancel = &run.cancel;
  control.resume = resume ? &*resume : nullptr;
  control.checkpoint_on_cancel = &run.checkpoint_on_cancel;
  control.stop_reason = [&run]() -> std::string {  // as the executor logs it ("": none)
    switch (run.stop_reason.load()) {
      case StopReason::kShutdown:
        return "its agent is stopping";
      case StopReason::kPreempted:
        return "preempted by job " + std::to_string(run.preempted_by.load());
      case StopReason::kMovedOn:  // its writes no longer land
      case StopReason::kUserCancel:
      case StopReason::kNone:
        break;
    }
    return "";
  };
  control.clock = options_.clock;
  base::Result<std::unique_ptr<executor::SliceCollective>> joined = join_slice(run);
  std::unique_ptr<executor::SliceCollective> collective =
      joined.ok() ? std::move(*joined) : nullptr;
  executor::SlicePart part;
  if (collective) {
    part = executor::SlicePart{run.slice->first_host, run.slice->hosts, run.slice->hosts_per_rank,
                               collective.get()};
    control.slice = &part;
  }
  executor::TrainingResult result;
  if (!joined.ok()) {
    output.log(joined.error().type + ": " + joined.error().message);
    result.outcome = executor::Outcome::kFailed;
    result.error = joined.error();
  } else {
    result =
        executor::train(spec.training, device_for(run.row), workers_, *datasets_, output, control);
  }
  collective.reset();  // its sockets close: peers still waiting fail now, not at their deadline
  if (run.slice) {
    base::MutexLock lock(mutex_);
    ended_slice_placements_.insert(run.slice->placement);
  }
  return result;
}

std::optional<db::Transition> Agent::end_of(const Run& run, const executor::TrainingResult& result,
                                            int max_retries) {
  const std::int64_t id = run.row.id;
  const StopReason reason = run.stop_reason.load();
  json result_json = {{"metrics", result.final_metrics},
                      {"steps", result.steps},
                      {"xla_report", result.xla_report},
                      {"parameters_digest", result.parameters_digest}};
  if (result.outcome == executor::Outcome::kSucceeded) {
    return lifecycle::finish(id, JobState::kSucceeded, "Training finished", std::nullopt,
                             result_json.dump(), run.epoch);
  }
  if (result.outcome == executor::Outcome::kFailed && run.slice &&
      result.error->type == "UNAVAILABLE") {
    // Requeued while retries allow: placed again (on healthy hosts) to
    // resume from its checkpoint.
    if (auto retry = retry_after_unreachable_peer(run, *result.error, max_retries)) return retry;
  }
  if (result.outcome == executor::Outcome::kFailed) {
    const base::Error& e = *result.error;
    return lifecycle::finish(id, JobState::kFailed, e.type + ": " + e.message,
                             lifecycle::error_text(e.type, e.message, e.hint), result_json.dump(),
                             run.epoch);
  }
  switch (reason) {
    case StopReason::kUserCancel:
      return lifecycle::finish(id, JobState::kCancelled, "Cancelled by request",
                               lifecycle::error_text("CANCELLED", "the job was cancelled", ""),
                               result_json.dump(), run.epoch);
    case StopReason::kShutdown:
      return shutdown_requeue(id, run.epoch);
    case StopReason::kPreempted:
      // Not a failure: the attempt count (max_retries) is left alone.
      return lifecycle::preempt(id, run.preempted_by.load(), run.epoch);
    case StopReason::kMovedOn:  // the job belongs to another placement now
    case StopReason::kNone:
      break;
  }
  return std::nullopt;
}

base::Result<std::unique_ptr<executor::SliceCollective>> Agent::join_slice(const Run& run) {
  if (!run.slice) return std::unique_ptr<executor::SliceCollective>();
  RendezvousRows keys(cluster_, run.slice->placement);
  GlooOptions options;
  options.host = options_.collective_host;
  options.timeout = options_.collective_timeout;
  options.clock = options_.clock;
  auto connected = GlooCollective::connect(
      keys, run.slice->rank, static_cast<int>(run.slice->hosts_per_rank.size()), options);
  if (!connected.ok()) return connected.error();
  return std::unique_ptr<executor::SliceCollective>(std::move(*connected));
}

db::Transition Agent::shutdown_requeue(std::int64_t job, std::int64_t epoch) const {
  return lifecycle::requeue_elsewhere(
      job, "Agent " + options_.name + " stopping; requeued to resume from its last checkpoint",
      epoch, /*retry=*/false, {JobState::kStarting, JobState::kRunning});
}

std::optional<db::Transition> Agent::retry_after_unreachable_peer(const Run& run,
                                                                  const base::Error& error,
                                                                  int max_retries) {
  // A launch on some of the slice's workers fails the same way on every
  // attempt: not a peer to retry without.
  if (run.row.attempt >= max_retries ||
      (!error.fields.empty() && error.fields.front().field == "resources.workers"))
    return std::nullopt;
  return lifecycle::requeue_elsewhere(
      run.row.id,
      "UNAVAILABLE: failed to connect to all addresses (a peer of its slice); requeued to resume "
      "from its last checkpoint",
      run.epoch, /*retry=*/true, {JobState::kRunning});
}

}  // namespace tpujobs::service
