// Per-tenant limits (table tenant_limits, migration 035) and the count the
// queued-jobs limit is checked against. Every replica reads the same rows.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/result.h"
#include "db/connection_pool.h"

namespace tpujobs::db {

// A field left empty (NULL) takes the service's default.
struct TenantLimitsRow {
  std::optional<std::int64_t> max_queued;
  std::optional<double> submits_per_second;
  std::optional<std::int64_t> submit_burst;
  std::optional<double> requests_per_second;
  std::optional<std::int64_t> request_burst;
  std::optional<std::int64_t> max_array_size;
};

class TenantLimitsRepository {
 public:
  // The pool must outlive the repository.
  explicit TenantLimitsRepository(
      ConnectionPool& pool, std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Inserts or replaces the tenant's row (kInvalid for a negative value).
  base::Status set(const std::string& tenant, const TenantLimitsRow& limits);
  // tenant -> its row; tenants without a row are absent.
  base::Result<std::map<std::string, TenantLimitsRow>> load_all();
  // The tenant's QUEUED jobs, counted up to `at_most` (the count stops
  // there: a limit needs no more).
  base::Result<std::int64_t> count_queued(const std::string& tenant, std::int64_t at_most);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
