// `tpujobs check --format sarif` validated against the official SARIF 2.1.0
// JSON schema (tests/client/sarif/sarif-schema-2.1.0.json, from
// oasis-tcs/sarif-spec) by a real validator: ajv, from web/node_modules,
// run by tests/client/sarif/validate.mjs. The validator is shown to refuse
// an invalid log too, so the test can fail.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "tests/e2e/build_paths.h"

namespace tpujobs::client {
namespace {

namespace fs = std::filesystem;
const std::string kSource = tpujobs::testing::source_dir();

int validate(const fs::path& sarif) {
  const std::string command =
      "node " + kSource + "/tests/client/sarif/validate.mjs '" + sarif.string() + "' >&2";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CheckSarif, TheReportOfTheWholeCorpusIsValidSarif) {
  const fs::path out =
      fs::temp_directory_path() / ("tpujobs_check_" + std::to_string(::getpid()) + ".sarif");
  std::ostringstream stdout_text, stderr_text;
  const int exit_code =
      run_check_command({"--format", "sarif", "--output", out.string(), "--requirements",
                         kSource + "/tests/client/check_corpus/requirements/requirements.txt",
                         kSource + "/tests/client/check_corpus"},
                        stdout_text, stderr_text, api::check_pool);
  EXPECT_EQ(exit_code, 2) << stderr_text.str();
  std::ifstream in(out);
  const nlohmann::json log = nlohmann::json::parse(in);
  ASSERT_GT(log["runs"][0]["results"].size(), 20u);
  const nlohmann::json& result = log["runs"][0]["results"][0];
  EXPECT_TRUE(result["locations"][0]["physicalLocation"]["region"].contains("startLine"));
  EXPECT_EQ(validate(out), 0);

  nlohmann::json broken = log;  // a result without its message is not SARIF
  broken["runs"][0]["results"][0].erase("message");
  std::ofstream(out) << broken.dump();
  EXPECT_EQ(validate(out), 1);
  fs::remove(out);
}

}  // namespace
}  // namespace tpujobs::client
