// Tenants and tokens against the real service: tokens created with
// `tpujobs token create`, another tenant's job is 404, the pool is admin-only,
// and a service without tokens refuses to listen beyond loopback.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <thread>

#include "service_process.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

std::map<std::string, std::string> bearer(const std::string& token) {
  return {{"Authorization", "Bearer " + token}};
}

TEST(Auth, TokensTenantsAndAdminOnlyPoolOperations) {
  ServiceProcess service;
  ASSERT_EQ(service.start(), "");
  // Before any token exists the service is open (it listens on loopback).
  EXPECT_EQ(service.get("/v1/jobs").status, 200);

  const std::string alice = create_token(service, "team-a", "user");
  const std::string bob = create_token(service, "team-b", "user");
  const std::string ops = create_token(service, "ops", "admin");
  ASSERT_EQ(alice.rfind("tpj_", 0), 0u) << alice;
  ASSERT_FALSE(bob.empty());
  ASSERT_FALSE(ops.empty());

  // Now anonymous requests are refused; health stays open.
  // The service learns that tokens exist through a short cache: wait for
  // the answer to change (a state), not for the cache's period.
  HttpResponse anonymous = service.get("/v1/jobs");
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       anonymous.status != 401 && std::chrono::steady_clock::now() < deadline;
       anonymous = service.get("/v1/jobs")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.header("content-type"), "application/problem+json");
  EXPECT_EQ(service.get("/healthz").status, 200);
  EXPECT_EQ(http(service.port(), "GET", "/v1/jobs", "", bearer("tpj_not-a-real-token")).status,
            401);

  const json spec = {{"name", "team-a-job"},
                     {"trainer", {{"accelerator", "cpu"}, {"max_epochs", 2}}},
                     {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                     {"data", {{"dataset", "iris"}}}};
  HttpResponse created = http(service.port(), "POST", "/v1/jobs", spec.dump(), bearer(alice));
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string path = "/v1/jobs/" + std::to_string(created.json()["id"].get<std::int64_t>());
  EXPECT_EQ(created.json()["tenant"], "team-a");

  EXPECT_EQ(http(service.port(), "GET", path, "", bearer(alice)).status, 200);
  // Another tenant cannot tell the job exists.
  EXPECT_EQ(http(service.port(), "GET", path, "", bearer(bob)).status, 404);
  EXPECT_EQ(http(service.port(), "POST", path + "/cancel", "", bearer(bob)).status, 404);
  EXPECT_EQ(http(service.port(), "GET", path + "/logs", "", bearer(bob)).status, 404);
  EXPECT_EQ(http(service.port(), "GET", "/v1/jobs?name=team-a-job", "", bearer(bob))
                .json()["jobs"]
                .size(),
            0u);
  EXPECT_EQ(http(service.port(), "GET", "/v1/jobs?name=team-a-job", "", bearer(alice))
                .json()["jobs"]
                .size(),
            1u);

  const std::string host =
      http(service.port(), "GET", "/v1/pool", "", bearer(alice)).json()["hosts"][0]["name"];
  EXPECT_EQ(
      http(service.port(), "POST", "/v1/pool/hosts/" + host + ":drain", "", bearer(alice)).status,
      403);
  EXPECT_EQ(
      http(service.port(), "POST", "/v1/pool/hosts/" + host + ":drain", "", bearer(ops)).status,
      200);
  EXPECT_EQ(
      http(service.port(), "POST", "/v1/pool/hosts/" + host + ":recover", "", bearer(ops)).status,
      200);

  // A quota a job can never fit is refused at submit.
  EXPECT_EQ(
      http(service.port(), "POST", "/v1/tenants/team-b/quota", R"({"max_cores": 4})", bearer(ops))
          .status,
      200);
  json big = spec;
  big["trainer"] = {{"devices", 8}, {"max_epochs", 1}};
  HttpResponse refused = http(service.port(), "POST", "/v1/jobs", big.dump(), bearer(bob));
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(service.stop(), 0);
}

TEST(Auth, WithoutTokensTheServiceRefusesANonLoopbackAddress) {
  ServiceProcess::Options options;
  options.extra_args = {"--listen", "0.0.0.0:0"};
  ServiceProcess service(options);
  const std::string error = service.start(std::chrono::seconds(90));
  EXPECT_NE(error.find("refusing to listen on 0.0.0.0 without API tokens"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace tpujobs::testing
