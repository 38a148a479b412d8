// The signature receivers check, against vectors computed without the
// notifier: RFC 4231's test case 2 and the openssl command line.
#include "service/notifier.h"

#include <gtest/gtest.h>

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
  const base::Result<int> r =
      post_json({"127.0.0.1", 1, "/"}, {}, "{}", std::chrono::milliseconds(2000));
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.code(), base::ErrorCode::kUnavailable);
  EXPECT_EQ(r.error().message.rfind("connect: ", 0), 0u) << r.error().message;
}

}  // namespace
}  // namespace tpujobs::service
