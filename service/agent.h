// The agent (DESIGN §9): the worker of one machine. It registers its hosts
// in PostgreSQL under a new epoch, heartbeats, runs the jobs the scheduler
// leader placed on it (committed STARTING rows naming it and its epoch, or,
// in the leader's own process, RUNNING ones placed started and handed over:
// service/local_agent.h) on
// its own worker threads, and writes their state, log lines, metrics,
// progress and checkpoints, every write conditional on the job's placement
// (fencing: its number, jobs.placement, which a job placed here again under
// the same epoch does not share).
//
// Threads: a heartbeat on a connection of its own (so that neither the
// supervisor's work nor runners holding the shared pool's connections can
// delay it past the lease), a supervisor (the placed jobs: start, cancel,
// stop a copy whose job moved on), two starters (a placed job's start, up to
// its RUNNING), one runner per job it runs (its compute on the shared
// executor WorkerPool), and a telemetry writer (batches).
//
// When its heartbeat finds it no longer alive under its epoch (it was
// silent past the lease and declared lost), the supervisor stops every copy
// it runs — their writes would not land anyway — and registers again under
// a new epoch, with no jobs.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/job_spec.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "db/cluster_repository.h"
#include "db/repositories.h"
#include "executor/executor.h"
#include "executor/slice_collective.h"
#include "executor/worker_pool.h"
#include "scheduler/pool.h"
#include "service/local_agent.h"
#include "service/run_supervisor.h"
#include "service/telemetry_writer.h"
#include "service/wake_bus.h"
#include "service/written_views.h"

namespace tpujobs::service {

struct AgentOptions {
  std::string name;              // unique among agents
  std::string conninfo;          // for the LISTEN connection
  scheduler::PoolLayout layout;  // its hosts, already named
  int workers = 1;               // executor worker threads
  // The nice value (0–19) of the threads that train: the worker pool's and
  // each job's runner. Above 0, the threads that answer users and the
  // database keep a core while training fills the machine.
  int training_nice = 10;
  int max_cpu_jobs = 2;  // must match the leader's max_cpu_jobs_per_agent
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds telemetry_interval{200};
  // The most log lines, and apart metric points, one job stores a second
  // (TelemetryWriterOptions::output_per_second; 0: no bound).
  double output_per_second = 2000;
  // Heartbeat and progress timing, and the log lines' times. Must outlive
  // the agent.
  base::Clock* clock = &base::real_clock();
  // A slice spanning agents (DESIGN §9): the address its Gloo device binds
  // and other agents connect to ("": Gloo's default, the machine's host
  // name), and the deadline of its rendezvous and of every collective.
  std::string collective_host;
  std::chrono::milliseconds collective_timeout{30000};
  // A standalone serve's in-process wake-ups (service/wake_bus.h); null:
  // LISTEN/NOTIFY. Must outlive the agent.
  WakeBus* wake_bus = nullptr;
  // A standalone serve's API service: it takes the view of each job this
  // agent starts or ends (service/written_views.h). Null: none. Must
  // outlive the agent.
  WrittenViews* written_views = nullptr;
};

class Agent final : public LocalAgent {
 public:
  // The pool must outlive the agent.
  Agent(db::ConnectionPool& pool, AgentOptions options);
  ~Agent();

  // Registers (kConflict when another alive agent holds one of its host
  // names) and starts the threads.
  base::Status start();
  // A clean stop: drains (no new job is placed here; the heartbeat goes
  // on), stops the runs at a checkpoint and requeues them (to resume
  // anywhere), requeues the jobs placed here that never started, leaves the
  // pool and stops the threads. No attempt is spent. Idempotent.
  void stop();
  // The view of a job this agent runs as its last progress showed it
  // ({tenant, body}): what the API service in the same process answers
  // while the database is away. nullopt for a job not running here.
  std::optional<std::pair<std::string, std::string>> live_view(std::int64_t job);
  // Its telemetry for /metrics (Prometheus text): the output held for the
  // database and what was dropped at the bound while it was away.
  std::string prometheus_metrics();

