// `tpujobs check` checks files on several threads (--jobs, default one per
// hardware thread): the report, in every format, and the exit code are the
// same byte for byte as with one thread, and a file that fails to parse
// does not stop the others being checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "lightning/script_check.h"
#include "lightning/script_report.h"
#include "pyparse/tree_sitter_python.h"
#include "tests/e2e/build_paths.h"

namespace tpujobs::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCorpus = tpujobs::testing::source_dir() + "/tests/client/check_corpus";

struct CheckRun {
  int exit_code = 0;
  std::string out;
  std::string err;
};

CheckRun check(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CheckRun run;
  run.exit_code = run_check_command(args, out, err, api::check_pool);
  run.out = out.str();
  run.err = err.str();
  return run;
}

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tpujobs_check_threads_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A script whose Trainer asks for `devices` cores, and a module constant.
std::string script(int devices) {
  return "import lightning as L\n\nCORES = " + std::to_string(devices) +
         "\n\n\ndef main():\n    trainer = L.Trainer(accelerator=\"tpu\", devices=CORES)\n"
         "    trainer.fit(None)\n";
}

// Every file of the test corpus (each rule, spelling, bad input: binary,
// Latin-1, a syntax error) and 120 generated scripts, some wrong, in a tree
// whose walk order is not the order of its names' lengths.
fs::path mixed_tree() {
  const fs::path root = scratch("mixed");
  fs::copy(kCorpus, root / "corpus", fs::copy_options::recursive);
  for (int i = 0; i < 120; ++i) {
    const fs::path dir = root / ("pkg_" + std::to_string(i % 7)) / ("sub_" + std::to_string(i % 3));
    fs::create_directories(dir);
    std::ofstream(dir / ("m" + std::to_string(i) + ".py")) << script(i % 5 == 0 ? 3 : 8);
  }
  return root;
}

TEST(CheckThreads, EveryFormatIsTheSameWithOneThreadAndWithMany) {
  const fs::path root = mixed_tree();
  const std::string requirements = kCorpus + "/requirements/requirements.txt";
  for (const char* format : {"json", "sarif", "junit", "text"}) {
    const std::vector<std::string> common = {
        "--format", format, "--requirements", requirements, "--accelerator-type", "v3-8"};
    std::vector<std::string> one = common, many = common, by_default = common;
    one.insert(one.end(), {"--jobs", "1", root.string()});
    many.insert(many.end(), {"--jobs", "7", root.string()});
    by_default.push_back(root.string());
    const CheckRun serial = check(one);
    ASSERT_EQ(serial.exit_code, 2) << serial.err;  // the corpus has error findings
    ASSERT_GT(serial.out.size(), 10000u) << format;
    for (const auto& args : {many, by_default}) {
      const CheckRun concurrent = check(args);
      EXPECT_EQ(concurrent.exit_code, serial.exit_code) << format;
      EXPECT_EQ(concurrent.out, serial.out) << format;
      EXPECT_EQ(concurrent.err, serial.err) << format;
    }
  }
  const json report = json::parse(check({"--format", "json", "--jobs", "3", root.string()}).out);
  EXPECT_EQ(report["files"]["checked"].size() + report["files"]["skipped"].size(), 42u + 120u);
  fs::remove_all(root.parent_path());
}

TEST(CheckThreads, ASyntaxErrorInOneFileLeavesEveryOtherFileChecked) {
  const fs::path root = scratch("syntax");
  constexpr int kFiles = 200;
  for (int i = 0; i < kFiles; ++i) {
    std::string text = script(3);
    if (i == 137) text += "def broken(:\n    pass\n";
    std::ofstream(root / ("f" + std::to_string(1000 + i) + ".py")) << text;
  }
  const CheckRun run = check({"--format", "json", "--jobs", "4", root.string()});
  EXPECT_EQ(run.exit_code, 2);
  const json report = json::parse(run.out);
  EXPECT_EQ(report["files"]["checked"].size(), static_cast<std::size_t>(kFiles));
  int devices = 0, syntax = 0;
  std::vector<std::string> paths;
  for (const json& finding : report["findings"]) {
    if (finding["rule"] == "trainer.devices") {
      ++devices;
      paths.push_back(finding["path"]);
    }
    if (finding["rule"] == "syntax-error") {
      ++syntax;
      EXPECT_EQ(finding["path"], (root / "f1137.py").string());
      EXPECT_EQ(finding["line"], 9);
    }
  }
  EXPECT_EQ(devices, kFiles);
  EXPECT_EQ(syntax, 1);
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  fs::remove_all(root.parent_path());
}

// check_sources merges each script's findings in the scripts' order, not
// in the order they were checked: here, last to first.
TEST(CheckThreads, TheReportDoesNotDependOnTheOrderScriptsAreChecked) {
  std::vector<lightning::SourceFile> scripts;
  for (int i = 0; i < 30; ++i) {
    const std::string text = i == 11   ? std::string("\xFF\xFE binary")
                             : i == 17 ? "import pytorch_lightning as pl\npl.Trainer(tpu_cores=3)\n"
                                       : script(i % 4 == 0 ? 3 : 8);
    scripts.push_back({"s" + std::to_string(i) + ".py", text, text.size()});
  }
  const auto parser = pyparse::make_tree_sitter_parser();
  lightning::ScriptCheckOptions options;
  options.pool = *api::check_pool("v3-8");
  const lightning::CheckReport in_order = lightning::check_sources(scripts, {}, options, *parser);
  std::vector<std::size_t> order;
  const lightning::ForEachScript backwards = [&](std::size_t count,
                                                 const std::function<void(std::size_t)>& work) {
    for (std::size_t i = count; i-- > 0;) {
      order.push_back(i);
      work(i);
    }
  };
  const lightning::CheckReport reversed =
      lightning::check_sources(scripts, {}, options, *parser, backwards);
  ASSERT_EQ(order.size(), scripts.size());
  EXPECT_EQ(order.front(), scripts.size() - 1);
  EXPECT_EQ(lightning::check_report_json(reversed).dump(),
            lightning::check_report_json(in_order).dump());
  EXPECT_EQ(reversed.checked, in_order.checked);
  EXPECT_EQ(reversed.skipped, std::vector<std::string>{"s11.py"});
}

TEST(CheckThreads, JobsMustBeAPositiveNumber) {
  for (const char* jobs : {"0", "-1", "two", "", "100000"}) {
    const CheckRun run = check({"--jobs", jobs, "x.py"});
    EXPECT_EQ(run.exit_code, 2) << jobs;
    EXPECT_NE(run.err.find("--jobs"), std::string::npos) << jobs << ": " << run.err;
  }
}

}  // namespace
}  // namespace tpujobs::client
