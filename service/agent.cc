#include "service/agent.h"

#include <boost/asio/post.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/prometheus.h"
#include "db/listener.h"
#include "scheduler/generation.h"
#include "service/agent_run.h"
#include "service/database_datasets.h"
#include "service/heartbeat_lateness.h"
#include "service/job_views.h"

namespace tpujobs::service {
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
  std::vector<std::pair<std::int64_t, std::int64_t>> parts;  // (job, placement)
  {
    base::MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    // A placement promised before is committed or forgone within one round
    // trip of the leader's to the database: its copy is stopped below too.
    lock.wait(promises_settled_, [this]() REQUIRES(mutex_) { return promised_.empty(); });
    for (const auto& [id, run] : runs_) {
      if (run->peer()) parts.emplace_back(id, run->fence());
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
  starters_.join();  // the copies still starting have their threads now
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
    for (auto& [id, run] : runs_) run->moved_on = true;
    wake_.notify_all();  // a copy writing its end again stops trying (write_end)
    // A copy still starting has its thread first.
    lock.wait(starts_done_, [this]() REQUIRES(mutex_) { return starting_ == 0; });
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

base::Result<bool> Agent::write_viewed(const db::Transition& t) {
  if (options_.written_views == nullptr) return write(t);
  const std::uint64_t seen = options_.written_views->views_generation();
  auto job = repo_.jobs.transition_with_view(t);
  if (!job.ok() || !*job) {
    if (options_.wake_bus != nullptr)  // a failed write may have landed
      options_.wake_bus->publish(kJobsChangedChannel, format_job_ids({t.job_id}));
    if (!job.ok()) return job.error();
    return false;
  }
  options_.written_views->written(seen, **job);
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
  std::uint64_t look = 0;
  {
    base::MutexLock lock(mutex_);
    look = ++looks_;
  }
  auto work = repo_.jobs.work_on_agent(options_.name);
  if (!work.ok()) return;  // the database is away: the runs go on, their writes wait
  std::vector<std::thread> ended;
  {
    base::MutexLock lock(mutex_);
    ended.swap(ended_);
  }
  for (std::thread& t : ended) t.join();  // runners that ended: they need no lock to finish
  std::vector<std::int64_t> moved_on;
  bool ending_moved_on = false;  // a copy writing its end again stops trying (write_end)
  {
    base::MutexLock lock(mutex_);
    if (stopping_) return;
    const std::int64_t epoch = epoch_;
    std::map<std::int64_t, RunningCopy> copies;
    for (const auto& [id, run] : runs_) {
      copies[id] = {run->epoch, run->fence(), run->slice,
                    run->handed_after && *run->handed_after >= look, run->named};
    }
    SupervisionPlan plan = plan_supervision(options_.name, epoch, work->placed, work->slice_parts,
                                            copies, ended_slice_placements_);
    ended_slice_placements_ = std::move(plan.ended_slice_placements);
    for (const StopRun& stop : plan.stop) {
      Run& run = *runs_.at(stop.job);
      run.stop(stop.why, stop.preempted_by);
      run.named = stop.why;
      if (stop.why == RunStop::kMovedOn) {
        run.moved_on = true;
        if (!run.ending) moved_on.push_back(stop.job);
        ending_moved_on = ending_moved_on || run.ending;
      }
    }
    for (StartRun& start : plan.start) {
      // Promised to the leader, whose placement may have committed (RUNNING
      // here, no copy yet): its hand-over starts it, or, forgone, a later look.
      if (promised_.count(start.row.id)) continue;
      std::optional<db::JobOutputRepository::ResumePoint> point;
      if (auto it = work->resume_points.find(start.row.id); it != work->resume_points.end())
        point = it->second;
      start_locked(std::move(start), epoch, point, std::nullopt);
    }
  }
  // This process's API service may keep the view of a job whose copy moved
  // on: the RUNNING view handed over with a placement started that a
  // database crash undid, before the copy wrote anything.
  if (!moved_on.empty() && options_.wake_bus != nullptr)
    options_.wake_bus->publish(kJobsChangedChannel, format_job_ids(moved_on));
  if (ending_moved_on) wake_.notify_all();
}

bool Agent::promise_start(std::int64_t job, std::int64_t epoch) {
  // Read before the placement's write: a view read before is not kept after.
  const std::uint64_t seen =
      options_.written_views != nullptr ? options_.written_views->views_generation() : 0;
  base::MutexLock lock(mutex_);
  // Stopping, or declared lost (rejoin() forgets every copy): the look after
  // decides. A placement under another epoch, or of a job a copy still runs
  // (its earlier placement's, stopping), is the look's to sort out too.
  if (stopping_ || lost_epoch_ == epoch_ || epoch != epoch_ || runs_.count(job) ||
      promised_.count(job)) {
    return false;
  }
  promised_[job] = seen;
  return true;
}

void Agent::forgo(std::int64_t job) {
  base::MutexLock lock(mutex_);
  promised_.erase(job);
  promises_settled_.notify_all();
}

bool Agent::take_placed(db::PlacedWork work) {
  std::uint64_t seen = 0;
  {
    base::MutexLock lock(mutex_);
    auto promise = promised_.find(work.row.id);
    if (promise == promised_.end()) return false;
    seen = promise->second;
    promised_.erase(promise);
    promises_settled_.notify_all();
    // A stop since the promise waited for this hand-over: the copy starts,
    // and the stop stops it at a checkpoint and requeues the job as it
    // does every copy. Declared lost since, or placed under another epoch:
    // the look after decides. (No copy of the job can run: promise_start
    // saw none, and a look leaves a promised job alone.)
    const std::int64_t epoch = epoch_;
    if (lost_epoch_ == epoch || work.row.state != db::JobState::kRunning ||
        work.row.agent != options_.name || work.row.placement_epoch != epoch ||
        slice_role(work.row, options_.name, epoch)) {
      return false;
    }
    start_locked(start_of(work.row, std::nullopt), epoch, work.resume, looks_,
                 /*running_written=*/true);
  }
  if (options_.written_views != nullptr) {
    db::JobWithCheckpoint job{std::move(work.row), std::nullopt};
    if (work.resume.checkpoint_step && work.checkpoint_epoch)
      job.last_checkpoint = {*work.resume.checkpoint_step, *work.checkpoint_epoch};
    options_.written_views->written(seen, job);
  }
  return true;
}

void Agent::start_locked(StartRun start, std::int64_t epoch,
                         std::optional<db::JobOutputRepository::ResumePoint> point,
                         std::optional<std::uint64_t> handed_after, bool running_written) {
  auto run = std::make_shared<Run>();
  run->running_written = running_written;
  run->row = std::move(start.row);
  run->epoch = epoch;
  run->slice = std::move(start.slice);
  run->resume_point = point;
  run->handed_after = handed_after;
  if (start.stop != StopReason::kNone) run->stop(start.stop, start.preempted_by);
  runs_[run->row.id] = run;
  ++starting_;
  boost::asio::post(starters_, [this, run] { start_run(run); });
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

}  // namespace tpujobs::service
