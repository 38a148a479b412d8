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
//     QUEUED -> STARTING with its agent, that agent's epoch and a placement
//     number of a block it reserved (the writes' fence), and only then
//     wakes the agent (NOTIFY): an agent acts on committed placements only,
//   - lets the head of the queue preempt running jobs of lower priority
//     (the plan's preemption): each victim is marked
//     preempted_by it under its placement, then its agent is woken to
//     stop it at a checkpoint and requeue it; the preemptor is placed by a
//     later pass once the cores are free,
//   - records why the others wait (job_pending): the reasons that changed
//     are handed to a thread of their own (service/reason_writer.h), and
//     the next pass does not wait on them.
// A pass whose queue, agents, hosts, running jobs and tenants are as they
// were at the last plan, before the time that plan holds until
// (scheduler::PassPlan::holds_until), has that plan again: it plans and
// writes nothing (with a long queue on a drained pool, the poll's passes
// cost a read of the tables, not a plan of every waiting job).
// It keeps the unfinished jobs between passes as compact entries (what
// placement needs, not the spec), updated from the rows written since its
// last read; it reads them all again now and then, and a new term starts
// from the tables. In a standalone serve, a pass that only submits woke
// may place the new jobs without reading the tables at all (see
// submitted_rows).
// Every replica runs one; the others wait for the lock, trying again every
// poll interval, so a leader's death is taken over within one interval of
// PostgreSQL seeing its session end.
#pragma once

#include <array>
#include <atomic>
#include <boost/container/deque.hpp>
#include <boost/container/options.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "api/resolution.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "db/cluster_repository.h"
#include "db/listener.h"
#include "db/repositories.h"
#include "lightning/resolve.h"
#include "scheduler/capacity.h"
#include "scheduler/dependencies.h"
#include "scheduler/pass.h"
#include "scheduler/request.h"
#include "service/fair_share_usage.h"
#include "service/leader_store.h"
#include "service/local_agent.h"
#include "service/reason_writer.h"
#include "service/submitted_specs.h"
#include "service/wake_bus.h"

namespace tpujobs::service {

struct SchedulerLeaderOptions {
  std::string conninfo;  // for the leader lock and the LISTEN connection
  // The nice value of the thread that makes the passes (base/
  // thread_priority.h); 0 leaves it at the process's. A value the system
  // refuses is said once on stderr, and the passes run at the process's.
  int thread_nice = 0;
  std::string instance = "tpujobs";
  std::chrono::milliseconds agent_silence{10000};
  // A judgement of silence the database answers later than this is dropped
  // as a stall (the stall held the heartbeats up too). None: a quarter of
  // agent_silence.
  std::optional<std::chrono::milliseconds> late_answer;
  // An alive agent silent this long gets no new job (three of its
  // heartbeats missed).
  std::chrono::milliseconds late_heartbeat{3000};
  // Also how long a pass that only submits woke skips the housekeeping
  // done before it (see Housekeeping): the polls' passes keep it, so a job
  // submitted to an idle pool is not the one that waits on it.
  std::chrono::milliseconds poll_interval{500};
  // A leader that sends nothing on its lock's session this long (paused, cut
  // off) loses the lock to another replica: with the poll interval, within
  // DESIGN §9's 10 s. A pass must take less.
  std::chrono::milliseconds lock_idle_timeout{6000};
  // A burst of wake-ups makes one pass, not one each: see next_pass_gap.
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
  // rows written since (db/scheduling_read.h). It reads them all on a new
  // term and after a failed pass. Otherwise it sweeps: it reads every
  // unfinished job back in slices of `sweep_rows`, in id order, one slice
  // a pass at most every `sweep_interval`, and drops the jobs a whole sweep
  // did not find (a row gone unmarked). A queue of 100,000 is read back in
  // 25 s, and no pass reads all of it (issue 29: 400-600 ms).
  std::chrono::milliseconds sweep_interval{500};
  int sweep_rows = 2000;
  // A standalone serve's in-process wake-ups (service/wake_bus.h); null:
  // LISTEN/NOTIFY. Must outlive the leader.
  WakeBus* wake_bus = nullptr;
  // The specs this process's API service hands over as it commits jobs
  // (service/submitted_specs.h); null: every spec is parsed from its text.
  // Must outlive the leader.
  SubmittedSpecs* submitted_specs = nullptr;
  // The agent in this process (service/local_agent.h): the placements on it
  // of jobs that run whole are handed to it as they commit. Null: none, or
  // every agent reads its work when woken. Must outlive the leader.
  LocalAgent* local_agent = nullptr;
};

// When the next pass may start. Wake-ups that came in while each of the
// last two passes ran are a burst (submits arriving faster than passes):
// the next pass waits until `min_interval` after the last one ended, so a
// burst makes one pass, not one each. Otherwise the leader passes on
// credit: it earns the time it was idle between passes, up to
// `min_interval`, and spends each pass's length; the next pass waits only
// until the credit is back to zero (never longer than `min_interval`). A
// job submitted to a quiet pool, or just after the pass for another job's
// end, is placed at once; a leader woken without pause passes at most about
// half the time.
class PassPacer {
 public:
  using time_point = base::Clock::time_point;
  using duration = time_point::duration;
  explicit PassPacer(std::chrono::milliseconds min_interval)
      : min_interval_(min_interval), credit_(min_interval) {}
  // After the pass that ran from `began` to `ended`: when the next may start.
  time_point next(time_point began, time_point ended, bool woken_during_pass);