  std::int64_t epoch() const { return epoch_; }

  // LocalAgent: the scheduler leader in this process places jobs here
  // started, and hands them over as they commit.
  const std::string& name() const override { return options_.name; }
  bool promise_start(std::int64_t job, std::int64_t epoch) override;
  void forgo(std::int64_t job) override;
  bool take_placed(db::PlacedWork work) override;

 private:
  struct Run;
  class Sink;
  class RendezvousRows;
  using StopReason = RunStop;  // service/run_supervisor.h
  static constexpr int kStarters = 2;

  void supervise_loop();
  void heartbeat_loop();
  // Stops every copy and registers again under a new epoch (the heartbeat
  // found this agent declared lost).
  void rejoin();
  // One look at the jobs placed here (plan_supervision): start new ones,
  // pass cancels on, stop copies whose job moved on.
  void reconcile();
  void stop_all_locked(StopReason reason) REQUIRES(mutex_);
  // Hands a new copy to the starters (from a look, or a placement handed
  // over: `handed_after` and `running_written`, see Run).
  void start_locked(StartRun start, std::int64_t epoch,
                    std::optional<db::JobOutputRepository::ResumePoint> point,
                    std::optional<std::uint64_t> handed_after, bool running_written = false)
      REQUIRES(mutex_);
  // A job placed here starts on one of the starters (start_placed), then
  // trains on a thread of its own (train_placed), and is forgotten. A
  // starter is warm: a thread of its own, new, took 0.5 ms longer to
  // resolve the spec (bench/RESULTS.md, session 40), and a client waits
  // on the RUNNING that follows.
  void start_run(std::shared_ptr<Run> run);
  void run_job(std::shared_ptr<Run> run);
  // Drops a copy that ended (or never started) from runs_, unless another
  // copy of its job took its place.
  void forget_locked(const std::shared_ptr<Run>& run) REQUIRES(mutex_);
  // Lowers the calling thread (one that trains) to
  // AgentOptions::training_nice; says once on stderr if the system refuses.
  // A job's thread is lowered once its RUNNING is written, not before: a
  // client waits on that write, and at nice 10 beside a busy client the
  // submit's commit to it took 0.18 ms longer (p50; bench/RESULTS.md,
  // session 33).
  void train_below();
  // Resolves and starts (or resumes) it: true when it is to train, false
  // where the database or the job has moved on.
  bool start_placed(Run& run);
  // Trains a started copy and writes its end.
  void train_placed(Run& run);
  // Its stored spec, resolved against the hosts it runs on; none when that
  // fails (then rejected, by the first part of a slice).
  std::optional<api::JobSpec> placed_spec(Run& run);
  // The training itself, joined with the other parts of a slice.
  executor::TrainingResult train(Run& run, const api::JobSpec& spec,
                                 const std::optional<executor::Checkpoint>& resume,
                                 executor::TrainingSink& output);
  // The transition ending the run (none: it moved on, nothing to write).
  std::optional<db::Transition> end_of(const Run& run, const executor::TrainingResult& result,
                                       int max_retries);
  // Where a placed job takes up its run: sets its next log and metric seq
  // and the points to skip, and returns the checkpoint to resume from
  // (none: from the start); an error when the database cannot tell.
  base::Result<std::optional<executor::Checkpoint>> resume_of(Run& run);
  // A slice spanning agents: joins the other parts (nullptr when the job
  // runs whole here); the rendezvous's error when it failed.
  base::Result<std::unique_ptr<executor::SliceCollective>> join_slice(const Run& run);
  // The transition ending a run that failed because a peer of its slice
  // was unreachable: requeued while max_retries allows.
  std::optional<db::Transition> retry_after_unreachable_peer(const Run& run,
                                                             const base::Error& error,
                                                             int max_retries);
  // The transition of a job this agent stops running (or never started):
  // requeued to resume anywhere, no attempt spent.
  db::Transition shutdown_requeue(std::int64_t job, std::int64_t placement) const;
  executor::DeviceFacts device_for(const db::JobRow& row) const;

