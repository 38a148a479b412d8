// A database that answers but refuses every write for longer than an
// agent's silence (issue 34, finding 6: "outages are not a job's fault"), as
// a managed PostgreSQL does when its disk fills (it turns read-only) or a
// server just promoted from a standby before it takes writes. Here:
// `ALTER SYSTEM SET default_transaction_read_only = on` and a reload, held
// until the agent has been silent past the leader's 10 s, then reset. The
// agent's heartbeats fail all along, as every other write; the leader can
// read, so its passes go on. Once writes are taken again, the agent must
// not be declared lost for a silence the database caused: the job trains on
// in its first attempt, and were it requeued it would resume from its
// checkpoint without spending a retry. Standalone, on the embedded
// PostgreSQL: a one-member cluster, whose leader and agent are the very
// classes a cluster runs in processes of their own (DatabaseHang's pauses
// run them so).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "db/connection.h"
#include "jobs_api.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

// Turns the server's writes off (read-only transactions by default, for
// every session once the configuration is reloaded) or on again. "" or what
// failed.
std::string set_read_only(db::Connection& session, bool read_only) {
  const char* set = read_only ? "ALTER SYSTEM SET default_transaction_read_only = on"
                              : "ALTER SYSTEM RESET default_transaction_read_only";
  if (base::Status s = session.execute_script(set); !s.ok()) return s.error().message;
  auto reloaded = session.execute("SELECT pg_reload_conf()", {});
  return reloaded.ok() ? "" : reloaded.error().message;
}

// The longest any alive agent has been silent, in ms, as the server sees it.
std::int64_t longest_silence_ms(db::Connection& session) {
  auto rows = session.execute(
      "SELECT coalesce(max((extract(epoch FROM now() - last_heartbeat) * 1000)::bigint), 0)"
      "  FROM agents WHERE state = 'alive'",
      {});
  return rows.ok() && rows->rows() == 1 ? rows->int64(0, 0) : -1;
}

// A read-only spell on the server `session` talks to, from the moment the
// agents were last heard until they have been silent past the leader's
// 10 s, with room: the leader, which can still read, would judge them.
// Always ends (writes back on), even when an assertion ends the test early.
class ReadOnlySpell {
 public:
  explicit ReadOnlySpell(db::Connection& session) : session_(session) {
    error_ = set_read_only(session_, true);
  }
  ~ReadOnlySpell() { end(); }
  ReadOnlySpell(const ReadOnlySpell&) = delete;
  ReadOnlySpell& operator=(const ReadOnlySpell&) = delete;

  // Waits (up to `timeout`) until `holds` of the longest silence of an
  // alive agent, in ms, as the server sees it.
  bool wait_for_silence(const std::function<bool(std::int64_t)>& holds,
                        std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (holds(longest_silence_ms(session_))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  std::string end() {
    if (ended_) return "";
    ended_ = true;
    return set_read_only(session_, false);
  }
  const std::string& error() const { return error_; }

 private:
  db::Connection& session_;
  std::string error_;
  bool ended_ = false;
};

// The job `id`, RUNNING past step 50 with a checkpoint stored, through a
// read-only spell of the database `conninfo`: once the agent has been heard
// from again it trains on (100 more steps with a checkpoint stored, which
// needs writes) in its first attempt.
void a_job_outlives_a_read_only_spell(const ServiceProcess& api, const std::string& conninfo,
                                      std::int64_t id, const std::function<std::string()>& logs) {
  const json running = wait_for_step(api, id, 50, std::chrono::seconds(180));
  ASSERT_EQ(running["state"], "RUNNING") << running.dump() << logs();
  auto session = db::Connection::open(conninfo);
  ASSERT_TRUE(session.ok()) << session.error().message;
  {
    ReadOnlySpell spell(**session);
    ASSERT_EQ(spell.error(), "");
    ASSERT_TRUE(spell.wait_for_silence([](std::int64_t ms) { return ms >= 13000; },
                                       std::chrono::seconds(120)))
        << "the agent's heartbeats went on while the database refused writes";
    ASSERT_EQ(spell.end(), "");
    // Writes are taken again; once the agent has been heard from, a leader
    // that was to declare it lost for the spell's silence has done so (it
    // requeues the job in the same pass): the job shows it from here on.
    ASSERT_TRUE(spell.wait_for_silence([](std::int64_t ms) { return ms >= 0 && ms < 2000; },
                                       std::chrono::seconds(120)))
        << "the agent was not heard from again";
  }
  const json at_end = wait_until(api, id, [](const json& j) { return j.contains("state"); });
  ASSERT_TRUE(at_end.is_object()) << "the job's view was not answered after the spell: "
                                  << at_end.dump() << logs();
  std::int64_t step = 0;
  if (at_end.contains("progress") && at_end["progress"].is_object())
    step = at_end["progress"].value("step", std::int64_t{0});
  const json after = wait_for_step(api, id, step + 100, std::chrono::seconds(180));
  const std::string story = "\nevents:\n" + event_reasons(api, id) + logs();
  EXPECT_EQ(after["state"], "RUNNING") << after.dump() << story;
  EXPECT_EQ(after["attempt"], 0) << "a retry spent on the database's outage" << story;
  EXPECT_TRUE(after["error"].is_null()) << after.dump() << story;
  const std::string reasons = event_reasons(api, id);
  // Requeued (its agent lost) only to resume from its checkpoint, free.
  if (reasons.find("was lost") != std::string::npos) {
    EXPECT_GE(resumed_from_step(api, id), running["last_checkpoint"].value("step", 0)) << story;
  }
  std::printf("read-only spell: the job %s, attempt %d\n",
              reasons.find("was lost") != std::string::npos ? "was requeued" : "ran on",
              after["attempt"].get<int>());
}

TEST(DatabaseReadOnly, AStandaloneServiceKeepsItsJobThroughASpellLongerThanTheSilence) {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  const std::int64_t id = submit(service, long_job_spec("through-read-only", 3));
  ASSERT_GT(id, 0);
  a_job_outlives_a_read_only_spell(
      service, "host=" + service.state_dir().string() + " port=5432 dbname=tpujobs user=tpujobs",
      id, [&] { return "\nservice:\n" + service.log(); });
  EXPECT_EQ(cancel_and_wait(service, id).state, "CANCELLED");
  EXPECT_EQ(service.stop(), 0) << service.log();
}

}  // namespace
}  // namespace tpujobs::testing
