// The job manager: implements api::JobService over its parts. In single-
// process mode it also owns the queue (a scheduler loop over
// scheduler::Scheduler) and runs the placed jobs on the executor; in
// cluster mode (DESIGN §9) the scheduler leader (scheduler_leader.h) places
// and agents (agent.h) run, and this only commits, shows, waits on and
// cancels, from the tables.
//
// Its parts, each a file with its own tests:
//   submit_committer.h  group commit of submits (the 201 means committed)
//   job_lifecycle.h     every state transition, by name
//   telemetry_writer.h  log lines, metrics, progress, checkpoints in batches
//   log_streams.h       SSE log follows on the timer thread
//   job_views.h         the job views; pool_views.h the cluster pool view
//   token_cache.h       bearer tokens without a round trip per request
//   pool_admin.h        host health, forced releases, quotas: stored, then applied
// and job_manager_preemption.cc holds this class's preemption and fair
// share (the policy itself is scheduler/preemption.h, fair_share.h).
// What stays here: the in-memory queue of live jobs, the runner of each
// placed job, the workload rules in single-process mode, the in-memory
// effects of pool administration, and estimates.
//
// Threads: committers, the scheduler loop, one runner per running job (its
// compute runs on the shared executor WorkerPool), the telemetry writer,
// the timer thread (long-poll timeouts, log streams) and, in cluster mode,
// a LISTEN thread for the agents' log notifications.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/job_service.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "db/cluster_repository.h"
#include "db/connection_pool.h"
#include "db/database_probe.h"
#include "db/repositories.h"
#include "executor/executor.h"
#include "executor/worker_pool.h"
#include "scheduler/pool.h"
#include "scheduler/scheduler.h"
#include "service/fair_share_usage.h"
#include "service/log_streams.h"
#include "service/pool_admin.h"
#include "service/submit_committer.h"
#include "service/telemetry_writer.h"
#include "service/timer_queue.h"
#include "service/token_cache.h"
#include "service/view_cache.h"

namespace tpujobs::service {

struct JobManagerOptions {
  int workers = 2;         // executor worker threads shared by all jobs
  int max_cpu_jobs = 2;    // accelerator "cpu" jobs running at once
  int submit_batch = 256;  // most jobs committed in one transaction
  // Transactions of submits in flight at once: while one waits for its
  // commit, the next batch is inserted and the previous one answered.
  int committers = 2;
  std::chrono::milliseconds lease_timeout{30000};
  std::chrono::milliseconds telemetry_interval{200};
  std::string instance = "tpujobs";  // recorded as the owner of the jobs it runs
  // Memory for the rendered views of finished jobs (FinishedViewCache).
  std::size_t finished_view_bytes = 64u << 20;
  // How long a shutdown keeps retrying its writes (checkpoints, the jobs'
  // return to QUEUED) while the database is away, before it gives up: the
  // next start resumes the jobs from their last stored checkpoint.
  std::chrono::milliseconds shutdown_write_grace{10000};
  // DESIGN §9: jobs are placed by the scheduler leader (SchedulerLeader) and
  // run by agents (Agent), which may be other processes; this manager then
  // only commits, shows, waits on and cancels them, from the tables.
  bool cluster = false;
  // Steady and wall time, and the sleeps between write retries (null: the
  // real clock). Must outlive the manager.
  base::Clock* clock = nullptr;
  // Issue 17: the queue's fair share (the tenants' factors are re-read from
  // the stored usage this often) and preemption (a head whose reserved start
  // is this near does not preempt; scheduler/scheduler.h).
  FairShareOptions fair_share;
  std::chrono::milliseconds fair_share_interval{5000};
  std::chrono::milliseconds preemption_min_wait{60000};
  // /readyz: how often a probe of its own asks the database, and how long
  // it waits for the answer (db/database_probe.h).
  db::DatabaseProbe::Options readiness_probe;
};

class JobManager final : public api::JobService {
 public:
  JobManager(db::ConnectionPool& pool, scheduler::PoolLayout layout, JobManagerOptions options);
  ~JobManager() override;

