// The API service over the tables (DESIGN §9): it commits submits (the
// group committer), shows, waits on and cancels jobs, serves their logs,
// metrics and events, the pool view, tokens, quotas, datasets and
// estimates. It has no queue and no runner: the scheduler leader
// (scheduler_leader.h) places, the agents (agent.h) run, whether in this
// process (a standalone serve, woken through service/wake_bus.h) or in
// others. What it holds in memory is a cache: the rendered views of
// finished jobs, of queued ones (whose every change it hears of: from the
// leader in this process, or from the database's NOTIFY on a replica), of
// running ones in a standalone serve (whose agent says what it changed),
// tokens, quotas and estimates.
//
// Its parts, each a file with its own tests:
//   submit_committer.h  group commit of submits (the 201 means committed)
//   log_streams.h       SSE log follows on the timer thread
//   job_views.h         the job views; pool_views.h the cluster pool view
//   token_cache.h       bearer tokens without a round trip per request
//   pool_admin.h        host health, forced releases, quotas: stored, then applied
//
// Threads: committers, the timer thread (long-poll timeouts, log streams)
// and a LISTEN thread for the agents' log notifications (and, on a replica,
// the changes of queued jobs).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
#include "scheduler/pool.h"
#include "service/job_lists.h"
#include "service/job_waits.h"
#include "service/log_streams.h"
#include "service/pool_admin.h"
#include "service/recent_read.h"
#include "service/submit_committer.h"
#include "service/submitted_specs.h"
#include "service/timer_queue.h"
#include "service/token_cache.h"
#include "service/view_cache.h"
#include "service/wake_bus.h"
#include "service/written_views.h"

namespace tpujobs::service {

struct JobManagerOptions {
  // A standalone serve's in-process wake-ups of its leader and agent
  // (service/wake_bus.h); null: NOTIFY. Must outlive the manager.
  WakeBus* wake_bus = nullptr;
  // Where the committed jobs' specs are handed to this process's scheduler
  // leader (service/submitted_specs.h); null: it reads them. Must outlive
  // the manager.
  SubmittedSpecs* submitted_specs = nullptr;
  int submit_batch = 256;  // most jobs committed in one transaction
  // Transactions of submits in flight at once: while one waits for its
  // commit, the next batch is inserted and the previous one answered.
  int committers = 2;
  std::string instance = "tpujobs";  // recorded as the notifier's instance
  // Memory for rendered views (ViewCache): of finished jobs, and with a
  // wake bus of waiting jobs too (the leader says which it changed); and a
  // quarter of it more for the views lists show of finished jobs (JobLists).
  std::size_t view_bytes = 64u << 20;
  // Steady and wall time (null: the real clock). Must outlive the manager.
  base::Clock* clock = nullptr;
  // /readyz: how often a probe of its own asks the database, and how long
  // it waits for the answer (db/database_probe.h).
  db::DatabaseProbe::Options readiness_probe;
};

class JobManager final : public api::JobService, public WrittenViews {
 public:
  // `layout`: the hosts of this process's own agent, if any (what an
  // estimate assumes before any agent registered).
  JobManager(db::ConnectionPool& pool, scheduler::PoolLayout layout, JobManagerOptions options);
  ~JobManager() override;

  // The in-process agent's view of a job it runs ({tenant, body}; Agent::
  // live_view), answered while the database is away. Set before serving.
  using LiveView = std::function<std::optional<std::pair<std::string, std::string>>(std::int64_t)>;
  void set_live_view(LiveView live_view) { live_view_ = std::move(live_view); }

  // Starts the committers and the log listener.
  base::Status start();
  // Stops taking submits. Idempotent.
  void shutdown();
  // Stops the remaining threads (after the HTTP server is down).
  void close();

