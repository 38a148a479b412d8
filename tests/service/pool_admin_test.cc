#include "service/pool_admin.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tpujobs::service {
namespace {

using nlohmann::json;
using scheduler::HostHealth;

// What the store and the pool were asked, in order, as readable lines.
using CallLog = std::vector<std::string>;

class FakeStore final : public PoolAdminStore {
 public:
  explicit FakeStore(CallLog& log) : log_(log) {}

  std::vector<db::ClusterHostRow> hosts;
  std::vector<db::JobRow> placed;
  std::set<std::int64_t> holding_cores;  // jobs release_lease can move
  std::map<std::int64_t, std::string> agents;
  bool down = false;

  base::Result<std::vector<db::ClusterHostRow>> list_hosts() override {
    if (down) return unavailable();
    return hosts;
  }
  base::Status store_host_health(const std::string& host, const std::string& generation,
                                 const std::string& health) override {
    if (down) return unavailable();
    log_.push_back("store health " + host + " " + generation + " " + health);
    return base::Status::Ok();
  }
  base::Result<std::vector<db::JobRow>> load_placed() override {
    if (down) return unavailable();
    return placed;
  }
  base::Result<std::optional<db::JobRow>> get_job(std::int64_t id) override {
    if (down) return unavailable();
    if (!holding_cores.count(id) && !agents.count(id)) return std::optional<db::JobRow>();
    db::JobRow row;
    row.id = id;
    if (agents.count(id)) row.agent = agents[id];
    return std::optional(row);
  }
  base::Result<bool> transition(const db::Transition& t) override {
    if (down) return unavailable();
    const bool moved = holding_cores.erase(t.job_id) > 0;
    log_.push_back("transition " + std::to_string(t.job_id) + " to " +
                   std::string(db::to_string(t.to)) + (moved ? "" : " refused"));
    return moved;
  }
  base::Status store_quota(const std::string& tenant, std::optional<int> max_cores) override {
    if (down) return unavailable();
    log_.push_back("store quota " + tenant + " " +
                   (max_cores ? std::to_string(*max_cores) : std::string("none")));
    return base::Status::Ok();
  }
  void notify(const char* channel, const std::string& payload) override {
    log_.push_back(std::string("notify ") + channel + " " + payload);
  }

 private:
  static base::Error unavailable() {
    return base::make_error(base::ErrorCode::kUnavailable, "the database did not answer");
  }
  CallLog& log_;
};

db::ClusterHostRow host_row(const std::string& name, const std::string& generation) {
  db::ClusterHostRow row;
  row.name = name;
  row.agent = "agent-a";
  row.agent_state = "alive";
  row.generation = generation;
  return row;
}

db::JobRow job_row(std::int64_t id, db::JobState state, std::optional<std::string> allocation) {
  db::JobRow row;
  row.id = id;
  row.state = state;
  row.allocation_json = std::move(allocation);
  return row;
}

std::string joined(const CallLog& log) {
  std::string out;
  for (const std::string& line : log) out += (out.empty() ? "" : "; ") + line;
  return out;
}

struct Fixture {
  CallLog log;
  FakeStore store{log};
  PoolAdmin admin{store};
};

TEST(PoolAdmin, AnUnknownHostIsNotFoundAndNothingIsStored) {
  Fixture f;
  f.store.hosts = {host_row("tpu-a-0", "v5e")};
  auto answer = f.admin.set_host_health("tpu-zz", HostHealth::kFailed);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.code(), base::ErrorCode::kNotFound);
  EXPECT_EQ(answer.error().message, "no host 'tpu-zz' in the pool");
  EXPECT_EQ(joined(f.log), "");
}

TEST(PoolAdmin, AnUnknownHostsNameIsCutInTheMessage) {
  Fixture f;
  auto answer = f.admin.set_host_health(std::string(500, 'h'), HostHealth::kDraining);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message, "no host '" + std::string(64, 'h') + "' in the pool");
}

