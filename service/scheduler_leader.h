// The scheduler leader (DESIGN §9): one replica at a time, elected through a
// PostgreSQL advisory lock, turns the tables into placements. Each pass it
//   - declares lost the agents silent for `agent_silence`, and requeues the
//     jobs placed on an agent that is lost or rejoined since, or on a host an
//     admin failed (from their last checkpoint while max_retries allows;
//     else FAILED, UNAVAILABLE),
//   - cancels the queued jobs whose cancel was requested,
//   - orders the queue by priority, then the tenants' fair-share factors
//     (scheduler/fair_share.h), then id,
//   - plans the pass with scheduler::plan_pass (scheduler/pass.h: placement,
//     reservation and backfill, preemption, reasons, start_by and dependency
//     verdicts) over a snapshot of the tables, and commits each placed job
//     QUEUED -> STARTING with its agent and that agent's epoch, and only then
//     wakes the agent (NOTIFY): an agent acts on committed placements only,
//   - lets the head of the queue preempt running jobs of lower priority
//     (the plan's preemption): each victim is marked
//     preempted_by it under its placement epoch, then its agent is woken to
//     stop it at a checkpoint and requeue it; the preemptor is placed by a
//     later pass once the cores are free,
//   - records why the others wait (jobs.pending).
// It keeps no state between passes: a new leader starts from the tables.
// Every replica runs one; the others wait for the lock, trying again every
// poll interval, so a leader's death is taken over within one interval of
// PostgreSQL seeing its session end.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "api/resolution.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "db/cluster_repository.h"
#include "db/repositories.h"
#include "lightning/resolve.h"
#include "scheduler/capacity.h"
#include "scheduler/dependencies.h"
#include "scheduler/pass.h"
#include "scheduler/request.h"
#include "service/fair_share_usage.h"
#include "service/leader_store.h"
#include "service/wake_bus.h"

namespace tpujobs::service {

struct SchedulerLeaderOptions {
  std::string conninfo;  // for the leader lock and the LISTEN connection
  std::string instance = "tpujobs";
  std::chrono::milliseconds agent_silence{10000};
  // An alive agent silent this long gets no new job (three of its
  // heartbeats missed).
  std::chrono::milliseconds late_heartbeat{3000};
  std::chrono::milliseconds poll_interval{500};
  // A leader that sends nothing on its lock's session this long (paused, cut
  // off) loses the lock to another replica: with the poll interval, within
  // DESIGN §9's 10 s. A pass must take less.
  std::chrono::milliseconds lock_idle_timeout{6000};
  // A pass starts at least this long after the last one ended: a burst of
  // submits makes one pass, not one each.
  std::chrono::milliseconds min_pass_interval{20};
  int max_cpu_jobs_per_agent = 2;
  // The head does not preempt when its reserved start is known and nearer than this.
  std::chrono::milliseconds preemption_min_wait{60000};
  base::Clock* clock = &base::real_clock();  // must outlive the leader
  // Issue 17: fair share orders the queue (the factors re-read from the
  // stored usage this often).
  FairShareOptions fair_share;
  std::chrono::milliseconds fair_share_interval{5000};
  // The leader keeps the unfinished jobs between passes and reads only the
  // rows written since (db::JobRepository::read_to_schedule); it reads them
  // all again this often, on a new term, and after a failed pass.
  std::chrono::milliseconds complete_read_interval{30000};
  // A standalone serve's in-process wake-ups (service/wake_bus.h); null:
  // LISTEN/NOTIFY. Must outlive the leader.
  WakeBus* wake_bus = nullptr;
};

class SchedulerLeader {
 public:
  // The pool must outlive the leader.
  SchedulerLeader(db::ConnectionPool& pool, SchedulerLeaderOptions options);
  // Over another store (a fake in unit tests: run_pass only; start() also
  // needs options.conninfo for the lock and LISTEN). It must outlive the
  // leader.
  SchedulerLeader(LeaderStore& store, SchedulerLeaderOptions options);
  ~SchedulerLeader();

  void start();
  // Gives up leadership (another replica takes over) and stops the thread.
  void stop();
  bool is_leader() const { return leader_; }
  // Its passes so far, for /metrics (Prometheus text: a summary of the
  // passes' wall time, and the longest).
  std::string prometheus_metrics() const;

  // One pass over the tables, as the leader makes it (for tests; the thread
  // calls it while it holds the lock).
  db::Status run_pass();
  // Takes a new scheduler term, as the thread does each time it gains the
  // lock: from then on the leader's writes about jobs land only while the
  // term is its own, so a leader paused mid-pass whose lead passed to
  // another replica writes nothing stale when it resumes. Without one (a
  // test calling run_pass alone) its writes are not fenced.
  db::Status begin_term();

