// The submit committer: group commit of submits. Every POST /v1/jobs (and
// every child of a sweep) queues its row here; committer threads take up
// to `batch` rows at a time and insert them in one transaction, so one
// fsync answers many submits. While one committer waits for its commit the
// next batch is inserted. A job array always goes whole into one batch:
// its children are committed together or not at all.
//
// What the committer decides: each submit's outcome as far as the insert
// tells it (created; an Idempotency-Key already used with the same spec,
// or with another one: 409; the database unreachable: 503, or refusing:
// 500). What the owner decides, in `on_committed` (on the committer thread,
// before anyone is answered): the views the answers carry, and what it does
// with the new jobs (queue them, wake the scheduler leader).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "api/job_service.h"
#include "base/mutex.h"
#include "db/job_repository.h"
#include "service/job_views.h"

namespace tpujobs::service {

// Where submits are committed: one transaction per call (DESIGN §6).
class SubmitStore {
 public:
  virtual ~SubmitStore() = default;
  virtual base::Result<std::vector<db::InsertedJob>> insert_jobs(
      const std::vector<db::NewJob>& rows) = 0;
};

struct PendingSubmit {
  api::SubmitRequest request;
  db::NewJob row;  // built on the submitting thread, not the committer's
  // The length of the estimate's text in row.resolved_json, where
  // submitted_text finds it and the request resolved.
  std::size_t estimate_length = 0;
  std::function<void(api::SubmitOutcome)> done;
  // Its place among equal priorities: taken on arrival, since two
  // committers may commit a later batch first.
  std::int64_t order = 0;
  // The first child of a job array: how many children follow it in the
  // queue, itself included (a batch never splits an array).
  std::size_t array_size = 0;
};

// A submit's row and resolution, built from the request on the submitting thread.
PendingSubmit make_pending_submit(api::SubmitRequest request,
                                  std::function<void(api::SubmitOutcome)> done);
// The texts of a submit's row that its answer's view is made of
// (views::submitted_body): jobs.resolved's two members are read out of the
// row's text, not kept a second time.
views::SubmittedText submitted_text(const PendingSubmit& pending);

// One committed submit, for on_committed: its outcome's kind, id and
// message are set; the owner adds the view (outcome.job) to kCreated and
// kExisting ones.
struct CommittedSubmit {
  PendingSubmit& pending;
  const db::JobRow& row;  // as stored (for kExisting: the earlier job)
  api::SubmitOutcome outcome;
};

struct SubmitCommitterOptions {
  int batch = 256;     // most rows in one transaction
  int committers = 2;  // transactions in flight at once
};

class SubmitCommitter {
 public:
  using OnCommitted = std::function<void(std::vector<CommittedSubmit>& committed)>;
  // The store must outlive the committer.
  SubmitCommitter(SubmitStore& store, SubmitCommitterOptions options, OnCommitted on_committed);
  ~SubmitCommitter();

  SubmitCommitter(const SubmitCommitter&) = delete;
  SubmitCommitter& operator=(const SubmitCommitter&) = delete;

  void start();
  // Stops taking submits; the committers commit and answer what they took,
  // then stop. Idempotent.
  void close();

  // Queues a submit; once closed, answers it 503 at once.
  void submit(api::SubmitRequest request, std::function<void(api::SubmitOutcome)> done);
  // Queues the children of a job array, to be committed in one
  // transaction; `done` gets every child's outcome, in order, at once.
  void submit_array(std::vector<api::SubmitRequest> children,
                    std::function<void(std::vector<api::SubmitOutcome>)> done);

  // The next number of the submit order (requeued jobs take one too: they
  // go behind every job of their priority).
  std::int64_t next_order() { return ++order_; }

  // Commits one batch on the calling thread (the committer threads' step;
  // public for tests).
  void commit(std::vector<PendingSubmit>& batch);

 private:
  void loop();
  // The children of a sweep whose Idempotency-Key was used before by
  // another sweep (db::InsertedJob::not_stored: none was stored), or that
  // finds the children of a larger sweep (InsertedJob::array_size), are each
  // answered 409, not 201 or 200 for some and 409 for others. `inserted`:
  // the store's answer, a row for each of `committed`.
  static void answer_arrays_not_stored(std::vector<CommittedSubmit>& committed,
                                       const std::vector<db::InsertedJob>& inserted);
  static void answer_closed(PendingSubmit& pending);

  SubmitStore& store_;
  const SubmitCommitterOptions options_;
  const OnCommitted on_committed_;
  std::atomic<std::int64_t> order_{0};

  base::Mutex mutex_;
  std::condition_variable wake_;
  std::deque<PendingSubmit> queue_ GUARDED_BY(mutex_);
  bool closed_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tpujobs::service
