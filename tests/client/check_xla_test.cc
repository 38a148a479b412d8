// `tpujobs check` on torch_xla's xmp.spawn(..., nprocs=N) under PJRT and
// XRT, over tests/client/check_corpus/xla/: every import spelling of spawn,
// the value of nprocs as the check can and cannot know it, the runtime
// (--runtime, else the pinned torch_xla's own default), and torch_xla's text
// by the version the requirements pin (each quoted here from pytorch/xla at
// the tag named, so a table row that drifts from upstream fails).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "tests/e2e/build_paths.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;

const std::string kXla = tpujobs::testing::source_dir() + "/tests/client/check_corpus/xla/";

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

CheckRun check(const std::string& script, const std::string& requirements,
               const std::vector<std::string>& options = {}) {
  std::vector<std::string> args = {"--format", "json"};
  args.insert(args.end(), options.begin(), options.end());
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
      {"torch_xla-1.8.txt", "torch_xla 1.8.1 has no PJRT runtime"},
  };
  for (const auto& [requirements, why] : cases) {
    SCOPED_TRACE(requirements);
    const CheckRun run = check("module_alias.py", requirements, {"--runtime", "pjrt"});
    EXPECT_TRUE(findings(run.report, "xmp.spawn.nprocs").empty()) << run.out;
    const std::vector<json> notes = findings(run.report, "not-checked");
    ASSERT_EQ(notes.size(), 1u) << run.out;
    EXPECT_EQ(notes[0]["line"], 9);
    EXPECT_NE(notes[0]["message"].get<std::string>().find(why), std::string::npos)
        << notes[0]["message"];
  }
}

// XRT's spawn (_pre_fork_setup) takes nprocs 1 or the host's device count
// (TPU_NUM_DEVICES, 8 unset) and raises ValueError for anything else:
// pytorch/xla v2.0.0:torch_xla/distributed/xla_multiprocessing.py:204-206,
// the same text from v1.5.0 to the 2.1.0+xrt build.
std::string xrt_refused(const std::string& nprocs) {
  return "The number of devices must be either 1 or 8, got " + nprocs + " instead";
}

TEST(CheckXlaSpawn, XrtRefusesAnyCountButOneAndTheHosts) {
  const CheckRun run = check("xrt_nprocs.py", "torch_xla-2.0.txt", {"--runtime", "xrt"});
  const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
  // line, column, str(nprocs): 8 and 8.0 are the host's 8 (8.0 == 8 in Python).
  const std::vector<std::tuple<int, int, std::string>> expected = {
      {11, 32, "4"}, {14, 27, "0"}, {15, 32, "8"}};
  ASSERT_EQ(spawn.size(), expected.size()) << run.out;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [line, column, nprocs] = expected[i];
    SCOPED_TRACE(line);
    EXPECT_EQ(spawn[i]["line"], line);
    EXPECT_EQ(spawn[i]["column"], column);
    EXPECT_EQ(spawn[i]["severity"], "error");
    EXPECT_EQ(spawn[i]["message"], xrt_refused(nprocs));
    EXPECT_EQ(spawn[i]["hint"].get<std::string>().starts_with("`nprocs` is a str"), line == 15);
    EXPECT_EQ(spawn[i]["source"],
              "pytorch/xla v2.0.0:torch_xla/distributed/xla_multiprocessing.py:204-206 "
              "(_pre_fork_setup, ValueError)");
    EXPECT_NE(spawn[i]["hint"].get<std::string>().find("Under XRT (--runtime xrt)"),
              std::string::npos)
        << spawn[i]["hint"];
  }
  EXPECT_EQ(run.exit_code, 2);
  // Under PJRT the same torch_xla logs and ignores every count but 1 (2.0: a warning).
  const CheckRun pjrt = check("xrt_nprocs.py", "torch_xla-2.0.txt", {"--runtime", "pjrt"});
  const std::vector<json> warned = findings(pjrt.report, "xmp.spawn.nprocs");
  ASSERT_EQ(warned.size(), 4u) << pjrt.out;  // 4, 8, 8.0 and 0; "8" is not '%d'-able
  EXPECT_EQ(warned[0]["message"], "Unsupported nprocs (4), ignoring...");
  EXPECT_EQ(warned[0]["severity"], "warning");
  EXPECT_EQ(pjrt.exit_code, 0) << pjrt.out;
}

