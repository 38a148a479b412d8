// The pool, statements and transactions against a real server.
#include <gtest/gtest.h>

#include <thread>

#include "db/connection_pool.h"
#include "db/test_cluster.h"

namespace tpujobs::db {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<ConnectionPool> make_pool(int size) {
  Result<std::string> conninfo = testing::create_schema();
  EXPECT_TRUE(conninfo.ok()) << conninfo.error().message;
  Result<std::unique_ptr<ConnectionPool>> pool = ConnectionPool::create(*conninfo, size);
  EXPECT_TRUE(pool.ok()) << pool.error().message;
  return std::move(*pool);
}

TEST(ConnectionPoolTest, RoundTripsParametersOfEveryKind) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok()) << connection.error().message;
  const std::string awkward = "it's \"quoted\", {braced}\\ and 'dropped'; DROP TABLE x; --";
  const std::string binary("\0\x01\xff\x7f", 4);
  const TimePoint when = *parse_timestamp("2026-11-21 12:17:01.123456+00");
  auto row = (*connection)
                 ->execute(
                     "SELECT $1::text, $2::bigint, $3::boolean, $4::text IS NULL,"
                     " $5::timestamptz, $6::bytea, $7::double precision",
                     {awkward, std::int64_t{-9000000000}, true, std::nullopt, when,
                      Param::bytes(binary), 0.25});
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(awkward, row->string(0, 0));
  EXPECT_EQ(-9000000000, row->int64(0, 1));
  EXPECT_TRUE(row->boolean(0, 2));
  EXPECT_TRUE(row->boolean(0, 3));
  EXPECT_EQ("2026-11-21 12:17:01.123456+00", format_timestamp(row->timestamp(0, 4)));
  EXPECT_EQ(binary, row->bytes(0, 5));
  EXPECT_EQ(0.25, row->float64(0, 6));
}

TEST(ConnectionPoolTest, ArraysCarryAnyTextAndNulls) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  const std::vector<std::optional<std::string>> elements = {"a,b", "{\"k\": \"v\\\\\"}",
                                                            std::nullopt, "", "NULL"};
  auto rows = (*connection)
                  ->execute("SELECT value, value IS NULL FROM unnest($1::text[]) AS value",
                            {Param::array(elements)});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(5, rows->rows());
  EXPECT_EQ("a,b", rows->string(0, 0));
  EXPECT_EQ("{\"k\": \"v\\\\\"}", rows->string(1, 0));
  EXPECT_TRUE(rows->boolean(2, 1));
  EXPECT_EQ("", rows->string(3, 0));
  EXPECT_FALSE(rows->boolean(4, 1));
  EXPECT_EQ("NULL", rows->string(4, 0));
}

TEST(ConnectionPoolTest, ErrorsMapToCodes) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  ASSERT_TRUE((*connection)->execute_script("CREATE TABLE t (k text PRIMARY KEY)").ok());
  ASSERT_TRUE((*connection)->execute("INSERT INTO t VALUES ($1::text)", {"a"}).ok());
  auto duplicate = (*connection)->execute("INSERT INTO t VALUES ($1::text)", {"a"});
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(ErrorCode::kConflict, duplicate.code());
  auto bad_json = (*connection)->execute("SELECT $1::jsonb", {"{not json"});
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(ErrorCode::kInvalid, bad_json.code());
  auto bad_sql = (*connection)->execute("SELEC 1");
  ASSERT_FALSE(bad_sql.ok());
  EXPECT_EQ(ErrorCode::kInternal, bad_sql.code());
  // The connection stays usable after errors.
  EXPECT_TRUE((*connection)->execute("SELECT 1").ok());
}

TEST(ConnectionPoolTest, TransactionRollsBackUnlessCommitted) {
  auto pool = make_pool(2);
  {
    auto connection = pool->acquire(milliseconds(1000));
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE((*connection)->execute_script("CREATE TABLE t (k text)").ok());
    {
      auto transaction = Transaction::begin(**connection);
      ASSERT_TRUE(transaction.ok());
      ASSERT_TRUE(transaction->execute("INSERT INTO t VALUES ($1::text)", {"dropped"}).ok());
    }  // destroyed without commit
    {
      auto transaction = Transaction::begin(**connection);
      ASSERT_TRUE(transaction.ok());
      ASSERT_TRUE(transaction->execute("INSERT INTO t VALUES ($1::text)", {"kept"}).ok());
      ASSERT_TRUE(transaction->commit().ok());
    }
    {
      // A failed statement makes the commit fail too: nothing half-done lands.
      auto transaction = Transaction::begin(**connection);
      ASSERT_TRUE(transaction.ok());
      ASSERT_TRUE(transaction->execute("INSERT INTO t VALUES ($1::text)", {"half"}).ok());
      ASSERT_FALSE(transaction->execute("SELECT $1::integer", {"x"}).ok());
      EXPECT_FALSE(transaction->commit().ok());
    }
    EXPECT_FALSE((*connection)->in_transaction());
  }
  auto other = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(other.ok());
  auto rows = (*other)->execute("SELECT string_agg(k, ',' ORDER BY k) FROM t");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ("kept", rows->string(0, 0));
}

TEST(ConnectionPoolTest, HandleReturnsConnectionAndAcquireTimesOut) {
  auto pool = make_pool(1);
  {
    auto first = pool->acquire(milliseconds(1000));
    ASSERT_TRUE(first.ok());
    auto second = pool->acquire(milliseconds(50));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(ErrorCode::kUnavailable, second.code());
  }
  auto again = pool->acquire(milliseconds(50));
  EXPECT_TRUE(again.ok());
}

TEST(ConnectionPoolTest, WaiterGetsConnectionWhenReleased) {
  auto pool = make_pool(1);
  auto held = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(held.ok());
  std::thread releaser([&held] {
    std::this_thread::sleep_for(milliseconds(100));
    PooledConnection dropped = std::move(*held);
  });
  auto waited = pool->acquire(milliseconds(5000));
  releaser.join();
  ASSERT_TRUE(waited.ok()) << waited.error().message;
  EXPECT_TRUE((*waited)->execute("SELECT 1").ok());
}

TEST(ConnectionPoolTest, OpenTransactionIsNotHandedToNextBorrower) {
  auto pool = make_pool(1);
  {
    auto connection = pool->acquire(milliseconds(1000));
    ASSERT_TRUE(connection.ok());
    ASSERT_TRUE((*connection)->execute_script("BEGIN").ok());
  }
  auto next = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE((*next)->in_transaction());
}

TEST(ConnectionPoolTest, ConninfoOverridesTheDefaults) {
  auto conninfo = testing::create_schema();
  ASSERT_TRUE(conninfo.ok());
  for (const auto& [extra, expected] :
       {std::pair{"", "tpujobs"}, std::pair{" application_name=custom", "custom"}}) {
    auto connection = Connection::open(*conninfo + extra);
    ASSERT_TRUE(connection.ok()) << connection.error().message;
    auto name = (*connection)->execute("SHOW application_name");
    ASSERT_TRUE(name.ok());
    EXPECT_EQ(expected, name->string(0, 0));
    auto zone = (*connection)->execute("SHOW TimeZone");
    EXPECT_EQ("UTC", zone->string(0, 0));
  }
}

TEST(ConnectionPoolTest, PingAndUnreachableServer) {
  auto pool = make_pool(1);
  EXPECT_TRUE(pool->ping());
  auto missing = ConnectionPool::create("host=/nonexistent-dir-tpujobs dbname=x user=x", 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(ErrorCode::kUnavailable, missing.code());
}

}  // namespace
}  // namespace tpujobs::db