 private:
  const std::chrono::milliseconds min_interval_;
  duration credit_;
  std::optional<time_point> last_ended_;
  bool woken_during_previous_ = false;
};

// When a pass does the leader's housekeeping: checking that it still holds
// its lock, judging the agents' silence and requeuing the jobs of agents
// lost or gone, and sweeping old rendezvous keys. Time and agents change
// what those find, a submit does not: a pass that only submits woke skips
// them when they were done less than `interval` ago, so a job submitted to
// an idle pool waits on 5 fewer round trips to the database. Any other
// wake-up (a job that ended, an agent that left, the poll) and every pass
// after a failed one do them; a lost agent is found at most `interval`
// later than before.
class Housekeeping {
 public:
  explicit Housekeeping(std::chrono::milliseconds interval) : interval_(interval) {}
  bool due(base::Clock::time_point now, bool submits_only) const {
    return !done_ || !submits_only || now - done_at_ >= interval_;
  }
  // Done, and the pass it came with succeeded.
  void done(base::Clock::time_point now) {
    done_ = true;
    done_at_ = now;
  }
  // The pass failed: the next one does it.
  void failed() { done_ = false; }

 private:
  const std::chrono::milliseconds interval_;
  bool done_ = false;
  base::Clock::time_point done_at_{};
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
  // Its passes so far, for /metrics (Prometheus text: a histogram of the
  // passes' wall time, the longest, and each phase's total and longest).
  std::string prometheus_metrics() const;

  // One pass over the tables, as the leader makes it (for tests; the thread
  // calls it while it holds the lock). Without `housekeeping` it neither
  // judges silence nor requeues orphans (see Housekeeping).
  // `submits_only`: only submits woke it since the last pass.
  base::Status run_pass(bool housekeeping = true, bool submits_only = false);
  // A pass that takes this long or longer is told on stderr with its
  // phases and its housekeeping's steps, at most one every kSlowPassesApart
  // (the next tells how many were not): the metrics keep only each phase's
  // longest, not when it was.
  static constexpr std::chrono::milliseconds kSlowPass{250};
  static constexpr std::chrono::seconds kSlowPassesApart{10};
  // Takes a new scheduler term, as the thread does each time it gains the
  // lock: from then on the leader's writes about jobs land only while the
  // term is its own, so a leader paused mid-pass whose lead passed to
  // another replica writes nothing stale when it resumes. Without one (a
  // test calling run_pass alone) its writes are not fenced.
  base::Status begin_term();
  // The jobs of the kept waiting entries, in the order kept (for tests).
  std::vector<std::int64_t> kept_waiting() const;