  // Restores host health and quotas, re-queues what a previous process left
  // unfinished (to resume from its checkpoint), and starts the threads.
  db::Status start();
  // Stops taking submits, stops running jobs at a checkpoint and re-queues
  // them for the next start. Idempotent.
  void shutdown();
  // Stops the remaining threads (after the HTTP server is down).
  void close();

  // api::JobService
  void submit(api::SubmitRequest request, std::function<void(api::SubmitOutcome)> done) override;
  void submit_array(std::vector<api::SubmitRequest> children,
                    std::function<void(std::vector<api::SubmitOutcome>)> done) override;
  api::JsonResult get_job(std::int64_t id, const std::string& tenant) override;
  db::Result<std::string> get_job_text(std::int64_t id, const std::string& tenant) override;
  api::JsonResult list_jobs(const api::JobQuery& query) override;
  // The job's view as stored in PostgreSQL, never the live one: what a
  // notification of an event carries. The event's outbox row commits with
  // the state change, before this process updates its live view, so the
  // live view could still show the state before the event.
  db::Result<std::string> stored_job_text(std::int64_t id, const std::string& tenant);
  db::Result<std::map<std::int64_t, db::JobState>> job_states(
      const std::string& tenant, const std::vector<std::int64_t>& ids) override;
  void wait_job(std::int64_t id, const std::string& tenant, std::chrono::milliseconds timeout,
                std::function<void(api::JsonResult)> done) override;
  api::JsonResult cancel_job(std::int64_t id, const std::string& tenant) override;
  api::JsonResult job_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                           int limit) override;
  void follow_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                   api::ResponseWriterPtr writer) override;
  api::JsonResult job_metrics(std::int64_t id, const std::string& tenant,
                              std::int64_t after) override;
  api::JsonResult job_events(std::int64_t id, const std::string& tenant) override;
  db::Result<std::string> xla_report(std::int64_t id, const std::string& tenant) override;
  nlohmann::json pool_view() override;
  db::Result<std::vector<api::UsageRow>> usage(const api::UsageQuery& query) override;
  api::JsonResult set_host_health(const std::string& host, scheduler::HostHealth health) override;
  api::JsonResult force_release(std::int64_t id) override;
  base::Result<UploadedDataset> upload_dataset(const DatasetUpload& upload) override;
  scheduler::PoolCapacity capacity() override;
  Estimate estimate(const api::JobSpec& spec, const api::Resolution& resolution) override;
  bool ready() override;
  db::Result<std::optional<api::Principal>> authenticate(std::string_view token) override;
  bool auth_required() override;
  api::JsonResult set_quota(const std::string& tenant, std::optional<int> max_cores) override;
  std::optional<int> quota(const std::string& tenant) override;
  std::string prometheus_metrics() override;

 private:
  struct LiveJob;
  // The submit committer's store: insert_jobs, noting whether the database answered.
  class JobStore final : public SubmitStore {
   public:
    explicit JobStore(JobManager& manager) : manager_(manager) {}
    db::Result<std::vector<db::InsertedJob>> insert_jobs(
        const std::vector<db::NewJob>& rows) override;

   private:
    JobManager& manager_;
  };
  // The committer thread: views for the answers, new jobs into the queue
  // (and placed now when they fit), or the leader woken in cluster mode.
  void on_committed(std::vector<CommittedSubmit>& committed);
  enum class StopReason {
    kNone,
    kUserCancel,
    kHostFailedRetry,
    kHostFailedFinal,
    kShutdown,
    kLeaseLost,
    kPreempted  // a higher-priority job needs its cores: requeued from its checkpoint
  };
  class Sink;

  // Threads.
  void scheduler_loop();
  void run_job(std::shared_ptr<LiveJob> job, scheduler::Placement placement);

  // Helpers (REQUIRES(mutex_): the name ends in _locked).
  // kInvalid when the stored spec no longer parses or resolves on this pool.
  base::Result<std::shared_ptr<LiveJob>> make_live(const db::JobRow& row);
  // A QUEUED job found stored that no runner here knows (on start, or after
  // an insert whose answer was lost): its cancel, asked meanwhile, is
  // carried out, and a spec that no longer resolves is rejected `where`;
  // null then. Otherwise the job to enqueue. Calls the database: not under
  // mutex_.
  db::Result<std::shared_ptr<LiveJob>> take_stored(const db::JobRow& row, const std::string& where);
  // Standalone: an insert whose answer never came may have stored jobs that
  // nothing here queued (a server that carried it out late, or lost the
  // answer), which would wait for a restart. Once the server process left
  // with it is gone, the QUEUED jobs not in live_ are adopted, on a thread
  // of its own that retries (backing off) while the database is away.
  void watch_unconfirmed_insert(const base::Error::ServerProcess& process);
  void adopter_loop();
  // One round: true when every insert listed at its start has settled and
  // what they stored is queued.
  bool adopt_unconfirmed_inserts();
  void stop_adopter();
  // Queues the job behind the jobs of its priority submitted before
  // `order` (on arrival); 0: behind all of them, as a requeue.
  void enqueue_locked(const std::shared_ptr<LiveJob>& job, std::int64_t order = 0) REQUIRES(mutex_);
  // Runs a scheduling pass and starts a runner for every job it placed.
  void start_placed_locked(std::chrono::steady_clock::time_point now) REQUIRES(mutex_);
  // Asks the pass's preemption victims to stop at a checkpoint, and queues
  // the preemptor's event (service/job_manager_preemption.cc).
  void preempt_locked(const scheduler::Preemption& preemption) REQUIRES(mutex_);
  // Scheduler thread, mutex_ held on entry and exit (released around the
  // database): records the queued preemptors' events, and every
  // fair_share_interval re-reads the tenants' fair-share factors.
  void apply_preemption_and_fair_share(std::chrono::steady_clock::time_point now) REQUIRES(mutex_);
  void wake_scheduler();
  // Stores the outcome, answers the waiters; returns the final view.
  // `stored`: the transition is in the database already.
  nlohmann::json finish_job(const std::shared_ptr<LiveJob>& job, db::JobState state,
                            const std::string& reason, nlohmann::json error, nlohmann::json result,
                            bool stored = false);
  void notify_waiters(const std::shared_ptr<LiveJob>& job, const nlohmann::json& view);
  // Stores the telemetry queued so far, retrying while the database is
  // unavailable until writes_given_up().
  bool store_telemetry();
  // After close(), or past the shutdown's write grace: writes stop retrying.
  bool writes_given_up();
  // Splits a view into the LiveJob's fixed text and live members;
  // `spec_text`, when given, is the view's spec already serialised.
  void set_view_base(LiveJob& job, nlohmann::json view, std::string spec_text = {});
  // The view of a live job as JSON text, from the fixed text and the live
  // members; without the spec for lists.
  std::string render_live_text_locked(const LiveJob& job, bool with_spec) REQUIRES(mutex_);
  nlohmann::json render_live_locked(const LiveJob& job) REQUIRES(mutex_);
  db::Result<db::JobRow> load_visible(std::int64_t id, const std::string& tenant);
  executor::DeviceFacts device_for(std::optional<scheduler::Generation> generation) const;
  // Cluster mode: answers `done` once the stored job is terminal or at
  // `deadline`, looking every poll on the timer thread (one bounded read
  // each).
  void poll_wait(std::int64_t id, std::string tenant,
                 std::chrono::steady_clock::time_point deadline,
                 std::function<void(api::JsonResult)> done);
  // Cluster mode: wakes the log streams of the jobs named in the agents'
  // NOTIFY tpujobs_logs (their polling fallback ticks meanwhile).
  void log_listener_loop();
  // Cluster mode: the pool as the agents' hosts and the placed jobs show it.
  nlohmann::json cluster_pool_view();
  // Workload rules (scheduler/dependencies.h), single-process mode; the
  // scheduler leader applies the same rules in cluster mode.
  // Holds a job whose dependencies are not known to be met before the
  // queue; false when it may be queued.
  bool hold_for_dependencies_locked(const std::shared_ptr<LiveJob>& job) REQUIRES(mutex_);
  // Takes a waiting job out of whichever queue holds it.
  void withdraw_locked(const std::shared_ptr<LiveJob>& job) REQUIRES(mutex_);
  // Scheduler thread, mutex_ held on entry and exit (released around the
  // database): releases the held jobs whose dependencies are met, ends the
  // ones whose dependencies never can be, and those past their start_by.
  void apply_workload_rules() REQUIRES(mutex_);
  // Ends a withdrawn waiting job CANCELLED with `reason`; requeues it when
  // the database cannot record that (the next pass tries again).
  void end_unstartable(const std::shared_ptr<LiveJob>& job, const std::string& reason,
                       const std::string& detail, const std::string& hint);
  // Applies a state transition, retrying while the database is unavailable.
  // False when the job was not in an allowed state (or the write failed).
  bool apply_transition(const db::Transition& transition);
  // Retries a database write until it succeeds or the manager shuts down.
  template <class F>
  bool with_retry(F&& write);

  db::ConnectionPool& pool_;
  db::Repositories repo_;
  db::ClusterRepository cluster_;
  // Cluster mode: the registered hosts. capacity when the database last answered.
  base::Mutex capacity_mutex_;
  scheduler::PoolCapacity last_cluster_capacity_ GUARDED_BY(capacity_mutex_);
  scheduler::PoolLayout layout_;
  JobManagerOptions options_;
  base::Clock& clock_;
  executor::WorkerPool workers_;
  executor::DatasetSource* datasets_ = nullptr;
  std::unique_ptr<executor::DatasetSource> datasets_owner_;

  mutable base::Mutex mutex_;
  scheduler::Scheduler scheduler_ GUARDED_BY(mutex_);
  std::unordered_map<std::int64_t, std::shared_ptr<LiveJob>> live_ GUARDED_BY(mutex_);
  std::deque<std::shared_ptr<LiveJob>> cpu_waiting_ GUARDED_BY(mutex_);
  int cpu_running_ GUARDED_BY(mutex_) = 0;
  bool schedule_requested_ GUARDED_BY(mutex_) = false;
  std::uint64_t epoch_ GUARDED_BY(mutex_) =
      1;  // bumped by every change that can move any job's view
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::condition_variable scheduler_wake_;
  std::vector<std::thread> finished_runners_ GUARDED_BY(mutex_);

  RepositoryTelemetryStore telemetry_store_;
  TelemetryWriter telemetry_;
  base::Mutex retry_mutex_;
  bool writes_stopped_ GUARDED_BY(retry_mutex_) = false;  // close() was called
  // Set by shutdown(): writes stop retrying after it.
  std::optional<std::chrono::steady_clock::time_point> retry_until_ GUARDED_BY(retry_mutex_);

  class Tokens final : public TokenStore {
   public:
    explicit Tokens(db::Repositories& repo) : repo_(repo) {}
    db::Result<std::optional<api::Principal>> find(const std::string& token_hash) override;
    db::Result<std::int64_t> count_active() override;

   private:
    db::Repositories& repo_;
  };
  Tokens token_store_{repo_};
  TokenCache tokens_{token_store_, clock_};
  // Cluster mode: re-reads every tenant's quota from the database when the
  // copy here is older than kClusterQuotaRefresh, so that a quota set
  // through another replica reaches this one's submit check (the leader
  // enforces the stored ones at placement anyway).
  void refresh_cluster_quotas();
  static constexpr std::chrono::seconds kClusterQuotaRefresh{1};
  std::map<std::string, int> quotas_ GUARDED_BY(mutex_);
  // Cluster mode: when quotas_ was last read from the database (another
  // replica may have set one); see refresh_cluster_quotas.
  base::Clock::time_point quotas_read_at_ GUARDED_BY(mutex_){};
  // Pool administration (pool_admin.h); this process's scheduler is its
  // in-memory pool.
  class LocalPool final : public InMemoryPool {
   public:
    explicit LocalPool(JobManager& manager) : manager_(manager) {}
    std::optional<std::string> host_generation(const std::string& host) override;
    std::vector<std::int64_t> set_host_health(const std::string& host,
                                              scheduler::HostHealth health) override;
    bool release(std::int64_t job) override;
    void set_quota(const std::string& tenant, std::optional<int> max_cores) override;

   private:
    JobManager& manager_;
  };
  RepositoryPoolAdminStore pool_admin_store_{repo_, cluster_};
  LocalPool local_pool_{*this};
  PoolAdmin pool_admin_{pool_admin_store_, local_pool_, options_.cluster};
  // Workload rules: jobs held by their dependencies, and the start deadlines
  // of waiting jobs (deadline, job), soonest first.
  std::set<std::int64_t> dependency_held_ GUARDED_BY(mutex_);
  std::set<std::pair<std::chrono::system_clock::time_point, std::int64_t>> start_deadlines_
      GUARDED_BY(mutex_);
  // Preemptions decided but not yet in the preemptors' events.
  std::vector<scheduler::Preemption> preemptions_to_record_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point fair_share_read_ GUARDED_BY(mutex_){};

  base::Mutex estimate_mutex_;
  std::unordered_map<std::string, Estimate> estimate_cache_ GUARDED_BY(estimate_mutex_);

  FinishedViewCache finished_views_;

  std::atomic<bool> database_ok_{true};
  // watch_unconfirmed_insert: the server processes left with an insert,
  // and the thread that settles them and adopts what they stored.
  base::Mutex adopter_mutex_;
  std::condition_variable adopter_wake_;
  std::vector<base::Error::ServerProcess> unconfirmed_inserts_ GUARDED_BY(adopter_mutex_);
  bool adopter_running_ GUARDED_BY(adopter_mutex_) = false;
  bool adopter_stopping_ GUARDED_BY(adopter_mutex_) = false;
  std::thread adopter_ GUARDED_BY(adopter_mutex_);
  // What an adoption must not take: the jobs on_committed queued while it
  // read the table, and the QUEUED ones not in live_ that cancel_job ends.
  // Cleared when an adoption ends.
  bool adoption_reading_ GUARDED_BY(mutex_) = false;
  std::set<std::int64_t> not_to_adopt_ GUARDED_BY(mutex_);
  db::DatabaseProbe readiness_probe_{pool_.conninfo(), options_.readiness_probe};
  std::atomic<std::int64_t> submitted_total_{0};
  std::atomic<std::int64_t> finished_total_{0};

  TimerQueue timers_{clock_};
  std::thread scheduler_thread_;

  // The log streams' view of this process's jobs and the tables.
  class Logs final : public LogSource {
   public:
    explicit Logs(JobManager& manager) : manager_(manager) {}
    Recent recent_lines(std::int64_t job, std::int64_t after) override;
    db::Result<std::vector<db::LogLine>> stored_lines(std::int64_t job, std::int64_t after,
                                                      int limit) override;
    db::Result<std::optional<db::JobState>> stored_state(std::int64_t job) override;

   private:
    JobManager& manager_;
  };
  Logs logs_{*this};
  LogStreams log_streams_{logs_, timers_, {.notified = options_.cluster}};
  base::Mutex log_listener_mutex_;
  bool log_listener_stopping_ GUARDED_BY(log_listener_mutex_) = false;
  std::condition_variable log_listener_wake_;
  std::thread log_listener_;
  bool started_ = false;
  std::atomic<bool> shut_down_{false};
  bool closed_ = false;
  JobStore job_store_{*this};
  // Last: its threads call on_committed.
  SubmitCommitter committer_{
      job_store_,
      {options_.submit_batch, options_.committers},
      [this](std::vector<CommittedSubmit>& committed) { on_committed(committed); }};
};

}  // namespace tpujobs::service