  db::ConnectionPool& pool_;
  db::Repositories repo_;
  db::ClusterRepository cluster_;
  AgentOptions options_;
  std::once_flag nice_refused_;  // before workers_: their threads use it
  executor::WorkerPool workers_;
  std::unique_ptr<executor::DatasetSource> datasets_;
  std::atomic<std::int64_t> epoch_{0};
  // The epoch under which the heartbeat found this agent no longer alive
  // (0: none); the supervisor rejoins while it equals epoch_.
  std::atomic<std::int64_t> lost_epoch_{0};
  // The heartbeat's own connection.
  std::unique_ptr<db::ConnectionPool> heartbeat_pool_;

  // live_view's copies, refreshed with each stored progress.
  void keep_live_view(const Run& run);
  base::Mutex live_mutex_;
  std::map<std::int64_t, std::pair<std::string, std::string>> live_views_ GUARDED_BY(live_mutex_);

  base::Mutex mutex_;
  std::map<std::int64_t, std::shared_ptr<Run>> runs_ GUARDED_BY(mutex_);
  // Slice placements whose part here has ended: never started again (the
  // first part ends the job, or the leader moves it).
  std::set<std::int64_t> ended_slice_placements_ GUARDED_BY(mutex_);
  std::vector<std::thread> ended_ GUARDED_BY(mutex_);
  // Copies handed to the starters whose start has not ended: rejoin()
  // waits for none before it forgets the copies.
  int starting_ GUARDED_BY(mutex_) = 0;
  // The looks at the work begun (reconcile): a copy handed over while one
  // reads may be missing from what it read.
  std::uint64_t looks_ GUARDED_BY(mutex_) = 0;
  std::condition_variable starts_done_;
  // The jobs this agent promised the leader to start as their placement
  // commits (promise_start), each with the view generation read before that
  // write (WrittenViews); stop() waits until each is taken or forgone.
  std::map<std::int64_t, std::uint64_t> promised_ GUARDED_BY(mutex_);
  std::condition_variable promises_settled_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  // Set last in stop(), just before the agent leaves.
  bool heartbeat_stopping_ GUARDED_BY(mutex_) = false;
  bool woken_ GUARDED_BY(mutex_) = false;  // by the wake bus
  void notify(const char* channel, const std::string& payload);
  // A transition of a job placed here (or of a slice's job it has a part
  // of), made known to this process's API service.
  base::Result<bool> write(const db::Transition& t);
  // The same for the transition that starts or ends a job (a first
  // part's), whose view it hands to options_.written_views when there is
  // one: a finished job's view is then kept from its end on, not only from
  // a read that followed the end's forget (service/view_cache.h).
  base::Result<bool> write_viewed(const db::Transition& t);
  // The end of `run`'s job (its first part's), written with write_viewed
  // until the database answers it, while this agent runs: a copy whose end
  // went unwritten is not started again when it was a slice's (its parts
  // ended with it), which would leave the job RUNNING with no copy
  // anywhere; a whole job's copy would train again from its checkpoint.
  void write_end(Run& run, const db::Transition& end);
  // A slice's part here ended (its end written, for the first part): its
  // placement is never started again here.
  void end_slice_part(const Run& run);
  std::condition_variable wake_;
  std::condition_variable heartbeat_wake_;

  // Every write fenced by its run's placement; stored lines wake the
  // log followers of every replica.
  RepositoryTelemetryStore telemetry_store_{repo_, cluster_, options_.wake_bus};
  TelemetryWriter telemetry_{telemetry_store_, telemetry_options(options_)};
  static TelemetryWriterOptions telemetry_options(const AgentOptions& options);

  std::thread supervisor_;
  std::thread heartbeater_;
  // Joined in stop(); declared after what their work uses, so that it goes
  // first.
  boost::asio::thread_pool starters_{kStarters};
  bool started_ = false;
};

}  // namespace tpujobs::service
