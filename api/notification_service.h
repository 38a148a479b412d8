// What the notification routes need from the running service
// (service/Notifier implements it): the admin's allow-list, the tenants'
// signing secrets, and a job's deliveries. Methods are thread-safe and
// called from I/O threads; each makes at most a few bounded database reads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"

namespace tpujobs::api {

class NotificationService {
 public:
  virtual ~NotificationService() = default;

  // The allow-list (api/notify.h), sorted.
  virtual base::Result<std::vector<std::string>> allowlist() = 0;
  // Replaces it; entries are well formed (the route checks them).
  virtual base::Status set_allowlist(const std::vector<std::string>& entries) = 0;

  // True when the tenant has a signing secret.
  virtual base::Result<bool> has_secret(const std::string& tenant) = 0;
  // Makes a new secret for the tenant, replacing the old one, and returns it
  // (the only time it is shown): {"secret", "created_at"}.
  virtual base::Result<nlohmann::json> rotate_secret(const std::string& tenant) = 0;
  // {"exists", "created_at"} without the secret.
  virtual base::Result<nlohmann::json> secret_info(const std::string& tenant) = 0;

  // {"notifications": [...]} of the tenant's job, each with its attempts.
  // kNotFound when the job does not exist or is another tenant's.
  virtual base::Result<nlohmann::json> job_notifications(std::int64_t id,
                                                         const std::string& tenant) = 0;

  // Prometheus text lines about the deliveries this process made.
  virtual std::string prometheus_metrics() = 0;
};

}  // namespace tpujobs::api