 private:
  void loop();
  struct Wake {
    bool during_pass = false;   // one had come in already, while the pass before ran (a burst)
    bool submits_only = false;  // woken, and only by submits
  };
  // Waits for a wake-up or the poll interval.
  Wake wait_for_wake(std::optional<db::Listener>& listener);
  // What the reasons' writer calls: the store, and the views after a write.
  ReasonWriter::Hooks reason_hooks();
  // run_pass without its bookkeeping of the database's reach.
  base::Status pass(bool housekeeping, bool submits_only);
  // The parts of a pass, each timed for /metrics.
  enum Phase : std::size_t { kHousekeeping, kRead, kPlan, kWrite, kReasons, kPhases };
  static constexpr std::array<const char*, kPhases> kPhaseNames = {"housekeeping", "read", "plan",
                                                                   "write", "reasons"};
  // The steps of housekeeping, each timed for /metrics as well: the
  // judgement of silence (mark_lost: its connection, its round trip, its
  // commit), the read and requeue of the orphans, and the sweep of old
  // rendezvous keys (once a minute).
  enum Step : std::size_t { kJudge, kOrphans, kSweep, kSteps };
  static constexpr std::array<const char*, kSteps> kStepNames = {"judge", "orphans", "sweep"};
  // Tells on stderr of a pass that took `nanos` (kSlowPass or more): its
  // phases (what phase_nanos_ gained since `before`), its housekeeping's
  // steps and the waiting jobs.
  // `cpu`: of it, the time on this thread's CPU.
  void tell_slow_pass(std::int64_t nanos, std::int64_t cpu,
                      const std::array<std::int64_t, kPhases>& before);
  // Runs `part`, adding its wall time to `phase`'s (or `step`'s, and the
  // pass's pass_step_nanos_), and returns what it does.
  template <typename Part>
  decltype(auto) timed(Phase phase, Part&& part);
  template <typename Part>
  decltype(auto) timed(Step step, Part&& part);
  // The phases' and steps' series of /metrics (prometheus_metrics), with
  // those of `longest`, the longest pass.
  struct LongestPass;
  void write_part_metrics(std::ostream& out, const LongestPass& longest) const;
  base::Status judge_silence();  // declares lost the agents silent too long
  base::Status requeue_orphans();
  // Takes a placed job off its agent: CANCELLED when a cancel was accepted,
  // else requeued (reason `retry_reason`) while max_retries allows, else
  // FAILED, UNAVAILABLE with `hint`. With an `unstarted_reason`, a job that
  // never started there (STARTING) is requeued with that reason and no
  // retry spent, up to lifecycle::kFreeUnstartedRequeues times.
  base::Status move_off(const db::JobRow& row, const std::string& retry_reason,
                        const std::string& hint, const std::string& unstarted_reason = "");
  // One pass's hosts and agents, and what the leader needs to write its
  // plan back (scheduler_leader_pass.cc).
  struct PassState;
  // The new jobs a pass that only submits woke may place without reading
  // the tables: the rows this process's API service handed over of jobs
  // it committed since the last read, when that read is less than a poll
  // interval old, the leader wrote nothing since, and the wake-ups come
  // through this process's wake bus. Every change this process makes to
  // what a pass reads wakes the leader otherwise (an end, a cancel, a
  // host's health, a quota, an agent that leaves), and no other process
  // writes to a standalone serve's database: the tables are then as that
  // read found them but for these rows, and the agents' silence longer by
  // the time since. None otherwise (the pass reads).
  std::vector<db::JobRow> submitted_rows(bool submits_only) const;
  // The rows this process's API service handed over of the jobs it
  // committed since the last read (above every id read), that the leader
  // does not know yet.
  std::vector<db::JobRow> handed_rows() const;
  // Reads the tables into snapshot_ and `state` (requeuing jobs on failed
  // hosts and cancelling queued jobs whose cancel was requested on the way),
  // or, with `submitted` rows, takes them with what the last read found.
  base::Status read_pass(PassState& state, std::vector<db::JobRow> submitted);
  // A read since a low water: the handed rows (handed_rows) are taken as
  // handed over, and the read leaves out each of them, and each row held
  // before (held_), that no transaction has written since its insert.
  base::Result<db::SchedulingRead> read_since(db::JobRepository::ScheduleSince since);
  // Holds `rows` as their inserts wrote them (held_).
  void hold(const std::vector<db::JobRow>& rows);
  // Drops what a read since the low water would leave out anyway.
  void prune_held();
  // Whether transaction id `xid` is below `low_water` (an xid8 as text; one
  // that does not read as a number counts as above every id).
  static bool xid_below(std::int64_t xid, const std::string& low_water);
  base::Status add_hosts(PassState& state, const std::vector<db::AgentRow>& agents,
                         const std::vector<db::ClusterHostRow>& hosts);
  base::Status add_running(PassState& state, const db::JobRow& row);
  base::Status read_fair_share();
  base::Status write_unstartable(const scheduler::PassPlan& plan);
  // The plan's placements, in one commit. Those on options_.local_agent
  // that it promises to start (service/local_agent.h) commit started and
  // are handed to it; the others' agents are added to `woken`.
  base::Status write_starts(const PassState& state, const scheduler::PassPlan& plan,
                            std::set<std::string>& woken);
  // The placement of a planned start, with its allocation and a number.
  base::Result<db::Transition> placement(const PassState& state, const scheduler::PlannedStart& p);
  base::Status write_preemption(const scheduler::PassPlan& plan, std::set<std::string>& woken);
  base::Status write_pending(const scheduler::PassPlan& plan);
  // Whether the last plan holds for this pass's snapshot (see above).
  bool plan_holds() const;
  void planned(const scheduler::PassPlan& plan);
  // A number for the next placement (JobRow::placement), from the block
  // last reserved, or from a new one.
  base::Result<std::int64_t> next_placement();
  // A slice spanning agents: its placement number (the rendezvous' scope)
  // and its parts {agent, epoch, first_host, hosts}, for allocation.slice.
  nlohmann::json slice_allocation(const PassState& state, const scheduler::PlannedStart& p,
                                  std::int64_t placement) const;
  std::string describe_parts(const scheduler::PlannedStart& p) const;