  // api::JobService
  void submit(api::SubmitRequest request, std::function<void(api::SubmitOutcome)> done) override;
  void submit_array(std::vector<api::SubmitRequest> children,
                    std::function<void(std::vector<api::SubmitOutcome>)> done) override;
  base::Result<nlohmann::json> get_job(std::int64_t id, const std::string& tenant) override;
  base::Result<std::string> get_job_text(std::int64_t id, const std::string& tenant) override;
  base::Result<api::JobListPage> list_jobs(const api::JobQuery& query) override;
  // The job's view as stored in PostgreSQL, never the live one: what a
  // notification of an event carries. The event's outbox row commits with
  // the state change, before this process updates its live view, so the
  // live view could still show the state before the event.
  base::Result<std::string> stored_job_text(std::int64_t id, const std::string& tenant);
  // WrittenViews: this process's agent started or ended a job.
  std::uint64_t views_generation() override { return views_.generation(); }
  void written(std::uint64_t seen, const db::JobWithCheckpoint& job) override;
  base::Result<std::map<std::int64_t, db::JobState>> job_states(
      const std::string& tenant, const std::vector<std::int64_t>& ids) override;
  void wait_job(std::int64_t id, const std::string& tenant, std::chrono::milliseconds timeout,
                std::function<void(base::Result<nlohmann::json>)> done) override;
  base::Result<nlohmann::json> cancel_job(std::int64_t id, const std::string& tenant) override;
  base::Result<nlohmann::json> job_logs(std::int64_t id, const std::string& tenant,
                                        std::int64_t after, int limit) override;
  void follow_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                   api::ResponseWriterPtr writer) override;
  base::Result<nlohmann::json> job_metrics(std::int64_t id, const std::string& tenant,
                                           std::int64_t after) override;
  base::Result<nlohmann::json> job_events(std::int64_t id, const std::string& tenant) override;
  base::Result<std::string> xla_report(std::int64_t id, const std::string& tenant) override;
  nlohmann::json pool_view() override;
  base::Result<std::vector<api::UsageRow>> usage(const api::UsageQuery& query) override;
  base::Result<nlohmann::json> set_host_health(const std::string& host,
                                               scheduler::HostHealth health) override;
  base::Result<nlohmann::json> force_release(std::int64_t id) override;
  base::Result<UploadedDataset> upload_dataset(const DatasetUpload& upload) override;
  scheduler::PoolCapacity capacity(Freshness freshness) override;
  Estimate estimate(const api::JobSpec& spec, const api::Resolution& resolution) override;
  bool ready() override;
  base::Result<std::optional<api::Principal>> authenticate(std::string_view token) override;
  bool auth_required() override;
  base::Result<nlohmann::json> set_quota(const std::string& tenant,
                                         std::optional<int> max_cores) override;
  std::optional<int> quota(const std::string& tenant) override;
  std::string prometheus_metrics() override;

 private:
  // The submit committer's store: insert_jobs, noting whether the database answered.
  class JobStore final : public SubmitStore {
   public:
    explicit JobStore(JobManager& manager) : manager_(manager) {}
    base::Result<std::vector<db::InsertedJob>> insert_jobs(
        const std::vector<db::NewJob>& rows) override;

   private:
    JobManager& manager_;
  };
  // The committer thread: views for the answers, then the leader woken.
  void on_committed(std::vector<CommittedSubmit>& committed);
  // Ends the server process of an insert whose answer was lost, so that it
  // lands now or never (see job_manager.cc).
  void settle_unconfirmed_insert(const db::ServerProcess& process);
  // Wakes the scheduler leader (kSubmitChannel) or an agent (kAgentChannel)
  // in this process through the wake bus, or by NOTIFY.
  void wake(const char* channel, const std::string& payload);

  base::Result<db::JobRow> load_visible(std::int64_t id, const std::string& tenant);
  executor::DeviceFacts device_for(std::optional<scheduler::Generation> generation) const;
  // Wakes the log streams and the waits of the jobs named in the agents'
  // NOTIFY tpujobs_logs (lines stored, or an end committed; their polling
  // fallback ticks meanwhile). With a wake bus, the agent and the leader in
  // this process wake them through it instead, and only an agent of another
  // process would send one. Without a wake bus, also hands views_ the
  // changes of queued jobs the database sends (db/migrations/038).
  void log_listener_loop();
  void take_view_changes(const std::vector<db::Notification>& notes);

  db::ConnectionPool& pool_;
  db::Repositories repo_;
  db::ClusterRepository cluster_;
  scheduler::PoolLayout layout_;
  JobManagerOptions options_;
  base::Clock& clock_;
  std::unique_ptr<executor::DatasetSource> datasets_;
  LiveView live_view_;

  class Tokens final : public TokenStore {
   public:
    explicit Tokens(db::Repositories& repo) : repo_(repo) {}
    base::Result<std::optional<api::Principal>> find(const std::string& token_hash) override;
    base::Result<std::int64_t> count_active() override;

