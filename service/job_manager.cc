#include "service/job_manager.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "api/problem.h"
#include "api/usage.h"
#include "db/listener.h"
#include "service/database_datasets.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"
#include "service/pool_views.h"
#include "service/preemption_text.h"

namespace tpujobs::service {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

using db::JobState;
constexpr JobState kQueued = JobState::kQueued;
constexpr JobState kStarting = JobState::kStarting;
constexpr JobState kRunning = JobState::kRunning;
constexpr JobState kSucceeded = JobState::kSucceeded;
constexpr JobState kFailed = JobState::kFailed;
constexpr JobState kCancelled = JobState::kCancelled;
using db::is_terminal;

std::string state_name(JobState state) { return std::string(db::to_string(state)); }

using lifecycle::error_json;
using views::iso_time;
using views::parse_or_null;
using views::response_body;
using views::time_or_null;

std::string generation_name(scheduler::Generation g) {
  return std::string(scheduler::facts(g).name);
}

json placement_json(const scheduler::Placement& p, const scheduler::PoolLayout& layout) {
  json hosts = json::array();
  for (int h : p.hosts) hosts.push_back(layout.hosts[h].name);
  json cores = json::array();
  for (const scheduler::CoreRef& c : p.cores)
    cores.push_back({{"host", layout.hosts[c.host].name}, {"core", c.core}});
  return {
      {"generation", generation_name(p.generation)},
      {"accelerator_type", p.accelerator_type.empty() ? json(nullptr) : json(p.accelerator_type)},
      {"hosts", hosts},
      {"cores", cores}};
}

api::JsonResult not_found(std::int64_t id) {
  return db::make_error(db::ErrorCode::kNotFound, "no job " + std::to_string(id));
}

}  // namespace

// A job this process has queued or runs. Guarded by JobManager::mutex_
// except where noted.
struct JobManager::LiveJob {
  std::int64_t id = 0;
  std::string tenant;
  // State, times, attempt as last written. Its texts (spec, resolved,
  // labels, warnings) are dropped once the view is built: they live on in
  // the two strings below.
  db::JobRow row;
  // The view of GET /v1/jobs/{id}, apart from the members that change while
  // the job is live, as text (service/job_views.h): far smaller than a json
  // tree (a queued job is mostly this), and spliced rather than serialised.
  views::SplitView view;
  api::JobSpec spec;
  api::Resolution resolution;
  std::int64_t submit_order = 0;
  std::optional<scheduler::Placement> placement;
  std::optional<executor::Progress> progress;
  std::map<std::string, double> latest_metrics;
  // The newest checkpoint stored in PostgreSQL: where a resume would start.
  std::optional<std::pair<std::int64_t, int>> stored_checkpoint;  // (step, epoch)
  // Preempted by this job and not started since: waits with Preempted.
  std::optional<std::int64_t> preempted_by;
  // Workload rules: its dependencies were met once (it is queued, or ran),
  // and while held, why it waits.
  bool dependencies_met = false;
  std::string dependency_detail;
  std::atomic<bool> cancel{false};  // read by the executor without the mutex
  std::atomic<bool> checkpoint_on_cancel{false};
  StopReason stop_reason = StopReason::kNone;
  // A cancel was answered 202: the run ends CANCELLED, whatever it returns.
  bool user_cancelled = false;
  // Its run returned and its end is being decided and stored: a cancel now
  // is refused (409) rather than answered 202 and not honoured.
  bool ending = false;
  bool runner_started = false;
  std::thread runner;
  // Sequence numbers of the current run (the runner thread only).
  std::int64_t next_log_seq = 1;
  std::int64_t next_metric_seq = 1;
  std::int64_t skip_metric_points = 0;  // replayed points already recorded, after a resume
  // Log lines of the current run, for followers: (seq, line).
  std::vector<std::pair<std::int64_t, std::string>> recent_logs;
  std::vector<std::function<void(api::JsonResult)>> waiters;
  SteadyClock::time_point run_started{};
  // Bumped by changes only this job's view shows (progress, metrics, a
  // stored checkpoint); JobManager::epoch_ counts the changes that can move
  // any job's view (states, queue order, pool). A running job's telemetry
  // thus leaves the cached views of the queued jobs valid.
  std::uint64_t version = 0;
  // GET /v1/jobs/{id} as last rendered, valid while epoch_ and version
  // still equal these.
  std::string cached_body;
  std::uint64_t cached_epoch = 0;
  std::uint64_t cached_version = 0;
};

// Routes the executor's output: log lines, metrics, progress and
// checkpoints to the telemetry writer, and what the job's view shows while
// it runs into memory.
class JobManager::Sink final : public executor::TrainingSink {
 public:
  Sink(JobManager& manager, std::shared_ptr<LiveJob> job)
      : manager_(manager), job_(std::move(job)) {}

  void log(std::string_view line) override {
    db::LogLine entry{job_->id, job_->next_log_seq++, manager_.clock_.wall_now(),
                      std::string(line)};
    {
      base::MutexLock lock(manager_.mutex_);
      keep_recent_line(job_->recent_logs, entry.seq, entry.line);  // service/log_streams.h
    }
    manager_.telemetry_.log(std::move(entry));
  }

  void metrics(const executor::MetricPoint& point) override {
    {
      base::MutexLock lock(manager_.mutex_);
      for (const auto& [name, value] : point.values) job_->latest_metrics[name] = value;
      ++job_->version;
    }
    if (job_->skip_metric_points > 0) {  // already recorded before the resume
      --job_->skip_metric_points;
      return;
    }
    manager_.telemetry_.metric({job_->id, job_->next_metric_seq++, point.step, point.epoch,
                                manager_.clock_.wall_now(), metric_values_json(point.values)});
  }

  // Stored after the log lines and metrics queued before it (see
  // service/telemetry_writer.h). (A resume does log again what the run
  // logged after the checkpoint, under new seqs, as a restarted trainer
  // would; its metric points are skipped, see skip_metric_points.)
  // Training goes on meanwhile, also while the database is away; only the
  // newest checkpoint of a job waits.
  void checkpoint(std::shared_ptr<const executor::Checkpoint> checkpoint) override {
    manager_.telemetry_.checkpoint(job_->id, /*fence=*/0, std::move(checkpoint));
  }
  bool ready_for_checkpoint() override {
    return manager_.telemetry_.ready_for_checkpoint(job_->id);
  }

  void progress(const executor::Progress& progress) override {
    const auto now = manager_.clock_.now();
    {
      base::MutexLock lock(manager_.mutex_);
      job_->progress = progress;
      ++job_->version;
      manager_.scheduler_.heartbeat(job_->id, now);
    }
    if (now - last_progress_write_ < std::chrono::seconds(1)) return;
    last_progress_write_ = now;
    record_progress(progress);
  }

  // Queues the progress (and latest metrics) for the database now, however
  // recently the last one went.
  void record_progress(const executor::Progress& progress) {
    std::string metrics;
    {
      base::MutexLock lock(manager_.mutex_);
      metrics = metric_values_json(job_->latest_metrics);
    }
    manager_.telemetry_.progress(job_->id, /*fence=*/0, progress_json(progress),
                                 std::move(metrics));
  }

 private:
  JobManager& manager_;
  std::shared_ptr<LiveJob> job_;
  SteadyClock::time_point last_progress_write_{};
};

JobManager::JobManager(db::ConnectionPool& pool, scheduler::PoolLayout layout,
                       JobManagerOptions options)
    : pool_(pool),
      repo_(pool),
      cluster_(pool),
      layout_(layout),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::real_clock()),
      workers_(options_.workers),
      datasets_owner_(std::make_unique<DatabaseDatasets>(repo_.datasets)),
      scheduler_(std::move(layout),
                 scheduler::SchedulerOptions{options_.lease_timeout, options_.preemption_min_wait}),
      telemetry_store_(repo_, cluster_, /*notify_logs=*/false),
      telemetry_(telemetry_store_, {options_.telemetry_interval, &clock_}),
      finished_views_(options_.finished_view_bytes) {
  datasets_ = datasets_owner_.get();
  telemetry_.on_checkpoint_stored = [this](std::int64_t id, const executor::Checkpoint& c) {
    base::MutexLock lock(mutex_);
    if (auto it = live_.find(id); it != live_.end()) {
      it->second->stored_checkpoint = {c.step, c.epoch};
      ++it->second->version;
    }
  };
}

JobManager::~JobManager() {
  shutdown();
  close();
}

template <class F>
bool JobManager::with_retry(F&& write) {
  auto delay = std::chrono::milliseconds(50);
  for (;;) {
    auto status = write();
    if (status.ok()) {
      database_ok_ = true;
      return true;
    }
    if (status.code() != db::ErrorCode::kUnavailable) {
      std::cerr << "tpujobs: database write failed: " << status.error().message << "\n";
      return false;
    }
    database_ok_ = false;
    if (writes_given_up()) {
      std::cerr << "tpujobs: database unavailable, a write is given up: " << status.error().message
                << "\n";
      return false;
    }
    clock_.sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(2000));
  }
}

bool JobManager::apply_transition(const db::Transition& transition) {
  bool applied = false;
  bool retried = false;
  with_retry([&] {
    auto r = repo_.jobs.transition(transition);
    if (r.ok()) {
      applied = *r;
      return db::Status::Ok();
    }
    retried = true;
    return db::Status(r.error());
  });
  if (applied || !retried) return applied;
  // A commit whose answer the connection lost is not applied again by the
  // retry: the job is already in the target state (under this owner, for a
  // claim). Tell it from a job someone else moved on by that state.
  auto row = repo_.jobs.get_job(transition.job_id);
  return row.ok() && *row && (*row)->state == transition.to &&
         (!transition.owner || (*row)->owner == transition.owner);
}

