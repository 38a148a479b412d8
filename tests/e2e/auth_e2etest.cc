// Tenants and tokens against the real service: tokens created with
// `tpujobs token create`, listed and revoked with `token list` and `token
// revoke`, another tenant's job is 404, the pool is admin-only, and a service
// without tokens refuses to listen beyond loopback.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "build_paths.h"
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

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `tpujobs token ARGS --state-dir DIR` on the service's state directory.
CliResult token_cli(const ServiceProcess& service, const std::string& args) {
  const std::string command = tpujobs_binary() + " token " + args + " --state-dir " +
                              service.state_dir().string() + " 2>&1";
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char chunk[256];
  while (fgets(chunk, sizeof chunk, pipe)) result.output += chunk;
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The lines of `tpujobs token list` split into columns.
std::vector<std::vector<std::string>> token_table(const std::string& output) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string word; words >> word;) row.push_back(word);
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

std::string sha256_hex(const std::string& text) {
  FILE* pipe = popen(("printf %s '" + text + "' | sha256sum").c_str(), "r");
  if (!pipe) return "";
  char hex[65] = {0};
  if (!fgets(hex, sizeof hex, pipe)) hex[0] = 0;
  pclose(pipe);
  return hex;
}

// An operator lists the tokens and revokes one with the CLI: the service
// refuses it within the token cache's bound (5 s, service/token_cache.h),
// while the others keep working.
TEST(Auth, ATokenRevokedWithTheCliIsRefusedWithinTheBound) {
  ServiceProcess service;
  const std::string ops = create_token(service, "ops", "admin");
  const std::string alice = create_token(service, "team-a", "user");
  ASSERT_EQ(alice.rfind("tpj_", 0), 0u) << alice;
  ASSERT_EQ(service.start(), "");
  // In use, so the service holds it in its cache.
  ASSERT_EQ(http(service.port(), "GET", "/v1/jobs", "", bearer(alice)).status, 200);

  const CliResult listed = token_cli(service, "list");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(listed.output.find(alice), std::string::npos) << "a token's text was listed";
  EXPECT_EQ(listed.output.find(sha256_hex(alice)), std::string::npos) << "a hash was listed";
  const auto table = token_table(listed.output);
  ASSERT_EQ(table.size(), 3u) << listed.output;
  EXPECT_EQ(table[0], (std::vector<std::string>{"ID", "TENANT", "ROLE", "CREATED", "REVOKED"}));
  EXPECT_EQ(table[1][1], "ops");
  EXPECT_EQ(table[1][2], "admin");
  EXPECT_EQ(table[2][1], "team-a");
  EXPECT_EQ(table[2][2], "user");
  EXPECT_EQ(table[2][4], "-");
  const std::string alice_id = table[2][0];

  const CliResult revoked = token_cli(service, "revoke " + alice_id);
  ASSERT_EQ(revoked.exit_code, 0) << revoked.output;
  EXPECT_NE(revoked.output.find("within 5 s"), std::string::npos) << revoked.output;
  const auto since = std::chrono::steady_clock::now();
  HttpResponse refused = http(service.port(), "GET", "/v1/jobs", "", bearer(alice));
  for (const auto deadline = since + std::chrono::seconds(60);
       refused.status == 200 && std::chrono::steady_clock::now() < deadline;
       refused = http(service.port(), "GET", "/v1/jobs", "", bearer(alice))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  EXPECT_EQ(refused.status, 401) << refused.body;
  EXPECT_NE(refused.body.find("unknown or revoked token"), std::string::npos) << refused.body;
  // The bound is 5 s; the rest is slack for a loaded machine, not a guess of
  // how long it takes.
  EXPECT_LT(took, 5.0 + 10.0);
  std::printf("revoked token refused %.2f s after `tpujobs token revoke` returned\n", took);

  EXPECT_EQ(http(service.port(), "GET", "/v1/jobs", "", bearer(ops)).status, 200);
  EXPECT_EQ(service.get("/v1/jobs").status, 401);
  const auto after = token_table(token_cli(service, "list").output);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_NE(after[2][4], "-") << "the revocation time is listed";
  EXPECT_EQ(token_cli(service, "revoke " + alice_id).exit_code, 0) << "revoking twice is fine";
  const CliResult missing = token_cli(service, "revoke 987654");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("no token 987654"), std::string::npos) << missing.output;
  EXPECT_EQ(token_cli(service, "revoke abc").exit_code, 2);
  EXPECT_EQ(token_cli(service, "revoke").exit_code, 2);
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