   private:
    db::Repositories& repo_;
  };
  Tokens token_store_{repo_};
  TokenCache tokens_{token_store_, clock_};
  // The registered hosts' capacity: a read serves a second of submits
  // (capacity()).
  RecentRead<scheduler::PoolCapacity> capacity_{clock_, std::chrono::seconds(1)};
  // Every tenant's quota, read again after a second, so that a quota set
  // through another replica reaches this one's submit check (the leader
  // enforces the stored ones at placement anyway).
  RecentRead<std::map<std::string, int>> quotas_{clock_, std::chrono::seconds(1)};
  // The count of queued jobs in the pool's view, which every open web page
  // polls: read again after a second.
  RecentRead<std::int64_t> queued_count_{clock_, std::chrono::seconds(1)};
  // The jobs by state in /metrics: a count of the whole table (some 36 ms
  // of a backend at 100,000 queued, bench/RESULTS.md), read again after a
  // second, or at the next scrape once this process committed submits.
  RecentRead<std::map<std::string, std::int64_t>> job_counts_{clock_, std::chrono::seconds(1)};
  // Pool administration (pool_admin.h) over the tables.
  // Its wake-ups go through wake() (the wake bus of a standalone serve).
  class AdminStore final : public PoolAdminStore {
   public:
    AdminStore(JobManager& manager) : manager_(manager), tables_(manager.repo_, manager.cluster_) {}
    base::Result<std::vector<db::ClusterHostRow>> list_hosts() override {
      return tables_.list_hosts();
    }
    base::Status store_host_health(const std::string& host, const std::string& generation,
                                   const std::string& health) override {
      return tables_.store_host_health(host, generation, health);
    }
    base::Result<std::vector<db::JobRow>> load_placed() override { return tables_.load_placed(); }
    base::Result<std::optional<db::JobRow>> get_job(std::int64_t id) override {
      return tables_.get_job(id);
    }
    base::Result<bool> transition(const db::Transition& t) override {
      base::Result<bool> moved = tables_.transition(t);
      manager_.views_.forget({t.job_id});  // a failed write may have landed
      return moved;
    }
    base::Status store_quota(const std::string& tenant, std::optional<int> max_cores) override {
      return tables_.store_quota(tenant, max_cores);
    }
    void notify(const char* channel, const std::string& payload) override {
      manager_.wake(channel, payload);
    }

   private:
    JobManager& manager_;
    RepositoryPoolAdminStore tables_;
  };
  AdminStore pool_admin_store_{*this};
  PoolAdmin pool_admin_{pool_admin_store_};

  base::Mutex estimate_mutex_;
  std::unordered_map<std::string, Estimate> estimate_cache_ GUARDED_BY(estimate_mutex_);

  ViewCache views_;
  JobLists lists_{repo_.jobs, options_.view_bytes / 4};

  std::atomic<bool> database_ok_{true};
  db::DatabaseProbe readiness_probe_{pool_.conninfo(), options_.readiness_probe};
  std::atomic<std::int64_t> submitted_total_{0};
  // Job views answered from views_, and read from the database.
  std::atomic<std::uint64_t> views_from_memory_{0};
  std::atomic<std::uint64_t> views_from_database_{0};

  TimerQueue timers_{clock_};
  JobWaits waits_{timers_, clock_, [this](std::int64_t id, const std::string& tenant) {
                    return get_job(id, tenant);
                  }};

  // The log streams' view of the tables.
  class Logs final : public LogSource {
   public:
    explicit Logs(JobManager& manager) : manager_(manager) {}
    base::Result<std::vector<db::LogLine>> stored_lines(std::int64_t job, std::int64_t after,
                                                        int limit) override;
    base::Result<std::optional<db::JobState>> stored_state(std::int64_t job) override;

   private:
    JobManager& manager_;
  };
  Logs logs_{*this};
  LogStreams log_streams_{logs_, timers_, {}};
  base::Mutex log_listener_mutex_;
  bool log_listener_stopping_ GUARDED_BY(log_listener_mutex_) = false;
  std::condition_variable log_listener_wake_;
  std::thread log_listener_;
  // Whether every change of a queued job reaches views_, so that its view
  // may be kept: always with a wake bus; otherwise while the LISTEN
  // connection of log_listener_loop is up.
  std::atomic<bool> queued_views_told_{false};
  // Renders the views of queued jobs ahead of their first read, once their
  // pending reasons came (from the leader here or the database's NOTIFY).
  std::unique_ptr<ViewRenderer> renderer_;
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
