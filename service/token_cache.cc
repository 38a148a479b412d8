#include "service/token_cache.h"

#include "service/tokens.h"

namespace tpujobs::service {

TokenCache::TokenCache(TokenStore& store, base::Clock& clock, TokenCacheOptions options)
    : store_(store), clock_(clock), options_(options) {}

base::Result<std::optional<api::Principal>> TokenCache::authenticate(std::string_view token) {
  const auto now = clock_.now();
  const std::string key(token);
  {
    base::MutexLock lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.second > now) return it->second.first;
  }
  auto principal = store_.find(hash_token(token));
  if (!principal.ok()) return principal.error();
  base::MutexLock lock(mutex_);
  if (cache_.size() >= options_.max_entries) cache_.clear();
  cache_[key] = {*principal, now + options_.ttl};
  return *principal;
}

bool TokenCache::auth_required() {
  const auto now = clock_.now();
  base::MutexLock lock(mutex_);
  if (!tokens_exist_ || now - counted_ > options_.recount) {
    auto count = store_.count_active();
    // Once tokens were seen, stay closed: when the database cannot say, and
    // when the last token was revoked (which must not open the service).
    if (count.ok())
      tokens_exist_ = *count > 0 || tokens_exist_.value_or(false);
    else if (!tokens_exist_)
      tokens_exist_ = false;
    counted_ = now;
  }
  return *tokens_exist_;
}

}  // namespace tpujobs::service
