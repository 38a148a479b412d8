// Notifications against a real PostgreSQL (migration 005): the trigger that
// queues deliveries with every state change, claims that hand each delivery
// to one sender, attempts, the allow-list and the tenants' secrets.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "db/job_repository.h"
#include "db/notification_repository.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

class NotificationRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = testing::fresh_migrated_pool(6);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    jobs_ = std::make_unique<JobRepository>(*pool_);
    notifications_ = std::make_unique<NotificationRepository>(*pool_);
  }

  // A job of team-a; `notify` is the spec's notify object ("" for none).
  std::int64_t submit(const std::string& notify) {
    NewJob job;
    job.tenant = "team-a";
    job.spec_json = notify.empty() ? std::string(R"({"name": "plain"})")
                                   : R"({"name": "hooked", "notify": )" + notify + "}";
    job.spec_hash = "h";
    auto inserted = jobs_->insert_jobs({job});
    EXPECT_TRUE(inserted.ok()) << inserted.error().message;
    return inserted.ok() ? (*inserted)[0].row.id : 0;
  }

  void move(std::int64_t id, JobState from, JobState to) {
    Transition t;
    t.job_id = id;
    t.from = {from};
    t.to = to;
    t.reason = "test";
    auto moved = jobs_->transition(t);
    ASSERT_TRUE(moved.ok()) << moved.error().message;
    ASSERT_TRUE(*moved) << to_string(from) << " -> " << to_string(to);
  }

  // "event:state:status" of each delivery of the job, oldest first.
  std::string deliveries(std::int64_t id) {
    auto rows = notifications_->list_for_job(id, "team-a");
    EXPECT_TRUE(rows.ok()) << rows.error().message;
    if (!rows.ok() || !*rows) return "(not visible)";
    std::string out;
    for (const NotificationRow& n : **rows)
      out += (out.empty() ? "" : " ") + n.event + ":" + n.state + ":" + n.status;
    return out;
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<JobRepository> jobs_;
  std::unique_ptr<NotificationRepository> notifications_;
};

TEST_F(NotificationRepositoryTest, StateChangesQueueTheEventsTheSpecAsksFor) {
  const std::int64_t id =
      submit(R"({"url": "http://127.0.0.1:9/h", "events": ["started", "failed", "finished"]})");
  const std::int64_t plain = submit("");
  EXPECT_EQ(deliveries(id), "");
  move(id, JobState::kQueued, JobState::kStarting);
  move(id, JobState::kStarting, JobState::kRunning);
  EXPECT_EQ(deliveries(id), "started:RUNNING:pending");
  // Requeued (a host failed) and started again: 'started' is sent once.
  move(id, JobState::kRunning, JobState::kQueued);
  move(id, JobState::kQueued, JobState::kStarting);
  move(id, JobState::kStarting, JobState::kRunning);
  move(id, JobState::kRunning, JobState::kSucceeded);
  EXPECT_EQ(deliveries(id), "started:RUNNING:pending finished:SUCCEEDED:pending");

  move(plain, JobState::kQueued, JobState::kCancelled);
  EXPECT_EQ(deliveries(plain), "");
  // Another tenant does not see them.
  auto other = notifications_->list_for_job(id, "team-b");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(*other);
}

TEST_F(NotificationRepositoryTest, EventsDefaultToFinishedAndCancelledCounts) {
  const std::int64_t id = submit(R"({"url": "http://127.0.0.1:9/h"})");
  move(id, JobState::kQueued, JobState::kCancelled);
  EXPECT_EQ(deliveries(id), "finished:CANCELLED:pending");
  const std::int64_t only = submit(R"({"url": "http://127.0.0.1:9/h", "events": ["cancelled"]})");
  move(only, JobState::kQueued, JobState::kStarting);
  move(only, JobState::kStarting, JobState::kRunning);
  move(only, JobState::kRunning, JobState::kFailed);
  EXPECT_EQ(deliveries(only), "");
}

TEST_F(NotificationRepositoryTest, EachDueDeliveryGoesToOneSenderAtATime) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(submit(R"({"url": "http://127.0.0.1:9/h"})"));
    move(ids.back(), JobState::kQueued, JobState::kCancelled);
  }
  // Four senders claim at once: every delivery is claimed, none twice.
  std::vector<std::vector<NotificationRow>> claimed(4);
  std::vector<std::thread> senders;
  for (int s = 0; s < 4; ++s) {
    senders.emplace_back([&, s] {
      for (int round = 0; round < 10; ++round) {
        auto rows =
            notifications_->claim_due("sender-" + std::to_string(s), 3, std::chrono::seconds(60));
        if (rows.ok()) claimed[s].insert(claimed[s].end(), rows->begin(), rows->end());
      }
    });
  }
  for (std::thread& t : senders) t.join();
  std::multiset<std::int64_t> seen;
  for (const auto& rows : claimed)
    for (const NotificationRow& row : rows) seen.insert(row.id);
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()).size(), 20u);
  auto again = notifications_->claim_due("sender-9", 100, std::chrono::seconds(60));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty()) << "claims last claim_for";
}

