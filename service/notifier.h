// Job notifications (issue 17), the sending side. A trigger queues one
// delivery per job and event in PostgreSQL when the state changes, in the
// same transaction, whichever process changed it (migration 005). Every
// `tpujobs serve` replica runs a Notifier: a thread of its own (never an
// HTTP I/O thread or the timer thread) that claims the due deliveries with
// FOR UPDATE SKIP LOCKED, so each goes out from one replica, POSTs the job's
// view to the URL with an HMAC-SHA256 signature of the tenant's secret,
// records each attempt, and retries failures with exponential backoff up to
// max_attempts. Woken by LISTEN tpujobs_notifications, polling as fallback.
// Deliveries live in the database, so they survive a restart; a claim whose
// replica dies expires after claim_for and another replica sends it
// (at-least-once).
//
// Headers of a delivery:
//   Content-Type: application/json
//   X-Tpujobs-Event: finished            (the event that fired)
//   X-Tpujobs-Delivery: 42               (the same on every retry)
//   X-Tpujobs-Attempt: 1
//   X-Tpujobs-Timestamp: 1795000000      (Unix seconds of this attempt)
//   X-Tpujobs-Signature: sha256=<hex HMAC-SHA256 of the body, key = the tenant's secret>
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "api/notification_service.h"
#include "api/notify.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "db/notification_repository.h"

namespace tpujobs::service {

struct NotifierOptions {
  std::string instance = "tpujobs";  // names this replica in the attempts it records
  int max_attempts = 6;              // then the delivery is "failed"
  // Wait before retry n (n >= 1): first_retry * 2^(n-1), at most max_retry.
  std::chrono::milliseconds first_retry{1000};
  std::chrono::milliseconds max_retry{300000};
  std::chrono::milliseconds timeout{10000};  // connect, send and the answer, per attempt
  std::chrono::milliseconds poll{500};       // the fallback when no NOTIFY comes
  // How long a claim holds a batch; at least batch * timeout + 30 s, so it
  // outlasts a batch whose every POST times out.
  std::chrono::seconds claim_for{60};
  int batch = 8;
  base::Clock* clock = nullptr;  // null: the real clock; must outlive the notifier
};

// The job's view as stored (JSON text, the members GET /v1/jobs/{id}
// answers): at least as new as the event being sent, whose outbox row
// committed with the state change. kNotFound when the job is gone.
using JobViewSource =
    std::function<base::Result<std::string>(std::int64_t id, const std::string& tenant)>;

// "sha256=" + lower-case hex of HMAC-SHA256(key = secret, message = body).
std::string sign_notification(std::string_view secret, std::string_view body);

// How long to wait after `failed_attempts` failures (>= 1).
std::chrono::milliseconds retry_delay(int failed_attempts, const NotifierOptions& options);

// POSTs `body` as application/json to `url` with `headers`, on a connection
// of its own, giving up after `timeout` (resolve, connect, send and answer
// together): the receiver's status code, or, when there was no answer, a
// kUnavailable error saying why ("connect: Connection refused"). Never
// throws.
base::Result<int> post_json(const api::HttpUrl& url,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body, std::chrono::milliseconds timeout);

class Notifier final : public api::NotificationService {
 public:
  // The pool must outlive the notifier; `views` is called from its thread.
  Notifier(db::ConnectionPool& pool, JobViewSource views, NotifierOptions options);
  ~Notifier() override;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  void start();
  void stop();  // idempotent; waits for the attempt in flight

  // Claims the due deliveries (up to options.batch), sends each once and
  // records the attempts. Returns how many it sent. The thread calls it;
  // tests may too.
  base::Result<int> deliver_due();

  // api::NotificationService
  base::Result<std::vector<std::string>> allowlist() override;
  base::Status set_allowlist(const std::vector<std::string>& entries) override;
  base::Result<bool> has_secret(const std::string& tenant) override;
  base::Result<nlohmann::json> rotate_secret(const std::string& tenant) override;
  base::Result<nlohmann::json> secret_info(const std::string& tenant) override;
  base::Result<nlohmann::json> job_notifications(std::int64_t id,
                                                 const std::string& tenant) override;
  std::string prometheus_metrics() override;

  const std::string& sender() const { return sender_; }

 private:
  void loop();
  // One attempt of a claimed delivery: what to record.
  db::NotificationAttempt attempt(const db::NotificationRow& row,
                                  const std::vector<std::string>& allowlist);

  db::ConnectionPool& pool_;
  db::NotificationRepository repo_;
  JobViewSource views_;
  NotifierOptions options_;
  base::Clock& clock_;
  const std::string sender_;  // instance, pid and a random tag: unique among replicas
  base::Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  // Attempts this process made, by what they came to.
  std::atomic<std::int64_t> delivered_{0};
  std::atomic<std::int64_t> retried_{0};
  std::atomic<std::int64_t> given_up_{0};
  std::thread thread_;
};

}  // namespace tpujobs::service
