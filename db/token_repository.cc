#include "db/token_repository.h"

namespace tpujobs::db {
namespace {

constexpr const char* kTokenColumns = "id, token_hash, tenant, role, created_at, revoked_at";

TokenRow read_token(const QueryResult& rows, int row) {
  return TokenRow{rows.int64(row, 0),  rows.string(row, 1),    rows.string(row, 2),
                  rows.string(row, 3), rows.timestamp(row, 4), rows.optional_timestamp(row, 5)};
}

}  // namespace

base::Result<TokenRow> TokenRepository::create_token(const std::string& token_hash,
                                                     const std::string& tenant,
                                                     const std::string& role) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<TokenRow> {
        base::Result<QueryResult> rows =
            connection.execute(std::string("INSERT INTO api_tokens (token_hash, tenant, role)"
                                           " VALUES ($1::text, $2::text, $3::text) RETURNING ") +
                                   kTokenColumns,
                               {token_hash, tenant, role});
        if (!rows.ok()) return rows.error();
        return read_token(*rows, 0);
      });
}

base::Result<std::optional<TokenRow>> TokenRepository::find_token(const std::string& token_hash) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<TokenRow>> {
        base::Result<QueryResult> rows = connection.execute(
            std::string("SELECT ") + kTokenColumns +
                " FROM api_tokens WHERE token_hash = $1::text AND revoked_at IS NULL",
            {token_hash});
        if (!rows.ok()) return rows.error();
        if (rows->rows() == 0) return std::optional<TokenRow>();
        return std::optional<TokenRow>(read_token(*rows, 0));
      });
}

base::Result<std::int64_t> TokenRepository::count_active_tokens() {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::int64_t> {
        base::Result<QueryResult> rows =
            connection.execute("SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL");
        if (!rows.ok()) return rows.error();
        return rows->int64(0, 0);
      });
}

base::Result<std::vector<TokenRow>> TokenRepository::list_tokens() {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<std::vector<TokenRow>> {
        base::Result<QueryResult> rows = connection.execute(std::string("SELECT ") + kTokenColumns +
                                                            " FROM api_tokens ORDER BY id");
        if (!rows.ok()) return rows.error();
        std::vector<TokenRow> tokens;
        for (int row = 0; row < rows->rows(); ++row) tokens.push_back(read_token(*rows, row));
        return tokens;
      });
}

base::Status TokenRepository::revoke_token(std::int64_t id) {
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> base::Status {
    base::Result<QueryResult> rows = connection.execute(
        "UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1::bigint",
        {id});
    if (!rows.ok()) return rows.error();
    if (rows->affected_rows() == 0) {
      return base::make_error(base::ErrorCode::kNotFound, "no token " + std::to_string(id));
    }
    return base::Status::Ok();
  });
}

}  // namespace tpujobs::db
