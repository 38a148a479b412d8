// The notification routes and the submit-time checks of "notify", against
// fakes: the allow-list and the tenant's secret decide, each refusal names
// its field with a hint, and the allow-list is the admin's to edit.
#include <gtest/gtest.h>

#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;
using testing::CapturingWriter;
using testing::FakeJobService;

class FakeNotifications final : public NotificationService {
 public:
  base::Result<std::vector<std::string>> allowlist() override { return entries; }
  base::Status set_allowlist(const std::vector<std::string>& list) override {
    entries = list;
    return base::Status::Ok();
  }
  base::Result<bool> has_secret(const std::string& tenant) override {
    return secrets.contains(tenant);
  }
  base::Result<json> rotate_secret(const std::string& tenant) override {
    secrets.insert(tenant);
    return json{{"tenant", tenant}, {"secret", "tpjn_new"}};
  }
  base::Result<json> secret_info(const std::string& tenant) override {
    return json{{"tenant", tenant}, {"exists", secrets.contains(tenant)}};
  }
  base::Result<json> job_notifications(std::int64_t id, const std::string& tenant) override {
    if (id != 7 || tenant != "team-a")
      return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
    return json{{"job_id", id}, {"notifications", json::array()}};
  }

  std::string prometheus_metrics() override { return "tpujobs_notification_attempts_total 0\n"; }

  std::vector<std::string> entries;
  std::set<std::string> secrets;
};

Response call(JobsApi& api, std::string method, std::string target, std::string body = "",
              std::string token = "user-token") {
  Request request;
  request.method = std::move(method);
  RequestTarget split = split_target(target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  request.target = std::move(target);
  request.body = std::move(body);
  request.headers["authorization"] = "Bearer " + token;
  auto writer = std::make_shared<CapturingWriter>();
  api.handle(std::move(request), writer);
  return writer->response;
}

std::string spec_with(const std::string& url) {
  return json{{"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
              {"data", {{"dataset", "iris"}}},
              {"notify", {{"url", url}, {"events", json::array({"failed"})}}}}
      .dump();
}

class NotificationRoutes : public ::testing::Test {
 protected:
  NotificationRoutes() : api_(service_, options()) { service_.require_auth = true; }
  ApiOptions options() {
    ApiOptions o;
    o.notifications = &notifications_;
    return o;
  }
  FakeJobService service_;
  FakeNotifications notifications_;
  JobsApi api_;
};

TEST_F(NotificationRoutes, ASubmitNeedsAnAllowedUrlAndASecret) {
  notifications_.entries = {"hooks.example:8080"};
  Response r = call(api_, "POST", "/v1/jobs", spec_with("http://hooks.example:9090/x"));
  ASSERT_EQ(r.status, 422) << r.body;
  const json problem = json::parse(r.body);
  ASSERT_EQ(problem["errors"].size(), 2u) << r.body;
  EXPECT_EQ(problem["errors"][0]["field"], "notify.url");
  EXPECT_EQ(problem["errors"][0]["message"],
            "http://hooks.example:9090 is not on the notification allow-list");
  EXPECT_NE(problem["errors"][0]["hint"].get<std::string>().find(
                "tpujobs serve --notify-allow hooks.example:9090"),
            std::string::npos);
  EXPECT_EQ(problem["errors"][1]["field"], "notify");
  EXPECT_EQ(problem["errors"][1]["message"],
            "tenant 'team-a' has no secret to sign notifications with");
  EXPECT_TRUE(service_.submitted.empty());

  EXPECT_EQ(call(api_, "POST", "/v1/notifications/secret").status, 201);
  r = call(api_, "POST", "/v1/jobs:validate", spec_with("http://hooks.example:9090/x"));
  EXPECT_EQ(r.status, 422) << r.body;
  r = call(api_, "POST", "/v1/jobs", spec_with("http://hooks.example:8080/x"));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(service_.submitted.size(), 1u);
  ASSERT_TRUE(service_.submitted[0].spec.notify);
  EXPECT_EQ(service_.submitted[0].spec.notify->events, std::vector<std::string>{"failed"});
}

TEST_F(NotificationRoutes, AServiceWithoutANotifierRefusesNotify) {
  FakeJobService service;
  JobsApi bare(service, {});
  Response r = call(bare, "POST", "/v1/jobs", spec_with("http://hooks.example/x"));
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(json::parse(r.body)["errors"][0]["field"], "notify");
  EXPECT_EQ(call(bare, "GET", "/v1/jobs/7/notifications").status, 503);
}

TEST_F(NotificationRoutes, TheAllowListIsTheAdminsAndEntriesAreChecked) {
  const std::string list = R"({"entries": ["127.0.0.1:9000", "http://hooks.example/tpujobs/"]})";
  EXPECT_EQ(call(api_, "PUT", "/v1/notifications/allowlist", list).status, 403);
  Response r = call(api_, "PUT", "/v1/notifications/allowlist", list, "admin-token");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["entries"].size(), 2u);
  r = call(api_, "GET", "/v1/notifications/allowlist");
  EXPECT_EQ(json::parse(r.body)["entries"][1], "http://hooks.example/tpujobs/");

  r = call(api_, "PUT", "/v1/notifications/allowlist",
           R"({"entries": ["ok.example", "bad/path", 5]})", "admin-token");
  ASSERT_EQ(r.status, 422) << r.body;
  const json problem = json::parse(r.body);
  EXPECT_EQ(problem["errors"][0]["field"], "entries[1]");
  EXPECT_EQ(problem["errors"][1]["field"], "entries[2]");
  EXPECT_EQ(notifications_.entries.size(), 2u) << "a refused list changes nothing";
  EXPECT_EQ(call(api_, "PUT", "/v1/notifications/allowlist", R"(["a"])", "admin-token").status,
            422);
}

TEST_F(NotificationRoutes, AJobsDeliveriesAreItsTenantsOnly) {
  EXPECT_EQ(call(api_, "GET", "/v1/jobs/7/notifications").status, 200);
  EXPECT_EQ(call(api_, "GET", "/v1/jobs/7/notifications", "", "admin-token").status, 404);
  EXPECT_EQ(call(api_, "GET", "/v1/jobs/x/notifications").status, 404);
  Response info = call(api_, "GET", "/v1/notifications/secret");
  EXPECT_EQ(json::parse(info.body)["exists"], false);
}

TEST_F(NotificationRoutes, MetricsIncludeTheNotifiers) {
  Response metrics = call(api_, "GET", "/metrics");
  EXPECT_NE(metrics.body.find("tpujobs_notification_attempts_total 0\n"), std::string::npos);
}

}  // namespace
}  // namespace tpujobs::api