db::Status JobManager::start() {
  readiness_probe_.start();
  if (options_.cluster) {
    // The leader and the agents own the queue and the runs.
    started_ = true;
    committer_.start();
    log_listener_ = std::thread([this] { log_listener_loop(); });
    return db::Status::Ok();
  }
  auto hosts = repo_.pool_state.load_host_health();
  if (!hosts.ok()) return hosts.error();
  auto quotas = repo_.pool_state.load_quotas();
  if (!quotas.ok()) return quotas.error();
  auto unfinished = repo_.jobs.load_unfinished();
  if (!unfinished.ok()) return unfinished.error();
  // Where each job would resume, for its view while it waits.
  std::vector<std::int64_t> ids;
  for (const db::JobRow& row : *unfinished) ids.push_back(row.id);
  auto checkpoints = repo_.outputs.latest_checkpoint_positions(ids);
  if (!checkpoints.ok()) return checkpoints.error();
  {
    base::MutexLock lock(mutex_);
    for (const db::HostHealthRow& h : *hosts) {
      std::optional<int> index = scheduler_.find_host(h.name);
      if (!index) continue;
      if (h.health == "draining")
        scheduler_.set_host_health(*index, scheduler::HostHealth::kDraining);
      if (h.health == "failed") scheduler_.set_host_health(*index, scheduler::HostHealth::kFailed);
    }
    for (const auto& [tenant, max_cores] : *quotas) {
      scheduler_.set_tenant_quota(tenant, max_cores);
      quotas_[tenant] = max_cores;
    }
  }
  for (db::JobRow& row : *unfinished) {
    if (row.state == kStarting || row.state == kRunning) {
      // A previous process ran it and is gone: its cores were never ours.
      auto moved = repo_.jobs.transition(lifecycle::requeue_after_restart(row.id));
      if (!moved.ok()) return moved.error();
      row.state = kQueued;
    }
    db::Result<std::shared_ptr<LiveJob>> taken = take_stored(row, "on restart");
    if (!taken.ok()) return taken.error();
    if (*taken == nullptr) continue;
    std::shared_ptr<LiveJob> job = std::move(*taken);
    job->preempted_by = row.preempted_by;  // a preempted job waits as Preempted again
    if (auto c = checkpoints->find(row.id); c != checkpoints->end())
      job->stored_checkpoint = c->second;
    base::MutexLock lock(mutex_);
    enqueue_locked(job);
  }
  started_ = true;
  committer_.start();
  scheduler_thread_ = std::thread([this] { scheduler_loop(); });
  telemetry_.start();
  wake_scheduler();
  return db::Status::Ok();
}

void JobManager::shutdown() {
  if (!started_ || shut_down_.exchange(true)) return;
  stop_adopter();
  {
    base::MutexLock lock(retry_mutex_);
    retry_until_ = clock_.now() + options_.shutdown_write_grace;
  }
  committer_.close();  // it answers what it already took
  std::vector<std::thread> runners;
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
    for (auto& [id, job] : live_) {
      if (job->runner_started && job->stop_reason == StopReason::kNone) {
        job->stop_reason = StopReason::kShutdown;
        job->checkpoint_on_cancel = true;
        job->cancel = true;
      }
    }
  }
  scheduler_wake_.notify_all();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  {
    base::MutexLock lock(mutex_);
    for (auto& [id, job] : live_) {
      if (job->runner.joinable()) runners.push_back(std::move(job->runner));
    }
    for (std::thread& t : finished_runners_) runners.push_back(std::move(t));
    finished_runners_.clear();
  }
  for (std::thread& t : runners) t.join();
  store_telemetry();
}

void JobManager::close() {
  if (closed_) return;
  closed_ = true;
  {
    base::MutexLock lock(retry_mutex_);
    writes_stopped_ = true;
  }
  stop_adopter();
  telemetry_.stop();
  readiness_probe_.stop();
  {
    base::MutexLock lock(log_listener_mutex_);
    log_listener_stopping_ = true;
  }
  log_listener_wake_.notify_all();
  if (log_listener_.joinable()) log_listener_.join();
  timers_.stop();
  // Anyone still waiting gets the job as it stands.
  std::vector<std::function<void(api::JsonResult)>> waiters;
  {
    base::MutexLock lock(mutex_);
    for (auto& [id, job] : live_) {
      for (auto& w : job->waiters) waiters.push_back(std::move(w));
      job->waiters.clear();
    }
  }
  for (auto& w : waiters) w(db::make_error(db::ErrorCode::kUnavailable, "the service is stopping"));
}

// ---------------------------------------------------------------- submit

void JobManager::submit(api::SubmitRequest request, std::function<void(api::SubmitOutcome)> done) {
  committer_.submit(std::move(request), std::move(done));
}

void JobManager::submit_array(std::vector<api::SubmitRequest> children,
                              std::function<void(std::vector<api::SubmitOutcome>)> done) {
  committer_.submit_array(std::move(children), std::move(done));
}

db::Result<std::vector<db::InsertedJob>> JobManager::JobStore::insert_jobs(
    const std::vector<db::NewJob>& rows) {
  auto inserted = manager_.repo_.jobs.insert_jobs(rows);
  manager_.database_ok_ = inserted.ok() || inserted.code() != db::ErrorCode::kUnavailable;
  // /readyz: a refused insert (full disk, read-only) is a failing write.
  manager_.readiness_probe_.note_write(inserted.ok() ||
                                       inserted.code() == db::ErrorCode::kConflict ||
                                       inserted.code() == db::ErrorCode::kInvalid);
  if (!inserted.ok() && inserted.error().maybe_applied && !manager_.options_.cluster) {
    // (A cluster's leader reads the queue from the table: it finds them.)
    manager_.watch_unconfirmed_insert(inserted.error().server_process);
  }
  return inserted;
}

db::Result<std::shared_ptr<JobManager::LiveJob>> JobManager::take_stored(const db::JobRow& row,
                                                                         const std::string& where) {
  if (row.cancel_requested) {
    // Its cancel was answered 202 while no runner here had it.
    auto cancelled = repo_.jobs.transition(lifecycle::cancel_queued(row.id));
    if (!cancelled.ok()) return cancelled.error();
    return std::shared_ptr<LiveJob>();
  }
  base::Result<std::shared_ptr<LiveJob>> live = make_live(row);
  if (!live.ok()) {
    (void)repo_.jobs.transition(lifecycle::reject(row.id, {kQueued}, where, live.error().message));
    return std::shared_ptr<LiveJob>();
  }
  return std::move(*live);
}

void JobManager::watch_unconfirmed_insert(const base::Error::ServerProcess& process) {
  base::MutexLock lock(adopter_mutex_);
  if (adopter_stopping_) return;  // still QUEUED in the table: the next start takes it
  unconfirmed_inserts_.push_back(process);
  if (adopter_running_) return adopter_wake_.notify_one();
  adopter_running_ = true;
  if (adopter_.joinable()) adopter_.join();  // ended: it cleared adopter_running_ last
  adopter_ = std::thread([this] { adopter_loop(); });
}

void JobManager::stop_adopter() {
  std::thread adopter;
  {
    base::MutexLock lock(adopter_mutex_);
    adopter_stopping_ = true;
    adopter = std::move(adopter_);
  }
  adopter_wake_.notify_all();
  if (adopter.joinable()) adopter.join();  // waits at most one database call
}

void JobManager::adopter_loop() {
  auto delay = std::chrono::milliseconds(200);
  for (;;) {
    const bool settled = adopt_unconfirmed_inserts();
    base::MutexLock lock(adopter_mutex_);
    if (adopter_stopping_ || (settled && unconfirmed_inserts_.empty())) {
      adopter_running_ = false;
      return;
    }
    if (settled) continue;  // more were listed meanwhile
    // The database is away, or a server process has not exited yet.
    lock.wait_for(adopter_wake_, delay,
                  [&]() REQUIRES(adopter_mutex_) { return adopter_stopping_; });
    delay = std::min(delay * 2, std::chrono::milliseconds(5000));
  }
}

bool JobManager::adopt_unconfirmed_inserts() {
  std::vector<base::Error::ServerProcess> processes;
  {
    base::MutexLock lock(adopter_mutex_);
    processes = unconfirmed_inserts_;
  }
  // First each insert settles: carried out, or (its process ended) never.
  // The wait for an exit stays inside the statement's own deadline.
  const std::chrono::milliseconds answer = pool_.answer_timeout();
  const std::chrono::milliseconds exit_wait =
      answer.count() > 0 ? std::min(std::chrono::milliseconds(1000), answer / 2)
                         : std::chrono::milliseconds(1000);
  for (const base::Error::ServerProcess& process : processes) {
    db::Result<bool> gone = repo_.jobs.end_server_process(process, exit_wait);
    if (!gone.ok() && gone.code() == db::ErrorCode::kUnavailable) return false;
    if (gone.ok() && !*gone) return false;
    if (!gone.ok()) {
      // Refused (a server older than 14, a role not allowed to end it): what
      // is stored now is queued; an insert that lands later is found by a
      // retry with its key (on_committed), or else by the next start.
      std::cerr << "tpujobs: cannot end the server process left with an unconfirmed insert: "
                << gone.error().message << std::endl;
    }
    base::MutexLock lock(adopter_mutex_);
    auto it = std::find_if(unconfirmed_inserts_.begin(), unconfirmed_inserts_.end(),
                           [&](const base::Error::ServerProcess& p) {
                             return p.pid == process.pid && p.started == process.started;
                           });
    if (it != unconfirmed_inserts_.end()) unconfirmed_inserts_.erase(it);
  }
  std::vector<std::int64_t> known;
  {
    base::MutexLock lock(mutex_);
    if (stopping_) return true;  // still QUEUED in the table: the next start takes it
    known.reserve(live_.size());
    for (const auto& [id, job] : live_) known.push_back(id);
    adoption_reading_ = true;
  }
  db::Result<std::vector<db::JobRow>> stored = repo_.jobs.load_queued_except(known);
  std::vector<std::shared_ptr<LiveJob>> adopted;
  bool all_taken = stored.ok();
  if (stored.ok()) {
    for (const db::JobRow& row : *stored) {
      db::Result<std::shared_ptr<LiveJob>> taken = take_stored(row, "when adopted");
      if (!taken.ok()) {
        all_taken = false;  // the next round reads it again
      } else if (*taken != nullptr) {
        adopted.push_back(std::move(*taken));
      }
    }
  }
  base::MutexLock lock(mutex_);
  bool queued = false;
  for (std::shared_ptr<LiveJob>& job : adopted) {
    if (stopping_) break;  // still QUEUED in the table: the next start takes it
    if (live_.count(job->id) > 0 || not_to_adopt_.count(job->id) > 0) continue;
    std::cerr << "tpujobs: job " << job->id
              << " queued: an insert whose answer was lost had stored it" << std::endl;
    enqueue_locked(job);
    queued = true;
  }
  adoption_reading_ = false;
  not_to_adopt_.clear();
  if (queued) {
    schedule_requested_ = true;
    scheduler_wake_.notify_one();
  }
  return all_taken;
}

