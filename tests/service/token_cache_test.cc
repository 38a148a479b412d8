#include "service/token_cache.h"

#include <gtest/gtest.h>

#include <map>

#include "service/tokens.h"

namespace tpujobs::service {
namespace {

using namespace std::chrono_literals;

class FakeTokens final : public TokenStore {
 public:
  std::map<std::string, api::Principal> by_hash;
  bool down = false;
  int finds = 0;
  base::Result<std::optional<api::Principal>> find(const std::string& hash) override {
    ++finds;
    if (down) return base::make_error(base::ErrorCode::kUnavailable, "down");
    auto it = by_hash.find(hash);
    if (it == by_hash.end()) return std::optional<api::Principal>();
    return std::optional(it->second);
  }
  base::Result<std::int64_t> count_active() override {
    if (down) return base::make_error(base::ErrorCode::kUnavailable, "down");
    return static_cast<std::int64_t>(by_hash.size());
  }
};

TEST(TokenCache, AKnownTokenIsAnsweredFromMemoryUntilItsTimeIsUp) {
  FakeTokens store;
  store.by_hash[hash_token("tpj_a")] = {"team-a", false};
  base::FakeClock clock;
  TokenCache cache(store, clock, {.ttl = 5s});
  auto who = cache.authenticate("tpj_a");
  ASSERT_TRUE(who.ok() && *who);
  EXPECT_EQ((*who)->tenant, "team-a");
  EXPECT_TRUE(cache.authenticate("tpj_a").ok());
  EXPECT_EQ(store.finds, 1);
  // Revoked: still accepted until the cached answer expires, then refused.
  store.by_hash.clear();
  clock.advance(4s);
  EXPECT_TRUE(*cache.authenticate("tpj_a"));
  clock.advance(2s);
  EXPECT_FALSE(*cache.authenticate("tpj_a"));
  EXPECT_EQ(store.finds, 2);
}

TEST(TokenCache, AnUnknownTokenIsRememberedTooAndAnOutageIsAnErrorNotAnAnswer) {
  FakeTokens store;
  base::FakeClock clock;
  TokenCache cache(store, clock);
  EXPECT_FALSE(*cache.authenticate("tpj_nobody"));
  EXPECT_FALSE(*cache.authenticate("tpj_nobody"));
  EXPECT_EQ(store.finds, 1);
  store.down = true;
  auto answer = cache.authenticate("tpj_other");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.code(), base::ErrorCode::kUnavailable);
}

TEST(TokenCache, OnceTokensExistAnOutageKeepsTheServiceClosed) {
  FakeTokens store;
  base::FakeClock clock;
  TokenCache cache(store, clock, {.recount = 2s});
  EXPECT_FALSE(cache.auth_required()) << "no token: open on loopback";
  store.by_hash[hash_token("tpj_a")] = {"team-a", true};
  EXPECT_FALSE(cache.auth_required()) << "counted again only after `recount`";
  clock.advance(3s);
  EXPECT_TRUE(cache.auth_required());
  store.down = true;
  clock.advance(3s);
  EXPECT_TRUE(cache.auth_required());
}

// The revocation bound: a revoked token is accepted for less than
// kTokenCacheTtl after its last lookup, never at or after it.
TEST(TokenCache, ARevokedTokenIsRefusedOnceTheBoundHasPassed) {
  FakeTokens store;
  store.by_hash[hash_token("tpj_a")] = {"team-a", false};
  store.by_hash[hash_token("tpj_b")] = {"team-b", false};
  base::FakeClock clock;
  TokenCache cache(store, clock);
  ASSERT_TRUE(*cache.authenticate("tpj_a"));
  store.by_hash.erase(hash_token("tpj_a"));
  clock.advance(kTokenCacheTtl - 1ms);
  EXPECT_TRUE(*cache.authenticate("tpj_a")) << "answered from memory within the bound";
  clock.advance(1ms);
  EXPECT_FALSE(*cache.authenticate("tpj_a"));
  EXPECT_LE(kTokenCacheTtl, 5s) << "docs/deploy.md and `tpujobs token revoke` promise 5 s";
}

// Revoking the last token must not open a service that required tokens.
TEST(TokenCache, RevokingTheLastTokenKeepsTheServiceClosed) {
  FakeTokens store;
  store.by_hash[hash_token("tpj_a")] = {"team-a", true};
  base::FakeClock clock;
  TokenCache cache(store, clock, {.recount = 2s});
  EXPECT_TRUE(cache.auth_required());
  store.by_hash.clear();
  clock.advance(3s);
  EXPECT_TRUE(cache.auth_required());
  EXPECT_FALSE(*cache.authenticate("tpj_a"));
}

TEST(TokenCache, RandomTokensCannotGrowItWithoutBound) {
  FakeTokens store;
  base::FakeClock clock;
  TokenCache cache(store, clock, {.max_entries = 3});
  for (const char* t : {"tpj_1", "tpj_2", "tpj_3", "tpj_4"}) (void)cache.authenticate(t);
  store.finds = 0;
  (void)cache.authenticate("tpj_1");  // dropped when the fourth came
  EXPECT_EQ(store.finds, 1);
}

}  // namespace
}  // namespace tpujobs::service
