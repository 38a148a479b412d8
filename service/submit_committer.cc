#include "service/submit_committer.h"

#include <algorithm>
#include <iterator>
#include <memory>

#include "api/resolution.h"

namespace tpujobs::service {

using nlohmann::json;

namespace {

// jobs.resolved is {"estimate": E, "request": R}, written as nlohmann's
// dump writes the object (members in order of name, no space) from the
// two members' texts.
constexpr std::string_view kEstimateOpen = "{\"estimate\":";
constexpr std::string_view kRequestOpen = ",\"request\":";

std::string resolved_text(const std::string& estimate, const std::string& request) {
  std::string text;
  text.reserve(kEstimateOpen.size() + estimate.size() + kRequestOpen.size() + request.size() + 1);
  text.append(kEstimateOpen).append(estimate).append(kRequestOpen).append(request) += '}';
  return text;
}

}  // namespace

PendingSubmit make_pending_submit(api::SubmitRequest request,
                                  std::function<void(api::SubmitOutcome)> done) {
  PendingSubmit pending;
  const std::string estimate = request.estimate.dump();
  pending.estimate_length = estimate.size();
  db::NewJob& row = pending.row;
  row.tenant = request.tenant;
  row.name = request.spec.name;
  row.labels_json = json(request.spec.labels).dump();
  row.priority = request.spec.priority;
  row.spec_json = request.spec_text.empty() ? request.spec_json.dump() : request.spec_text;
  row.resolved_json = resolved_text(estimate, api::resolution_json(request.resolution).dump());
  row.warnings_json = json(request.warnings).dump();
  row.idempotency_key = request.idempotency_key;
  row.spec_hash = request.spec_hash;
  if (request.array_index) {
    row.array_index = *request.array_index;
    row.array_values_json = request.array_values.is_object() ? request.array_values.dump() : "{}";
  }
  pending.request = std::move(request);
  pending.done = std::move(done);
  return pending;
}

views::SubmittedText submitted_text(const PendingSubmit& pending) {
  const std::string_view resolved = pending.row.resolved_json;
  const std::size_t request_at =
      kEstimateOpen.size() + pending.estimate_length + kRequestOpen.size();
  return {pending.row.spec_json, pending.row.labels_json, pending.row.warnings_json,
          resolved.substr(request_at, resolved.size() - request_at - 1),
          resolved.substr(kEstimateOpen.size(), pending.estimate_length)};
}

SubmitCommitter::SubmitCommitter(SubmitStore& store, SubmitCommitterOptions options,
                                 OnCommitted on_committed)
    : store_(store), options_(options), on_committed_(std::move(on_committed)) {}

SubmitCommitter::~SubmitCommitter() { close(); }

void SubmitCommitter::start() {
  for (int i = 0; i < std::max(1, options_.committers); ++i) {
    threads_.emplace_back([this] { loop(); });
  }
}

void SubmitCommitter::close() {
  {
    base::MutexLock lock(mutex_);
    closed_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();  // they answer what they already took
  threads_.clear();
  // Never started: nobody else will answer what is queued.
  std::deque<PendingSubmit> left;
  {
    base::MutexLock lock(mutex_);
    left.swap(queue_);
  }
  for (PendingSubmit& p : left) answer_closed(p);
}

void SubmitCommitter::answer_closed(PendingSubmit& pending) {
  api::SubmitOutcome outcome;
  outcome.kind = api::SubmitOutcome::Kind::kUnavailable;
  outcome.message = "the service is shutting down";
  pending.done(std::move(outcome));
}

void SubmitCommitter::submit(api::SubmitRequest request,
                             std::function<void(api::SubmitOutcome)> done) {
  PendingSubmit pending = make_pending_submit(std::move(request), std::move(done));
  {
    base::MutexLock lock(mutex_);
    if (!closed_) {
      pending.order = next_order();
      queue_.push_back(std::move(pending));
      wake_.notify_one();
      return;
    }
  }
  answer_closed(pending);
}

void SubmitCommitter::submit_array(std::vector<api::SubmitRequest> children,
                                   std::function<void(std::vector<api::SubmitOutcome>)> done) {
  if (children.empty()) return done({});
  // The children answer one by one (from one committer, as one batch); the
  // last answer calls `done`.
  struct Answers {
    base::Mutex mutex;
    std::vector<api::SubmitOutcome> outcomes GUARDED_BY(mutex);
    std::size_t left GUARDED_BY(mutex) = 0;
    std::function<void(std::vector<api::SubmitOutcome>)> done;
  };
  auto answers = std::make_shared<Answers>();
  {
    base::MutexLock lock(answers->mutex);
    answers->outcomes.resize(children.size());
    answers->left = children.size();
  }
  answers->done = std::move(done);
  std::vector<PendingSubmit> pending;
  for (std::size_t i = 0; i < children.size(); ++i) {
    pending.push_back(
        make_pending_submit(std::move(children[i]), [answers, i](api::SubmitOutcome outcome) {
          base::MutexLock lock(answers->mutex);
          answers->outcomes[i] = std::move(outcome);
          if (--answers->left > 0) return;
          std::vector<api::SubmitOutcome> outcomes = std::move(answers->outcomes);
          lock.unlock();
          answers->done(std::move(outcomes));
        }));
  }
  {
    base::MutexLock lock(mutex_);
    if (!closed_) {
      pending.front().array_size = pending.size();
      for (PendingSubmit& p : pending) {
        p.order = next_order();
        p.row.array_group = pending.front().order;
        queue_.push_back(std::move(p));
      }
      wake_.notify_one();
      return;
    }
  }
  for (PendingSubmit& p : pending) answer_closed(p);
}

void SubmitCommitter::loop() {
  for (;;) {
    std::vector<PendingSubmit> batch;
    {
      base::MutexLock lock(mutex_);
      lock.wait(wake_, [this]() REQUIRES(mutex_) { return closed_ || !queue_.empty(); });
      if (queue_.empty() && closed_) return;
      while (!queue_.empty() && static_cast<int>(batch.size()) < options_.batch) {
        // A job array goes whole into one batch: one transaction.
        const std::size_t take = std::max<std::size_t>(1, queue_.front().array_size);
        if (!batch.empty() && static_cast<int>(batch.size() + take) > options_.batch) break;
        for (std::size_t i = 0; i < take && !queue_.empty(); ++i) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    commit(batch);
  }
}

void SubmitCommitter::commit(std::vector<PendingSubmit>& batch) {
  std::vector<db::NewJob> rows;
  rows.reserve(batch.size());
  for (PendingSubmit& p : batch) rows.push_back(std::move(p.row));
  auto inserted = store_.insert_jobs(rows);
  const std::size_t first_unit = std::max<std::size_t>(1, batch.front().array_size);
  if (!inserted.ok() && inserted.code() != base::ErrorCode::kUnavailable &&
      first_unit < batch.size()) {
    // One row the database refuses fails the whole statement: each
    // submission (a job, or a whole array) is committed again on its own,
    // so that only the one at fault fails. Not when the database is away.
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i].row = std::move(rows[i]);
    for (std::size_t i = 0; i < batch.size();) {
      const std::size_t take =
          std::min(batch.size() - i, std::max<std::size_t>(1, batch[i].array_size));
      std::vector<PendingSubmit> unit(std::make_move_iterator(batch.begin() + i),
                                      std::make_move_iterator(batch.begin() + i + take));
      commit(unit);
      i += take;
    }
    return;
  }
  if (!inserted.ok()) {
    // Refused: nothing was stored. Unavailable before the insert was sent
    // (no connection): nothing was stored either, and a retry later may
    // work. Sent but unanswered: the insert may have been carried out with
    // its answer lost (a server that stopped, or went away, after it took
    // the statement), so the answer says so and points at the
    // Idempotency-Key, with which a retry finds the stored job instead of
    // storing it twice.
    const bool unavailable = inserted.code() == base::ErrorCode::kUnavailable;
    const bool unknown = unavailable && inserted.error().maybe_applied;
    for (PendingSubmit& p : batch) {
      api::SubmitOutcome outcome;
      outcome.kind =
          unavailable ? api::SubmitOutcome::Kind::kUnavailable : api::SubmitOutcome::Kind::kError;
      outcome.message = unknown ? "the database did not confirm the job, which may or may not "
                                  "have been stored (" +
                                      inserted.error().message +
                                      "): submit it again with the same Idempotency-Key, which "
                                      "answers with the stored job rather than storing it twice"
                        : unavailable ? "the job was not stored: the database could not be "
                                        "reached (" +
                                            inserted.error().message + "); submit it again later"
                                      : "the job was not stored: " + inserted.error().message;
      p.done(std::move(outcome));
    }
    return;
  }
  // Back with their submits: the views are made of the rows' texts.
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i].row = std::move(rows[i]);
  std::vector<CommittedSubmit> committed;
  committed.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const db::InsertedJob& result = (*inserted)[i];
    api::SubmitOutcome outcome;
    outcome.id = result.row.id;
    outcome.array_id = result.row.array_id.value_or(0);
    if (result.not_stored) {
      outcome.kind = api::SubmitOutcome::Kind::kConflict;  // answered below, with its array
    } else if (!result.existing) {
      outcome.kind = api::SubmitOutcome::Kind::kCreated;
    } else if (result.row.spec_hash == batch[i].request.spec_hash) {
      outcome.kind = api::SubmitOutcome::Kind::kExisting;
    } else {
      outcome.kind = api::SubmitOutcome::Kind::kConflict;
      outcome.message = "Idempotency-Key '" + batch[i].request.idempotency_key.value_or("") +
                        "' was already used for job " + std::to_string(result.row.id) +
                        " with a different spec";
    }
    committed.push_back({batch[i], result.row, std::move(outcome)});
  }
  answer_arrays_not_stored(committed, *inserted);
  on_committed_(committed);
  for (CommittedSubmit& c : committed) c.pending.done(std::move(c.outcome));
}

void SubmitCommitter::answer_arrays_not_stored(std::vector<CommittedSubmit>& committed,
                                               const std::vector<db::InsertedJob>& inserted) {
  for (std::size_t first = 0; first < committed.size();) {
    const bool sweep = committed[first].pending.array_size > 0;
    const std::size_t size = std::min(std::max<std::size_t>(1, committed[first].pending.array_size),
                                      committed.size() - first);
    const auto begin = committed.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = begin + static_cast<std::ptrdiff_t>(size);
    const auto found = inserted.begin() + static_cast<std::ptrdiff_t>(first);
    first += size;
    if (!sweep) continue;
    auto not_stored = [](const CommittedSubmit& c) { return c.row.id == 0; };
    // A sweep submitted again with fewer children finds each of them, but
    // not the sweep it stored; so does one whose keys lone jobs used. (A
    // sweep is stored whole or not at all, and its children's keys are its
    // own: found children of a sweep of its size are of the one stored.)
    auto of_another_size = [size](const db::InsertedJob& r) {
      return r.existing && r.array_size != static_cast<std::int64_t>(size);
    };
    if (std::none_of(begin, end, not_stored) &&
        std::none_of(found, found + static_cast<std::ptrdiff_t>(size), of_another_size))
      continue;
    // None of the sweep's children was stored: each is answered 409, with a
    // job of the sweep that used its key before.
    const auto before = std::find_if_not(begin, end, not_stored);
    const std::int64_t earlier = before == end ? 0 : before->row.id;
    const std::string key = begin->pending.request.idempotency_key.value_or("");
    for (auto c = begin; c != end; ++c) {
      c->outcome.kind = api::SubmitOutcome::Kind::kConflict;
      c->outcome.id = earlier;
      c->outcome.message = "Idempotency-Key '" + key.substr(0, key.rfind('#')) +
                           "' was already used for a sweep with other children (job " +
                           std::to_string(earlier) + "): no child of this sweep was stored";
    }
  }
}

}  // namespace tpujobs::service
