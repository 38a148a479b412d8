// The pool's persistent operator state: host health set through the admin
// API (table pool_hosts) and per-tenant core quotas (table tenant_quotas).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

namespace tpujobs::db {

struct HostHealthRow {
  std::string name{};        // "v3-host-0"
  std::string generation{};  // "v3"
  std::string health{};      // as the scheduler names it ("healthy", "draining", "failed")
  TimePoint updated_at{};
};

class PoolStateRepository {
 public:
  // The pool must outlive the repository.
  explicit PoolStateRepository(ConnectionPool& pool,
                               std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Inserts or replaces the host's record.
  base::Status upsert_host_health(const std::string& name, const std::string& generation,
                                  const std::string& health);
  // Every recorded host, by name.
  base::Result<std::vector<HostHealthRow>> load_host_health();

  // Sets the tenant's core quota (kInvalid when negative).
  base::Status set_quota(const std::string& tenant, int max_cores);
  // Removes the tenant's quota (no limit). Removing a missing one is fine.
  base::Status clear_quota(const std::string& tenant);
  // tenant -> max_cores.
  base::Result<std::map<std::string, int>> load_quotas();
  // load_quotas' statement and its rows (db/scheduling_read.h).
  static Statement quotas_statement();
  static std::map<std::string, int> quotas_from(const QueryResult& rows);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