TEST(CheckXlaSpawn, TheDefaultRuntimeIsTheOneThePinnedTorchXlaPicks) {
  struct Case {
    std::string requirements;
    std::string severity;  // of the finding at line 11, nprocs=4
    std::string message;
    std::string source;
    std::string runtime_said;  // in the hint
  };
  const std::vector<Case> cases = {
      // Up to 1.13 spawn is XRT's unless PJRT_DEVICE is set.
      {"torch_xla-1.8.txt", "error", xrt_refused("4"),
       "pytorch/xla v1.12.0:torch_xla/distributed/xla_multiprocessing.py:200-202",
       "torch_xla 1.8.1 runs XRT"},
      {"torch_xla-1.13.txt", "error", xrt_refused("4"),
       "pytorch/xla v1.13.0:torch_xla/distributed/xla_multiprocessing.py:201-203",
       "torch_xla 1.13 runs XRT (XRT_TPU_CONFIG set) unless PJRT_DEVICE is set"},
      // From 2.0 torch_xla selects PJRT when no XRT_* variable is set; the
      // 2.1.0+xrt build too (its `xrt` branch's runtime.py).
      {"torch_xla-2.0.txt", "warning", "Unsupported nprocs (4), ignoring...",
       "pytorch/xla v2.0.0:torch_xla/experimental/pjrt.py:363",
       "runtime: PJRT, torch_xla 2.0 selects PJRT unless an XRT_* variable is set"},
      {"torch_xla-2.1-xrt.txt", "warning", "Unsupported nprocs (4), ignoring...",
       "pytorch/xla v2.5.1:torch_xla/_internal/pjrt.py:207", "torch_xla 2.1.0+xrt selects PJRT"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.requirements);
    const CheckRun run = check("xrt_nprocs.py", c.requirements);
    const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
    ASSERT_FALSE(spawn.empty()) << run.out;
    EXPECT_EQ(spawn[0]["line"], 11);
    EXPECT_EQ(spawn[0]["severity"], c.severity);
    EXPECT_EQ(spawn[0]["message"], c.message);
    EXPECT_TRUE(spawn[0]["source"].get<std::string>().starts_with(c.source)) << spawn[0]["source"];
    EXPECT_NE(spawn[0]["hint"].get<std::string>().find(c.runtime_said), std::string::npos)
        << spawn[0]["hint"];
  }
  // 1.13 on XRT takes the host's 8: module_alias.py's nprocs=8 is no finding and no note.
  const CheckRun xrt13 = check("module_alias.py", "torch_xla-1.13.txt");
  EXPECT_TRUE(findings(xrt13.report, "xmp.spawn.nprocs").empty()) << xrt13.out;
  EXPECT_TRUE(findings(xrt13.report, "not-checked").empty()) << xrt13.out;
  // The 2.1.0+xrt build under --runtime xrt: its `xrt` branch's _pre_fork_setup.
  const CheckRun build = check("xrt_nprocs.py", "torch_xla-2.1-xrt.txt", {"--runtime", "xrt"});
  const std::vector<json> spawn = findings(build.report, "xmp.spawn.nprocs");
  ASSERT_EQ(spawn.size(), 3u) << build.out;
  EXPECT_EQ(spawn[0]["message"], xrt_refused("4"));
  EXPECT_EQ(spawn[0]["source"],
            "pytorch/xla xrt branch 5b6e913 (torch_xla 2.1.0+xrt):torch_xla/distributed/"
            "xla_multiprocessing.py:204-206 (_pre_fork_setup, ValueError)");
}

TEST(CheckXlaSpawn, XrtWithoutAPinIsCheckedSinceEveryXrtSaysTheSame) {
  const CheckRun run = check("xrt_nprocs.py", "", {"--runtime", "xrt"});
  const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
  ASSERT_EQ(spawn.size(), 3u) << run.out;
  EXPECT_EQ(spawn[0]["message"], xrt_refused("4"));
  EXPECT_EQ(run.exit_code, 2);
}

TEST(CheckXlaSpawn, XrtOnATorchXlaThatHasNoneIsAnEnvironmentErrorAndSpawnIsPjrts) {
  const CheckRun run = check("xrt_nprocs.py", "torch_xla-2.2.txt", {"--runtime", "xrt"});
  const std::vector<json> spawn = findings(run.report, "xmp.spawn.nprocs");
  ASSERT_FALSE(spawn.empty()) << run.out;
  // pytorch/xla v2.2.0:torch_xla/_internal/pjrt.py:198: torch_xla 2.2 selects
  // PJRT whatever XRT_TPU_CONFIG says.
  EXPECT_EQ(spawn[0]["message"], "Unsupported nprocs (4), ignoring...");
  EXPECT_NE(spawn[0]["hint"].get<std::string>().find("has no XRT"), std::string::npos);
  const std::vector<json> runtime = findings(run.report, "runtime");
  ASSERT_EQ(runtime.size(), 1u) << run.out;
  EXPECT_EQ(runtime[0]["message"],
            "torch_xla 2.2.0 has no XRT runtime (removed in torch_xla 2.2).");
  EXPECT_TRUE(runtime[0]["path"].get<std::string>().ends_with("torch_xla-2.2.txt"));
  EXPECT_EQ(runtime[0]["line"], 2);
  EXPECT_EQ(run.exit_code, 2);
}

TEST(CheckXlaSpawn, XrtReachesTheTrainersRules) {
  // Lightning 2.2 refuses XRT in XLAAccelerator.__init__ (2.2.5
  // src/lightning/fabric/accelerators/xla.py), at the Trainer call.
  const CheckRun v22 = check("xrt_lightning.py", "", {"--lightning", "2.2", "--runtime", "xrt"});
  const std::vector<json> refused = findings(v22.report, "runtime");
  ASSERT_EQ(refused.size(), 1u) << v22.out;
  EXPECT_EQ(refused[0]["message"], "The XLA XRT runtime is not supported anymore.");
  EXPECT_EQ(refused[0]["line"], 6);
  EXPECT_EQ(refused[0]["column"], 15);
  EXPECT_EQ(v22.exit_code, 2);
  // 2.1 still runs XRT (XRT_TPU_CONFIG is set, as --runtime xrt means); PJRT is the default.
  for (const std::vector<std::string>& options :
       {std::vector<std::string>{"--lightning", "2.1", "--runtime", "xrt"},
        std::vector<std::string>{"--lightning", "2.2"}}) {
    const CheckRun run = check("xrt_lightning.py", "", options);
    EXPECT_EQ(run.exit_code, 0) << run.out;
    EXPECT_TRUE(findings(run.report, "runtime").empty()) << run.out;
    EXPECT_TRUE(findings(run.report, "env").empty()) << run.out;
  }
}

TEST(CheckXlaSpawn, ARuntimeOtherThanPjrtOrXrtIsAUsageError) {
  const CheckRun run = check("module_alias.py", "", {"--runtime", "tpu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.out.find("--runtime must be pjrt or xrt, not 'tpu'"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace tpujobs::client
