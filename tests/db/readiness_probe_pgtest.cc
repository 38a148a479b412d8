// /readyz turns unready when the database answers but refuses writes
// (issue 34: after a full disk, /readyz said ready for 90 s while every
// submit got 503). A private PostgreSQL per test process: the test makes it
// read-only for every session with ALTER SYSTEM, as a full disk or a
// promoted-then-demoted server would refuse writes, and back.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "db/connection.h"
#include "db/database_probe.h"
#include "db/migrate.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

template <class Predicate>
bool within(std::chrono::seconds deadline, Predicate predicate) {
  for (const auto until = Clock::now() + deadline; Clock::now() < until;) {
    if (predicate()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return predicate();
}

class ReadinessProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base::Result<std::unique_ptr<ConnectionPool>> pool = testing::fresh_migrated_pool(1);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    base::Result<std::string> database = testing::create_database();
    ASSERT_TRUE(database.ok());
    auto admin = Connection::open(*database, 10s);
    ASSERT_TRUE(admin.ok()) << admin.error().message;
    admin_ = std::move(*admin);
  }
  void TearDown() override { set_read_only(false); }

  // Every session of the server, on its next statement.
  void set_read_only(bool on) {
    if (!admin_) return;
    ASSERT_TRUE(admin_
                    ->execute(on ? "ALTER SYSTEM SET default_transaction_read_only = on"
                                 : "ALTER SYSTEM RESET default_transaction_read_only")
                    .ok());
    ASSERT_TRUE(admin_->execute("SELECT pg_reload_conf()").ok());
    // The reload reaches each session at its next statement: wait until one does.
    ASSERT_TRUE(within(30s, [&] {
      auto shown = admin_->execute("SHOW default_transaction_read_only");
      return shown.ok() && shown->text(0, 0) == (on ? "on" : "off");
    }));
  }

  DatabaseProbe::Options options() const {
    DatabaseProbe::Options o;
    o.interval = 50ms;
    o.write_probe = true;
    o.write_interval = 100ms;
    return o;
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Connection> admin_;
};

TEST_F(ReadinessProbeTest, ADatabaseThatRefusesWritesIsNotReadyAndIsAgainOnceItTakesThem) {
  DatabaseProbe probe(pool_->conninfo(), options());
  probe.start();
  ASSERT_TRUE(probe.ready());

  set_read_only(true);
  EXPECT_TRUE(within(30s, [&] { return !probe.ready(); }))
      << "ready while every write fails (SELECT 1 still answers)";
  EXPECT_TRUE(probe.writes_failing());

  set_read_only(false);
  EXPECT_TRUE(within(30s, [&] { return probe.ready(); }));
  probe.stop();
}

TEST_F(ReadinessProbeTest, AFailedWriteOfTheServiceMakesItUnreadyUntilAProbeWriteSucceeds) {
  DatabaseProbe::Options o = options();
  o.write_interval = 1h;  // only the failure brings a probe write forward
  DatabaseProbe probe(pool_->conninfo(), o);
  probe.start();
  ASSERT_TRUE(probe.ready());
  set_read_only(true);
  probe.note_write(false);
  EXPECT_FALSE(probe.ready());
  // The probe's write fails as well: still unready, whatever the reads say.
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(probe.ready());
  set_read_only(false);
  EXPECT_TRUE(within(30s, [&] { return probe.ready(); }));
  probe.stop();
}

}  // namespace
}  // namespace tpujobs::db
