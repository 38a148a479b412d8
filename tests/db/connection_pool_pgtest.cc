// The pool, statements and transactions against a real server, and the
// answer deadline.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "db/connection_pool.h"
#include "db/database_probe.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<ConnectionPool> make_pool(int size) {
  base::Result<std::string> conninfo = testing::create_schema();
  EXPECT_TRUE(conninfo.ok()) << conninfo.error().message;
  base::Result<std::unique_ptr<ConnectionPool>> pool = ConnectionPool::create(*conninfo, size);
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
  EXPECT_EQ(base::ErrorCode::kConflict, duplicate.code());
  auto bad_json = (*connection)->execute("SELECT $1::jsonb", {"{not json"});
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, bad_json.code());
  auto bad_sql = (*connection)->execute("SELEC 1");
  ASSERT_FALSE(bad_sql.ok());
  EXPECT_EQ(base::ErrorCode::kInternal, bad_sql.code());
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

// A transaction begun with statements: they run in it, answered in order;
// it is rolled back unless committed, and one that fails fails the begin
// and leaves no transaction open on the connection.
TEST(ConnectionPoolTest, ATransactionBegunWithStatementsRunsThemInIt) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  ASSERT_TRUE((*connection)->execute_script("CREATE TABLE t (k text)").ok());
  const Statement dropped[] = {{"INSERT INTO t VALUES ($1::text)", {"dropped"}},
                               {"SELECT count(*) FROM t"}};
  {
    auto begun = Transaction::begin(**connection, dropped);
    ASSERT_TRUE(begun.ok()) << begun.error().message;
    ASSERT_EQ(2u, begun->second.size());
    EXPECT_EQ(1, begun->second[1].int64(0, 0));
    EXPECT_TRUE((*connection)->in_transaction());
  }  // destroyed without commit
  EXPECT_FALSE((*connection)->in_transaction());
  const Statement kept[] = {{"INSERT INTO t VALUES ($1::text)", {"kept"}}};
  {
    auto begun = Transaction::begin(**connection, kept);
    ASSERT_TRUE(begun.ok());
    ASSERT_TRUE(begun->first.commit().ok());
  }
  const Statement failing[] = {{"INSERT INTO t VALUES ($1::text)", {"half"}},
                               {"SELECT $1::integer", {"x"}}};
  EXPECT_FALSE(Transaction::begin(**connection, failing).ok());
  EXPECT_FALSE((*connection)->in_transaction());
  auto rows = (*connection)->execute("SELECT string_agg(k, ',' ORDER BY k) FROM t");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ("kept", rows->string(0, 0));
}

// Several statements in one round trip: each answer in its place, and a
// failure fails the call, skips what follows and leaves the connection as
// good as before (the next pipeline and statement run).
TEST(ConnectionPoolTest, APipelineAnswersEachStatementInOrder) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok()) << connection.error().message;
  ASSERT_TRUE((*connection)->execute("CREATE TABLE piped (n bigint)").ok());
  const std::vector<Statement> statements = {
      {"INSERT INTO piped VALUES ($1::bigint)", {7}},
      {"SELECT n * $1::bigint FROM piped", {6}},
      {"SELECT $1::text, count(*) FROM generate_series(1, $2::bigint)", {"rows", 3}},
  };
  auto answers = (*connection)->execute_pipeline(statements);
  ASSERT_TRUE(answers.ok()) << answers.error().message;
  ASSERT_EQ(3u, answers->size());
  EXPECT_EQ(1, (*answers)[0].affected_rows());
  EXPECT_EQ(42, (*answers)[1].int64(0, 0));
  EXPECT_EQ("rows", (*answers)[2].string(0, 0));
  EXPECT_EQ(3, (*answers)[2].int64(0, 1));

  const std::vector<Statement> failing = {
      {"INSERT INTO piped VALUES ($1::bigint)", {8}},
      {"SELECT 1 / $1::bigint", {0}},
      {"INSERT INTO piped VALUES ($1::bigint)", {9}},
  };
  auto failed = (*connection)->execute_pipeline(failing);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("division by zero"), std::string::npos)
      << failed.error().message;
  EXPECT_FALSE((*connection)->is_broken());
  EXPECT_FALSE((*connection)->in_transaction()) << "the sync ended the implicit transaction";
  auto kept = (*connection)->execute("SELECT array_agg(n ORDER BY n)::text FROM piped");
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ("{7}", kept->string(0, 0)) << "one implicit transaction: 8 rolled back, 9 never ran";
  auto again = (*connection)->execute_pipeline(statements);
  ASSERT_TRUE(again.ok()) << again.error().message;
  ASSERT_EQ(2, (*again)[1].rows()) << "7 inserted a second time";
  EXPECT_EQ(42, (*again)[1].int64(1, 0));
}