void JobManager::on_committed(std::vector<CommittedSubmit>& committed) {
  using Kind = api::SubmitOutcome::Kind;
  base::MutexLock lock(mutex_);
  for (CommittedSubmit& c : committed) {
    if (c.outcome.kind == Kind::kExisting) {
      auto it = live_.find(c.row.id);
      if (it == live_.end() && !options_.cluster && c.row.state == kQueued &&
          !c.row.cancel_requested) {
        // Stored by an insert whose answer was lost, and not queued yet:
        // adopt_unconfirmed_inserts takes it once that insert settles; the
        // retry with its key takes it now (and where the server process
        // could not be ended, a late insert is found only so).
        if (auto adopted = make_live(c.row); adopted.ok()) {
          enqueue_locked(*adopted);
          it = live_.find(c.row.id);
        }
      }
      c.outcome.job = it != live_.end() ? render_live_text_locked(*it->second, /*with_spec=*/true)
                                        : response_body(views::render_row(c.row));
      continue;
    }
    if (c.outcome.kind != Kind::kCreated) continue;
    ++submitted_total_;
    api::SubmitRequest& request = c.pending.request;
    json view =
        views::render_row(c.row, std::move(request.spec_json), std::move(c.pending.resolved),
                          json(request.spec.labels), json(request.warnings));
    if (options_.cluster) {
      c.outcome.job = response_body(view);
      continue;
    }
    if (adoption_reading_) not_to_adopt_.insert(c.row.id);
    if (live_.count(c.row.id) > 0) continue;  // adopted already (its view is the live one)
    auto job = std::make_shared<LiveJob>();
    job->id = c.row.id;
    job->tenant = c.row.tenant;
    job->row = c.row;
    set_view_base(*job, std::move(view), std::move(request.spec_text));
    job->spec = std::move(request.spec);
    job->resolution = std::move(request.resolution);
    enqueue_locked(job, c.pending.order);
  }
  if (options_.cluster) {
    // Committed: wake the scheduler leader, wherever it runs.
    lock.unlock();
    (void)cluster_.notify(db::kSubmitChannel, "submit");
    return;
  }
  // Place what fits now rather than on the scheduler thread's next turn:
  // on an idle pool a job starts before its 201 leaves.
  if (!stopping_) start_placed_locked(clock_.now());
  for (CommittedSubmit& c : committed) {
    if (c.outcome.kind != Kind::kCreated) continue;
    auto it = live_.find(c.outcome.id);
    if (it != live_.end()) c.outcome.job = render_live_text_locked(*it->second, /*with_spec=*/true);
  }
}

base::Result<std::shared_ptr<JobManager::LiveJob>> JobManager::make_live(const db::JobRow& row) {
  json spec_json = json::parse(row.spec_json, nullptr, false);
  std::vector<api::FieldError> errors;
  std::optional<api::JobSpec> spec =
      spec_json.is_discarded() ? std::nullopt : api::parse_job_spec(spec_json, &errors);
  if (!spec) {
    return base::make_error(base::ErrorCode::kInvalid,
                            errors.empty() ? "stored spec is not valid JSON"
                                           : errors.front().field + ": " + errors.front().message);
  }
  api::Resolution resolution = api::resolve(spec->trainer, capacity());
  if (!resolution.errors.empty()) {
    return base::make_error(base::ErrorCode::kInvalid, resolution.errors.front().field + ": " +
                                                           resolution.errors.front().message);
  }
  api::apply_resolution(resolution, &*spec);
  auto job = std::make_shared<LiveJob>();
  job->id = row.id;
  job->tenant = row.tenant;
  job->row = row;
  job->spec = std::move(*spec);
  job->resolution = std::move(resolution);
  job->dependencies_met = row.started_at.has_value();  // it ran: they were met
  set_view_base(*job, views::render_row(row));
  return job;
}

void JobManager::enqueue_locked(const std::shared_ptr<LiveJob>& job, std::int64_t order) {
  job->submit_order = order > 0 ? order : committer_.next_order();
  job->row.state = kQueued;
  ++epoch_;
  live_[job->id] = job;
  if (hold_for_dependencies_locked(job)) return;
  if (job->resolution.request.kind == scheduler::RequestKind::kCpu) {
    auto at = std::upper_bound(
        cpu_waiting_.begin(), cpu_waiting_.end(), job->submit_order,
        [](std::int64_t o, const std::shared_ptr<LiveJob>& w) { return o < w->submit_order; });
    cpu_waiting_.insert(at, job);
    return;
  }
  scheduler::JobRequest request;
  request.id = job->id;
  request.priority = job->spec.priority;
  request.submit_order = job->submit_order;
  request.tenant = job->tenant;
  request.request = job->resolution.request;
  // The time limit bounds the run, as Slurm's does: the scheduler plans
  // estimated starts and lets short jobs backfill with it.
  request.expected_runtime = job->spec.training.timeout;
  request.preemptible = job->spec.preemptible;
  request.preempted = job->preempted_by.has_value();
  scheduler_.submit(std::move(request));
}

void JobManager::wake_scheduler() {
  {
    base::MutexLock lock(mutex_);
    schedule_requested_ = true;
  }
  scheduler_wake_.notify_one();
}

// --------------------------------------------------------- workload rules

db::Result<std::map<std::int64_t, JobState>> JobManager::job_states(
    const std::string& tenant, const std::vector<std::int64_t>& ids) {
  return repo_.workload.job_states(ids, tenant);
}

db::Result<std::vector<api::UsageRow>> JobManager::usage(const api::UsageQuery& query) {
  auto rows =
      repo_.workload.usage(query.from, query.to, query.by_label, query.label_key, query.tenant);
  if (!rows.ok()) return rows.error();
  std::vector<api::UsageRow> out;
  out.reserve(rows->size());
  for (db::UsageRow& row : *rows) {
    out.push_back({std::move(row.group), std::move(row.generation), row.jobs, row.core_seconds});
  }
  return out;
}

bool JobManager::hold_for_dependencies_locked(const std::shared_ptr<LiveJob>& job) {
  if (job->spec.start_by && !job->row.started_at) {
    start_deadlines_.emplace(job->row.created_at + *job->spec.start_by, job->id);
  }
  if (job->dependencies_met || job->spec.depends_on.empty()) return false;
  dependency_held_.insert(job->id);
  schedule_requested_ = true;  // judged at the scheduler thread's next turn
  scheduler_wake_.notify_one();
  return true;
}

void JobManager::withdraw_locked(const std::shared_ptr<LiveJob>& job) {
  ++epoch_;
  if (dependency_held_.erase(job->id) > 0) return;
  if (job->resolution.request.kind == scheduler::RequestKind::kCpu) {
    cpu_waiting_.erase(std::remove(cpu_waiting_.begin(), cpu_waiting_.end(), job),
                       cpu_waiting_.end());
  } else {
    scheduler_.cancel(job->id);
  }
}

void JobManager::apply_workload_rules() {
  struct Ending {
    std::shared_ptr<LiveJob> job;
    std::string reason;
    std::string detail;
    std::string hint;
  };
  std::vector<Ending> ending;
  auto waiting = [this](std::int64_t id) REQUIRES(mutex_) -> std::shared_ptr<LiveJob> {
    auto it = live_.find(id);
    if (it == live_.end() || it->second->runner_started || it->second->row.state != kQueued)
      return nullptr;
    return it->second;
  };

  const auto wall_now = clock_.wall_now();
  while (!start_deadlines_.empty() && start_deadlines_.begin()->first <= wall_now) {
    const std::int64_t id = start_deadlines_.begin()->second;
    start_deadlines_.erase(start_deadlines_.begin());
    std::shared_ptr<LiveJob> job = waiting(id);
    // A job that started once (and waits again after a host failure) met its deadline.
    if (!job || job->row.started_at ||
        !scheduler::start_deadline_passed(job->row.created_at, job->spec.start_by, wall_now)) {
      continue;
    }
    withdraw_locked(job);
    ending.push_back(
        {job, "StartDeadlineExceeded",
         "the job did not start within its start_by of " +
             std::to_string(
                 std::chrono::duration_cast<std::chrono::seconds>(*job->spec.start_by).count()) +
             " s",
         "raise start_by, lower the resources it asks for, or raise its priority"});
  }

  if (!dependency_held_.empty()) {
    // Judged: the jobs held now, against the states read for them. A job
    // held while the lock is released waits for the next pass (its targets
    // were not read: judged now, it would find them missing).
    const std::vector<std::int64_t> judged(dependency_held_.begin(), dependency_held_.end());
    std::vector<std::int64_t> targets;
    for (std::int64_t id : judged) {
      if (auto it = live_.find(id); it != live_.end()) {
        for (const scheduler::Dependency& d : it->second->spec.depends_on) targets.push_back(d.job);
      }
    }
    mutex_.unlock();
    auto states = repo_.workload.job_states(targets);
    mutex_.lock();
    if (states.ok()) {
      auto state_of = [&](std::int64_t id) -> std::optional<JobState> {
        auto it = states->find(id);
        return it == states->end() ? std::nullopt : std::optional<JobState>(it->second);
      };
      for (std::int64_t id : judged) {
        std::shared_ptr<LiveJob> job = waiting(id);
        if (!job || !dependency_held_.contains(id)) continue;
        const scheduler::DependencyCheck check =
            scheduler::check_dependencies(job->spec.depends_on, state_of);
        switch (check.verdict) {
          case scheduler::DependencyVerdict::kSatisfied:
            dependency_held_.erase(id);
            job->dependencies_met = true;
            job->dependency_detail.clear();
            enqueue_locked(job, job->submit_order);
            break;
          case scheduler::DependencyVerdict::kWaiting:
            if (job->dependency_detail != check.detail) {
              job->dependency_detail = check.detail;
              ++epoch_;
            }
            break;
          case scheduler::DependencyVerdict::kNeverSatisfied:
            withdraw_locked(job);
            ending.push_back(
                {job, "DependencyNeverSatisfied", check.detail,
                 "the job it depends on ended otherwise; fix that job and submit both again, or "
                 "depend on it with another condition (succeeded, failed, finished)"});
            break;
        }
      }
    }
  }
  if (ending.empty()) return;
  mutex_.unlock();
  for (const Ending& e : ending) end_unstartable(e.job, e.reason, e.detail, e.hint);
  mutex_.lock();
}

