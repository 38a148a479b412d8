#include "api/stream_slots.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpujobs::api {
namespace {

// Keeps what it was answered.
class RecordingWriter final : public ResponseWriter {
 public:
  void respond(Response response) override { answer = std::move(response); }
  void start_stream(Response) override {}
  bool write(std::string) override { return !gone; }
  void end() override {}
  bool closed() const override { return gone; }
  std::optional<Response> answer;
  bool gone = false;
};

std::string header(const Response& response, const std::string& name) {
  for (const auto& [n, v] : response.headers)
    if (n == name) return v;
  return "";
}

TEST(StreamSlots, ATenantOverItsShareIs429AndAFullServiceIs503NamingTheLimitValueAndCount) {
  auto slots = StreamSlots::create("log followers", "tpujobs_log_followers", {2, 3});
  std::vector<ResponseWriterPtr> held;
  for (int i = 0; i < 2; ++i) {
    auto admitted = slots->admit("alice", std::make_shared<RecordingWriter>());
    ASSERT_TRUE(admitted);
    held.push_back(*admitted);
  }
  auto refused = std::make_shared<RecordingWriter>();
  EXPECT_FALSE(slots->admit("alice", refused));
  ASSERT_TRUE(refused->answer);
  EXPECT_EQ(refused->answer->status, 429);
  EXPECT_EQ(refused->answer->content_type, "application/problem+json");
  EXPECT_EQ(header(*refused->answer, "Retry-After"), "1");
  const auto body = nlohmann::json::parse(refused->answer->body);
  EXPECT_EQ(body["limit"], "log followers per_tenant");
  EXPECT_EQ(body["value"], 2);
  EXPECT_EQ(body["current"], 2);

  auto bob = slots->admit("bob", std::make_shared<RecordingWriter>());
  ASSERT_TRUE(bob);
  auto full = std::make_shared<RecordingWriter>();
  EXPECT_FALSE(slots->admit("carol", full));
  ASSERT_TRUE(full->answer);
  EXPECT_EQ(full->answer->status, 503);
  EXPECT_EQ(nlohmann::json::parse(full->answer->body)["limit"], "log followers total");
  EXPECT_EQ(nlohmann::json::parse(full->answer->body)["current"], 3);
  EXPECT_NE(slots->prometheus().find("tpujobs_log_followers_refused_total{limit=\"per_tenant\"} 1"),
            std::string::npos);
  EXPECT_NE(slots->prometheus().find("tpujobs_log_followers_refused_total{limit=\"total\"} 1"),
            std::string::npos);
  EXPECT_NE(slots->prometheus().find("tpujobs_log_followers 3\n"), std::string::npos);
}

TEST(StreamSlots, ASlotIsGivenBackOnceAtTheAnswerTheEndOrTheLastReference) {
  auto slots = StreamSlots::create("long-poll waiters", "tpujobs_wait_requests", {1, 0});
  auto first = slots->admit("alice", std::make_shared<RecordingWriter>());
  ASSERT_TRUE(first);
  EXPECT_EQ(slots->held("alice"), 1);
  (*first)->respond(Response{});
  (*first)->respond(Response{});  // a second call gives nothing back twice
  EXPECT_EQ(slots->held("alice"), 0);
  first->reset();
  EXPECT_EQ(slots->held_total(), 0);

  auto second = slots->admit("alice", std::make_shared<RecordingWriter>());
  ASSERT_TRUE(second);
  (*second)->end();
  EXPECT_EQ(slots->held("alice"), 0);
  second->reset();

  auto inner = std::make_shared<RecordingWriter>();
  auto third = slots->admit("alice", inner);
  ASSERT_TRUE(third);
  EXPECT_FALSE(slots->admit("alice", std::make_shared<RecordingWriter>()));
  inner->gone = true;
  EXPECT_FALSE((*third)->write("x"));  // the peer went: the slot is free
  EXPECT_TRUE(slots->admit("alice", std::make_shared<RecordingWriter>()));
  third->reset();
  EXPECT_EQ(slots->held_total(), 0);
}

}  // namespace
}  // namespace tpujobs::api
