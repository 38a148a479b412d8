#include "db/notification_repository.h"

namespace tpujobs::db {
namespace {

constexpr const char* kNotificationColumns =
    "n.id, n.job_id, n.tenant, n.event, n.state, n.url, n.status, n.body, n.attempts,"
    " n.created_at, n.next_attempt_at, n.finished_at";

NotificationRow read_notification(const QueryResult& rows, int row) {
  NotificationRow n;
  n.id = rows.int64(row, 0);
  n.job_id = rows.int64(row, 1);
  n.tenant = rows.string(row, 2);
  n.event = rows.string(row, 3);
  n.state = rows.string(row, 4);
  n.url = rows.string(row, 5);
  n.status = rows.string(row, 6);
  n.body = rows.optional_string(row, 7);
  n.attempts = static_cast<int>(rows.int64(row, 8));
  n.created_at = rows.timestamp(row, 9);
  n.next_attempt_at = rows.timestamp(row, 10);
  n.finished_at = rows.optional_timestamp(row, 11);
  return n;
}

constexpr const char* kClaimDue =
    "UPDATE job_notifications n"
    " SET claimed_by = $1::text, claimed_until = now() + $3::bigint * interval '1 second'"
    " FROM (SELECT id FROM job_notifications"
    "       WHERE status = 'pending' AND next_attempt_at <= now()"
    "         AND (claimed_until IS NULL OR claimed_until < now())"
    "       ORDER BY next_attempt_at, id LIMIT $2::integer"
    "       FOR UPDATE SKIP LOCKED) due"
    " WHERE n.id = due.id"
    " RETURNING ";

// The attempt and the delivery's new status in one statement, only while
// the claim is still the sender's.
constexpr const char* kRecordAttempt =
    "WITH claimed AS ("
    "  SELECT id, attempts FROM job_notifications"
    "  WHERE id = $1::bigint AND claimed_by = $2::text AND status = 'pending'"
    "  FOR UPDATE"
    "), attempt AS ("
    "  INSERT INTO notification_attempts"
    "    (notification_id, attempt, at, duration_ms, status_code, error, sender)"
    "  SELECT id, attempts + 1, $3::timestamptz, $4::double precision, $5::integer, $6::text,"
    "         $2::text FROM claimed"
    "), changed AS ("
    "  UPDATE job_notifications n SET"
    "    attempts = c.attempts + 1,"
    "    body = COALESCE(n.body, $7::text),"
    "    status = $8::text,"
    "    next_attempt_at = CASE WHEN $8::text = 'pending'"
    "                           THEN now() + $9::bigint * interval '1 millisecond'"
    "                           ELSE n.next_attempt_at END,"
    "    finished_at = CASE WHEN $8::text = 'pending' THEN NULL ELSE now() END,"
    "    claimed_by = NULL, claimed_until = NULL"
    "  FROM claimed c WHERE n.id = c.id"
    "  RETURNING 1"
    ")"
    " SELECT count(*) FROM changed";

}  // namespace

base::Result<std::vector<NotificationRow>> NotificationRepository::claim_due(
    const std::string& sender, int limit, std::chrono::seconds claim_for) {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::vector<NotificationRow>> {
                           base::Result<QueryResult> rows = connection.execute(
                               std::string(kClaimDue) + kNotificationColumns,
                               {sender, limit, static_cast<std::int64_t>(claim_for.count())});
                           if (!rows.ok()) return rows.error();
                           std::vector<NotificationRow> out;
                           for (int row = 0; row < rows->rows(); ++row)
                             out.push_back(read_notification(*rows, row));
                           return out;
                         });
}

base::Result<bool> NotificationRepository::record_attempt(std::int64_t id,
                                                          const std::string& sender,
                                                          const NotificationAttempt& attempt) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<bool> {
        base::Result<QueryResult> rows = connection.execute(
            kRecordAttempt,
            {id, sender, attempt.at, attempt.duration_ms, attempt.status_code, attempt.error,
             attempt.body, attempt.status, static_cast<std::int64_t>(attempt.retry_after.count())});
        if (!rows.ok()) return rows.error();
        return rows->int64(0, 0) > 0;
      });
}