void JobManager::end_unstartable(const std::shared_ptr<LiveJob>& job, const std::string& reason,
                                 const std::string& detail, const std::string& hint) {
  const db::Transition t = lifecycle::cancel_unstartable(job->id, reason, detail, hint);
  auto stored = repo_.jobs.transition(t);
  if (!stored.ok()) {
    // Not recorded: it waits again, and the next pass judges it again.
    base::MutexLock lock(mutex_);
    if (live_.contains(job->id) && !job->runner_started && !is_terminal(job->row.state)) {
      enqueue_locked(job, job->submit_order);
    }
    return;
  }
  // Not applied: a cancel by request ended it meanwhile, and finishes it.
  if (!*stored) return;
  finish_job(job, kCancelled, t.reason, json::parse(*t.error_json), nullptr, /*stored=*/true);
}

// ------------------------------------------------------------- scheduling

void JobManager::start_placed_locked(SteadyClock::time_point now) {
  std::vector<std::pair<std::shared_ptr<LiveJob>, scheduler::Placement>> starts;
  for (scheduler::Placement& p : scheduler_.schedule(now)) {
    auto it = live_.find(p.job);
    if (it == live_.end()) {
      scheduler_.finish(p.job);
      continue;
    }
    it->second->preempted_by.reset();
    starts.emplace_back(it->second, std::move(p));
  }
  if (std::optional<scheduler::Preemption> preemption = scheduler_.preempt(now)) {
    preempt_locked(*preemption);
  }
  while (!cpu_waiting_.empty() && cpu_running_ < options_.max_cpu_jobs) {
    std::shared_ptr<LiveJob> job = cpu_waiting_.front();
    cpu_waiting_.pop_front();
    if (is_terminal(job->row.state)) continue;
    ++cpu_running_;
    scheduler::Placement p;
    p.job = job->id;
    starts.emplace_back(job, std::move(p));
  }
  for (auto& [job, placement] : starts) {
    ++epoch_;
    job->placement = placement;
    job->runner_started = true;
    job->run_started = now;
    job->row.state = kStarting;
    job->runner =
        std::thread([this, job = job, placement = placement] { run_job(job, placement); });
  }
}

void JobManager::preempt_locked(const scheduler::Preemption& preemption) {
  for (scheduler::JobId id : preemption.victims) {
    auto it = live_.find(id);
    if (it == live_.end() || it->second->stop_reason != StopReason::kNone) continue;
    LiveJob& victim = *it->second;
    victim.stop_reason = StopReason::kPreempted;
    victim.preempted_by = preemption.preemptor;
    victim.checkpoint_on_cancel = true;
    victim.cancel = true;
  }
  preemptions_to_record_.push_back(preemption);
  schedule_requested_ = true;  // the scheduler thread records the events
  scheduler_wake_.notify_one();
}

void JobManager::apply_preemption_and_fair_share(SteadyClock::time_point now) {
  std::vector<scheduler::Preemption> preemptions = std::move(preemptions_to_record_);
  preemptions_to_record_.clear();
  std::set<std::string> active;
  const bool read_usage = now - fair_share_read_ >= options_.fair_share_interval;
  if (read_usage) {
    for (const auto& [id, job] : live_) active.insert(job->tenant);
  }
  if (preemptions.empty() && !read_usage) return;
  mutex_.unlock();
  for (const scheduler::Preemption& p : preemptions) {
    apply_transition(lifecycle::note_preemption(p.preemptor, p.victims));
  }
  db::Result<std::map<std::string, double>> factors(std::map<std::string, double>{});
  if (read_usage) {
    factors = read_fair_share(repo_.workload, clock_.wall_now(), active, options_.fair_share);
  }
  mutex_.lock();
  if (!read_usage) return;
  fair_share_read_ = now;
  if (!factors.ok()) return;  // the database is away: the factors stay as they were
  for (const std::string& tenant : active) {
    const auto it = factors->find(tenant);
    const double factor = it == factors->end() ? 1.0 : it->second;
    if (scheduler_.fair_share(tenant) == factor) continue;
    scheduler_.set_fair_share(tenant, factor);
    ++epoch_;
    schedule_requested_ = true;
  }
}

void JobManager::scheduler_loop() {
  base::MutexLock lock(mutex_);
  auto last_reclaim = clock_.now();
  while (!stopping_) {
    lock.wait_for(scheduler_wake_, std::chrono::milliseconds(500),
                  [this]() REQUIRES(mutex_) { return stopping_ || schedule_requested_; });
    if (stopping_) break;
    schedule_requested_ = false;
    const auto now = clock_.now();

    // Runners that ended: join them outside the lock.
    std::vector<std::thread> ended = std::move(finished_runners_);
    finished_runners_.clear();

    if (now - last_reclaim > std::chrono::seconds(1)) {
      last_reclaim = now;
      for (scheduler::JobId id : scheduler_.reclaim_expired(now)) {
        auto it = live_.find(id);
        if (it != live_.end() && it->second->stop_reason == StopReason::kNone) {
          it->second->stop_reason = StopReason::kLeaseLost;
          it->second->cancel = true;
        }
      }
    }

    apply_workload_rules();
    if (stopping_) break;
    start_placed_locked(now);
    apply_preemption_and_fair_share(now);
    lock.unlock();
    for (std::thread& t : ended) t.join();
    lock.lock();
  }
}

