// `tpujobs check` on torch_xla's xmp.spawn(..., nprocs=N) under PJRT, over
// tests/client/check_corpus/xla/: every import spelling of spawn, the value
// of nprocs as the check can and cannot know it, and torch_xla's text by the
// version the requirements pin (each quoted here from pytorch/xla at the tag
// named, so a table row that drifts from upstream fails).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "api/checks_api.h"
#include "client/check_command.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;

const std::string kXla = std::string(TPUJOBS_SOURCE_DIR) + "/tests/client/check_corpus/xla/";

// pytorch/xla v2.5.1:torch_xla/_internal/pjrt.py:207 (logged, then ignored).
const std::string kIgnored8 = "Unsupported nprocs (8), ignoring...";
// pytorch/xla v2.6.1:torch_xla/_internal/pjrt.py:209-211 (ValueError).
const std::string kRefused8 =
    "Unsupported nprocs (8). Please use nprocs=1 or None (default). If None, spawn will use all "
    "available devices. Use the environment variable X_NUM_DEVICES (where X is CPU, GPU, TPU, "
    "NEURONCORE, etc) to limit the number of devices used.";
// pytorch/xla v2.9.0:torch_xla/_internal/pjrt.py:207-209: GPU is no longer named.
const std::string kRefused8In29 =
    "Unsupported nprocs (8). Please use nprocs=1 or None (default). If None, spawn will use all "
    "available devices. Use the environment variable X_NUM_DEVICES (where X is CPU, TPU, "
    "NEURONCORE, etc) to limit the number of devices used.";

struct CheckRun {
  int exit_code = 0;
  json report;
  std::string out;
};

CheckRun check(const std::string& script, const std::string& requirements) {
  std::vector<std::string> args = {"--format", "json"};
  if (!requirements.empty()) args.insert(args.end(), {"--requirements", kXla + requirements});
  args.push_back(kXla + script);
  std::ostringstream out, err;
  CheckRun run;
  run.exit_code = run_check_command(args, out, err, api::check_pool);
  run.out = out.str() + err.str();
  run.report = json::parse(out.str(), nullptr, false);
  return run;
}

std::vector<json> findings(const json& report, const std::string& rule) {
  std::vector<json> out;
  if (!report.is_object()) return out;
  for (const json& f : report["findings"])
    if (f["rule"] == rule) out.push_back(f);
  return out;
}

TEST(CheckXlaSpawn, FindsSpawnUnderEveryImportSpelling) {
  // file -> line and column of `nprocs=`
  const std::vector<std::tuple<std::string, int, int>> cases = {
      {"module_alias.py", 9, 32},  {"from_package.py", 9, 32}, {"direct_spawn.py", 9, 28},
      {"renamed_spawn.py", 9, 29}, {"dotted_path.py", 9, 70},  {"package_alias.py", 9, 51},
      {"wildcard.py", 9, 28},      {"in_function.py", 7, 32},  {"positional.py", 11, 27},
  };
  for (const auto& [file, line, column] : cases) {
    SCOPED_TRACE(file);
    const CheckRun run = check(file, "torch_xla-2.6.txt");
    const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
    ASSERT_EQ(spawn.size(), 1u) << run.out;
    EXPECT_EQ(spawn[0]["line"], line);
    EXPECT_EQ(spawn[0]["column"], column);
    EXPECT_EQ(spawn[0]["severity"], "error");
    EXPECT_EQ(spawn[0]["message"], kRefused8);
    EXPECT_EQ(spawn[0]["source"],
              "pytorch/xla v2.8.1:torch_xla/_internal/pjrt.py:209-211 (spawn, ValueError; v2.6.1 "
              "and v2.7.0 the same lines)");
    EXPECT_FALSE(spawn[0]["hint"].get<std::string>().empty());
    EXPECT_EQ(run.exit_code, 2);
  }
}

