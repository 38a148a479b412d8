// Jobs and their state history (tables jobs, job_events). JSON columns travel
// as JSON text; PostgreSQL checks them (kInvalid when malformed).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/job_state.h"
#include "base/mutex.h"
#include "base/result.h"
#include "db/connection_pool.h"
#include "db/job_output_repository.h"
#include "db/pg_text.h"

namespace tpujobs::db {

using base::is_terminal;
using base::JobState;
using base::parse_job_state;
using base::to_string;

// Row structs give every member an initializer ({} included) so callers can
// use designated initializers under -Wextra.

// A job as submitted; the repository assigns id, state QUEUED and times.
struct NewJob {
  std::string tenant{};
  std::string name{};
  std::string labels_json = "{}";  // a JSON object of string values
  int priority = 0;
  std::string spec_json{};           // the spec as submitted
  std::string resolved_json = "{}";  // resolved request, precision, world size
  std::string warnings_json = "[]";
  std::optional<std::string> idempotency_key{};
  std::string spec_hash{};
  // A child of a job array (a sweep): the jobs of one batch with the same
  // array_group > 0 form one array, whose id is its first child's id.
  std::int64_t array_group = 0;
  int array_index = 0;
  std::string array_values_json = "{}";  // the values the sweep set, by spec path
};

struct JobRow {
  std::int64_t id = 0;
  std::string tenant{};
  std::string name{};
  std::string labels_json{};
  int priority = 0;
  JobState state = JobState::kQueued;
  std::string spec_json{};
  std::string resolved_json{};
  std::string warnings_json{};
  std::optional<std::string> idempotency_key{};
  std::string spec_hash{};
  std::optional<std::string> allocation_json{};
  std::optional<std::string> pending_json{};
  std::optional<std::string> progress_json{};
  std::optional<std::string> latest_metrics_json{};
  std::optional<std::string> error_json{};
  std::optional<std::string> result_json{};
  int attempt = 0;
  bool cancel_requested = false;
  TimePoint created_at{};
  std::optional<TimePoint> started_at{};
  std::optional<TimePoint> finished_at{};
  TimePoint updated_at{};
  std::optional<std::string> agent{};             // DESIGN §9: who runs it
  std::optional<std::int64_t> placement_epoch{};  // and under which registration
  std::optional<std::int64_t> array_id{};         // a sweep's child: its array
  std::optional<int> array_index{};
  std::optional<std::string> array_values_json{};
  // Preemption: the job that preempted it, from the leader's mark
  // (request_preemption) until it is placed again, or requeued for another
  // reason first (lifecycle::requeue_elsewhere).
  std::optional<std::int64_t> preempted_by{};
  // When a failure last requeued it (Transition::set_requeued_at).
  std::optional<TimePoint> requeued_at{};
  // Requeues, without a retry spent, after its agent was lost before the
  // job started there (Transition::count_unstarted_requeue).
  int unstarted_requeues = 0;
  // Which placement of the job this is (db/migrations/041): a number no
  // other placement of any job has, set when it is placed (STARTING) and
  // cleared with the placement. The fence of every write an agent makes
  // about the job it runs.
  std::optional<std::int64_t> placement{};
  // The transaction that last wrote the row's scheduling columns
  // (jobs.changed_xid, db/migrations/036), where the read gives it: the
  // insert's answer does (insert_jobs); 0 elsewhere.
  std::int64_t changed_xid = 0;
};

struct InsertedJob {
  // True when a job with the same (tenant, idempotency_key) already existed;
  // row is then that job (compare spec_hash to answer 200 or 409).
  bool existing = false;
  JobRow row;
  // A child of a job array (NewJob::array_group) none of whose children was
  // stored: another child's idempotency key was used before (the array is
  // a retry, or its key was used for another array). A child whose key
  // was used is answered `existing`; the others are not stored, and their
  // row is empty.
  bool not_stored = false;
  // An existing child of a sweep: how many children its sweep has.
  std::int64_t array_size = 0;
};

struct JobFilter {
  std::optional<std::string> tenant{};
  std::vector<JobState> states{};                             // any of them; empty: all
  std::vector<std::pair<std::string, std::string>> labels{};  // all must match
  std::optional<std::string> name{};
  std::optional<std::int64_t> array_id{};  // only the children of this array
  int limit = 50;                          // clamped to 1..500
  std::string cursor{};                    // next_cursor of the previous page; empty: first page
};

// A job as its view shows it: the row, and where its newest checkpoint is.
struct JobWithCheckpoint {
  JobRow row;
  // The newest checkpoint's step and epoch; nullopt when it has none.
  std::optional<std::pair<std::int64_t, int>> last_checkpoint{};
};

// A placed job as its agent starts it: the row, and where it resumes.
struct PlacedWork {
  JobRow row;
  JobOutputRepository::ResumePoint resume;
  // The epoch of the checkpoint it resumes from (resume.checkpoint_step's).
  std::optional<int> checkpoint_epoch{};
};

// A placement that its agent starts as it commits (Transition::then_running):
// the RUNNING event's reason, `started` for a job with no checkpoint, else
// `resumed_before_step` + the newest checkpoint's step + `resumed_after_step`.
struct RunningReason {
  std::string started;
  std::string resumed_before_step;
  std::string resumed_after_step;
};

// A listed job: enough to tell whether a view of it is at hand, and where a
// page that ends with it goes on.
struct ListedJob {
  std::int64_t id = 0;
  JobState state = JobState::kQueued;
  std::string cursor{};  // the next_cursor of a page that ends with this job
};

struct JobPage {
  std::vector<ListedJob> jobs{};  // newest first
  std::string next_cursor{};      // empty on the last page
};

// A conditional state change plus the columns that change with it. Columns
// whose field is unset keep their value.
struct Transition {
  std::int64_t job_id = 0;
  std::vector<JobState> from{};  // the job must be in one of these
  JobState to = JobState::kQueued;
  std::string reason{};                      // recorded in job_events
  std::optional<std::string> detail_json{};  // recorded in job_events
  std::optional<std::string> allocation_json{};
  bool clear_allocation = false;
  std::optional<std::string> error_json{};
  std::optional<std::string> result_json{};
  bool set_started_at = false;   // started_at = now()
  bool set_finished_at = false;  // finished_at = now()
  bool increment_attempt = false;
  // unstarted_requeues + 1: requeued, without a retry, from an agent lost
  // before the job started on it.
  bool count_unstarted_requeue = false;
  // preempted_by = NULL: the job is placed, or requeued for another reason
  // than its preemption. (Its pending reason goes with any transition out
  // of QUEUED.)
  bool clear_preempted_by = false;
  // The placement (DESIGN §9): the agent that runs the job, the epoch of
  // its registration and the placement's number (JobRow::placement);
  // clear_placement sets all three to NULL.
  std::optional<std::string> agent{};
  std::optional<std::int64_t> placement_epoch{};
  std::optional<std::int64_t> placement{};
  bool clear_placement = false;
  // Fencing: applied only while the job's placement is this one.
  std::optional<std::int64_t> require_placement{};
  // Applied only while each of these agents is alive under this epoch (a
  // placement: its agent, or every agent of a slice spanning agents).
  std::vector<std::pair<std::string, std::int64_t>> require_alive{};
  // Applied only while the scheduler leader's term is this one (the
  // leader's own writes; see SchedulerTerm).
  std::optional<std::int64_t> require_leader_term{};
  // Sets jobs.preempted_by (a preempted job requeued).
  std::optional<std::int64_t> preempted_by{};
  // requeued_at = now(): a failure requeued the job (a retry is placed only
  // on agents heard from since).
  bool set_requeued_at = false;
  // Committed without waiting for the WAL to reach the disk (PostgreSQL's
  // synchronous_commit = off, for this transaction alone). Only for a write
  // that a database crash may undo without harm: WAL is flushed in order, so
  // the next synchronous commit on the server, or the WAL writer within
  // about 200 ms, makes it durable too.
  bool asynchronous_commit = false;
  // An end other than CANCELLED of a job whose cancel is stored
  // (jobs.cancel_requested) ends it CANCELLED instead, with this reason and
  // error: a cancel answered 202 is honoured even when the agent's end or
  // the leader's, decided from a read before the request, commits after it.
  struct CancelledInstead {
    std::string reason;
    std::string error_json;
  };
  std::optional<CancelledInstead> if_cancel_requested{};
  // A placement (QUEUED -> STARTING) that goes on to RUNNING in the same
  // statement, recording both events: a job the agent in the leader's own
  // process starts as it commits (JobRepository::transition_with_work only).
  std::optional<RunningReason> then_running{};
};

// One transition of JobRepository::transitions.
struct BatchedTransition {
  Transition transition;
  // Answers the changed job as transition_with_work does (else only whether
  // the transition applied).
  bool with_work = false;
};

// What one transition of JobRepository::transitions did.
struct TransitionOutcome {
  bool applied = false;
  std::optional<PlacedWork> work{};  // with_work's answer, when it applied
  // It applied as CANCELLED (Transition::if_cancel_requested; not told
  // with_work).
  bool cancelled_instead = false;
};

struct JobEventRow {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  TimePoint at{};
  std::optional<JobState> from_state{};  // none for the first event
  JobState to_state = JobState::kQueued;
  std::string reason{};
  std::optional<std::string> detail_json{};
};

class JobRepository {
 public:
  // The pool must outlive the repository. Every call borrows a connection for
  // its duration, waiting at most acquire_timeout (kUnavailable after).
  explicit JobRepository(ConnectionPool& pool,
                         std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Inserts a batch in ONE transaction (one commit for all: the service
  // batches concurrent submits), each new job QUEUED with a first job_events
  // row (reason "Submitted"). A job whose (tenant, idempotency_key) exists is
  // not inserted and comes back with existing=true. Results are in input
  // order; ids ascend in input order among the new ones. A new row comes
  // with its changed_xid (the insert's transaction). All or nothing:
  // kInvalid (malformed JSON) fails the whole batch.
  base::Result<std::vector<InsertedJob>> insert_jobs(const std::vector<NewJob>& jobs);

  // nullopt when there is no such job.
  base::Result<std::optional<JobRow>> get_job(std::int64_t id);
  // The job and its newest checkpoint's position (not its bytes), in one
  // statement; nullopt when there is no such job.
  base::Result<std::optional<JobWithCheckpoint>> get_job_with_checkpoint(std::int64_t id);

  // Newest first (created_at, then id). kInvalid for a cursor this did not make.
  // Their rows are read apart (listed_rows): a caller that keeps the views of
  // finished jobs reads only the others' (issue 34: a list of 500 read, sent
  // and parsed 500 rows of about 4 KB).
  base::Result<JobPage> list_jobs(const JobFilter& filter);
  // The rows of jobs `ids` as a list shows them, in no particular order; a
  // job that is gone since (retention) is left out. A listed row's spec_json
  // holds only the spec's max_retries (`{}` without one): a list shows no
  // spec; its result_json has no "xla_report", which no view shows.
  base::Result<std::vector<JobRow>> listed_rows(const std::vector<std::int64_t>& ids);

  // Applies the transition when the job is in one of t.from (and never when
  // it is terminal), recording a job_events row in the same statement.
  // false when the job was not in an allowed state (or does not exist).
  base::Result<bool> transition(const Transition& t);
  // The same, answering the job as get_job_with_checkpoint would read it
  // right after (nullopt when the transition did not apply).
  base::Result<std::optional<JobWithCheckpoint>> transition_with_view(const Transition& t);
  // The same, answering the job and where it resumes as work_on_agent reads
  // them right after, in the same round trip (nullopt when the transition
  // did not apply): a placement handed to an agent in the same process.
  // With t.then_running, the placement also moves the job on to RUNNING
  // (and records that event too), as the agent's start would.
  base::Result<std::optional<PlacedWork>> transition_with_work(const Transition& t);
  // Applies `batch` in ONE transaction, in order, each as transition() or
  // transition_with_work() would (a later one sees the earlier ones): one
  // round trip and one commit, so one wait for the WAL, for all (the
  // scheduler leader's placements of a pass). The commit waits for the WAL
  // unless every transition is asynchronous_commit. An error fails the
  // call, and none of them is applied (or, unanswered, maybe all of them).
  base::Result<std::vector<TransitionOutcome>> transitions(
      std::span<const BatchedTransition> batch);

  // Sets progress and latest_metrics (JSON); nullopt keeps the current
  // value. kNotFound when there is no such job.
  // With a non-zero fence, only while the job's placement is that one
  // (kNotFound otherwise): after its end too, so that the last progress of
  // the copy that ended it, stored after an outage, still lands.
  base::Status update_progress(std::int64_t id, const std::optional<std::string>& progress_json,
                               const std::optional<std::string>& latest_metrics_json,
                               std::int64_t fence = 0);

  // Sets why the job waits (job_pending, db/migrations/040) for many queued
  // jobs in one statement (nullopt clears it); jobs no longer QUEUED are
  // skipped, and so are reasons that did not change. Committed
  // without waiting for the WAL to reach the disk (as
  // Transition::asynchronous_commit): a reason is derived from the queue,
  // and a scheduler leader that takes its lock (which a restart makes it
  // lose) writes every one again. With `leader_term`, only while that is
  // still the scheduler's term (as Transition::require_leader_term): a
  // former leader's late write does not replace its successor's reasons,
  // and is answered kConflict.
  base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch,
      std::optional<std::int64_t> leader_term = std::nullopt);

  // Marks cancel_requested. kNotFound when there is no such job, kConflict
  // when it is already terminal.
  base::Status request_cancel(std::int64_t id);

  // Preemption: marks the STARTING or RUNNING `victim` with
  // preempted_by = `preemptor` while its placement is still `placement` (and it
  // is not marked nor being cancelled), and records the preemptor's event
  // (QUEUED -> QUEUED, `preemptor_reason` and `preemptor_detail`; none when
  // the reason is empty) in the same statement, while the scheduler
  // leader's term is `leader_term` (none: unfenced). False when the victim
  // was not marked.
  base::Result<bool> request_preemption(std::int64_t victim, std::int64_t placement,
                                        std::int64_t preemptor, const std::string& preemptor_reason,
                                        const std::string& preemptor_detail,
                                        std::optional<std::int64_t> leader_term = std::nullopt);

  // STARTING and RUNNING jobs, by id, read as the scheduling read does: the
  // pool view's and a host failure's, which need not read the queue.
  base::Result<std::vector<JobRow>> load_placed();
  // What a scheduler keeps between passes, without the documents a
  // scheduling pass does not read: spec, resolved, warnings, labels,
  // pending, progress, latest_metrics, error, result and array_values are
  // left empty (allocation is read), and so are idempotency_key, spec_hash,
  // finished_at and the array fields, which the leader does not use.
  // Printing those documents as text was most of a pass's cost (10,000
  // queued jobs: bench/RESULTS.md); the specs come from job_specs, once a
  // job. `low_water` is noted before the rows are read: the oldest
  // transaction still running then (migration 036). Every change it missed
  // is in a row written at or after it, which the next read, `since` it,
  // returns. A read `since` a low water returns those rows whatever their
  // state (a finished one is to be dropped); without `since`, every
  // unfinished job (complete).
  struct ScheduleRead {
    std::vector<JobRow> rows;
    bool complete = false;
    std::string low_water;  // a pg xid8, as text
    // The slice of a sweep, when the read asked for one (ScheduleSince::sweep).
    struct Swept {
      std::int64_t after = 0;
      std::vector<JobRow> rows;  // every unfinished job above `after`, up to the limit, by id
      bool to_end = false;       // fewer than the limit: no unfinished job above the last
    };
    std::optional<Swept> swept{};
  };
  // A sweep reads the unfinished jobs back a slice at a time, in id order
  // (without their specs), to catch what the reads since missed: the
  // unfinished jobs with ids above `after`, at most `limit` of them.
  struct Sweep {
    std::int64_t after = 0;
    int limit = 0;
  };
  // Where a read `since` starts: the last read's low water. A row whose id
  // is above `specs_above` (the highest the reader has seen) comes with its
  // spec: a job submitted since, whose spec the reader would otherwise ask
  // for in a round trip of its own (job_specs). One committed out of id
  // order comes without. `held`: rows the reader holds as the transaction
  // with that changed_xid wrote them (this process's submits, handed over
  // with the insert's answer): the read leaves out each one still so, and
  // returns it once another transaction wrote it. `sweep`: the sweep's next
  // slice, read with it.
  struct ScheduleSince {
    std::string low_water;
    std::int64_t specs_above = 0;
    std::optional<Sweep> sweep{};
    std::vector<std::int64_t> held_ids{};
    std::vector<std::int64_t> held_xids{};  // each one's changed_xid, in held_ids' order
  };
  // Its two statements (three with a sweep), in order, and the read they
  // answer; the leader sends them with its other reads
  // (db/scheduling_read.h). They take their snapshots in that order, the
  // low water's first: so the low water is at most the rows', and whatever
  // the rows missed was written by a transaction at or after it; a slice is
  // no older than the rows since.
  static std::vector<Statement> schedule_statements(const std::optional<ScheduleSince>& since);
  // `answers`: those statements' answers, in their order.
  static ScheduleRead schedule_read_from(std::span<const QueryResult> answers,
                                         const std::optional<ScheduleSince>& since);
  // The QUEUED jobs whose ids are not in `known`, oldest first: what a
  // standalone service finds stored behind its back (an insert whose answer
  // was lost), once end_server_process says that insert has settled.
  base::Result<std::vector<JobRow>> load_queued_except(const std::vector<std::int64_t>& known);
  // Ends the server process a statement was left with when its answer never
  // came (take_unanswered_inserts), and says whether it is gone: from
  // then on that statement has been carried out or never will be. A process
  // still waiting (on a lock) is terminated, rolling its statement back; one
  // that does not exit within `wait` answers false (ask again). The process
  // is named by its pid and its start, so a later one given the same pid is
  // never ended. Needs PostgreSQL 14+ (pg_terminate_backend's timeout).
  base::Result<bool> end_server_process(const ServerProcess& process,
                                        std::chrono::milliseconds wait);
  // The server processes left with an insert_jobs of the calling thread
  // whose answer was lost (kUnavailable, maybe_applied) since its last
  // call, which forgets them. Per thread: each caller settles its own.
  std::vector<ServerProcess> take_unanswered_inserts();
  // The stored spec of each of `ids` that exists, by id.
  base::Result<std::map<std::int64_t, std::string>> job_specs(const std::vector<std::int64_t>& ids);

  // What an agent is to run, in one round trip: the STARTING and RUNNING
  // jobs placed on it (any epoch), and those whose slice spans agents with
  // a part on it other than the first (allocation -> 'slice' -> 'parts'),
  // each by id.
  struct AgentWork {
    std::vector<JobRow> placed;
    std::vector<JobRow> slice_parts;
    // Of the placed jobs, those STARTING: where each would resume.
    std::map<std::int64_t, JobOutputRepository::ResumePoint> resume_points;
  };
  base::Result<AgentWork> work_on_agent(const std::string& agent);
  // STARTING and RUNNING jobs placed on an agent whose placement is not
  // that agent's current epoch while alive (it was lost, or rejoined), by id.
  base::Result<std::vector<JobRow>> orphaned_jobs();

  // The job's events, oldest first.
  base::Result<std::vector<JobEventRow>> list_events(std::int64_t id);

  // How many jobs are QUEUED (read off the partial index of queued jobs).
  base::Result<std::int64_t> count_queued();
  // Every state with its job count (0 included), keyed by to_string(state).
  base::Result<std::map<std::string, std::int64_t>> count_jobs_by_state();

 private:
  // `error` (of a statement of insert_jobs on `connection`), after noting
  // the connection's server process when the error is maybe_applied.
  base::Error note_unanswered_insert(const Connection& connection, base::Error error);

  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
  struct UnansweredInsert {
    std::thread::id thread;  // that called insert_jobs
    ServerProcess process;
  };
  base::Mutex unanswered_mutex_;
  std::vector<UnansweredInsert> unanswered_inserts_ GUARDED_BY(unanswered_mutex_);
};

}  // namespace tpujobs::db