 private:
  void loop();
  db::Status pass();  // run_pass without its bookkeeping of the database's reach
  db::Status requeue_orphans();
  // Takes a placed job off its agent: CANCELLED when a cancel was accepted,
  // else requeued (reason `retry_reason`) while max_retries allows, else
  // FAILED, UNAVAILABLE with `hint`. With an `unstarted_reason`, a job that
  // never started there (STARTING) is requeued with that reason and no
  // retry spent, up to lifecycle::kFreeUnstartedRequeues times.
  db::Status move_off(const db::JobRow& row, const std::string& retry_reason,
                      const std::string& hint, const std::string& unstarted_reason = "");
  // One pass's snapshot and what the leader needs to write its plan back
  // (scheduler_leader_pass.cc).
  struct PassState;
  // Reads the tables into `state` (requeuing jobs on failed hosts and
  // cancelling queued jobs whose cancel was requested on the way).
  db::Status read_pass(PassState& state);
  db::Status add_hosts(PassState& state, const std::vector<db::AgentRow>& agents,
                       const std::vector<db::ClusterHostRow>& hosts);
  db::Status add_job(PassState& state, const db::JobRow& row);
  db::Status add_running(PassState& state, const db::JobRow& row);
  db::Status read_fair_share(PassState& state, const std::vector<const db::JobRow*>& rows);
  db::Status write_unstartable(const PassState& state, const scheduler::PassPlan& plan);
  db::Status write_starts(const PassState& state, const scheduler::PassPlan& plan,
                          std::set<std::string>& woken);
  db::Status write_preemption(const PassState& state, const scheduler::PassPlan& plan,
                              std::set<std::string>& woken);
  db::Status write_pending(const PassState& state, const scheduler::PassPlan& plan);
  // A slice spanning agents: its placement number (the rendezvous' scope)
  // and its parts {agent, epoch, first_host, hosts}, for allocation.slice.
  db::Result<nlohmann::json> slice_allocation(const PassState& state,
                                              const scheduler::PlannedStart& p);
  static std::string describe_parts(const PassState& state, const scheduler::PlannedStart& p);
  // The job's resource request, from its stored spec; nullopt when the
  // pool's capacity cannot resolve it (no agent with such hosts yet).
  std::optional<scheduler::ResourceRequest> request_of(const db::JobRow& row,
                                                       const scheduler::PoolCapacity& capacity);

  // Workload rules (scheduler/dependencies.h), as the single-process
  // JobManager applies them.
  struct WorkloadFields {
    std::vector<scheduler::Dependency> depends_on;
    std::optional<std::chrono::milliseconds> start_by;
    // training.timeout: how long it runs at most, for reservations and backfill.
    std::optional<std::chrono::milliseconds> time_limit;
    bool preemptible = true;
  };
  // What the leader takes from a job's stored spec, read once a job (the
  // pass's rows come without it: LeaderStore::read_to_schedule).
  struct SpecFacts {
    // What resolves its resource request; nullopt when the spec does not parse.
    std::optional<lightning::TrainerSettings> trainer;
    WorkloadFields workload;  // empty when it does not parse
    int max_retries = 0;
  };
  // Reads the stored specs of the jobs not known yet.
  db::Status learn_specs(const std::vector<std::int64_t>& jobs);
  // Brings unfinished_ up to date: the rows written since the last read,
  // or all of them; fills `rows` with them, in priority then id order.
  db::Status read_unfinished(std::vector<const db::JobRow*>& rows);
  // The job's facts; empty ones for a job whose spec was not found.
  const SpecFacts& facts_of(std::int64_t job) const;
  const WorkloadFields& workload_of(const db::JobRow& row) const {
    return facts_of(row.id).workload;
  }
  // Ends a queued job CANCELLED with `reason` (StartDeadlineExceeded,
  // DependencyNeverSatisfied); a job placed or cancelled meanwhile is left.
  db::Status cancel_unstartable(std::int64_t job, const std::string& reason,
                                const std::string& detail, const std::string& hint);

  // The leader's writes, fenced by its term.
  db::Result<bool> write(db::Transition t);
  // Tells this process's API service which jobs' rows changed (the wake
  // bus's kJobsChangedChannel); nothing without a wake bus.
  void changed(const std::vector<std::int64_t>& jobs);

  std::unique_ptr<LeaderStore> owned_store_;
  LeaderStore& store_;
  SchedulerLeaderOptions options_;
  db::LeaderLock lock_;
  // job -> request (the thread only)
  std::unordered_map<std::int64_t, scheduler::ResourceRequest> requests_;
  // unfinished job -> its spec's facts (the thread only)
  std::unordered_map<std::int64_t, SpecFacts> specs_;
  // What a waiting job's jobs.pending says, as last written: compared
  // field by field each pass, so that only the reasons that changed are
  // rendered and written (the thread only).
  struct PendingNote {
    scheduler::PendingReason reason = scheduler::PendingReason::kResources;
    int queue_position = 0;  // 0: held by its dependencies, not in the queue
    double fair_share = 0;
    std::string detail;
    std::optional<scheduler::PassTime> estimated_start;
    std::optional<std::int64_t> preempted_by;
    std::uint64_t pass = 0;  // the last pass that named the job
  };
  std::unordered_map<std::int64_t, PendingNote> pending_written_;
  std::uint64_t pending_passes_ = 0;
  // Since when this replica has led with the database answering (the thread only).
  base::Clock::time_point reachable_since_{};
  base::Clock::time_point rendezvous_swept_{};  // old rendezvous keys last removed
  // The tenants' fair-share factors, and when they were read (the thread only).
  std::map<std::string, double> fair_share_;
  std::optional<base::Clock::time_point> fair_share_read_;
  std::optional<std::int64_t> term_;  // the scheduler term it leads under (the thread only)
  // The unfinished jobs as last read, without their specs; the low water
  // to read the next changes from (none: read them all); when all were
  // last read (the thread only).
  std::map<std::int64_t, db::JobRow> unfinished_;
  std::vector<const db::JobRow*> order_;  // unfinished_ by priority, then id
  std::optional<std::string> low_water_;
  base::Clock::time_point complete_read_at_{};

  std::atomic<bool> leader_{false};
  std::atomic<std::int64_t> passes_{0};
  std::atomic<std::int64_t> pass_nanos_{0};      // their sum
  std::atomic<std::int64_t> max_pass_nanos_{0};  // the longest
  base::Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool woken_ GUARDED_BY(mutex_) = false;  // by the wake bus
  void notify(const char* channel, const std::string& payload);
  std::thread thread_;
};

}  // namespace tpujobs::service
