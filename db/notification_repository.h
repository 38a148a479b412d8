// Job notifications (tables job_notifications, notification_attempts,
// notification_secrets, notification_allowlist; migration 005). The
// deliveries are queued by a trigger on job_events in the transaction of the
// state change; this repository lists them, lets a notifier claim the due
// ones and record each attempt, and keeps the tenants' signing secrets and
// the admin's allow-list.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

namespace tpujobs::db {

// LISTEN channel the trigger notifies (payload: the job id) when it queued
// a delivery.
inline constexpr const char* kNotificationChannel = "tpujobs_notifications";

struct NotificationAttemptRow {
  int attempt = 0;  // 1, 2, ...
  TimePoint at{};
  double duration_ms = 0;
  std::optional<int> status_code{};  // none: no HTTP answer (see error)
  std::optional<std::string> error{};
  std::string sender{};  // the replica that sent it
};

struct NotificationRow {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  std::string tenant{};
  std::string event{};  // started, succeeded, failed, cancelled, finished
  std::string state{};  // the state the job entered
  std::string url{};
  std::string status{};               // pending, delivered, failed
  std::optional<std::string> body{};  // set by the first attempt
  int attempts = 0;
  TimePoint created_at{};
  TimePoint next_attempt_at{};
  std::optional<TimePoint> finished_at{};
  std::vector<NotificationAttemptRow> attempt_log{};  // list_for_job only
};

// What one attempt came to.
struct NotificationAttempt {
  TimePoint at{};
  double duration_ms = 0;
  std::optional<int> status_code{};
  std::optional<std::string> error{};
  std::string body{};  // kept when the delivery has none yet
  // The delivery's next status: "delivered", "failed" (given up), or
  // "pending" to try again retry_after from now (the database's now).
  std::string status = "pending";
  std::chrono::milliseconds retry_after{0};
};

class NotificationRepository {
 public:
  // The pool must outlive the repository. Every call borrows a connection
  // for its duration, waiting at most acquire_timeout (kUnavailable after).
  explicit NotificationRepository(
      ConnectionPool& pool, std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Claims up to `limit` pending deliveries that are due and not claimed by
  // a live claim, for `claim_for`, as `sender`, oldest due first. Rows
  // another process is claiming at the same moment are skipped (SKIP
  // LOCKED), so every replica may call it and each delivery goes to one.
  base::Result<std::vector<NotificationRow>> claim_due(const std::string& sender, int limit,
                                                       std::chrono::seconds claim_for);

  // Records an attempt of a delivery `sender` claimed, and its next status;
  // releases the claim. false when the claim was lost meanwhile (it
  // expired and another replica took the delivery): nothing is recorded.
  base::Result<bool> record_attempt(std::int64_t id, const std::string& sender,
                                    const NotificationAttempt& attempt);

  // The job's deliveries with their attempts, oldest first; with a tenant,
  // nullopt when the job is not that tenant's (or does not exist).
  base::Result<std::optional<std::vector<NotificationRow>>> list_for_job(
      std::int64_t job_id, const std::optional<std::string>& tenant);

  // The tenant's signing secret; nullopt when it has none.
  base::Result<std::optional<std::string>> find_secret(const std::string& tenant);
  // Stores `secret` as the tenant's (replacing the old one). Returns when.
  base::Result<TimePoint> store_secret(const std::string& tenant, const std::string& secret);
  // When the tenant's secret was made; nullopt when it has none.
  base::Result<std::optional<TimePoint>> secret_created_at(const std::string& tenant);

  // The allow-list, sorted.
  base::Result<std::vector<std::string>> allowlist();
  // Replaces the allow-list with `entries` (one transaction).
  base::Status replace_allowlist(const std::vector<std::string>& entries);
  // Adds entries already absent (what `serve --notify-allow` does at start).
  base::Status add_to_allowlist(const std::vector<std::string>& entries);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