void JobManager::run_job(std::shared_ptr<LiveJob> job, scheduler::Placement placement) {
  const bool cpu = job->resolution.request.kind == scheduler::RequestKind::kCpu;
  json allocation = cpu ? json{{"accelerator", "cpu"}} : placement_json(placement, layout_);

  // STARTING is the claim on the job (its owner), so it is flushed before
  // the job trains; RUNNING below is not.
  const bool moved = apply_transition(
      lifecycle::claim(job->id,
                       cpu ? "Placed on the executor's CPU threads"
                           : "Allocated " + std::to_string(placement.cores.size()) + " cores on " +
                                 std::to_string(placement.hosts.size()) + " host(s)",
                       allocation.dump(), options_.instance));
  auto release = [&] {
    base::MutexLock lock(mutex_);
    if (cpu)
      --cpu_running_;
    else
      scheduler_.finish(job->id);
    job->runner_started = false;
  };
  if (!moved) {
    // Cancelled (or taken over) between placement and start.
    release();
    auto row = repo_.jobs.get_job(job->id);
    base::MutexLock lock(mutex_);
    const bool stored = row.ok() && *row;
    if (stored) job->row = **row;
    if (job->runner.joinable()) finished_runners_.push_back(std::move(job->runner));
    live_.erase(job->id);
    schedule_requested_ = true;
    scheduler_wake_.notify_one();
    if (!stored) job->placement.reset();  // released above
    notify_waiters(job, stored ? views::render_row(job->row) : render_live_locked(*job));
    return;
  }

  // Resume from the last checkpoint, and continue the sequence numbers. A
  // job that never started has neither: skip the round trips.
  std::optional<executor::Checkpoint> resume;
  const bool fresh = !job->row.started_at && job->row.attempt == 0;
  if (!fresh) {
    auto checkpoint = repo_.outputs.latest_checkpoint(job->id);
    if (checkpoint.ok() && *checkpoint) {
      resume = executor::Checkpoint{(*checkpoint)->step, (*checkpoint)->epoch,
                                    std::move((*checkpoint)->bytes)};
    }
    auto log_seq = repo_.outputs.max_log_seq(job->id);
    job->next_log_seq = (log_seq.ok() ? *log_seq : 0) + 1;
    auto metric_seq = repo_.outputs.max_metric_seq(job->id);
    job->next_metric_seq = (metric_seq.ok() ? *metric_seq : 0) + 1;
    // The resumed run emits again every point after the checkpoint's step
    // (a step can have two: training and validation); skip as many as are
    // recorded already.
    auto recorded = repo_.outputs.count_metrics_after_step(job->id, resume ? resume->step : 0);
    job->skip_metric_points = recorded.ok() ? *recorded : 0;
  }

  apply_transition(
      lifecycle::run(job->id,
                     resume ? "Resumed from the checkpoint at step " + std::to_string(resume->step)
                            : "Training started",
                     /*fence=*/std::nullopt));
  {
    base::MutexLock lock(mutex_);
    job->row.state = kRunning;
    ++epoch_;
    job->row.allocation_json = allocation.dump();
    job->row.started_at = clock_.wall_now();
    if (resume) job->stored_checkpoint = {resume->step, resume->epoch};
    scheduler_.heartbeat(job->id, clock_.now());
  }

  Sink sink(*this, job);
  executor::DeviceFacts device =
      device_for(cpu ? std::nullopt : std::optional(placement.generation));
  executor::RunControl control;
  control.cancel = &job->cancel;
  control.resume = resume ? &*resume : nullptr;
  control.checkpoint_on_cancel = &job->checkpoint_on_cancel;
  control.stop_reason = [this, job]() -> std::string {
    base::MutexLock lock(mutex_);
    if (job->user_cancelled) return "";
    switch (job->stop_reason) {
      case StopReason::kShutdown:
        return "the service is stopping";
      case StopReason::kHostFailedRetry:
      case StopReason::kHostFailedFinal:
        return "a host of its slice failed";
      case StopReason::kPreempted:
        return "preempted by job " + std::to_string(job->preempted_by.value_or(0));
      case StopReason::kLeaseLost:
        return "its lease on the cores was released";
      case StopReason::kUserCancel:
      case StopReason::kNone:
        break;
    }
    return "";
  };
  executor::TrainingResult result =
      executor::train(job->spec.training, device, workers_, *datasets_, sink, control);
  {
    std::optional<executor::Progress> last;
    {
      base::MutexLock lock(mutex_);
      last = job->progress;
    }
    if (last) sink.record_progress(*last);
  }

  StopReason reason;
  bool user_cancelled = false;
  {
    base::MutexLock lock(mutex_);
    reason = job->stop_reason;
    user_cancelled = job->user_cancelled;
    job->ending = true;
  }
  store_telemetry();

  JobState state = kFailed;
  std::string why;
  json error = nullptr;
  json result_json = nullptr;
  json final_metrics = result.final_metrics;
  result_json = {{"metrics", final_metrics},
                 {"steps", result.steps},
                 {"xla_report", result.xla_report},
                 {"parameters_digest", result.parameters_digest}};
  bool requeue = false;
  if (user_cancelled) {
    // Answered 202: honoured even when training finished, failed, or was
    // being stopped for another reason before the trainer saw the cancel.
    state = kCancelled;
    why = "Cancelled by request";
    error = error_json("CANCELLED", "the job was cancelled", "");
  } else if (result.outcome == executor::Outcome::kSucceeded) {
    state = kSucceeded;
    why = "Training finished";
  } else if (result.outcome == executor::Outcome::kFailed) {
    state = kFailed;
    const executor::JobError& e = *result.error;
    error = error_json(e.type, e.message, e.hint);
    why = e.type + ": " + e.message;
  } else {
    switch (reason) {
      case StopReason::kShutdown:
        requeue = true;
        why = "Service stopping; requeued to resume from its last checkpoint";
        break;
      case StopReason::kHostFailedRetry:
        requeue = true;
        why = "A host of its slice failed; retrying on healthy hosts from its last checkpoint";
        break;
      case StopReason::kPreempted:
        // Not a failure: the attempt count (max_retries) is left alone.
        requeue = true;
        why = preempted_reason(job->preempted_by.value_or(0));
        break;
      case StopReason::kHostFailedFinal:
        state = kFailed;
        error = error_json(
            "UNAVAILABLE", "failed to connect to all addresses",
            "a host of the job's slice failed; check the slice's hosts (GET /v1/pool), or set "
            "max_retries so the job resumes on healthy hosts from its last checkpoint");
        why = "UNAVAILABLE: failed to connect to all addresses";
        break;
      case StopReason::kLeaseLost:
        state = kFailed;
        error =
            error_json("UNAVAILABLE", "the job's lease on its cores expired or was released",
                       "an admin released the cores, or the job stopped heartbeating; resubmit it");
        why = "Lease released";
        break;
      case StopReason::kUserCancel:
      case StopReason::kNone:
        state = kCancelled;
        why = "Cancelled by request";
        error = error_json("CANCELLED", "the job was cancelled", "");
        break;
    }
  }

  if (requeue) {
    apply_transition(
        reason == StopReason::kPreempted
            ? lifecycle::preempt(job->id, job->preempted_by.value_or(0), std::nullopt)
            : lifecycle::requeue(job->id, why, reason == StopReason::kHostFailedRetry));
    base::MutexLock lock(mutex_);
    if (cpu)
      --cpu_running_;
    else
      scheduler_.finish(job->id);
    job->runner_started = false;
    job->stop_reason = StopReason::kNone;
    job->ending = false;
    job->cancel = false;
    job->checkpoint_on_cancel = false;
    job->placement.reset();
    job->progress.reset();
    job->recent_logs.clear();
    if (reason == StopReason::kHostFailedRetry) ++job->row.attempt;
    if (job->runner.joinable()) finished_runners_.push_back(std::move(job->runner));
    // A preempted job keeps its place among its priority.
    if (!stopping_) enqueue_locked(job, reason == StopReason::kPreempted ? job->submit_order : 0);
    job->row.state = kQueued;
    ++epoch_;
    schedule_requested_ = true;
    scheduler_wake_.notify_one();
    return;
  }
  finish_job(job, state, why, error, result_json);
}

json JobManager::finish_job(const std::shared_ptr<LiveJob>& job, JobState state,
                            const std::string& reason, json error, json result, bool stored) {
  if (!stored) {
    apply_transition(lifecycle::finish(
        job->id, state, reason, error.is_null() ? std::nullopt : std::optional(error.dump()),
        result.is_null() ? std::nullopt : std::optional(result.dump())));
  }
  auto row = repo_.jobs.get_job(job->id);
  ++finished_total_;
  // Rendered once, for the cache of finished views and for the waiters.
  std::optional<json> view;
  if (row.ok() && *row) {
    view = views::render_row(**row);
    if (is_terminal((*row)->state)) finished_views_.put(job->id, job->tenant, response_body(*view));
  }
  base::MutexLock lock(mutex_);
  if (row.ok() && *row)
    job->row = **row;
  else
    job->row.state = state;  // not read back: the view from memory
  ++epoch_;
  if (job->runner_started) {
    if (job->resolution.request.kind == scheduler::RequestKind::kCpu)
      --cpu_running_;
    else
      scheduler_.finish(job->id);
    job->runner_started = false;
  }
  if (job->runner.joinable()) finished_runners_.push_back(std::move(job->runner));
  live_.erase(job->id);
  schedule_requested_ = true;
  scheduler_wake_.notify_one();
  if (!view) {
    // Not read back: the view from memory, with the outcome in hand.
    view = render_live_locked(*job);
    (*view)["finished_at"] = iso_time(clock_.wall_now());
    (*view)["error"] = error;
    views::put_result(*view, std::move(result));
  }
  notify_waiters(job, *view);
  return std::move(*view);
}

void JobManager::notify_waiters(const std::shared_ptr<LiveJob>& job, const json& view) {
  // mutex_ is held by the caller. Called off the waiters' I/O threads (by a
  // runner or the scheduler), answering only posts to them.
  for (auto& waiter : job->waiters) waiter(view);
  job->waiters.clear();
}

// ---------------------------------------------------------------- reads

db::Result<db::JobRow> JobManager::load_visible(std::int64_t id, const std::string& tenant) {
  auto row = repo_.jobs.get_job(id);
  if (!row.ok()) return row.error();
  if (!*row || (*row)->tenant != tenant)
    return db::make_error(db::ErrorCode::kNotFound, "no job " + std::to_string(id));
  return std::move(**row);
}

void JobManager::set_view_base(LiveJob& job, json view, std::string spec_text) {
  job.view = views::split_view(std::move(view), std::move(spec_text));
  for (std::string* text :
       {&job.row.spec_json, &job.row.resolved_json, &job.row.labels_json, &job.row.warnings_json}) {
    std::string().swap(*text);
  }
}

std::string JobManager::render_live_text_locked(const LiveJob& job, bool with_spec) {
  json view = views::live_members(job.view);
  view["state"] = state_name(job.row.state);
  view["attempt"] = job.row.attempt;
  if (job.placement && job.resolution.request.kind != scheduler::RequestKind::kCpu) {
    view["allocation"] = placement_json(*job.placement, layout_);
  } else if (job.placement) {
    view["allocation"] = {{"accelerator", "cpu"}};
  }
  view["started_at"] = time_or_null(job.row.started_at);
  const double fair_share = scheduler_.fair_share(job.tenant);
  view["priority_parts"] = views::priority_parts(job.spec.priority, fair_share);
  if (job.row.state == kQueued && job.preempted_by) {
    view["preempted_by"] = *job.preempted_by;
    view["pending_detail"] = preempted_pending_detail(*job.preempted_by);
  }
  if (job.row.state == kQueued) {
    if (dependency_held_.contains(job.id)) {
      view["pending_reason"] =
          scheduler::pending_reason_name(scheduler::PendingReason::kDependency);
      if (!job.dependency_detail.empty()) view["pending_detail"] = job.dependency_detail;
    } else if (std::optional<scheduler::PendingInfo> info = scheduler_.pending(job.id)) {
      view["pending_reason"] = scheduler::pending_reason_name(info->reason);
      // 0: submitted since the last pass, which has not placed it yet.
      if (info->queue_position > 0) view["queue_position"] = info->queue_position;
      if (info->estimated_start) {
        const auto wait = *info->estimated_start - clock_.now();
        view["estimated_start"] =
            iso_time(clock_.wall_now() +
                     std::chrono::duration_cast<std::chrono::system_clock::duration>(wait));
      }
    } else if (job.resolution.request.kind == scheduler::RequestKind::kCpu) {
      view["pending_reason"] = "Resources";
      int position = 1;
      for (const auto& waiting : cpu_waiting_) {
        if (waiting.get() == &job) break;
        ++position;
      }
      view["queue_position"] = position;
    }
  }
  if (job.progress)
    view["progress"] = views::progress_view(*job.progress, clock_.now() - job.run_started);
  if (job.stored_checkpoint) {
    view["last_checkpoint"] = {{"step", job.stored_checkpoint->first},
                               {"epoch", job.stored_checkpoint->second}};
  }
  if (!job.latest_metrics.empty()) {
    json metrics = json::object();
    for (const auto& [name, value] : job.latest_metrics) {
      if (std::isfinite(value)) metrics[name] = value;
    }
    view["metrics"] = metrics;
  }
  return views::splice_view(job.view, view, with_spec);
}

