// How the jobs table's rows are selected and read, for the statements of
// db/job_repository.cc: every query that returns jobs selects
// TPUJOBS_JOB_COLUMNS, in this order, from alias j.
#pragma once

#include <optional>
#include <vector>

#include "db/connection.h"
#include "db/job_repository.h"

#define TPUJOBS_JOB_COLUMNS_BEFORE_SPEC "j.id, j.tenant, j.name, j.labels, j.priority, j.state, "
// `result`: the result column as read (a list leaves out what no list shows).
#define TPUJOBS_JOB_COLUMNS_AFTER_SPEC_WITH(result)                                         \
  "j.resolved, j.warnings, "                                                                \
  "j.idempotency_key, j.spec_hash, j.allocation, j.pending, j.progress, j.latest_metrics, " \
  "j.error, " result                                                                        \
  ", j.attempt, j.cancel_requested, j.created_at, j.started_at, "                           \
  "j.finished_at, j.updated_at, j.agent, j.placement_epoch, "                               \
  "j.array_id, j.array_index, j.array_values, j.preempted_by, j.requeued_at, "              \
  "j.unstarted_requeues"
#define TPUJOBS_JOB_COLUMNS_AFTER_SPEC TPUJOBS_JOB_COLUMNS_AFTER_SPEC_WITH("j.result")
#define TPUJOBS_JOB_COLUMNS \
  TPUJOBS_JOB_COLUMNS_BEFORE_SPEC "j.spec, " TPUJOBS_JOB_COLUMNS_AFTER_SPEC

namespace tpujobs::db {

// Row `row` of `rows`, whose columns from `first_column` on are TPUJOBS_JOB_COLUMNS.
JobRow read_job(const QueryResult& rows, int row, int first_column = 0);
std::vector<JobRow> read_jobs(const QueryResult& rows);
// The first row of a read whose first two columns are the newest
// checkpoint's step and epoch, then TPUJOBS_JOB_COLUMNS; nullopt without one.
std::optional<JobWithCheckpoint> job_with_checkpoint(const QueryResult& rows);

}  // namespace tpujobs::db