TEST(PoolAdmin, AFailedHostListsExactlyTheJobsWhoseAllocationNamesIt) {
  Fixture f;
  f.store.hosts = {host_row("tpu-a-0", "v5e"), host_row("tpu-a-1", "v5e")};
  f.store.placed = {
      job_row(1, db::JobState::kRunning, R"({"hosts":["tpu-a-0","tpu-a-1"]})"),
      job_row(2, db::JobState::kRunning, R"({"hosts":["tpu-a-1"]})"),
      job_row(3, db::JobState::kStarting, R"({"hosts":["tpu-a-1","tpu-a-0"]})"),
      job_row(6, db::JobState::kRunning, R"({"devices":8})"),
      job_row(7, db::JobState::kRunning, "not json"),
  };
  auto answer = f.admin.set_host_health("tpu-a-0", HostHealth::kFailed);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(*answer, json::parse(R"({"host":"tpu-a-0","health":"failed","affected_jobs":[1,3]})"));
  EXPECT_EQ(joined(f.log), "store health tpu-a-0 v5e failed; notify tpujobs_submit pool")
      << "stored, then the leader is told: it moves the jobs";
}

TEST(PoolAdmin, ADrainingHostAffectsNoJobYet) {
  Fixture f;
  f.store.hosts = {host_row("tpu-a-0", "v4")};
  f.store.placed = {job_row(1, db::JobState::kRunning, R"({"hosts":["tpu-a-0"]})")};
  auto answer = f.admin.set_host_health("tpu-a-0", HostHealth::kDraining);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, json::parse(R"({"host":"tpu-a-0","health":"draining","affected_jobs":[]})"));
  EXPECT_EQ(joined(f.log), "store health tpu-a-0 v4 draining; notify tpujobs_submit pool");
}

TEST(PoolAdmin, HealthTheStoreRefusedIsNotAppliedAndTheLeaderIsNotWoken) {
  Fixture f;
  f.store.hosts = {host_row("tpu-a-0", "v5e")};
  f.store.down = true;
  auto answer = f.admin.set_host_health("tpu-a-0", HostHealth::kFailed);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.code(), base::ErrorCode::kUnavailable);
  EXPECT_EQ(joined(f.log), "");
}

TEST(PoolAdmin, ForceReleaseOfAJobHoldingNoCoresIsNotFoundAndNoOneIsTold) {
  Fixture f;
  auto answer = f.admin.force_release(42);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.code(), base::ErrorCode::kNotFound);
  EXPECT_EQ(answer.error().message, "job 42 holds no cores");
  EXPECT_EQ(joined(f.log), "transition 42 to FAILED refused");
}

TEST(PoolAdmin, ForceReleaseEndsTheLeaseThenTellsItsAgentAndTheLeader) {
  Fixture f;
  f.store.holding_cores = {7};
  f.store.agents[7] = "agent-b";
  auto answer = f.admin.force_release(7);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, json::parse(R"({"job":7,"released":true})"));
  EXPECT_EQ(joined(f.log),
            "transition 7 to FAILED; notify tpujobs_agent agent-b; notify tpujobs_submit released");
}

// Stored, then the leader woken: it places by the new quota at once.
TEST(PoolAdmin, AQuotaIsStoredThenTheLeaderIsWoken) {
  Fixture f;
  auto answer = f.admin.set_quota("team-a", 16);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, json::parse(R"({"tenant":"team-a","max_cores":16})"));
  EXPECT_EQ(joined(f.log), "store quota team-a 16; notify tpujobs_submit quota");
}

TEST(PoolAdmin, ClearingAQuotaAnswersNullAndIsStored) {
  Fixture f;
  auto answer = f.admin.set_quota("team-a", std::nullopt);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, json::parse(R"({"tenant":"team-a","max_cores":null})"));
  EXPECT_EQ(joined(f.log), "store quota team-a none; notify tpujobs_submit quota");
}

TEST(PoolAdmin, AQuotaTheStoreRefusedIsAnError) {
  Fixture f;
  f.store.down = true;
  auto answer = f.admin.set_quota("team-a", 4);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.code(), base::ErrorCode::kUnavailable);
  EXPECT_EQ(joined(f.log), "");
}

}  // namespace
}  // namespace tpujobs::service
