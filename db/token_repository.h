// API tokens (table api_tokens). Only a hash of each token is stored; the
// caller hashes what the client presents and looks the hash up.
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

struct TokenRow {
  std::int64_t id = 0;
  std::string token_hash{};
  std::string tenant{};
  std::string role{};  // "user" or "admin"
  TimePoint created_at{};
  std::optional<TimePoint> revoked_at{};
};

class TokenRepository {
 public:
  // The pool must outlive the repository.
  explicit TokenRepository(ConnectionPool& pool,
                           std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // kConflict when the hash is already stored, kInvalid for another role.
  base::Result<TokenRow> create_token(const std::string& token_hash, const std::string& tenant,
                                      const std::string& role);
  // The token with this hash unless revoked; nullopt otherwise.
  base::Result<std::optional<TokenRow>> find_token(const std::string& token_hash);
  // How many tokens are not revoked (none: the service may run open on loopback).
  base::Result<std::int64_t> count_active_tokens();
  // Every token, revoked ones included, oldest first.
  base::Result<std::vector<TokenRow>> list_tokens();
  // Revokes it from now on (a token revoked already keeps its first
  // revocation time). kNotFound when there is no such token.
  base::Status revoke_token(std::int64_t id);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
