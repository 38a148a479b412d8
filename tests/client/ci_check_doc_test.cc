// Runs the script-check step of docs/ci.md's GitHub Actions job exactly as
// written there (`bash -c` on its `run:` line, from a checkout holding the
// built binary at build/service/tpujobs), over a project with a
// misconfigured train.py and then a corrected one, and validates the SARIF
// file the upload step names against the SARIF 2.1.0 schema
// (tests/client/sarif/validate.mjs). The document cannot drift from what works.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/e2e/build_paths.h"

namespace tpujobs::testing {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The ```yaml block of docs/ci.md that runs `tpujobs check`.
std::string check_block() {
  const std::string doc = read(fs::path(source_dir()) / "docs/ci.md");
  std::size_t at = 0;
  while ((at = doc.find("```yaml\n", at)) != std::string::npos) {
    const std::size_t end = doc.find("\n```", at + 8);
    const std::string block = doc.substr(at + 8, end - at - 8);
    if (block.find("tpujobs check ") != std::string::npos) return block;
    at = end;
  }
  return "";
}

// The value of `key:` in the step named `step` (the first line after it).
std::string step_value(const std::string& block, const std::string& step, const std::string& key) {
  const std::size_t named = block.find("- name: " + step + "\n");
  if (named == std::string::npos) return "";
  std::smatch match;
  const std::string rest = block.substr(named);
  if (!std::regex_search(rest, match, std::regex("\\n\\s+" + key + ": ([^\\n]+)"))) return "";
  return match[1];
}

int shell(const std::string& command, const fs::path& directory) {
  const std::string line = "cd '" + directory.string() + "' && bash -c '" +
                           std::regex_replace(command, std::regex("'"), "'\\''") + "'";
  const int status = std::system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class CiCheckDoc : public ::testing::Test {
 protected:
  void SetUp() override {
    block_ = check_block();
    ASSERT_FALSE(block_.empty()) << "docs/ci.md has no job running `tpujobs check`";
    run_ = step_value(block_, "Check the training scripts", "run");
    sarif_ = step_value(block_, "Upload the findings to code scanning", "sarif_file");
    ASSERT_FALSE(run_.empty());
    ASSERT_FALSE(sarif_.empty());
    checkout_ = fs::temp_directory_path() / ("tpujobs-ci-check-" + std::to_string(::getpid()));
    fs::remove_all(checkout_);
    fs::create_directories(checkout_ / "build/service");
    fs::create_directories(checkout_ / "model");
    fs::create_symlink(tpujobs_binary(), checkout_ / "build/service/tpujobs");
    std::ofstream(checkout_ / "requirements.txt")
        << "torch==2.1.0\ntorch_xla[tpu]==2.1.0\nlightning==2.1.3\n";
    std::ofstream(checkout_ / "model/net.py")
        << "import torch\n\nclass Net(torch.nn.Module):\n    pass\n";
  }
  void TearDown() override { fs::remove_all(checkout_); }

  nlohmann::json sarif() const {
    EXPECT_EQ(
        0, shell("node " + source_dir() + "/tests/client/sarif/validate.mjs " + sarif_, checkout_));
    return nlohmann::json::parse(read(checkout_ / sarif_));
  }

  std::string block_, run_, sarif_;
  fs::path checkout_;
};

TEST_F(CiCheckDoc, TheStepUploadsEvenWhenTheCheckFails) {
  EXPECT_NE(block_.find("security-events: write"), std::string::npos);
  EXPECT_NE(block_.find("github/codeql-action/upload-sarif@"), std::string::npos);
  EXPECT_EQ(step_value(block_, "Upload the findings to code scanning", "if"), "always()");
  EXPECT_NE(run_.find("--format sarif"), std::string::npos);
}

TEST_F(CiCheckDoc, AMisconfiguredScriptFailsTheStepWithItsFindingInSarif) {
  std::ofstream(checkout_ / "train.py")
      << "import lightning as L\n\ntrainer = L.Trainer(accelerator=\"tpu\", devices=3, "
         "precision=\"16-mixed\")\n";
  EXPECT_EQ(2, shell(run_, checkout_));
  const nlohmann::json log = sarif();
  std::vector<std::string> rules;
  for (const nlohmann::json& result : log["runs"][0]["results"]) {
    EXPECT_EQ(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "train.py");
    EXPECT_EQ(result["locations"][0]["physicalLocation"]["region"]["startLine"], 3);
    rules.push_back(result["ruleId"]);
  }
  EXPECT_EQ(rules, (std::vector<std::string>{"trainer.devices", "trainer.precision"}));
}

TEST_F(CiCheckDoc, ACorrectScriptPasses) {
  std::ofstream(checkout_ / "train.py")
      << "import lightning as L\n\ntrainer = L.Trainer(accelerator=\"tpu\", devices=8, "
         "precision=\"bf16-true\")\n";
  EXPECT_EQ(0, shell(run_, checkout_));
  EXPECT_TRUE(sarif()["runs"][0]["results"].empty());
}

}  // namespace
}  // namespace tpujobs::testing
