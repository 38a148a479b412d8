// Runs the `tpujobs` commands of the CI snippets in docs/ci.md, exactly as
// written there, against a live service, and checks the exit codes a
// pipeline gates on: a passing job, a missed expect gate, a rejected spec and
// a timeout. The commands are extracted from the document on every run, so
// the document cannot drift from what works.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/client/client_process.h"
#include "tests/e2e/build_paths.h"
#include "tests/e2e/service_process.h"

namespace tpujobs::testing {
namespace {

namespace fs = std::filesystem;

// The ```yaml blocks of a Markdown text, in order.
std::vector<std::string> yaml_blocks(const std::string& markdown) {
  std::vector<std::string> blocks;
  std::istringstream in(markdown);
  std::string line;
  std::string current;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("```yaml", 0) == 0) {
      inside = true;
      current.clear();
    } else if (inside && line.rfind("```", 0) == 0) {
      inside = false;
      blocks.push_back(current);
    } else if (inside) {
      current += line + "\n";
    }
  }
  return blocks;
}

// Splits a shell command line into words as sh would for the subset the
// snippets use: "double quotes" with $VAR / ${VAR} expansion, 'single
// quotes', backslash escapes and unquoted $VAR. A variable the environment
// lacks is an error (the snippet uses something the test did not provide).
std::vector<std::string> shell_words(const std::string& text, const Environment& environment) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto expand = [&](std::size_t* i) {
    std::size_t start = *i + 1;
    std::string name;
    if (start < text.size() && text[start] == '{') {
      const std::size_t close = text.find('}', start);
      if (close == std::string::npos) throw std::runtime_error("unterminated ${ in: " + text);
      name = text.substr(start + 1, close - start - 1);
      *i = close;
    } else {
      std::size_t end = start;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
        ++end;
      name = text.substr(start, end - start);
      *i = end - 1;
    }
    auto it = environment.find(name);
    if (it == environment.end())
      throw std::runtime_error("the snippet uses $" + name + ", which the test does not set");
    word += it->second;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size())
          word += text[++i];
        else if (text[i] == '$')
          expand(&i);
        else
          word += text[i];
      }
    } else if (c == '\'') {
      in_word = true;
      const std::size_t close = text.find('\'', i + 1);
      word += text.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '\\' && i + 1 < text.size()) {
      in_word = true;
      word += text[++i];
    } else if (c == '$') {
      in_word = true;
      expand(&i);
    } else {
      in_word = true;
      word += c;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// The client command lines of a CI snippet (`... tpujobs <command> ...`,
// not `serve`), with `\` continuations joined and YAML list dashes removed.
std::vector<std::string> client_command_lines(const std::string& block) {
  std::vector<std::string> commands;
  std::istringstream in(block);
  std::string line;
  std::string pending;
  while (std::getline(in, line)) {
    std::string text = std::regex_replace(line, std::regex("^\\s+|\\s+$"), "");
    if (!pending.empty()) {
      pending += " " + text;
    } else {
      text = std::regex_replace(text, std::regex("^(- |run: )"), "");
      if (!std::regex_search(text, std::regex("^\\S*tpujobs ")) ||
          text.find("tpujobs serve") != std::string::npos) {
        continue;
      }
      pending = text;
    }
    if (!pending.empty() && pending.back() == '\\') {
      pending.pop_back();
      continue;
    }
    commands.push_back(pending);
    pending.clear();
  }
  return commands;
}

// Runs a command line of a snippet with exactly `environment`, in
// `directory`, with the snippet's path to the binary replaced by the one
// just built.
ClientRun run(const std::string& command_line, const Environment& environment,
              const fs::path& directory) {
  std::vector<std::string> words = shell_words(command_line, environment);
  EXPECT_FALSE(words.empty());
  if (words.empty()) return {};
  words.erase(words.begin());
  return run_client_process(words, environment, directory);
}

class CiDocTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    service_ = new ServiceProcess();
    start_error_ = new std::string(service_->start());
  }
  static void TearDownTestSuite() {
    delete service_;
    delete start_error_;
  }

  void SetUp() override {
    ASSERT_EQ("", *start_error_);
    std::string pattern = (fs::temp_directory_path() / "tpujobs-ci-XXXXXX").string();
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    workdir_ = pattern;
    // The snippets run from a checkout: examples/ is where they expect it.
    fs::create_directory_symlink(fs::path(source_dir()) / "examples", workdir_ / "examples");
    blocks_ = yaml_blocks(read_source_file("docs/ci.md"));
    ASSERT_LE(4u, blocks_.size()) << "docs/ci.md should hold the GitHub Actions and the GitLab CI "
                                     "jobs, built from source and installed from the package";
    github_ = client_command_lines(blocks_[0]);
    gitlab_ = client_command_lines(blocks_[1]);
    github_package_ = client_command_lines(blocks_[2]);
    gitlab_package_ = client_command_lines(blocks_[3]);
    ASSERT_NE(std::string::npos, blocks_[0].find("runs-on:"));
    ASSERT_NE(std::string::npos, blocks_[1].find("script:"));
    ASSERT_NE(std::string::npos, blocks_[2].find("runs-on:"));
    ASSERT_NE(std::string::npos, blocks_[3].find("script:"));
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(workdir_, ignored);
  }

  // The variables a CI system would set, for one case.
  Environment environment(const std::string& spec, const std::string& min_accuracy,
                          const std::string& timeout) {
    static int run_id = 0;
    ++run_id;
    return {{"PATH", "/usr/bin:/bin"},
            {"TPUJOBS_URL", "http://127.0.0.1:" + std::to_string(service_->port())},
            {"SPEC", spec},
            {"MIN_VAL_ACCURACY", min_accuracy},
            {"TRAIN_TIMEOUT", timeout},
            {"GITHUB_RUN_ID", std::to_string(getpid()) + "-" + std::to_string(run_id)},
            {"GITHUB_JOB", "train"},
            {"CI_PIPELINE_ID", std::to_string(getpid()) + "-" + std::to_string(run_id)},
            {"CI_JOB_NAME", "training-gate"}};
  }

  // Runs every command of a snippet in order and returns their results.
  std::vector<ClientRun> run_all(const std::vector<std::string>& commands, const Environment& env) {
    std::vector<ClientRun> runs;
    for (const std::string& command : commands) runs.push_back(run(command, env, workdir_));
    return runs;
  }

  std::string junit() const { return file_text(workdir_ / "tpujobs-junit.xml"); }

  static ServiceProcess* service_;
  static std::string* start_error_;
  fs::path workdir_;
  std::vector<std::string> blocks_;
  std::vector<std::string> github_;
  std::vector<std::string> gitlab_;
  std::vector<std::string> github_package_;  // the same jobs with the package installed
  std::vector<std::string> gitlab_package_;
};