base::Result<std::optional<std::vector<NotificationRow>>> NotificationRepository::list_for_job(
    std::int64_t job_id, const std::optional<std::string>& tenant) {
  using Answer = std::optional<std::vector<NotificationRow>>;
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<Answer> {
        base::Result<QueryResult> job = connection.execute(
            "SELECT 1 FROM jobs WHERE id = $1::bigint AND ($2::text IS NULL OR tenant = $2::text)",
            {job_id, tenant});
        if (!job.ok()) return job.error();
        if (job->rows() == 0) return Answer();
        base::Result<QueryResult> rows = connection.execute(
            std::string("SELECT ") + kNotificationColumns +
                " FROM job_notifications n WHERE n.job_id = $1::bigint ORDER BY n.id",
            {job_id});
        if (!rows.ok()) return rows.error();
        std::vector<NotificationRow> out;
        for (int row = 0; row < rows->rows(); ++row) out.push_back(read_notification(*rows, row));
        base::Result<QueryResult> attempts = connection.execute(
            "SELECT a.notification_id, a.attempt, a.at, a.duration_ms, a.status_code, a.error, "
            "a.sender"
            " FROM notification_attempts a JOIN job_notifications n ON n.id = a.notification_id"
            " WHERE n.job_id = $1::bigint ORDER BY a.notification_id, a.attempt",
            {job_id});
        if (!attempts.ok()) return attempts.error();
        for (int row = 0; row < attempts->rows(); ++row) {
          NotificationAttemptRow a;
          a.attempt = static_cast<int>(attempts->int64(row, 1));
          a.at = attempts->timestamp(row, 2);
          a.duration_ms = attempts->float64(row, 3);
          if (!attempts->is_null(row, 4)) a.status_code = static_cast<int>(attempts->int64(row, 4));
          a.error = attempts->optional_string(row, 5);
          a.sender = attempts->string(row, 6);
          const std::int64_t owner = attempts->int64(row, 0);
          for (NotificationRow& n : out) {
            if (n.id == owner) n.attempt_log.push_back(std::move(a));
          }
        }
        return Answer(std::move(out));
      });
}

base::Result<std::optional<std::string>> NotificationRepository::find_secret(
    const std::string& tenant) {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::optional<std::string>> {
                           base::Result<QueryResult> rows = connection.execute(
                               "SELECT secret FROM notification_secrets WHERE tenant = $1::text",
                               {tenant});
                           if (!rows.ok()) return rows.error();
                           if (rows->rows() == 0) return std::optional<std::string>();
                           return std::optional<std::string>(rows->string(0, 0));
                         });
}

base::Result<TimePoint> NotificationRepository::store_secret(const std::string& tenant,
                                                             const std::string& secret) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<TimePoint> {
        base::Result<QueryResult> rows = connection.execute(
            "INSERT INTO notification_secrets (tenant, secret) VALUES ($1::text, $2::text)"
            " ON CONFLICT (tenant) DO UPDATE SET secret = EXCLUDED.secret, created_at = now()"
            " RETURNING created_at",
            {tenant, secret});
        if (!rows.ok()) return rows.error();
        return rows->timestamp(0, 0);
      });
}

base::Result<std::optional<TimePoint>> NotificationRepository::secret_created_at(
    const std::string& tenant) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<TimePoint>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT created_at FROM notification_secrets WHERE tenant = $1::text", {tenant});
        if (!rows.ok()) return rows.error();
        if (rows->rows() == 0) return std::optional<TimePoint>();
        return std::optional<TimePoint>(rows->timestamp(0, 0));
      });
}

base::Result<std::vector<std::string>> NotificationRepository::allowlist() {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::vector<std::string>> {
                           base::Result<QueryResult> rows = connection.execute(
                               "SELECT entry FROM notification_allowlist ORDER BY entry");
                           if (!rows.ok()) return rows.error();
                           std::vector<std::string> out;
                           for (int row = 0; row < rows->rows(); ++row)
                             out.push_back(rows->string(row, 0));
                           return out;
                         });
}

base::Status NotificationRepository::replace_allowlist(const std::vector<std::string>& entries) {
  std::vector<std::optional<std::string>> values(entries.begin(), entries.end());
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    // One statement: readers see the old list or the new one, never a mix.
    base::Result<QueryResult> rows = connection.execute(
        "WITH removed AS (DELETE FROM notification_allowlist"
        "                 WHERE entry <> ALL($1::text[]) RETURNING 1)"
        " INSERT INTO notification_allowlist (entry)"
        " SELECT DISTINCT e FROM unnest($1::text[]) AS e ON CONFLICT (entry) DO NOTHING",
        {Param::array(values)});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Status NotificationRepository::add_to_allowlist(const std::vector<std::string>& entries) {
  std::vector<std::optional<std::string>> values(entries.begin(), entries.end());
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows = connection.execute(
        "INSERT INTO notification_allowlist (entry)"
        " SELECT DISTINCT e FROM unnest($1::text[]) AS e ON CONFLICT (entry) DO NOTHING",
        {Param::array(values)});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

}  // namespace tpujobs::db