json JobManager::render_live_locked(const LiveJob& job) {
  return json::parse(render_live_text_locked(job, true));
}

api::JsonResult JobManager::get_job(std::int64_t id, const std::string& tenant) {
  {
    base::MutexLock lock(mutex_);
    auto it = live_.find(id);
    if (it != live_.end()) {
      if (it->second->tenant != tenant) return not_found(id);
      return render_live_locked(*it->second);
    }
  }
  // Finished (or gone meanwhile): the text GET shows, from the cache of
  // finished views when it is there, so `wait` on a finished job needs no
  // database round trip, also while the database is away.
  db::Result<std::string> text = get_job_text(id, tenant);
  if (!text.ok()) return text.error();
  return json::parse(*text);
}

db::Result<std::string> JobManager::get_job_text(std::int64_t id, const std::string& tenant) {
  {
    base::MutexLock lock(mutex_);
    auto it = live_.find(id);
    if (it != live_.end()) {
      LiveJob& job = *it->second;
      if (job.tenant != tenant) return not_found(id).error();
      // Pollers ask far more often than jobs change: render once per change.
      if (job.cached_body.empty() || job.cached_epoch != epoch_ ||
          job.cached_version != job.version) {
        job.cached_body = render_live_text_locked(job, /*with_spec=*/true);
        job.cached_epoch = epoch_;
        job.cached_version = job.version;
      }
      return job.cached_body;
    }
  }
  if (std::optional<FinishedViewCache::Entry> hit = finished_views_.find(id)) {
    if (hit->tenant != tenant) return not_found(id).error();
    return std::move(hit->body);
  }
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  if (options_.cluster && !is_terminal(row->state)) {
    // Run elsewhere: where a resume would start is in the table.
    json view = views::render_row(*row);
    auto checkpoints = repo_.outputs.latest_checkpoint_positions({id});
    if (checkpoints.ok()) {
      if (auto c = checkpoints->find(id); c != checkpoints->end()) {
        view["last_checkpoint"] = {{"step", c->second.first}, {"epoch", c->second.second}};
      }
    }
    return response_body(view);
  }
  std::string body = response_body(views::render_row(*row));
  if (is_terminal(row->state)) finished_views_.put(id, row->tenant, body);
  return body;
}

db::Result<std::string> JobManager::stored_job_text(std::int64_t id, const std::string& tenant) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  return response_body(views::render_row(*row));
}

api::JsonResult JobManager::list_jobs(const api::JobQuery& query) {
  db::JobFilter filter;
  filter.tenant = query.tenant;
  for (const std::string& name : query.states) {
    if (std::optional<JobState> state = db::parse_job_state(name)) filter.states.push_back(*state);
  }
  filter.labels = query.labels;
  filter.name = query.name;
  filter.limit = query.limit;
  filter.cursor = query.cursor.value_or("");
  filter.array_id = query.array_id;
  auto page = repo_.jobs.list_jobs(filter);
  if (!page.ok()) return page.error();
  json jobs = json::array();
  {
    base::MutexLock lock(mutex_);
    for (const db::JobRow& row : page->jobs) {
      auto it = live_.find(row.id);
      json view;
      if (it != live_.end()) {
        view = json::parse(render_live_text_locked(*it->second, /*with_spec=*/false));
      } else {
        view = views::render_row(row);
        view.erase("spec");
      }
      jobs.push_back(std::move(view));
    }
  }
  return json{{"jobs", jobs},
              {"next_cursor", page->next_cursor.empty() ? json(nullptr) : json(page->next_cursor)}};
}

void JobManager::wait_job(std::int64_t id, const std::string& tenant,
                          std::chrono::milliseconds timeout,
                          std::function<void(api::JsonResult)> done) {
  // An answer given at once is given after the lock is released: done()
  // may write the response inline.
  std::optional<api::JsonResult> now;
  {
    base::MutexLock lock(mutex_);
    auto it = live_.find(id);
    if (it != live_.end()) {
      if (it->second->tenant != tenant) {
        now = not_found(id);
      } else if (timeout.count() == 0) {
        now = render_live_locked(*it->second);
      }
    }
    if (it != live_.end() && !now) {
      // The first of "terminal" and "timeout" answers; the other finds the
      // shared flag set and does nothing.
      auto answered = std::make_shared<std::atomic<bool>>(false);
      auto callback = std::make_shared<std::function<void(api::JsonResult)>>(std::move(done));
      it->second->waiters.push_back([answered, callback](api::JsonResult r) {
        if (!answered->exchange(true)) (*callback)(std::move(r));
      });
      timers_.schedule_after(timeout, [this, id, tenant, answered, callback] {
        if (answered->load()) return;
        api::JsonResult current = get_job(id, tenant);
        if (!answered->exchange(true)) (*callback)(std::move(current));
      });
      return;
    }
  }
  if (now) return done(std::move(*now));
  if (options_.cluster && timeout.count() > 0) {
    return poll_wait(id, tenant, clock_.now() + timeout, std::move(done));
  }
  done(get_job(id, tenant));  // not live: terminal (or unknown) already
}

void JobManager::poll_wait(std::int64_t id, std::string tenant, SteadyClock::time_point deadline,
                           std::function<void(api::JsonResult)> done) {
  api::JsonResult current = get_job(id, tenant);
  std::optional<JobState> state =
      current.ok() ? db::parse_job_state((*current).value("state", "")) : std::nullopt;
  const bool over = !state || is_terminal(*state) || clock_.now() >= deadline;
  if (over) return done(std::move(current));
  const auto next =
      std::min(deadline - clock_.now(), SteadyClock::duration(std::chrono::milliseconds(200)));
  timers_.schedule_after(
      std::chrono::duration_cast<std::chrono::milliseconds>(next),
      [this, id, tenant = std::move(tenant), deadline, done = std::move(done)]() mutable {
        poll_wait(id, std::move(tenant), deadline, std::move(done));
      });
}

api::JsonResult JobManager::cancel_job(std::int64_t id, const std::string& tenant) {
  std::shared_ptr<LiveJob> queued, running;
  auto ending = [id] {
    return db::make_error(db::ErrorCode::kConflict,
                          "job " + std::to_string(id) +
                              "'s run has just ended and its final state is being stored; GET "
                              "the job, and cancel again if it was requeued");
  };
  {
    base::MutexLock lock(mutex_);
    auto it = live_.find(id);
    if (it != live_.end()) {
      std::shared_ptr<LiveJob> job = it->second;
      if (job->tenant != tenant) return not_found(id);
      if (job->ending) return ending();
      (job->runner_started ? running : queued) = job;
    }
  }
  if (queued) {
    // Still queued here. Stored first, in one attempt: this is an I/O
    // thread, which must not sit in an outage's back-off (a 503 tells the
    // client to try again; the job stays queued meanwhile).
    const db::Transition t = lifecycle::cancel_queued(id);
    auto stored = repo_.jobs.transition(t);
    if (!stored.ok()) return stored.error();
    {
      base::MutexLock lock(mutex_);
      if (*stored && !queued->runner_started)
        withdraw_locked(queued);
      else
        running = queued;  // placed meanwhile: stop it as a running job
    }
    if (!running) {
      return finish_job(queued, kCancelled, t.reason, json::parse(*t.error_json), nullptr,
                        /*stored=*/true);
    }
  }
  if (running) {
    // Stored before it is answered, as for a job run elsewhere: after a
    // crash, the restart ends the job CANCELLED rather than resuming it.
    if (db::Status s = repo_.jobs.request_cancel(id); !s.ok()) return s.error();
    base::MutexLock lock(mutex_);
    if (running->ending) return ending();
    running->user_cancelled = true;
    if (running->stop_reason == StopReason::kNone) running->stop_reason = StopReason::kUserCancel;
    running->cancel = true;
    json view = render_live_locked(*running);
    view["cancel_requested"] = true;
    return view;
  }
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  if (is_terminal(row->state)) {
    return db::make_error(db::ErrorCode::kConflict, "job " + std::to_string(id) + " is already " +
                                                        state_name(row->state) +
                                                        "; only unfinished jobs can be cancelled");
  }
  if (row->state == kQueued) {
    // Not placed yet: it ends here, unless the leader places it first. (In
    // one process: a job stored by an insert whose answer was lost, which
    // adopt_unconfirmed_inserts has not queued; it must not queue it now.)
    if (!options_.cluster) {
      base::MutexLock lock(mutex_);
      if (live_.count(id) > 0) {
        lock.unlock();
        return cancel_job(id, tenant);  // queued meanwhile: cancelled as a live job
      }
      not_to_adopt_.insert(id);
    }
    auto moved = repo_.jobs.transition(lifecycle::cancel_queued(id));
    if (!moved.ok()) return moved.error();
    if (*moved) {
      auto now = load_visible(id, tenant);
      if (!now.ok()) return now.error();
      return views::render_row(*now);
    }
  }
  // Unfinished but run by another process: ask it through the database,
  // and wake its agent.
  if (db::Status s = repo_.jobs.request_cancel(id); !s.ok()) return s.error();
  if (options_.cluster) (void)cluster_.notify(db::kAgentChannel, row->agent.value_or(""));
  json view = views::render_row(*row);
  view["cancel_requested"] = true;
  return view;
}

api::JsonResult JobManager::job_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                                     int limit) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  if (!is_terminal(row->state)) telemetry_.flush_lines();
  auto lines = repo_.outputs.list_logs(id, after, limit);
  if (!lines.ok()) return lines.error();
  json out = json::array();
  std::int64_t last = after;
  for (const db::LogLine& l : *lines) {
    out.push_back({{"seq", l.seq}, {"at", iso_time(l.at)}, {"line", l.line}});
    last = l.seq;
  }
  return json{{"job_id", id}, {"lines", out}, {"next_after", last}};
}

