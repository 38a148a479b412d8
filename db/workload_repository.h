// What workload management reads (scheduler/dependencies.h): the states of
// the jobs others depend on.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/job_state.h"
#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

namespace tpujobs::db {

// TPU core-seconds of one group on one generation (see usage()).
struct UsageRow {
  std::string group{};
  std::string generation{};
  std::int64_t jobs = 0;
  double core_seconds = 0;
};

// What one purge batch removed.
struct PurgeBatch {
  std::int64_t jobs = 0;
  std::int64_t log_lines = 0;
  std::int64_t metric_points = 0;
};

class WorkloadRepository {
 public:
  // The pool must outlive the repository. Every call borrows a connection
  // for its duration, waiting at most acquire_timeout (kUnavailable after).
  explicit WorkloadRepository(ConnectionPool& pool,
                              std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // The state of each job among `ids`; with a tenant, only that tenant's
  // jobs. Ids with no (visible) job are absent from the answer.
  base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::vector<std::int64_t>& ids,
      const std::optional<std::string>& tenant = std::nullopt);

  // TPU core-seconds in [from, to): every span a job was STARTING or
  // RUNNING (from job_events; a running job's span ends now), clipped to the
  // window, times the cores it asked for (resolved.request.cores; cpu jobs
  // hold none and are left out). Grouped by tenant, or with by_label by each
  // "key=value" of the job's labels (only label_key's when given; "" for a
  // job without), and by the generation it ran on. Only `tenant`'s jobs when
  // given. Ordered by group, then generation.
  // Retention: deletes the log lines and metric points of at most
  // `max_jobs` jobs that finished more than `older_than` ago and were not
  // purged yet (oldest first), and marks them purged; the job rows and their
  // events stay. One statement: a batch is all or nothing, and jobs another
  // process is purging are skipped (SKIP LOCKED), so replicas may all run it.
  base::Result<PurgeBatch> purge_finished_outputs(std::chrono::seconds older_than, int max_jobs);

  base::Result<std::vector<UsageRow>> usage(TimePoint from, TimePoint to, bool by_label,
                                            const std::optional<std::string>& label_key,
                                            const std::optional<std::string>& tenant);

  // Fair share (scheduler/fair_share.h): per tenant, the TPU core-seconds
  // of the same spans as usage(), each second weighted by
  // 2^(-age / half_life) at `now` (ages beyond `horizon` count nothing), in
  // closed form per span: cores * h / ln 2 * (2^(-end_age/h) - 2^(-start_age/h)).
  // One statement. Tenants without such use are absent.
  base::Result<std::map<std::string, double>> decayed_usage(TimePoint now,
                                                            std::chrono::seconds half_life,
                                                            std::chrono::seconds horizon);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
