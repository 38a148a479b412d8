#include "service/view_cache.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

TEST(FinishedViewCache, ReturnsWhatWasPutWithItsTenant) {
  FinishedViewCache cache(1 << 20);
  EXPECT_FALSE(cache.find(7));
  cache.put(7, "team-a", R"({"id":7,"state":"SUCCEEDED"})");
  auto hit = cache.find(7);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tenant, "team-a");
  EXPECT_EQ(hit->body, R"({"id":7,"state":"SUCCEEDED"})");
  EXPECT_FALSE(cache.find(8));
}

TEST(FinishedViewCache, ReplacingAViewKeepsOneEntry) {
  FinishedViewCache cache(1 << 20);
  cache.put(1, "t", "old");
  const std::size_t before = cache.bytes();
  cache.put(1, "t", "new!");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), before + 1);
  EXPECT_EQ(cache.find(1)->body, "new!");
}

TEST(FinishedViewCache, EvictsTheLeastRecentlyUsedPastTheBudget) {
  const std::string body(1000, 'x');
  FinishedViewCache probe(1 << 20);
  probe.put(1, "t", body);
  const std::size_t one = probe.bytes();

  FinishedViewCache cache(3 * one);
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

TEST(FinishedViewCache, DoesNotKeepAViewLargerThanTheBudget) {
  FinishedViewCache cache(100);
  cache.put(1, "t", std::string(1000, 'x'));
  EXPECT_FALSE(cache.find(1));
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace tpujobs::service