void JobManager::follow_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                             api::ResponseWriterPtr writer) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) {
    writer->respond(row.code() == db::ErrorCode::kNotFound
                        ? api::problem(404, row.error().message)
                        : api::problem(503, row.error().message));
    return;
  }
  api::Response head;
  head.content_type = "text/event-stream";
  head.header("X-Accel-Buffering", "no");
  writer->start_stream(std::move(head));
  log_streams_.follow(id, after, std::move(writer));
}

LogSource::Recent JobManager::Logs::recent_lines(std::int64_t job, std::int64_t after) {
  base::MutexLock lock(manager_.mutex_);
  Recent out;
  auto it = manager_.live_.find(job);
  if (it == manager_.live_.end()) return out;
  out.live = true;
  const auto& recent = it->second->recent_logs;
  if (recent.empty() || recent.front().first > after + 1) return out;
  auto& lines = out.lines.emplace();
  for (const auto& entry : recent) {
    if (entry.first > after) lines.push_back(entry);
  }
  return out;
}

db::Result<std::vector<db::LogLine>> JobManager::Logs::stored_lines(std::int64_t job,
                                                                    std::int64_t after, int limit) {
  return manager_.repo_.outputs.list_logs(job, after, limit);
}

db::Result<std::optional<JobState>> JobManager::Logs::stored_state(std::int64_t job) {
  auto row = manager_.repo_.jobs.get_job(job);
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<JobState>();
  return std::optional<JobState>((*row)->state);
}

void JobManager::log_listener_loop() {
  db::Listener listener(pool_.conninfo(), db::kLogChannel);
  for (;;) {
    {
      base::MutexLock lock(log_listener_mutex_);
      if (log_listener_stopping_) return;
    }
    auto notes = listener.wait(std::chrono::milliseconds(250));
    if (!notes.ok()) {
      // The streams' fallback ticks meanwhile.
      base::MutexLock lock(log_listener_mutex_);
      lock.wait_for(log_listener_wake_, std::chrono::seconds(1),
                    [this]() REQUIRES(log_listener_mutex_) { return log_listener_stopping_; });
      continue;
    }
    // The payload: the ids of the jobs whose lines were stored, comma-separated.
    for (const db::Notification& note : *notes)
      log_streams_.wake(LogStreams::parse_job_ids(note.payload));
  }
}

api::JsonResult JobManager::job_metrics(std::int64_t id, const std::string& tenant,
                                        std::int64_t after) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  if (!is_terminal(row->state)) telemetry_.flush_lines();
  auto points = repo_.outputs.list_metrics(id, after, 100000);
  if (!points.ok()) return points.error();
  json out = json::array();
  std::int64_t last = after;
  for (const db::MetricPoint& m : *points) {
    json values = json::parse(m.metrics_json, nullptr, false);
    out.push_back({{"seq", m.seq},
                   {"step", m.step},
                   {"epoch", m.epoch},
                   {"at", iso_time(m.at)},
                   {"values", values}});
    last = m.seq;
  }
  return json{{"job_id", id}, {"points", out}, {"next_after", last}};
}

api::JsonResult JobManager::job_events(std::int64_t id, const std::string& tenant) {
  if (auto row = load_visible(id, tenant); !row.ok()) return row.error();
  auto events = repo_.jobs.list_events(id);
  if (!events.ok()) return events.error();
  json out = json::array();
  for (const db::JobEventRow& e : *events) {
    out.push_back({{"at", iso_time(e.at)},
                   {"from", e.from_state ? json(state_name(*e.from_state)) : json(nullptr)},
                   {"to", state_name(e.to_state)},
                   {"reason", e.reason}});
  }
  return json{{"job_id", id}, {"events", out}};
}

db::Result<std::string> JobManager::xla_report(std::int64_t id, const std::string& tenant) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  json result = parse_or_null(row->result_json);
  if (!result.is_object() || !result.contains("xla_report") || !result["xla_report"].is_string() ||
      result["xla_report"].get<std::string>().empty()) {
    return db::make_error(db::ErrorCode::kConflict,
                          "job " + std::to_string(id) + " is " + state_name(row->state) +
                              ": the XLA metrics report is written when it ends");
  }
  return result["xla_report"].get<std::string>();
}

// ------------------------------------------------------------------ pool

nlohmann::json JobManager::pool_view() {
  if (options_.cluster) return cluster_pool_view();
  base::MutexLock lock(mutex_);
  scheduler::Scheduler::PoolView view = scheduler_.view();
  json hosts = json::array();
  for (const auto& h : view.hosts) {
    json cores = json::array();
    int used = 0;
    for (std::size_t c = 0; c < h.cores.size(); ++c) {
      if (h.cores[c]) {
        ++used;
        auto it = live_.find(*h.cores[c]);
        cores.push_back(
            {{"core", c},
             {"job", *h.cores[c]},
             {"job_name", it != live_.end() ? json(it->second->spec.name) : json(nullptr)}});
      } else {
        cores.push_back({{"core", c}, {"job", nullptr}});
      }
    }
    const scheduler::GenerationFacts& f = scheduler::facts(h.generation);
    hosts.push_back(
        {{"name", h.name},
         {"generation", f.name},
         {"health", scheduler::host_health_name(h.health)},
         {"devices", h.cores.size()},
         {"hbm_bytes_per_device", f.hbm_bytes_per_device},
         {"cores_in_use", used},
         {"utilization", h.cores.empty() ? 0.0 : static_cast<double>(used) / h.cores.size()},
         {"cores", cores}});
  }
  int cpu_jobs = cpu_running_;
  std::map<scheduler::Generation, int> generation_hosts;
  for (const auto& h : view.hosts) ++generation_hosts[h.generation];
  return {{"hosts", hosts},
          {"generations", views::generation_layouts(generation_hosts)},
          {"total_cores", view.total_cores},
          {"used_cores", view.used_cores},
          {"healthy_cores", view.healthy_cores},
          {"utilization",
           view.total_cores ? static_cast<double>(view.used_cores) / view.total_cores : 0.0},
          {"queued_jobs", view.queued_jobs + static_cast<int>(cpu_waiting_.size())},
          {"running_jobs", view.running_jobs + cpu_jobs},
          {"cpu_jobs_running", cpu_jobs}};
}

json JobManager::cluster_pool_view() {
  auto agents = cluster_.list_agents();
  auto hosts = cluster_.list_hosts();
  auto unfinished = repo_.jobs.load_unfinished();
  if (!agents.ok() || !hosts.ok() || !unfinished.ok()) {
    return {{"error", "the database did not answer"},
            {"hosts", json::array()},
            {"agents", json::array()}};
  }
  return views::cluster_pool(*agents, *hosts, *unfinished);
}

api::JsonResult JobManager::set_host_health(const std::string& host, scheduler::HostHealth health) {
  return pool_admin_.set_host_health(host, health);
}

api::JsonResult JobManager::force_release(std::int64_t id) { return pool_admin_.force_release(id); }

std::optional<std::string> JobManager::LocalPool::host_generation(const std::string& host) {
  base::MutexLock lock(manager_.mutex_);
  std::optional<int> index = manager_.scheduler_.find_host(host);
  if (!index) return std::nullopt;
  return generation_name(manager_.layout_.hosts[*index].generation);
}

std::vector<std::int64_t> JobManager::LocalPool::set_host_health(const std::string& host,
                                                                 scheduler::HostHealth health) {
  std::vector<std::int64_t> affected;
  {
    base::MutexLock lock(manager_.mutex_);
    std::optional<int> index = manager_.scheduler_.find_host(host);
    if (!index) return affected;
    ++manager_.epoch_;
    for (scheduler::JobId id : manager_.scheduler_.set_host_health(*index, health)) {
      affected.push_back(id);
      auto it = manager_.live_.find(id);
      if (it == manager_.live_.end()) continue;
      LiveJob& job = *it->second;
      // The scheduler already took the cores back; the runner must not
      // release them again.
      job.stop_reason = job.row.attempt < job.spec.max_retries ? StopReason::kHostFailedRetry
                                                               : StopReason::kHostFailedFinal;
      job.cancel = true;
    }
    manager_.schedule_requested_ = true;
  }
  manager_.scheduler_wake_.notify_one();
  return affected;
}

bool JobManager::LocalPool::release(std::int64_t id) {
  base::MutexLock lock(manager_.mutex_);
  auto it = manager_.live_.find(id);
  if (it == manager_.live_.end() || !it->second->runner_started) return false;
  manager_.scheduler_.force_release(id);
  ++manager_.epoch_;
  if (it->second->stop_reason == StopReason::kNone)
    it->second->stop_reason = StopReason::kLeaseLost;
  it->second->cancel = true;
  manager_.schedule_requested_ = true;
  manager_.scheduler_wake_.notify_one();
  return true;
}

base::Result<api::JobService::UploadedDataset> JobManager::upload_dataset(
    const DatasetUpload& upload) {
  base::Result<executor::CsvTable> parsed = executor::parse_csv(upload.csv);
  if (!parsed.ok()) return parsed.error();
  const executor::CsvTable& table = *parsed;
  auto stored = repo_.datasets.create_dataset({.tenant = upload.tenant,
                                               .name = upload.name,
                                               .rows = table.rows,
                                               .columns = static_cast<int>(table.columns.size()),
                                               .classes = table.classes,
                                               .csv = upload.csv,
                                               .idempotency_key = upload.idempotency_key,
                                               .content_hash = upload.content_hash});
  if (!stored.ok()) return stored.error();
  return UploadedDataset{json{{"id", stored->id},
                              {"name", upload.name},
                              {"rows", table.rows},
                              {"features", table.features},
                              {"classes", table.classes},
                              {"columns", table.columns}},
                         stored->existing};
}

scheduler::PoolCapacity JobManager::capacity() {
  if (options_.cluster) {
    // Every registered agent's hosts: a job for the hosts of a lost agent
    // waits for it rather than being refused. Read at each call: a copy kept
    // for a second resolved `accelerator: auto` to the CPU for a job
    // submitted just after the first agent registered.
    auto hosts = cluster_.list_hosts();
    base::MutexLock lock(capacity_mutex_);
    if (hosts.ok()) {
      scheduler::PoolCapacity read;
      for (const db::ClusterHostRow& h : *hosts) {
        if (auto generation = scheduler::parse_generation(h.generation)) ++read.hosts[*generation];
      }
      last_cluster_capacity_ = read;
    }
    // The database did not answer: the last pool it described.
    return last_cluster_capacity_;
  }
  scheduler::PoolCapacity capacity;
  for (const scheduler::HostLayout& h : layout_.hosts) ++capacity.hosts[h.generation];
  return capacity;
}