ServiceProcess* CiDocTest::service_ = nullptr;
std::string* CiDocTest::start_error_ = nullptr;

TEST_F(CiDocTest, SnippetsValidateThenSubmitWithTheGate) {
  for (const auto* commands : {&github_, &gitlab_}) {
    ASSERT_EQ(2u, commands->size());
    EXPECT_NE(std::string::npos, (*commands)[0].find("tpujobs validate "));
    EXPECT_NE(std::string::npos, (*commands)[1].find("tpujobs submit "));
    for (const char* flag : {"--wait", "--timeout", "--junit", "--idempotency-key", "--set"}) {
      EXPECT_NE(std::string::npos, (*commands)[1].find(flag)) << flag;
    }
  }
}

// The package jobs install the .deb that scripts/package.sh makes and then run
// exactly the source jobs' commands, with the installed `tpujobs` on PATH.
TEST_F(CiDocTest, PackageSnippetsInstallTheDebAndRunTheSameCommands) {
  const auto installed = [](std::vector<std::string> commands) {
    for (std::string& command : commands) {
      EXPECT_EQ(0u, command.find("tpujobs ")) << "the package puts tpujobs on PATH: " << command;
    }
    return commands;
  };
  const auto built = [](std::vector<std::string> commands) {
    for (std::string& command : commands) {
      EXPECT_EQ(0u, command.find("build/service/tpujobs ")) << command;
      command.erase(0, std::string("build/service/").size());
    }
    return commands;
  };
  EXPECT_EQ(built(github_), installed(github_package_));
  EXPECT_EQ(built(gitlab_), installed(gitlab_package_));
  for (std::size_t block : {2u, 3u}) {
    EXPECT_TRUE(std::regex_search(
        blocks_[block], std::regex(R"(apt-get install .*\./(dist/)?tpujobs_\*_amd64\.deb)")))
        << blocks_[block];
    EXPECT_EQ(std::string::npos, blocks_[block].find("cmake --build"))
        << "the package job must not build from source:\n"
        << blocks_[block];
  }
  EXPECT_NE(std::string::npos, blocks_[3].find("scripts/package.sh")) << "GitLab's packaging stage";
}

TEST_F(CiDocTest, PackagePassingJobExitsZero) {
  for (const auto* commands : {&github_package_, &gitlab_package_}) {
    std::vector<ClientRun> runs =
        run_all(*commands, environment("examples/iris-cpu.json", "0.8", "5m"));
    ASSERT_EQ(2u, runs.size());
    EXPECT_EQ(0, runs[0].exit_code) << runs[0].err;
    EXPECT_EQ(0, runs[1].exit_code) << runs[1].err;
    EXPECT_NE(std::string::npos, junit().find("failures=\"0\""));
  }
}

