// The signature receivers check, against vectors computed without the
// notifier: RFC 4231's test case 2 and the openssl command line.
#include "service/notifier.h"

#include <gtest/gtest.h>

#include "../client/loopback_server.h"
#include "openssl_hmac.h"

namespace tpujobs::service {
namespace {

TEST(NotificationSignature, IsRfc4231HmacSha256) {
  // RFC 4231 §4.3, test case 2.
  EXPECT_EQ(sign_notification("Jefe", "what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(NotificationSignature, MatchesTheOpensslCommandLine) {
  const std::string key = "tpjn_Ipz9cK2mbP_h6MalK0VrxNmvgTEOBQxuNjKROFHNr9c";
  const std::string body = R"({"id":7,"state":"SUCCEEDED","name":"ünïcode \" job"})";
  const std::string expected = tpujobs::testing::openssl_hmac(key, body);
  if (expected.empty()) GTEST_SKIP() << "the openssl command is not installed";
  EXPECT_EQ(sign_notification(key, body), "sha256=" + expected);
  EXPECT_NE(sign_notification(key + "x", body), "sha256=" + expected);
}

TEST(NotificationRetry, BacksOffExponentiallyUpToTheCap) {
  NotifierOptions options;
  options.first_retry = std::chrono::milliseconds(1000);
  options.max_retry = std::chrono::milliseconds(5000);
  EXPECT_EQ(retry_delay(1, options).count(), 1000);
  EXPECT_EQ(retry_delay(2, options).count(), 2000);
  EXPECT_EQ(retry_delay(3, options).count(), 4000);
  EXPECT_EQ(retry_delay(4, options).count(), 5000);
  EXPECT_EQ(retry_delay(40, options).count(), 5000);
}

TEST(NotificationPost, ReportsWhyThereWasNoAnswer) {
  // Port 1 on loopback: nothing listens there.
  const client::HttpResponse r =
      post_json({"127.0.0.1", 1, "/"}, {}, "{}", std::chrono::milliseconds(2000));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error.rfind("connect: ", 0), 0u) << r.error;
}

TEST(NotificationPost, SendsTheNotifiersHeadersAndTheBody) {
  testing::LoopbackServer receiver(204);
  const client::HttpResponse r =
      post_json({"127.0.0.1", receiver.port(), "/hooks/tpujobs?team=a"},
                {{"X-Tpujobs-Event", "finished"}, {"X-Tpujobs-Delivery", "42"}}, R"({"id":7})",
                std::chrono::milliseconds(30000));
  ASSERT_EQ(r.status, 204) << r.error;
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& request = requests[0];
  EXPECT_EQ(request.method_string(), "POST");
  EXPECT_EQ(request.target(), "/hooks/tpujobs?team=a");
  EXPECT_EQ(request["Host"], "127.0.0.1:" + std::to_string(receiver.port()));
  EXPECT_EQ(request["User-Agent"], "tpujobs-notifier");
  EXPECT_EQ(request["Content-Type"], "application/json");
  EXPECT_EQ(request["X-Tpujobs-Event"], "finished");
  EXPECT_EQ(request["X-Tpujobs-Delivery"], "42");
  EXPECT_EQ(request.body(), R"({"id":7})");
}

TEST(NotificationPost, AnUnresponsiveReceiverCostsTheTimeout) {
  testing::LoopbackServer receiver(200, testing::LoopbackServer::Reply::kNever);
  const client::HttpResponse r =
      post_json({"127.0.0.1", receiver.port(), "/"}, {}, "{}", std::chrono::milliseconds(300));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.error, "read: timed out after 300 ms");
}

}  // namespace
}  // namespace tpujobs::service
