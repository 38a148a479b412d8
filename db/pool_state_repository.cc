#include "db/pool_state_repository.h"

namespace tpujobs::db {

base::Status PoolStateRepository::upsert_host_health(const std::string& name,
                                                     const std::string& generation,
                                                     const std::string& health) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows = connection.execute(
        "INSERT INTO pool_hosts (name, generation, health) VALUES ($1::text, $2::text, $3::text)"
        " ON CONFLICT (name) DO UPDATE SET generation = excluded.generation,"
        " health = excluded.health, updated_at = now()",
        {name, generation, health});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Result<std::vector<HostHealthRow>> PoolStateRepository::load_host_health() {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::vector<HostHealthRow>> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT name, generation, health, updated_at FROM pool_hosts ORDER BY name");
        if (!rows.ok()) return rows.error();
        std::vector<HostHealthRow> hosts;
        for (int row = 0; row < rows->rows(); ++row) {
          hosts.push_back({rows->string(row, 0), rows->string(row, 1), rows->string(row, 2),
                           rows->timestamp(row, 3)});
        }
        return hosts;
      });
}

base::Status PoolStateRepository::set_quota(const std::string& tenant, int max_cores) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows = connection.execute(
        "INSERT INTO tenant_quotas (tenant, max_cores) VALUES ($1::text, $2::integer)"
        " ON CONFLICT (tenant) DO UPDATE SET max_cores = excluded.max_cores",
        {tenant, max_cores});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Status PoolStateRepository::clear_quota(const std::string& tenant) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows =
        connection.execute("DELETE FROM tenant_quotas WHERE tenant = $1::text", {tenant});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

Statement PoolStateRepository::quotas_statement() {
  return {"SELECT tenant, max_cores FROM tenant_quotas"};
}

std::map<std::string, int> PoolStateRepository::quotas_from(const QueryResult& rows) {
  std::map<std::string, int> quotas;
  for (int row = 0; row < rows.rows(); ++row)
    quotas[rows.string(row, 0)] = static_cast<int>(rows.int64(row, 1));
  return quotas;
}

base::Result<std::map<std::string, int>> PoolStateRepository::load_quotas() {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::map<std::string, int>> {
                           const Statement statement = quotas_statement();
                           base::Result<QueryResult> rows =
                               connection.execute(statement.sql, statement.params);
                           if (!rows.ok()) return rows.error();
                           return quotas_from(*rows);
                         });
}

}  // namespace tpujobs::db
