#include "db/tenant_limits_repository.h"

namespace tpujobs::db {

base::Status TenantLimitsRepository::set(const std::string& tenant, const TenantLimitsRow& limits) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows = connection.execute(
        "INSERT INTO tenant_limits (tenant, max_queued, submits_per_second, submit_burst,"
        " requests_per_second, request_burst, max_array_size, updated_at)"
        " VALUES ($1::text, $2::integer, $3::double precision, $4::integer,"
        " $5::double precision, $6::integer, $7::integer, now())"
        " ON CONFLICT (tenant) DO UPDATE SET max_queued = excluded.max_queued,"
        " submits_per_second = excluded.submits_per_second,"
        " submit_burst = excluded.submit_burst,"
        " requests_per_second = excluded.requests_per_second,"
        " request_burst = excluded.request_burst, max_array_size = excluded.max_array_size,"
        " updated_at = now()",
        {tenant, limits.max_queued, limits.submits_per_second, limits.submit_burst,
         limits.requests_per_second, limits.request_burst, limits.max_array_size});
    if (!rows.ok()) return rows.error();
    return base::Status::Ok();
  });
}

base::Result<std::map<std::string, TenantLimitsRow>> TenantLimitsRepository::load_all() {
  using Limits = std::map<std::string, TenantLimitsRow>;
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<Limits> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT tenant, max_queued, submits_per_second, submit_burst, requests_per_second,"
            " request_burst, max_array_size FROM tenant_limits");
        if (!rows.ok()) return rows.error();
        auto integer = [&](int row, int column) -> std::optional<std::int64_t> {
          if (rows->is_null(row, column)) return std::nullopt;
          return rows->int64(row, column);
        };
        auto real = [&](int row, int column) -> std::optional<double> {
          if (rows->is_null(row, column)) return std::nullopt;
          return rows->float64(row, column);
        };
        Limits out;
        for (int row = 0; row < rows->rows(); ++row) {
          out[rows->string(row, 0)] = {integer(row, 1), real(row, 2),    integer(row, 3),
                                       real(row, 4),    integer(row, 5), integer(row, 6)};
        }
        return out;
      });
}

base::Result<std::int64_t> TenantLimitsRepository::count_queued(const std::string& tenant,
                                                                std::int64_t at_most) {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::int64_t> {
                           base::Result<QueryResult> rows = connection.execute(
                               "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE tenant = $1::text"
                               " AND state = 'QUEUED' LIMIT $2::bigint) queued",
                               {tenant, at_most});
                           if (!rows.ok()) return rows.error();
                           return rows->int64(0, 0);
                         });
}

}  // namespace tpujobs::db
