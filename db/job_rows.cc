#include "db/job_rows.h"

namespace tpujobs::db {

JobRow read_job(const QueryResult& rows, int row, int first_column) {
  const int c = first_column;
  JobRow job;
  job.id = rows.int64(row, c + 0);
  job.tenant = rows.string(row, c + 1);
  job.name = rows.string(row, c + 2);
  job.labels_json = rows.string(row, c + 3);
  job.priority = static_cast<int>(rows.int64(row, c + 4));
  job.state = parse_job_state(rows.text(row, c + 5)).value_or(JobState::kFailed);
  job.spec_json = rows.string(row, c + 6);
  job.resolved_json = rows.string(row, c + 7);
  job.warnings_json = rows.string(row, c + 8);
  job.idempotency_key = rows.optional_string(row, c + 9);
  job.spec_hash = rows.string(row, c + 10);
  job.allocation_json = rows.optional_string(row, c + 11);
  job.pending_json = rows.optional_string(row, c + 12);
  job.progress_json = rows.optional_string(row, c + 13);
  job.latest_metrics_json = rows.optional_string(row, c + 14);
  job.error_json = rows.optional_string(row, c + 15);
  job.result_json = rows.optional_string(row, c + 16);
  job.attempt = static_cast<int>(rows.int64(row, c + 17));
  job.cancel_requested = rows.boolean(row, c + 18);
  job.created_at = rows.timestamp(row, c + 19);
  job.started_at = rows.optional_timestamp(row, c + 20);
  job.finished_at = rows.optional_timestamp(row, c + 21);
  job.updated_at = rows.timestamp(row, c + 22);
  job.agent = rows.optional_string(row, c + 23);
  if (!rows.is_null(row, c + 24)) job.placement_epoch = rows.int64(row, c + 24);
  if (!rows.is_null(row, c + 25)) job.array_id = rows.int64(row, c + 25);
  if (!rows.is_null(row, c + 26)) job.array_index = static_cast<int>(rows.int64(row, c + 26));
  job.array_values_json = rows.optional_string(row, c + 27);
  if (!rows.is_null(row, c + 28)) job.preempted_by = rows.int64(row, c + 28);
  job.requeued_at = rows.optional_timestamp(row, c + 29);
  job.unstarted_requeues = static_cast<int>(rows.int64(row, c + 30));
  if (!rows.is_null(row, c + 31)) job.placement = rows.int64(row, c + 31);
  return job;
}

std::optional<JobWithCheckpoint> job_with_checkpoint(const QueryResult& rows) {
  if (rows.rows() == 0) return std::nullopt;
  JobWithCheckpoint job{read_job(rows, 0, /*first_column=*/2)};
  if (!rows.is_null(0, 0)) {
    job.last_checkpoint = {rows.int64(0, 0), static_cast<int>(rows.int64(0, 1))};
  }
  return job;
}

std::vector<std::optional<std::string>> state_names(const std::vector<JobState>& states) {
  std::vector<std::optional<std::string>> names;
  for (JobState state : states) names.emplace_back(std::string(to_string(state)));
  return names;
}

std::vector<JobRow> read_jobs(const QueryResult& rows) {
  std::vector<JobRow> jobs;
  jobs.reserve(rows.rows());
  for (int row = 0; row < rows.rows(); ++row) jobs.push_back(read_job(rows, row));
  return jobs;
}

}  // namespace tpujobs::db
