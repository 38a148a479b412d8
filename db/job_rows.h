// How the jobs table's rows are selected and read, for the statements of
// db/job_repository.cc: every query that returns jobs selects
// TPUJOBS_JOB_COLUMNS, in this order, from alias j.
#pragma once

#include <optional>
#include <vector>

#include "db/connection.h"
#include "db/job_repository.h"

#define TPUJOBS_JOB_COLUMNS_BEFORE_SPEC "j.id, j.tenant, j.name, j.labels, j.priority, j.state, "
// Why a queued job waits (job_pending, db/migrations/040): only while it is
// QUEUED, so that a reason left behind by a job that left the queue is not read.
#define TPUJOBS_JOB_PENDING \
  "(SELECT p.pending FROM job_pending p WHERE p.job_id = j.id AND j.state = 'QUEUED')"
// `result`: the result column as read (a list leaves out what no list shows).
#define TPUJOBS_JOB_COLUMNS_AFTER_SPEC_WITH(result)                            \
  "j.resolved, j.warnings, "                                                   \
  "j.idempotency_key, j.spec_hash, j.allocation, " TPUJOBS_JOB_PENDING         \
  ", j.progress, j.latest_metrics, "                                           \
  "j.error, " result                                                           \
  ", j.attempt, j.cancel_requested, j.created_at, j.started_at, "              \
  "j.finished_at, j.updated_at, j.agent, j.placement_epoch, "                  \
  "j.array_id, j.array_index, j.array_values, j.preempted_by, j.requeued_at, " \
  "j.unstarted_requeues, j.placement"
#define TPUJOBS_JOB_COLUMNS_AFTER_SPEC TPUJOBS_JOB_COLUMNS_AFTER_SPEC_WITH("j.result")
#define TPUJOBS_JOB_COLUMNS \
  TPUJOBS_JOB_COLUMNS_BEFORE_SPEC "j.spec, " TPUJOBS_JOB_COLUMNS_AFTER_SPEC

// The scheduler leader's read (schedule_statements, load_placed):
// TPUJOBS_JOB_COLUMNS in the same places (read_job reads them), with NULL
// for every column it does not use (issue 29: its complete read of 100,000
// queued jobs).
#define TPUJOBS_JOB_SCHEDULING_COLUMNS_WITH(spec)                           \
  "j.id, j.tenant, j.name, NULL, j.priority, j.state, " spec                \
  ", NULL, NULL, "                                                          \
  "NULL, NULL, j.allocation, NULL, NULL, NULL, "                            \
  "NULL, NULL, j.attempt, j.cancel_requested, j.created_at, j.started_at, " \
  "NULL, j.updated_at, j.agent, j.placement_epoch, "                        \
  "NULL, NULL, NULL, j.preempted_by, j.requeued_at, j.unstarted_requeues, " \
  "j.placement"
#define TPUJOBS_JOB_SCHEDULING_COLUMNS TPUJOBS_JOB_SCHEDULING_COLUMNS_WITH("NULL")
// The same, with the spec of a job above $2 (ScheduleSince::specs_above).
#define TPUJOBS_JOB_SCHEDULING_WITH_SPEC \
  TPUJOBS_JOB_SCHEDULING_COLUMNS_WITH("CASE WHEN j.id > $2::bigint THEN j.spec END")

namespace tpujobs::db {

// Row `row` of `rows`, whose columns from `first_column` on are TPUJOBS_JOB_COLUMNS.
JobRow read_job(const QueryResult& rows, int row, int first_column = 0);
std::vector<JobRow> read_jobs(const QueryResult& rows);
// The first row of a read whose first two columns are the newest
// checkpoint's step and epoch, then TPUJOBS_JOB_COLUMNS; nullopt without one.
std::optional<JobWithCheckpoint> job_with_checkpoint(const QueryResult& rows);
// The states' names, as a text[] parameter takes them.
std::vector<std::optional<std::string>> state_names(const std::vector<JobState>& states);

}  // namespace tpujobs::db