// A statement planned generically: its answer, planned once for any values
// (pg_prepared_statements counts the plans), and the session's own plan
// cache mode as it was after it, whether it succeeded or failed.
TEST(ConnectionPoolTest, AGenericStatementIsPlannedOnceAndLeavesTheSessionAsItWas) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok()) << connection.error().message;
  constexpr std::string_view kSql =
      "SELECT $1::bigint * 2 + count(*) FROM pg_class WHERE oid = $2::oid";
  for (int i = 0; i < 8; ++i) {
    const Param params[] = {i, 1259};
    auto answer = (*connection)->execute_generic(kSql, params);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    EXPECT_EQ(2 * i + 1, answer->int64(0, 0));
  }
  auto plans = (*connection)
                   ->execute(
                       "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE "
                       "statement = $1::text",
                       {std::string(kSql)});
  ASSERT_TRUE(plans.ok()) << plans.error().message;
  ASSERT_EQ(1, plans->rows());
  EXPECT_EQ(8, plans->int64(0, 0));
  EXPECT_EQ(0, plans->int64(0, 1));
  auto mode = (*connection)->execute("SELECT current_setting('plan_cache_mode')");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ("auto", mode->string(0, 0));

  const Param zero[] = {0};
  auto failed = (*connection)->execute_generic("SELECT 1 / $1::int", zero);
  ASSERT_FALSE(failed.ok());
  EXPECT_FALSE((*connection)->is_broken());
  mode = (*connection)->execute("SELECT current_setting('plan_cache_mode')");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ("auto", mode->string(0, 0)) << "the failure took the SET back with it";

  // In a transaction that goes on after it, the settings end with the
  // statement, not with the transaction.
  auto transaction = Transaction::begin(**connection);
  ASSERT_TRUE(transaction.ok()) << transaction.error().message;
  const Param three[] = {3, 1259};
  auto inside = (*connection)->execute_generic(kSql, three);
  ASSERT_TRUE(inside.ok()) << inside.error().message;
  EXPECT_EQ(7, inside->int64(0, 0));
  auto settings = transaction->execute(
      "SELECT current_setting('plan_cache_mode') || ' ' || current_setting('enable_seqscan') ||"
      " ' ' || current_setting('enable_bitmapscan')");
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ("auto on on", settings->string(0, 0));
}

