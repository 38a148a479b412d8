// The answer deadline: a statement the server does not answer in time fails
// kUnavailable "did not answer within N s" and closes its connection (the
// pool opens a new one); a server that takes connections and never answers
// (a stopped one) fails the connect after the deadline; the readiness probe
// tells the two kinds of server apart without waiting on either.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "db/connection_pool.h"
#include "db/database_probe.h"
#include "db/test_cluster.h"

namespace tpujobs::db {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<ConnectionPool> make_pool(int size) {
  Result<std::string> conninfo = testing::create_schema();
  EXPECT_TRUE(conninfo.ok()) << conninfo.error().message;
  Result<std::unique_ptr<ConnectionPool>> pool = ConnectionPool::create(*conninfo, size);
  EXPECT_TRUE(pool.ok()) << pool.error().message;
  return std::move(*pool);
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
    auto slow = (*connection)->execute("SELECT pg_sleep(5)");
    const double took = seconds_since(start);
    ASSERT_FALSE(slow.ok());
    EXPECT_EQ(slow.code(), ErrorCode::kUnavailable);
    EXPECT_NE(slow.error().message.find("did not answer within 0.3 s"), std::string::npos)
        << slow.error().message;
    EXPECT_LT(took, 4.0) << "waited for the answer instead of the deadline";
    EXPECT_TRUE((*connection)->is_broken());
    // What comes after on the closed connection fails at once, never hangs.
    auto next = (*connection)->execute("SELECT 1");
    EXPECT_EQ(next.code(), ErrorCode::kUnavailable);
    EXPECT_FALSE((*connection)->in_transaction());
  }
  // The pool of one dropped it and opens a fresh one.
  auto again = pool->acquire(milliseconds(5000));
  ASSERT_TRUE(again.ok()) << again.error().message;
  auto answered = (*again)->execute("SELECT $1::int + 1", {41});
  ASSERT_TRUE(answered.ok()) << answered.error().message;
  EXPECT_EQ(answered->int64(0, 0), 42);
}

TEST(ConnectionDeadlineTest, ATransactionWhoseCommitIsNotAnsweredReportsUnavailable) {
  auto pool = make_pool(1);
  pool->set_answer_timeout(milliseconds(300));
  auto connection = pool->acquire(milliseconds(1000));
  ASSERT_TRUE(connection.ok());
  auto transaction = Transaction::begin(**connection);
  ASSERT_TRUE(transaction.ok()) << transaction.error().message;
  auto slow = transaction->execute("SELECT pg_sleep(5)");
  EXPECT_EQ(slow.code(), ErrorCode::kUnavailable);
  // The outcome of a commit on a closed connection is unknown: kUnavailable,
  // as DESIGN says for a lost connection, not kInvalid.
  EXPECT_EQ(transaction->commit().code(), ErrorCode::kUnavailable);
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
  EXPECT_EQ(opened.code(), ErrorCode::kUnavailable);
  EXPECT_NE(opened.error().message.find("did not answer within 2 s"), std::string::npos)
      << opened.error().message;
  EXPECT_LT(took, 30.0);
}

TEST(ConnectionDeadlineTest, TheReadinessProbeAnswersWithoutWaiting) {
  Result<std::string> conninfo = testing::create_schema();
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
