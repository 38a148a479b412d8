// Migrations against a real server: idempotent, concurrent, atomic per file.
#include <gtest/gtest.h>

#include <thread>

#include "db/migrate.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

std::unique_ptr<ConnectionPool> empty_schema_pool(int size = 2) {
  auto conninfo = testing::create_schema();
  EXPECT_TRUE(conninfo.ok()) << conninfo.error().message;
  auto pool = ConnectionPool::create(*conninfo, size);
  EXPECT_TRUE(pool.ok()) << pool.error().message;
  return std::move(*pool);
}

TEST(MigrateTest, EmbeddedMigrationsAreNumberedFromOne) {
  const std::vector<Migration> migrations = embedded_migrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(1, migrations[0].version);
  EXPECT_EQ("001_initial.sql", migrations[0].name);
  for (std::size_t i = 1; i < migrations.size(); ++i) {
    EXPECT_LT(migrations[i - 1].version, migrations[i].version);
  }
}

TEST(MigrateTest, CreatesTheDesignTablesAndIsIdempotent) {
  // A whole database, as in production.
  auto conninfo = testing::create_database();
  ASSERT_TRUE(conninfo.ok()) << conninfo.error().message;
  auto created = ConnectionPool::create(*conninfo, 2);
  ASSERT_TRUE(created.ok()) << created.error().message;
  std::unique_ptr<ConnectionPool> pool = std::move(*created);
  ASSERT_TRUE(migrate(*pool).ok());
  ASSERT_TRUE(migrate(*pool).ok());
  auto applied = applied_migrations(*pool);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(static_cast<std::size_t>(embedded_migrations().size()), applied->size());
  EXPECT_EQ(
      "agent_hosts agents api_tokens datasets job_checkpoint_chunks job_checkpoints job_events "
      "job_logs job_metrics job_notifications job_pending jobs notification_allowlist "
      "notification_attempts "
      "notification_secrets pool_hosts readiness_probe rendezvous_keys scheduler_term "
      "schema_migrations tenant_limits tenant_quotas",
      testing::first_value(*pool,
                           "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables"
                           " WHERE schemaname = 'public'"));
  // The state CHECK holds: no job can be in a state the lifecycle lacks.
  auto connection = pool->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  auto bad_state =
      (*connection)->execute("INSERT INTO jobs (tenant, spec, state) VALUES ('t', '{}', 'PAUSED')");
  ASSERT_FALSE(bad_state.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, bad_state.code());
}

TEST(MigrateTest, ConcurrentProcessesApplyEachVersionOnce) {
  auto conninfo = testing::create_schema();
  ASSERT_TRUE(conninfo.ok());
  std::vector<Migration> migrations = embedded_migrations();
  // A slow second migration widens the window in which starters overlap.
  migrations.push_back(
      {1000, "1000_slow.sql", "SELECT pg_sleep(0.2); CREATE TABLE slow_marker (x integer)"});
  std::vector<std::thread> starters;
  std::atomic<int> succeeded{0};
  for (int i = 0; i < 4; ++i) {
    starters.emplace_back([&] {
      auto pool = ConnectionPool::create(*conninfo, 1);  // one "process" each
      if (pool.ok() && migrate(**pool, migrations).ok()) ++succeeded;
    });
  }
  for (auto& starter : starters) starter.join();
  EXPECT_EQ(4, succeeded.load());
  auto pool = ConnectionPool::create(*conninfo, 1);
  ASSERT_TRUE(pool.ok());
  auto applied = applied_migrations(**pool);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(migrations.size(), applied->size());
  EXPECT_EQ(1000, applied->back());
}

TEST(MigrateTest, FailedMigrationLeavesNothingBehind) {
  auto pool = empty_schema_pool();
  std::vector<Migration> migrations = embedded_migrations();
  const int good = static_cast<int>(migrations.size());
  migrations.push_back({900, "900_broken.sql", "CREATE TABLE half_done (x integer); SELEC 1"});
  base::Status status = migrate(*pool, migrations);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(std::string::npos, status.error().message.find("900_broken.sql"));
  auto applied = applied_migrations(*pool);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(static_cast<std::size_t>(good), applied->size());
  EXPECT_EQ("0",
            testing::first_value(*pool,
                                 "SELECT count(*) FROM pg_tables WHERE tablename = 'half_done' AND "
                                 "schemaname = current_schema()"));

  // Fixed, it applies on the next start.
  migrations.back().sql = "CREATE TABLE half_done (x integer)";
  ASSERT_TRUE(migrate(*pool, migrations).ok());
  EXPECT_EQ("1",
            testing::first_value(*pool,
                                 "SELECT count(*) FROM pg_tables WHERE tablename = 'half_done' AND "
                                 "schemaname = current_schema()"));
  EXPECT_EQ("900_broken.sql",
            testing::first_value(*pool, "SELECT name FROM schema_migrations WHERE version = 900"));
}

// A process starved of the CPU at its start may sit between two statements
// of a migration longer than the 5 s every session allows a transaction to
// be idle: a migration allows a minute, and only itself.
TEST(MigrateTest, AMigrationsTransactionMayBeIdleForAMinuteAndNoOtherTransaction) {
  auto pool = empty_schema_pool(1);
  std::vector<Migration> migrations = embedded_migrations();
  migrations.push_back(
      {901, "901_idle_timeout.sql",
       "DO $$ BEGIN IF current_setting('idle_in_transaction_session_timeout') <> '1min' THEN "
       "RAISE EXCEPTION 'idle_in_transaction_session_timeout is %', "
       "current_setting('idle_in_transaction_session_timeout'); END IF; END $$"});
  base::Status status = migrate(*pool, migrations);
  ASSERT_TRUE(status.ok()) << status.error().message;
  // The same connection (the pool has one), after the migrations.
  EXPECT_EQ("5s", testing::first_value(*pool, "SHOW idle_in_transaction_session_timeout"));
}

}  // namespace
}  // namespace tpujobs::db
