// What the scheduler leader needs of a job's spec to place it, handed over
// by the API service of the same process that committed the job. The
// leader learns each new job's facts once: before, it parsed the spec text
// it read with the job's row, which the API had parsed already at submit.
// In a burst of submits at 100,000 queued that parse was about a quarter of
// the leader's CPU (bench/RESULTS.md, issue 29).
//
// A cache, never the source of truth: a job another replica committed, or
// one the leader reads before it is handed over, or one pushed out by newer
// ones, is learned from its stored spec as before (and its late spec
// dropped by the leader's next pass). Each comes with the columns of its
// committed row that the leader's read of the rows written since would
// bring: a pass that only submits woke may place the new jobs from them,
// without that read (scheduler_leader.h). Only a leader takes them
// (set_leading): a replica that does not lead keeps none, and a leader
// that falls behind keeps at most `capacity`, dropping the oldest (lowest
// id) first.
//
// Thread-safe: put() on the committer threads, take() and set_leading() on
// the leader's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "api/job_spec.h"
#include "base/mutex.h"
#include "db/job_repository.h"
#include "lightning/resolve.h"
#include "scheduler/dependencies.h"

namespace tpujobs::service {

// The spec's fields the leader places by.
struct PlacementSpec {
  lightning::TrainerSettings trainer;  // resolved against the pool's capacity
  std::optional<std::chrono::milliseconds> start_by;
  std::optional<std::chrono::milliseconds> time_limit;  // training.timeout
  std::vector<scheduler::Dependency> depends_on;
  int max_retries = 0;
  bool preemptible = true;
};

PlacementSpec placement_spec(const api::JobSpec& spec);

class SubmittedSpecs {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;
  explicit SubmittedSpecs(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  SubmittedSpecs(const SubmittedSpecs&) = delete;
  SubmittedSpecs& operator=(const SubmittedSpecs&) = delete;

  // Whether this process's scheduler leader leads (false at first): while
  // it does not, nothing is kept.
  void set_leading(bool leading);
  // A committed job's spec, with its row (of which only the leader's
  // scheduling columns are kept: db/job_rows.h).
  void put(const db::JobRow& row, PlacementSpec spec);
  // The job's spec, once; nullopt when it was not handed over or was dropped.
  std::optional<PlacementSpec> take(std::int64_t job);
  // The rows of the jobs above `id` whose specs are still here, by id.
  std::vector<db::JobRow> rows_above(std::int64_t id) const;
  std::size_t size() const;

 private:
  struct Submitted {
    db::JobRow row;
    PlacementSpec spec;
  };
  const std::size_t capacity_;
  mutable base::Mutex mutex_;
  bool leading_ GUARDED_BY(mutex_) = false;
  std::map<std::int64_t, Submitted> specs_ GUARDED_BY(mutex_);
};

}  // namespace tpujobs::service