TEST_F(NotificationRepositoryTest, AttemptsAreRecordedAndARetryIsClaimedAgain) {
  const std::int64_t id = submit(R"({"url": "http://127.0.0.1:9/h"})");
  move(id, JobState::kQueued, JobState::kCancelled);
  auto first = notifications_->claim_due("a", 10, std::chrono::seconds(60));
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_FALSE((*first)[0].body);
  NotificationAttempt failed;
  failed.at = std::chrono::system_clock::now();
  failed.duration_ms = 12.5;
  failed.status_code = 500;
  failed.error = "the receiver answered 500";
  failed.body = R"({"id": 1})";
  failed.status = "pending";
  failed.retry_after = std::chrono::milliseconds(0);
  // Only the claimer records.
  auto stranger = notifications_->record_attempt((*first)[0].id, "b", failed);
  ASSERT_TRUE(stranger.ok());
  EXPECT_FALSE(*stranger);
  auto recorded = notifications_->record_attempt((*first)[0].id, "a", failed);
  ASSERT_TRUE(recorded.ok()) << recorded.error().message;
  EXPECT_TRUE(*recorded);

  auto second = notifications_->claim_due("b", 10, std::chrono::seconds(60));
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].attempts, 1);
  EXPECT_EQ((*second)[0].body, R"({"id": 1})") << "a retry sends the first attempt's bytes";
  NotificationAttempt ok;
  ok.at = std::chrono::system_clock::now();
  ok.status_code = 200;
  ok.body = "ignored: the stored body stays";
  ok.status = "delivered";
  ASSERT_TRUE(notifications_->record_attempt((*second)[0].id, "b", ok).ok());

  auto rows = notifications_->list_for_job(id, std::nullopt);
  ASSERT_TRUE(rows.ok() && *rows);
  const NotificationRow& n = (**rows)[0];
  EXPECT_EQ(n.status, "delivered");
  EXPECT_EQ(n.body, R"({"id": 1})");
  EXPECT_TRUE(n.finished_at);
  ASSERT_EQ(n.attempt_log.size(), 2u);
  EXPECT_EQ(n.attempt_log[0].attempt, 1);
  EXPECT_EQ(n.attempt_log[0].status_code, 500);
  EXPECT_EQ(n.attempt_log[0].error, "the receiver answered 500");
  EXPECT_EQ(n.attempt_log[0].sender, "a");
  EXPECT_EQ(n.attempt_log[1].status_code, 200);
  EXPECT_EQ(n.attempt_log[1].sender, "b");
}

TEST_F(NotificationRepositoryTest, AllowlistAndSecrets) {
  ASSERT_TRUE(notifications_->add_to_allowlist({"b.example", "a.example:80"}).ok());
  ASSERT_TRUE(notifications_->add_to_allowlist({"b.example"}).ok());
  auto list = notifications_->allowlist();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<std::string>{"a.example:80", "b.example"}));
  ASSERT_TRUE(notifications_->replace_allowlist({"c.example"}).ok());
  EXPECT_EQ(*notifications_->allowlist(), std::vector<std::string>{"c.example"});
  ASSERT_TRUE(notifications_->replace_allowlist({}).ok());
  EXPECT_TRUE(notifications_->allowlist()->empty());

  EXPECT_FALSE(*notifications_->find_secret("team-a"));
  EXPECT_FALSE(*notifications_->secret_created_at("team-a"));
  ASSERT_TRUE(notifications_->store_secret("team-a", "one").ok());
  ASSERT_TRUE(notifications_->store_secret("team-a", "two").ok());
  EXPECT_EQ(*notifications_->find_secret("team-a"), "two");
  EXPECT_TRUE(*notifications_->secret_created_at("team-a"));
  EXPECT_FALSE(*notifications_->find_secret("team-b"));
}

}  // namespace
}  // namespace tpujobs::db