TEST_F(CiDocTest, PassingJobExitsZeroAndWritesJUnit) {
  const Environment env = environment("examples/iris-cpu.json", "0.8", "5m");
  std::vector<ClientRun> runs = run_all(github_, env);
  ASSERT_EQ(2u, runs.size());
  EXPECT_EQ(0, runs[0].exit_code) << runs[0].err;
  EXPECT_NE(std::string::npos, runs[0].out.find("valid"));
  EXPECT_EQ(0, runs[1].exit_code) << runs[1].err;
  EXPECT_NE(std::string::npos, runs[1].out.find("SUCCEEDED"));
  const std::string report = junit();
  EXPECT_NE(std::string::npos, report.find("tests=\"2\" failures=\"0\"")) << report;
  EXPECT_NE(std::string::npos, report.find("name=\"expect val_accuracy &gt;= 0.8\"")) << report;

  // A retried step (same idempotency key, same spec) attaches to that job.
  std::smatch first;
  ASSERT_TRUE(std::regex_search(runs[1].err, first, std::regex("submitted job ([0-9]+)")))
      << runs[1].err;
  ClientRun again = run(github_[1], env, workdir_);
  EXPECT_EQ(0, again.exit_code) << again.err;
  EXPECT_NE(std::string::npos, again.err.find("attached to job " + first[1].str())) << again.err;
}

TEST_F(CiDocTest, MissedExpectGateExitsOne) {
  std::vector<ClientRun> runs =
      run_all(github_, environment("examples/iris-cpu.json", "1.01", "5m"));
  EXPECT_EQ(0, runs[0].exit_code) << runs[0].err;
  EXPECT_EQ(1, runs[1].exit_code) << runs[1].err;
  EXPECT_NE(std::string::npos, runs[1].err.find("EXPECTATION_FAILED: val_accuracy")) << runs[1].err;
  EXPECT_NE(std::string::npos, runs[1].err.find("hint: ")) << runs[1].err;
  EXPECT_NE(std::string::npos, runs[1].err.find("last "))
      << "the log tail is printed: " << runs[1].err;
  const std::string report = junit();
  EXPECT_NE(std::string::npos, report.find("<failure type=\"EXPECTATION_FAILED\"")) << report;
  EXPECT_NE(std::string::npos, report.find("is below the minimum 1.01")) << report;
}

TEST_F(CiDocTest, RejectedSpecExitsTwo) {
  for (const auto* commands : {&github_, &gitlab_}) {
    std::vector<ClientRun> runs =
        run_all(*commands, environment("examples/misconfigured.json", "0.9", "5m"));
    for (const ClientRun& r : runs) {
      EXPECT_EQ(2, r.exit_code) << r.err;
      EXPECT_NE(std::string::npos, r.err.find("trainer.devices: `devices` can only be")) << r.err;
    }
  }
}

TEST_F(CiDocTest, GitLabPassingJobExitsZero) {
  std::vector<ClientRun> runs =
      run_all(gitlab_, environment("examples/iris-cpu.json", "0.8", "5m"));
  ASSERT_EQ(2u, runs.size());
  EXPECT_EQ(0, runs[0].exit_code) << runs[0].err;
  EXPECT_EQ(0, runs[1].exit_code) << runs[1].err;
  EXPECT_NE(std::string::npos, junit().find("failures=\"0\""));
}

TEST_F(CiDocTest, TimeoutExitsOneHundredTwentyFour) {
  // A job that trains until it is cancelled below: the 1s --timeout always
  // elapses first, whatever the machine's speed.
  nlohmann::json spec = nlohmann::json::parse(read_source_file("examples/digits-mlp.json"));
  spec["trainer"]["max_epochs"] = -1;
  std::ofstream(workdir_ / "long.json") << spec.dump();
  std::vector<ClientRun> runs = run_all(github_, environment("long.json", "0.9", "1s"));
  EXPECT_EQ(0, runs[0].exit_code) << runs[0].err;
  EXPECT_EQ(124, runs[1].exit_code) << runs[1].err;
  EXPECT_NE(std::string::npos, runs[1].err.find("--timeout 1s elapsed")) << runs[1].err;
  const std::string report = junit();
  EXPECT_NE(std::string::npos, report.find("<failure type=\"TIMEOUT\"")) << report;

  // The job keeps running; stop it so it does not hold the cores.
  std::smatch id;
  ASSERT_TRUE(std::regex_search(report, id, std::regex("name=\"job_id\" value=\"([0-9]+)\"")));
  Environment env = environment("", "", "");
  ClientRun cancel = run(std::string("tpujobs cancel ") + id[1].str(), env, workdir_);
  EXPECT_EQ(0, cancel.exit_code) << cancel.err;
  const nlohmann::json job = service_->wait_terminal(std::stoll(id[1].str()));
  EXPECT_TRUE(job.value("state", "") == "CANCELLED" || job.value("state", "") == "SUCCEEDED")
      << job.dump();
}

}  // namespace
}  // namespace tpujobs::testing