  // What the leader keeps of each unfinished job between passes
  // (scheduler_leader_queue.cc): the facts of its spec, read once, and
  // while it waits its compact entry in snapshot_.waiting. A pass over an
  // unchanged queue reads them as they are; the rows written since the
  // last read update them.
  struct JobFacts {
    int shape = -1;         // index into snapshot_.shapes; -1: its request does not resolve
    int dependencies = -1;  // index into snapshot_.dependencies; -1: none
    std::optional<std::chrono::milliseconds> start_by;
    // training.timeout: how long it runs at most, for reservations and backfill.
    std::optional<std::chrono::milliseconds> time_limit;
    int max_retries = 0;
    bool preemptible = true;
  };
  // What a waiting job's job_pending says, as last written: compared
  // field by field each pass, so that only the reasons that changed are
  // rendered and written.
  struct PendingNote {
    std::uint64_t pass = 0;  // the pending write it was written by (0: none)
    scheduler::PendingReason reason = scheduler::PendingReason::kResources;
    int queue_position = 0;  // 0: held by its dependencies, not in the queue
    double fair_share = 0;
    std::string_view detail;  // a waiting job's (static text)
    std::string held;         // a held job's
    std::optional<scheduler::PassTime> estimated_start;
    std::optional<std::int64_t> preempted_by;
  };
  struct KnownJob {
    JobFacts facts;
    std::int32_t waiting = -1;  // index into snapshot_.waiting; -1: not waiting
    std::uint32_t seen = 0;     // the complete read or sweep that last returned it
  };
  // What a waiting job has beside its entry, at the same index: write_pending
  // reads them in the plan's order, which is nearly the entries' own, not
  // through jobs_ (a lookup a job, 100,000 a pass).
  struct Waiter {
    std::optional<std::int64_t> preempted_by;
    PendingNote note;
  };
  // Learns the facts of the jobs not known yet: from the specs this
  // process's API handed over (options_.submitted_specs), else from their
  // spec texts, `texts` (read with their rows) or the stored ones, read in
  // one round trip (no row is changed when that read fails).
  base::Status learn_specs(const std::vector<std::int64_t>& jobs,
                           std::map<std::int64_t, std::string> texts = {});
  void learn(std::int64_t id, KnownJob& job, PlacementSpec spec);
  // What the next read of the queue is since, with the sweep's next slice
  // when one is due: none when a complete read is due.
  std::optional<db::JobRepository::ScheduleSince> schedule_since() const;
  // Brings the kept jobs up to date from `read`: the rows written since the
  // last read and a slice of the sweep, or all of them (a complete read
  // rebuilds the waiting entries).
  base::Status read_unfinished(db::JobRepository::ScheduleRead read);
  base::Status read_rows(db::JobRepository::ScheduleRead read, bool& was_complete);
  // The sweep's slice: true when it changed what the leader keeps.
  bool apply_swept(db::JobRepository::ScheduleRead::Swept& swept);
  // One row read, by the read numbered `seen` (a complete read's or the
  // sweep's). True when it changed the kept queue.
  bool apply(db::JobRow& row, std::uint32_t seen);
  // Drops all the leader holds of `job`; true when it knew the job.
  bool forget(std::int64_t job);
  // Forgets the jobs the sweep (or complete read) did not see; true if any.
  bool forget_unseen();
  // True when the job's entry is new or differs.
  bool set_waiting(KnownJob& job, const db::JobRow& row);
  void drop_waiting(KnownJob& job);
  // Puts the last entries, from `added` on, among the ones before them in
  // id order (see there).
  void order_added(std::size_t added);
  // Resolves the requests of the jobs learned since, and of every job whose
  // request did not resolve when the pool's capacity changed.
  void resolve(const scheduler::PoolCapacity& capacity);
  int shape_index(const scheduler::ResourceRequest& request);
  int tenant(const std::string& name);
  // The job's facts; empty ones for a job whose spec was not found.
  const JobFacts& facts_of(std::int64_t job) const;
  // Ends a queued job CANCELLED with `reason` (StartDeadlineExceeded,
  // DependencyNeverSatisfied); a job placed or cancelled meanwhile is left.
  base::Status cancel_unstartable(std::int64_t job, const std::string& reason,
                                  const std::string& detail, const std::string& hint);

