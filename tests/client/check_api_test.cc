// POST /v1/checks answers with the same findings as `tpujobs check` for the
// same files and options, and refuses bad requests with problem+json naming
// the field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "tests/e2e/build_paths.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;
const std::string kCorpus = tpujobs::testing::source_dir() + "/tests/client/check_corpus/";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CheckApi, AnswersAsTheCommandDoes) {
  const std::string script = kCorpus + "values/constants.py";
  const std::string requirements = kCorpus + "requirements/requirements.txt";
  const Response response =
      check_request({{"files", {{{"path", script}, {"text", read(script)}}}},
                     {"requirements", {{{"path", requirements}, {"text", read(requirements)}}}},
                     {"accelerator_type", "v3-8"}});
  ASSERT_EQ(response.status, 200) << response.body;
  json answer = json::parse(response.body);
  EXPECT_FALSE(answer["valid"]);
  std::ostringstream out, err;
  EXPECT_EQ(client::run_check_command({"--format", "json", "--accelerator-type", "v3-8",
                                       "--requirements", requirements, script},
                                      out, err, check_pool),
            2);
  const json command = json::parse(out.str());
  EXPECT_EQ(answer["findings"], command["findings"]);
  EXPECT_GE(answer["findings"].size(), 4u);
}

TEST(CheckApi, ACleanScriptIsValid) {
  const Response response = check_request(
      {{"files", {{{"path", "train.py"}, {"text", read(kCorpus + "values/clean.py")}}}},
       {"lightning", "2.1"}});
  ASSERT_EQ(response.status, 200);
  const json answer = json::parse(response.body);
  EXPECT_TRUE(answer["valid"]);
  EXPECT_TRUE(answer["findings"].empty());
}

TEST(CheckApi, RefusesBadRequestsNamingTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array(), ""},
      {json::object(), "files"},
      {{{"files", json::array()}}, "files"},
      {{{"files", {{{"path", "a.py"}}}}}, "files[0]"},
      {{{"files", {{{"text", 3}}}}}, "files[0]"},
      {{{"files", {{{"text", "x = 1"}}}}, {"requirements", "torch==2.1"}}, "requirements"},
      {{{"files", {{{"text", "x = 1"}}}}, {"accelerator_type", "v9-8"}}, "accelerator_type"},
      {{{"files", {{{"text", "x = 1"}}}}, {"lightning", "3.0"}}, "lightning"},
      {{{"files", {{{"text", "x = 1"}}}}, {"python", 3.1}}, "python"},
      {{{"files", {{{"text", "x = 1"}}}}, {"runtime", "tpu"}}, "runtime"},
      {{{"files", {{{"text", "x = 1"}}}}, {"runtime", 1}}, "runtime"},
  };
  for (const auto& [body, field] : cases) {
    SCOPED_TRACE(body.dump());
    const Response response = check_request(body);
    EXPECT_TRUE(response.status == 400 || response.status == 422) << response.status;
    const json problem = json::parse(response.body);
    EXPECT_EQ(problem.value("field", ""), field);
    EXPECT_FALSE(problem.value("hint", "").empty());
  }
}

// `runtime` is --runtime: XRT's spawn refuses nprocs=4 (pytorch/xla
// v2.0.0:torch_xla/distributed/xla_multiprocessing.py:204-206), PJRT's 2.0
// logs and ignores it.
TEST(CheckApi, TakesTheRuntimeAsTheCommandDoes) {
  const std::string script = kCorpus + "xla/xrt_nprocs.py";
  const std::string requirements = kCorpus + "xla/torch_xla-2.0.txt";
  for (const std::string runtime : {"xrt", "pjrt"}) {
    SCOPED_TRACE(runtime);
    const Response response =
        check_request({{"files", {{{"path", script}, {"text", read(script)}}}},
                       {"requirements", {{{"path", requirements}, {"text", read(requirements)}}}},
                       {"runtime", runtime}});
    ASSERT_EQ(response.status, 200) << response.body;
    const json answer = json::parse(response.body);
    std::ostringstream out, err;
    client::run_check_command(
        {"--format", "json", "--runtime", runtime, "--requirements", requirements, script}, out,
        err, check_pool);
    EXPECT_EQ(answer["findings"], json::parse(out.str())["findings"]);
    const json& first = answer["findings"][0];
    EXPECT_EQ(first["rule"], "xmp.spawn.nprocs");
    EXPECT_EQ(first["message"], runtime == "xrt"
                                    ? "The number of devices must be either 1 or 8, got 4 instead"
                                    : "Unsupported nprocs (4), ignoring...");
    EXPECT_EQ(answer["valid"], runtime == "pjrt");
  }
}

}  // namespace
}  // namespace tpujobs::api
