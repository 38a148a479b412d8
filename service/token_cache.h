// The token cache: who a bearer token is, without a database round trip on
// every request. A token's principal (or that it is unknown) is kept for
// `ttl` (kTokenCacheTtl, 5 s): a revoked token stops working on every
// replica within that time, and a new one starts working within it. Whether
// any token exists at all (none: the service runs open on loopback) is asked
// again every `recount`. Once tokens were seen the service stays closed: a
// database that cannot answer, or the last token revoked, does not open it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "api/job_service.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"

namespace tpujobs::service {

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  // The principal of the token whose SHA-256 (hex) this is; nullopt when no
  // active token has it.
  virtual base::Result<std::optional<api::Principal>> find(const std::string& token_hash) = 0;
  virtual base::Result<std::int64_t> count_active() = 0;
};

// The revocation bound (docs/deploy.md, `tpujobs token revoke`).
inline constexpr std::chrono::milliseconds kTokenCacheTtl{5000};

struct TokenCacheOptions {
  std::chrono::milliseconds ttl = kTokenCacheTtl;
  std::chrono::milliseconds recount{2000};
  std::size_t max_entries = 10000;  // bounds memory against random tokens
};

class TokenCache {
 public:
  // The store and the clock must outlive the cache.
  TokenCache(TokenStore& store, base::Clock& clock, TokenCacheOptions options = {});

  base::Result<std::optional<api::Principal>> authenticate(std::string_view token);
  bool auth_required();

 private:
  TokenStore& store_;
  base::Clock& clock_;
  const TokenCacheOptions options_;
  base::Mutex mutex_;
  // token -> (principal, valid until)
  std::unordered_map<std::string, std::pair<std::optional<api::Principal>, base::Clock::time_point>>
      cache_ GUARDED_BY(mutex_);
  std::optional<bool> tokens_exist_ GUARDED_BY(mutex_);
  base::Clock::time_point counted_ GUARDED_BY(mutex_){};
};

}  // namespace tpujobs::service
