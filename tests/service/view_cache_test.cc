#include "service/view_cache.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

TEST(ViewCache, ReturnsWhatWasPutWithItsTenant) {
  ViewCache cache(1 << 20);
  EXPECT_FALSE(cache.find(7));
  cache.put(7, "team-a", R"({"id":7,"state":"SUCCEEDED"})");
  auto hit = cache.find(7);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tenant, "team-a");
  EXPECT_EQ(hit->body, R"({"id":7,"state":"SUCCEEDED"})");
  EXPECT_FALSE(cache.find(8));
}

TEST(ViewCache, ReplacingAViewKeepsOneEntry) {
  ViewCache cache(1 << 20);
  cache.put(1, "t", "old");
  const std::size_t before = cache.bytes();
  cache.put(1, "t", "new!");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), before + 1);
  EXPECT_EQ(cache.find(1)->body, "new!");
}

TEST(ViewCache, EvictsTheLeastRecentlyUsedPastTheBudget) {
  const std::string body(1000, 'x');
  ViewCache probe(1 << 20);
  probe.put(1, "t", body);
  const std::size_t one = probe.bytes();

  ViewCache cache(3 * one);
  cache.put(1, "t", body);
  cache.put(2, "t", body);
  cache.put(3, "t", body);
  ASSERT_TRUE(cache.find(1));  // 1 is now the most recent; 2 the least
  cache.put(4, "t", body);
  EXPECT_TRUE(cache.find(1));
  EXPECT_FALSE(cache.find(2));
  EXPECT_TRUE(cache.find(3));
  EXPECT_TRUE(cache.find(4));
  EXPECT_LE(cache.bytes(), 3 * one);
}

TEST(ViewCache, DoesNotKeepAViewLargerThanTheBudget) {
  ViewCache cache(100);
  cache.put(1, "t", std::string(1000, 'x'));
  EXPECT_FALSE(cache.find(1));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(ViewCache, AViewReadBeforeAForgetIsNotKept) {
  ViewCache cache(1 << 20);
  const std::uint64_t seen = cache.generation();
  cache.forget({5});  // job 5 was placed while its QUEUED row was being read
  EXPECT_FALSE(cache.put_if_current(seen, 5, "t", R"({"id":5,"state":"QUEUED"})"));
  EXPECT_FALSE(cache.find(5));
  const std::uint64_t now = cache.generation();
  EXPECT_TRUE(cache.put_if_current(now, 5, "t", R"({"id":5,"state":"STARTING"})"));
  EXPECT_EQ(cache.find(5)->body, R"({"id":5,"state":"STARTING"})");
}

TEST(ViewCache, ForgetDropsOnlyTheNamedViews) {
  ViewCache cache(1 << 20);
  cache.put_if_current(cache.generation(), 1, "t", "one");
  cache.put_if_current(cache.generation(), 2, "t", "two");
  const std::size_t before = cache.bytes();
  cache.forget({2, 99});
  EXPECT_TRUE(cache.find(1));
  EXPECT_FALSE(cache.find(2));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_LT(cache.bytes(), before);
}

}  // namespace
}  // namespace tpujobs::service