executor::DeviceFacts JobManager::device_for(
    std::optional<scheduler::Generation> generation) const {
  executor::DeviceFacts device;
  if (!generation && !layout_.hosts.empty()) generation = layout_.hosts.front().generation;
  if (generation) {
    const scheduler::GenerationFacts& f = scheduler::facts(*generation);
    device.generation = std::string(f.name);
    device.hbm_bytes = f.hbm_bytes_per_device;
    device.hbm_capacity_bytes = f.hbm_reported_bytes;
    device.peak_flops = f.peak_bf16_flops_per_device;
    device.mxu_dim = f.mxu_dim;
  }
  return device;
}

JobManager::Estimate JobManager::estimate(const api::JobSpec& spec,
                                          const api::Resolution& resolution) {
  std::optional<scheduler::Generation> generation = resolution.request.generation;
  if (!generation && options_.cluster) {
    const scheduler::PoolCapacity pool = capacity();
    if (!pool.hosts.empty()) generation = pool.hosts.begin()->first;
  }
  if (!generation) {
    for (const scheduler::HostLayout& h : layout_.hosts) {
      if (resolution.request.kind != scheduler::RequestKind::kHost ||
          scheduler::facts(h.generation).devices_per_host == resolution.request.devices_per_host) {
        generation = h.generation;
        break;
      }
    }
  }
  const executor::DeviceFacts device = device_for(generation);
  // The dry run loads the dataset: remember answers for identical specs.
  json key_parts = {spec.training_key, device.generation, spec.training.world_size};
  const std::string key = key_parts.dump();
  {
    base::MutexLock lock(estimate_mutex_);
    auto it = estimate_cache_.find(key);
    if (it != estimate_cache_.end()) return it->second;
  }
  Estimate out;
  base::Result<executor::Estimate, executor::JobError> result =
      executor::estimate(spec.training, device, *datasets_);
  if (!result.ok()) {
    const executor::JobError& error = result.error();
    out.error =
        api::FieldError{error.field.empty() ? "spec" : error.field, error.message, error.hint};
    return out;  // not cached: an upload may appear later
  }
  const executor::Estimate& e = *result;
  const executor::HbmUsage& hbm = e.hbm;
  out.advice = e.advice;
  out.estimate = {{"input_features", e.input_features},
                  {"classes", e.classes},
                  {"train_samples", e.train_samples},
                  {"steps_per_epoch", e.steps_per_epoch},
                  {"total_steps", e.total_steps},
                  {"device", device.generation},
                  {"hbm_per_core",
                   {{"parameters", hbm.parameters},
                    {"gradients", hbm.gradients},
                    {"optimizer_state", hbm.optimizer_state},
                    {"activations", hbm.activations},
                    {"total", hbm.total},
                    {"capacity", hbm.capacity},
                    {"fits", hbm.fits}}},
                  {"estimated_step_seconds", e.estimated_step_seconds},
                  {"mxu_utilization", e.mxu_utilization},
                  {"note", "step time and MXU utilisation are estimates for a real " +
                               device.generation + " device, not measurements"}};
  if (!hbm.fits && hbm.certain) {
    out.error = api::FieldError{"data.batch_size", hbm.message(), hbm.hint()};
  }
  base::MutexLock lock(estimate_mutex_);
  if (estimate_cache_.size() > 4096) estimate_cache_.clear();
  estimate_cache_[key] = out;
  return out;
}

// ------------------------------------------------------------- telemetry

bool JobManager::writes_given_up() {
  base::MutexLock lock(retry_mutex_);
  return writes_stopped_ || (retry_until_ && clock_.now() >= *retry_until_);
}

bool JobManager::store_telemetry() {
  return telemetry_.flush_until([this] { return writes_given_up(); });
}

db::Result<std::optional<api::Principal>> JobManager::authenticate(std::string_view token) {
  return tokens_.authenticate(token);
}

bool JobManager::auth_required() { return tokens_.auth_required(); }

db::Result<std::optional<api::Principal>> JobManager::Tokens::find(const std::string& token_hash) {
  auto row = repo_.tokens.find_token(token_hash);
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<api::Principal>();
  return std::optional(api::Principal{(*row)->tenant, (*row)->role == "admin"});
}

db::Result<std::int64_t> JobManager::Tokens::count_active() {
  return repo_.tokens.count_active_tokens();
}

api::JsonResult JobManager::set_quota(const std::string& tenant, std::optional<int> max_cores) {
  return pool_admin_.set_quota(tenant, max_cores);
}

void JobManager::LocalPool::set_quota(const std::string& tenant, std::optional<int> max_cores) {
  {
    base::MutexLock lock(manager_.mutex_);
    manager_.scheduler_.set_tenant_quota(tenant, max_cores);
    ++manager_.epoch_;
    if (max_cores)
      manager_.quotas_[tenant] = *max_cores;
    else
      manager_.quotas_.erase(tenant);
    manager_.schedule_requested_ = true;
  }
  manager_.scheduler_wake_.notify_one();
}

void JobManager::refresh_cluster_quotas() {
  const base::Clock::time_point now = clock_.now();
  {
    base::MutexLock lock(mutex_);
    if (quotas_read_at_ != base::Clock::time_point{} &&
        now - quotas_read_at_ < kClusterQuotaRefresh) {
      return;
    }
    quotas_read_at_ = now;  // one reader at a time; the others use the copy they have
  }
  db::Result<std::map<std::string, int>> stored = repo_.pool_state.load_quotas();
  if (!stored.ok()) return;  // the last copy stands; the leader enforces the stored quotas
  base::MutexLock lock(mutex_);
  quotas_ = std::move(*stored);
}

std::optional<int> JobManager::quota(const std::string& tenant) {
  if (options_.cluster) refresh_cluster_quotas();
  base::MutexLock lock(mutex_);
  auto it = quotas_.find(tenant);
  if (it == quotas_.end()) return std::nullopt;
  return it->second;
}

bool JobManager::ready() {
  // The probe's last answer: /readyz never waits on the database, which
  // may hang (a stopped server) where the API's requests wait.
  const bool ok = readiness_probe_.ready();
  database_ok_ = ok;
  return ok;
}

std::string JobManager::prometheus_metrics() {
  std::string out;
  auto counts = repo_.jobs.count_jobs_by_state();
  out += "# HELP tpujobs_jobs Jobs by state.\n# TYPE tpujobs_jobs gauge\n";
  for (JobState state : {kQueued, kStarting, kRunning, kSucceeded, kFailed, kCancelled}) {
    std::int64_t n = 0;
    if (counts.ok()) {
      auto it = counts->find(state_name(state));
      if (it != counts->end()) n = it->second;
    }
    out += "tpujobs_jobs{state=\"" + state_name(state) + "\"} " + std::to_string(n) + "\n";
  }
  base::MutexLock lock(mutex_);
  scheduler::Scheduler::PoolView view = scheduler_.view();
  std::size_t cpu_waiting = cpu_waiting_.size();
  if (options_.cluster) {
    // The cluster's pool, as every replica sees it in the tables.
    lock.unlock();
    const json pool = cluster_pool_view();
    lock.lock();
    view.queued_jobs = pool.value("queued_jobs", 0);
    view.used_cores = pool.value("used_cores", 0);
    view.total_cores = pool.value("total_cores", 0);
    view.healthy_cores = pool.value("healthy_cores", 0);
    view.running_jobs = pool.value("running_jobs", 0);
    cpu_waiting = 0;
  }
  out += "# HELP tpujobs_queue_depth Jobs waiting for cores.\n# TYPE tpujobs_queue_depth gauge\n";
  out += "tpujobs_queue_depth " + std::to_string(view.queued_jobs + cpu_waiting) + "\n";
  out +=
      "# HELP tpujobs_cores_in_use Emulated TPU cores held by running jobs.\n# TYPE "
      "tpujobs_cores_in_use gauge\n";
  out += "tpujobs_cores_in_use " + std::to_string(view.used_cores) + "\n";
  out +=
      "# HELP tpujobs_pool_cores Emulated TPU cores in the pool.\n# TYPE tpujobs_pool_cores "
      "gauge\n";
  out += "tpujobs_pool_cores " + std::to_string(view.total_cores) + "\n";
  out +=
      "# HELP tpujobs_cores_healthy Cores on healthy hosts.\n# TYPE tpujobs_cores_healthy gauge\n";
  out += "tpujobs_cores_healthy " + std::to_string(view.healthy_cores) + "\n";
  out +=
      "# HELP tpujobs_running_jobs Jobs running in this process.\n# TYPE tpujobs_running_jobs "
      "gauge\n";
  out += "tpujobs_running_jobs " + std::to_string(view.running_jobs + cpu_running_) + "\n";
  out +=
      "# HELP tpujobs_jobs_submitted_total Jobs committed by this process.\n# TYPE "
      "tpujobs_jobs_submitted_total counter\n";
  out += "tpujobs_jobs_submitted_total " + std::to_string(submitted_total_.load()) + "\n";
  out +=
      "# HELP tpujobs_jobs_finished_total Jobs this process took to a terminal state.\n# TYPE "
      "tpujobs_jobs_finished_total counter\n";
  out += "tpujobs_jobs_finished_total " + std::to_string(finished_total_.load()) + "\n";
  out +=
      "# HELP tpujobs_database_up Whether the last database call succeeded.\n# TYPE "
      "tpujobs_database_up gauge\n";
  out += std::string("tpujobs_database_up ") + (database_ok_ ? "1" : "0") + "\n";
  return out;
}

}  // namespace tpujobs::service