TEST(ConnectionPoolTest, HandleReturnsConnectionAndAcquireTimesOut) {
  auto pool = make_pool(1);
  {
    auto first = pool->acquire(milliseconds(1000));
    ASSERT_TRUE(first.ok());
    auto second = pool->acquire(milliseconds(50));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(base::ErrorCode::kUnavailable, second.code());
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

// on_open sees each connection the pool opens, once, before it is lent:
// its server process is the backend that then answers its statements.
TEST(ConnectionPoolTest, EachConnectionOpenedIsShownOnceBeforeItsFirstUse) {
  base::Result<std::string> conninfo = testing::create_schema();
  ASSERT_TRUE(conninfo.ok()) << conninfo.error().message;
  std::vector<int> opened;
  auto pool = ConnectionPool::create(*conninfo, 2, base::real_clock(),
                                     [&opened](const Connection& connection) {
                                       opened.push_back(connection.server_process().pid);
                                     });
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  ASSERT_EQ(1u, opened.size()) << "the pool opens its first connection at once";
  auto first = (*pool)->acquire(milliseconds(1000));
  auto second = (*pool)->acquire(milliseconds(1000));
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(2u, opened.size());
  std::vector<int> answering;
  for (const PooledConnection* connection : {&*first, &*second}) {
    auto pid = (**connection).execute("SELECT pg_backend_pid()");
    ASSERT_TRUE(pid.ok()) << pid.error().message;
    answering.push_back(static_cast<int>(pid->int64(0, 0)));
  }
  std::sort(opened.begin(), opened.end());
  std::sort(answering.begin(), answering.end());
  EXPECT_EQ(opened, answering);
  { PooledConnection returned = std::move(*first); }
  auto again = (*pool)->acquire(milliseconds(1000));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(2u, opened.size()) << "a connection given back is not opened again";
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
  EXPECT_EQ(base::ErrorCode::kUnavailable, missing.code());
}

// The answer deadline: a statement the server does not answer in time fails
// kUnavailable "did not answer within N s" and closes its connection (the
// pool opens a new one); a server that takes connections and never answers
// (a stopped one) fails the connect after the deadline; the readiness probe
// tells the two kinds of server apart without waiting on either.

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A Unix socket where a PostgreSQL would listen, that takes connections (the
// kernel completes them on the backlog) and never answers: what a stopped
// postmaster looks like to a client.
class SilentServer {
 public:
  SilentServer() : directory_(testing::make_temp_dir("tpujobs-silent-")) {
    descriptor_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = directory_ + "/.s.PGSQL.5432";
    path.copy(address.sun_path, sizeof address.sun_path - 1);
    bound_ = descriptor_ >= 0 &&
             bind(descriptor_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
             listen(descriptor_, 16) == 0;
  }
  ~SilentServer() {
    if (descriptor_ >= 0) close(descriptor_);
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  bool bound() const { return bound_; }
  std::string conninfo() const { return "host=" + directory_ + " port=5432 dbname=tpujobs"; }

 private:
  std::string directory_;
  int descriptor_ = -1;
  bool bound_ = false;
};

TEST(ConnectionDeadlineTest, AStatementNotAnsweredInTimeFailsAndClosesItsConnection) {
  auto pool = make_pool(1);
  pool->set_answer_timeout(milliseconds(300));
  {
    auto connection = pool->acquire(milliseconds(1000));
    ASSERT_TRUE(connection.ok()) << connection.error().message;
    EXPECT_EQ((*connection)->answer_timeout(), milliseconds(300));
    const auto start = Clock::now();
    const int server = (*connection)->server_process().pid;
    auto slow = (*connection)->execute("SELECT pg_sleep(5)");
    const double took = seconds_since(start);
    ASSERT_FALSE(slow.ok());
    EXPECT_EQ(slow.code(), base::ErrorCode::kUnavailable);
    EXPECT_NE(slow.error().message.find("did not answer within 0.3 s"), std::string::npos)
        << slow.error().message;
    // Named for the server's log (log_lock_waits says what it waited on).
    EXPECT_NE(slow.error().message.find("(PostgreSQL process " + std::to_string(server) + ")"),
              std::string::npos)
        << slow.error().message;
    EXPECT_LT(took, 4.0) << "waited for the answer instead of the deadline";
    EXPECT_TRUE(slow.error().maybe_applied) << "sent: the server may have carried it out";
    EXPECT_TRUE((*connection)->is_broken());
    // What comes after on the closed connection fails at once, never hangs,
    // and was never sent.
    auto next = (*connection)->execute("SELECT 1");
    EXPECT_EQ(next.code(), base::ErrorCode::kUnavailable);
    EXPECT_FALSE(next.error().maybe_applied);
    EXPECT_FALSE((*connection)->in_transaction());
  }
  // The pool of one dropped it and opens a fresh one.
  auto again = pool->acquire(milliseconds(5000));
  ASSERT_TRUE(again.ok()) << again.error().message;
  auto answered = (*again)->execute("SELECT $1::int + 1", {41});
  ASSERT_TRUE(answered.ok()) << answered.error().message;
  EXPECT_EQ(answered->int64(0, 0), 42);
}

TEST(ConnectionDeadlineTest, APipelineNotAnsweredInTimeFailsAndClosesItsConnection) {
  auto pool = make_pool(1);
  pool->set_answer_timeout(milliseconds(300));
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok()) << connection.error().message;
  const std::vector<Statement> statements = {{"SELECT 1"}, {"SELECT pg_sleep(5)"}};
  const auto start = Clock::now();
  auto slow = (*connection)->execute_pipeline(statements);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.code(), base::ErrorCode::kUnavailable);
  EXPECT_NE(slow.error().message.find("did not answer within 0.3 s"), std::string::npos)
      << slow.error().message;
  EXPECT_LT(seconds_since(start), 4.0) << "waited for the answer instead of the deadline";
  EXPECT_TRUE(slow.error().maybe_applied);
  EXPECT_TRUE((*connection)->is_broken());
}

TEST(ConnectionDeadlineTest, ATransactionWhoseCommitIsNotAnsweredReportsUnavailable) {
  auto pool = make_pool(1);
  pool->set_answer_timeout(milliseconds(300));
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  auto transaction = Transaction::begin(**connection);
  ASSERT_TRUE(transaction.ok()) << transaction.error().message;
  auto slow = transaction->execute("SELECT pg_sleep(5)");
  EXPECT_EQ(slow.code(), base::ErrorCode::kUnavailable);
  // The outcome of a commit on a closed connection is unknown: kUnavailable,
  // as DESIGN says for a lost connection, not kInvalid.
  EXPECT_EQ(transaction->commit().code(), base::ErrorCode::kUnavailable);
}

TEST(ConnectionDeadlineTest, WithoutATimeoutAStatementWaitsAsLongAsItRuns) {
  auto pool = make_pool(1);
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  EXPECT_EQ((*connection)->answer_timeout(), milliseconds(0));
  auto slow = (*connection)->execute("SELECT pg_sleep(0.5), 7");
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_EQ(slow->int64(0, 1), 7);
}

TEST(ConnectionDeadlineTest, AServerThatNeverAnswersFailsTheConnectAfterTheDeadline) {
  SilentServer silent;
  ASSERT_TRUE(silent.bound());
  const auto start = Clock::now();
  auto opened = Connection::open(silent.conninfo(), milliseconds(2000));
  const double took = seconds_since(start);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.code(), base::ErrorCode::kUnavailable);
  EXPECT_NE(opened.error().message.find("did not answer within 2 s"), std::string::npos)
      << opened.error().message;
  EXPECT_FALSE(opened.error().maybe_applied) << "no statement was sent";
  EXPECT_LT(took, 30.0);
}

TEST(ConnectionDeadlineTest, TheReadinessProbeAnswersWithoutWaiting) {
  base::Result<std::string> conninfo = testing::create_schema();
  ASSERT_TRUE(conninfo.ok());
  DatabaseProbe::Options options;
  options.interval = milliseconds(50);
  options.timeout = milliseconds(2000);
  DatabaseProbe answering(*conninfo, options);
  EXPECT_FALSE(answering.ready()) << "not started";
  answering.start();
  EXPECT_TRUE(answering.ready());

  SilentServer silent;
  ASSERT_TRUE(silent.bound());
  DatabaseProbe silent_probe(silent.conninfo(), options);
  silent_probe.start();  // its first probe fails after the connect deadline
  const auto asked = Clock::now();
  EXPECT_FALSE(silent_probe.ready());
  EXPECT_LT(seconds_since(asked), 0.5) << "ready() waited on the database";
  silent_probe.stop();
  EXPECT_TRUE(answering.ready());
}

}  // namespace
}  // namespace tpujobs::db