  // The leader's writes, fenced by its term: whether it applied, and if
  // so whether as CANCELLED instead (a cancel stored since the read).
  base::Result<db::TransitionOutcome> write(db::Transition t);
  // What every write of the leader's does first: fenced by its term; the
  // kept queue changes.
  void fence(db::Transition& t);
  // Tells this process's API service which jobs' rows changed (the wake
  // bus's kJobsChangedChannel); nothing without a wake bus.
  void changed(const std::vector<std::int64_t>& jobs);
  // Announces the ends this pass wrote on tpujobs_logs (waits and log
  // followers on every replica answer at once), a few hundred ids a
  // notification: one round trip, not one a job (a dependency chain's
  // cancels end thousands in one pass).
  void announce_ended();

  std::unique_ptr<LeaderStore> owned_store_;
  LeaderStore& store_;
  SchedulerLeaderOptions options_;
  db::LeaderLock lock_;
  // The thread only, from here to leader_.
  // The snapshot plan_pass reads. Its waiting entries, tenants, shapes and
  // dependency lists are kept between passes; its agents, hosts, running
  // jobs and the tenants' use are read again each pass.
  scheduler::PassSnapshot snapshot_;
  // One per snapshot_.waiting, in blocks of 1,024 that never move: a
  // std::vector of them grows past 65,536 in one pass of a burst of
  // submits, and a stand-alone vector of elements their size took 25 ms to
  // grow past it on a 2-core guest (bench/RESULTS.md, issue 29).
  boost::container::deque<Waiter, void,
                          boost::container::deque_options_t<boost::container::block_size<1024>>>
      waiters_;
  std::size_t entries_added_ = 0;                    // by the rows of the read being applied
  std::unordered_map<std::int64_t, KnownJob> jobs_;  // the unfinished jobs
  std::map<std::int64_t, db::JobRow> placed_;        // those STARTING or RUNNING
  std::vector<std::int64_t> cancels_;  // queued, their cancel requested: cancelled next
  // The trainer settings of the jobs whose request did not resolve yet,
  // and the capacity they were last tried against.
  std::unordered_map<std::int64_t, lightning::TrainerSettings> unresolved_;
  std::vector<std::int64_t> learned_;  // not tried yet
  // Learned from their texts this pass: a hand-over of theirs that comes
  // late is dropped at the next (learn_specs).
  std::vector<std::int64_t> parsed_unhanded_;
  std::optional<scheduler::PoolCapacity> resolved_against_;
  std::map<std::tuple<int, int, int, int, int>, int> shape_index_;
  std::unordered_map<std::string, int> tenant_index_;
  std::vector<int> tenant_jobs_;            // per tenant: its unfinished jobs
  std::vector<int> free_dependency_lists_;  // unused indexes into snapshot_.dependencies
  std::uint32_t reads_numbered_ = 0;        // complete reads and sweeps, numbered from 1
  std::uint64_t pending_passes_ = 0;
  std::uint64_t pending_written_ = 0;  // the last pending write that landed (0: none)
  bool pending_deferred_ = false;      // the last pending write left reasons for the next
  // Raised by every change to the kept queue and by every write of the
  // leader's (plan_holds compares it with the last plan's).
  std::uint64_t queue_version_ = 0;
  // The placement numbers reserved and not yet handed out: [next, end).
  std::int64_t next_placement_ = 0;
  std::int64_t placements_end_ = 0;
  // The last plan: the queue's version and the snapshot's other parts it
  // was made from, and until when it holds (none: no plan to reuse).
  std::uint64_t planned_version_ = 0;
  scheduler::PassSnapshot planned_;
  std::optional<scheduler::PassTime> planned_holds_until_;
  // A pass renders at most this many pending reasons, the first in the
  // queue first, and a statement of the writer's stores at most as many;
  // the others come with the next passes. So a change of every reason in
  // a long queue (a job queued ahead of 100,000 moves each one's position)
  // neither makes a pass render them all nor one statement write them all:
  // writing one reason into jobs took 30-60 µs of the database, 5,000 made
  // passes of 300 ms, and PostgreSQL planned a batch that large as a scan
  // of the whole table (bench/RESULTS.md, session 35).
  static constexpr std::size_t kMaxPendingWrites = 1000;
  // Since when this replica has led with the database answering.
  base::Clock::time_point reachable_since_{};
  base::Clock::time_point rendezvous_swept_{};  // old rendezvous keys last removed
  // The tenants' fair-share factors, and when they were read.
  std::map<std::string, double> fair_share_;
  std::optional<base::Clock::time_point> fair_share_read_;
  std::optional<std::int64_t> term_;       // the scheduler term it leads under
  std::optional<std::int64_t> last_term_;  // the last it took
  // The server's crash recovery as the last term read it (SchedulerTerm).
  std::optional<std::int64_t> last_recovered_at_;
  // The low water to read the next changes from (none: read them all);
  // when all were last read.
  std::optional<std::string> low_water_;
  std::int64_t highest_read_ = 0;    // the highest job id read: a higher one comes with its spec
  std::vector<std::int64_t> ended_;  // this pass's ends, for announce_ended()
  // Raised by every write of the leader's to the jobs (fence(), a
  // preemption's request): a read before one is stale for submitted_rows.
  std::uint64_t writes_ = 0;
  // What the last read brought beside the queue, for submitted_rows: when
  // it was read, and writes_ then.
  struct KeptRead {
    std::vector<db::AgentRow> agents;
    std::vector<db::ClusterHostRow> hosts;
    std::map<std::string, int> quotas;
    base::Clock::time_point at{};
    std::uint64_t writes = 0;
  };
  std::optional<KeptRead> kept_read_;
  // The sweep: its number (KnownJob::seen), the id its next slice reads
  // above (0: a new sweep), and when its last slice was read.
  std::uint32_t sweep_ = 0;
  std::int64_t sweep_after_ = 0;
  base::Clock::time_point swept_at_{};
  // The rows the leader holds as their inserts wrote them, taken from the
  // hand-over (handed_rows): job -> changed_xid (the insert's transaction).
  // A read since leaves each out until another transaction writes it. In
  // a burst of submits a read would otherwise bring back, a second time,
  // every row the passes since took unread (2,500 a read at 5,000 submits a
  // second), and in a cluster each new row with its spec, which the
  // hand-over gave already (bench/RESULTS.md, session 65). Dropped when the
  // low water passes its transaction: no read since returns it then.
  std::map<std::int64_t, std::int64_t> held_;

