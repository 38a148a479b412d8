#include <gtest/gtest.h>

#include "db/job_repository.h"
#include "db/tenant_limits_repository.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

TEST(TenantLimitsRepositoryTest, LimitsAreStoredReplacedAndReadBackWithNullsKept) {
  auto pool = testing::fresh_migrated_pool(2);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  TenantLimitsRepository repo(**pool);
  ASSERT_TRUE(repo.set("team-a", {5, 2.5, 10, std::nullopt, std::nullopt, 64}).ok());
  ASSERT_TRUE(repo.set("team-b", {}).ok());
  ASSERT_TRUE(repo.set("team-a", {7, 2.5, 10, 100.0, 200, 64}).ok());
  auto all = repo.load_all();
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  const TenantLimitsRow& a = all->at("team-a");
  EXPECT_EQ(a.max_queued, 7);
  EXPECT_EQ(a.submits_per_second, 2.5);
  EXPECT_EQ(a.requests_per_second, 100.0);
  EXPECT_EQ(a.request_burst, 200);
  EXPECT_EQ(a.max_array_size, 64);
  EXPECT_FALSE(all->at("team-b").max_queued);
  TenantLimitsRow negative;
  negative.max_queued = -1;
  EXPECT_FALSE(repo.set("team-c", negative).ok()) << "a negative limit is refused";
}

TEST(TenantLimitsRepositoryTest, QueuedJobsAreCountedPerTenantUpToTheBound) {
  auto pool = testing::fresh_migrated_pool(2);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  auto connection = (*pool)->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(connection.ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*connection)
                    ->execute("INSERT INTO jobs (tenant, name, spec, state) VALUES"
                              " ($1::text, 'j', '{}'::jsonb, $2::text)",
                              {i < 4 ? "team-a" : "team-b", i == 3 ? "RUNNING" : "QUEUED"})
                    .ok());
  }
  TenantLimitsRepository repo(**pool);
  EXPECT_EQ(*repo.count_queued("team-a", 100), 3);
  EXPECT_EQ(*repo.count_queued("team-a", 2), 2);
  EXPECT_EQ(*repo.count_queued("team-b", 100), 1);
  EXPECT_EQ(*repo.count_queued("nobody", 100), 0);
}

}  // namespace
}  // namespace tpujobs::db