TEST(CheckXlaSpawn, TheTextIsTheOneOfThePinnedTorchXla) {
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases = {
      {"torch_xla-2.0.txt", "warning", kIgnored8,
       "pytorch/xla v2.0.0:torch_xla/experimental/pjrt.py:363"},
      {"torch_xla-2.5.txt", "warning", kIgnored8,
       "pytorch/xla v2.5.1:torch_xla/_internal/pjrt.py:207"},
      {"torch_xla-2.6.txt", "error", kRefused8,
       "pytorch/xla v2.8.1:torch_xla/_internal/pjrt.py:209"},
      {"torch_xla-2.8.txt", "error", kRefused8,
       "pytorch/xla v2.8.1:torch_xla/_internal/pjrt.py:209"},
      {"torch_xla-2.9.txt", "error", kRefused8In29,
       "pytorch/xla v2.9.0:torch_xla/_internal/pjrt.py:207"},
  };
  for (const auto& [requirements, severity, message, source] : cases) {
    SCOPED_TRACE(requirements);
    const CheckRun run = check("module_alias.py", requirements);
    const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
    ASSERT_EQ(spawn.size(), 1u) << run.out;
    EXPECT_EQ(spawn[0]["severity"], severity);
    EXPECT_EQ(spawn[0]["message"], message);
    EXPECT_TRUE(spawn[0]["source"].get<std::string>().starts_with(source)) << spawn[0]["source"];
  }
  // Only a warning under 2.5 (the run goes on, on every device): exit 0.
  EXPECT_EQ(check("module_alias.py", "torch_xla-2.5.txt").exit_code, 0);
}

TEST(CheckXlaSpawn, AcceptsOneProcessOrTheDefault) {
  const CheckRun run = check("accepted.py", "torch_xla-2.6.txt");
  EXPECT_TRUE(findings(run.report, "xmp.spawn.nprocs").empty()) << run.out;
  EXPECT_TRUE(findings(run.report, "not-checked").empty()) << run.out;
}

TEST(CheckXlaSpawn, LeavesOtherSpawnsAlone) {
  const CheckRun run = check("not_torch_xla.py", "torch_xla-2.6.txt");
  EXPECT_TRUE(findings(run.report, "xmp.spawn.nprocs").empty()) << run.out;
  EXPECT_TRUE(findings(run.report, "not-checked").empty()) << run.out;
}

TEST(CheckXlaSpawn, WhatItCannotKnowIsANote) {
  const CheckRun run = check("unknowable.py", "torch_xla-2.6.txt");
  EXPECT_TRUE(findings(run.report, "xmp.spawn.nprocs").empty()) << run.out;
  const std::vector<json> notes = findings(run.report, "not-checked");
  ASSERT_EQ(notes.size(), 2u) << run.out;
  EXPECT_EQ(notes[0]["line"], 14);
  EXPECT_EQ(notes[0]["severity"], "note");
  EXPECT_NE(notes[0]["message"].get<std::string>().find("`args.nprocs`"), std::string::npos);
  EXPECT_EQ(notes[1]["line"], 16);
  EXPECT_NE(notes[1]["message"].get<std::string>().find("may set `nprocs`"), std::string::npos);
}

TEST(CheckXlaSpawn, WithoutAKnownTorchXlaItIsANoteNotAGuess) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no requirements file pins torch_xla"},
      {"torch_xla-1.13.txt", "torch_xla 1.13's PJRT spawn takes no nprocs"},
      {"torch_xla-2.1-xrt.txt", "runs XRT"},
  };
  for (const auto& [requirements, why] : cases) {
    SCOPED_TRACE(requirements);
    const CheckRun run = check("module_alias.py", requirements);
    EXPECT_TRUE(findings(run.report, "xmp.spawn.nprocs").empty()) << run.out;
    const std::vector<json> notes = findings(run.report, "not-checked");
    ASSERT_EQ(notes.size(), 1u) << run.out;
    EXPECT_EQ(notes[0]["line"], 9);
    EXPECT_NE(notes[0]["message"].get<std::string>().find(why), std::string::npos)
        << notes[0]["message"];
  }
}

}  // namespace
}  // namespace tpujobs::client