  std::atomic<bool> leader_{false};
  std::atomic<std::int64_t> passes_{0};
  std::atomic<std::int64_t> pass_nanos_{0};  // their sum
  // The CPU time of the leader's thread in them.
  std::atomic<std::int64_t> pass_cpu_nanos_{0};
  // The longest pass: its wall and CPU time, its phases, and whether it
  // read the tables (else it placed the jobs submitted here since the last
  // read: submitted_rows). Under a lock, so that a scrape reads one pass's.
  struct LongestPass {
    std::int64_t nanos = 0;
    std::int64_t cpu_nanos = 0;
    std::array<std::int64_t, kPhases> phase_nanos{};
    std::array<std::int64_t, kSteps> step_nanos{};
    bool read_tables = false;
  };
  mutable base::Mutex longest_mutex_;
  LongestPass longest_ GUARDED_BY(longest_mutex_);
  bool pass_read_tables_ = false;  // the current pass's
  // The passes by length (a Prometheus histogram): passes at most each bound
  // long, not counting those of a lower one.
  static constexpr std::array<double, 9> kPassBuckets = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                         0.25,  0.5,  1,     2.5};
  std::array<std::atomic<std::int64_t>, kPassBuckets.size()> passes_by_length_{};
  std::atomic<std::int64_t> plans_reused_{0};  // passes that had the last plan again
  // New jobs' specs learned as this process's API handed them over, and
  // parsed from their stored texts.
  std::atomic<std::int64_t> specs_handed_{0};
  std::atomic<std::int64_t> specs_parsed_{0};
  // Placements handed to options_.local_agent: taken, and left to its look.
  std::atomic<std::int64_t> handed_taken_{0};
  std::atomic<std::int64_t> handed_left_{0};
  std::atomic<std::int64_t> reads_skipped_{0};  // passes that placed submitted_rows unread
  // Per phase: its wall time summed over the passes, and its longest.
  std::array<std::atomic<std::int64_t>, kPhases> phase_nanos_{};
  std::array<std::atomic<std::int64_t>, kPhases> max_phase_nanos_{};
  // Per step of housekeeping: the same, and the current pass's.
  std::array<std::atomic<std::int64_t>, kSteps> step_nanos_{};
  std::array<std::atomic<std::int64_t>, kSteps> max_step_nanos_{};
  std::array<std::int64_t, kSteps> pass_step_nanos_{};
  std::optional<base::Clock::time_point> slow_told_;  // when a slow pass was last told
  std::int64_t slow_untold_ = 0;                      // slow passes since, not told
  base::Mutex mutex_;
  std::condition_variable wake_;
  // The pending reasons' writes, off the passes (service/reason_writer.h).
  ReasonWriter reasons_writer_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool woken_ GUARDED_BY(mutex_) = false;           // by the wake bus
  bool woken_by_other_ GUARDED_BY(mutex_) = false;  // by a payload other than a submit's
  void notify(const char* channel, const std::string& payload);
  std::thread thread_;
};

}  // namespace tpujobs::service
