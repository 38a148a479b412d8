// `tpujobs check` over the corpus in tests/client/check_corpus/, written for
// the purpose: every import spelling, every value the check can and cannot
// know, the rules reachable from a script (each message compared with what
// job validation, lightning::resolve(), says for the same settings: one
// implementation), the versions from each kind of requirements file, the
// exit codes, the reports, and bad input.
#include "client/check_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "api/checks_api.h"
#include "lightning/resolve.h"
#include "lightning/script_check.h"
#include "pyparse/tree_sitter_python.h"
#include "tests/e2e/build_paths.h"

namespace tpujobs::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCorpus = tpujobs::testing::source_dir() + "/tests/client/check_corpus/";

struct CheckRun {
  int exit_code = 0;
  std::string out;
  std::string err;
  json report;  // the --format json report, when asked for
};

CheckRun check(std::vector<std::string> args, bool as_json = true) {
  if (as_json) args.insert(args.begin(), {"--format", "json"});
  std::ostringstream out, err;
  CheckRun run;
  run.exit_code = run_check_command(args, out, err, api::check_pool);
  run.out = out.str();
  run.err = err.str();
  if (as_json && !run.out.empty()) run.report = json::parse(run.out, nullptr, false);
  return run;
}

// The findings of `rule` in a report.
std::vector<json> findings(const json& report, const std::string& rule) {
  std::vector<json> out;
  for (const json& f : report["findings"])
    if (f["rule"] == rule) out.push_back(f);
  return out;
}

// What job validation answers for the same settings, on the same pool.
base::Result<lightning::Resolution> validate(lightning::TrainerSettings settings,
                                             const std::string& type = "v3-32") {
  return lightning::resolve(settings, *api::check_pool(type));
}
lightning::DeviceValue int_value(std::int64_t n) {
  lightning::DeviceValue value;
  value.kind = lightning::DeviceValue::Kind::kInt;
  value.number = n;
  return value;
}
std::string message_for(const base::Result<lightning::Resolution>& resolution,
                        const std::string& field) {
  for (const auto& problem : base::field_errors(resolution))
    if (problem.field == field) return problem.message;
  return "(no " + field + " error)";
}

TEST(CheckCommand, FindsTheTrainerUnderEverySpelling) {
  lightning::TrainerSettings settings;
  settings.accelerator = "tpu";
  settings.devices = int_value(3);
  const std::string expected = message_for(validate(settings), "trainer.devices");
  ASSERT_NE(expected.find("Got 3"), std::string::npos);
  // file -> the line and column of `devices=`
  const std::vector<std::tuple<std::string, int, int>> cases = {
      {"from_lightning.py", 3, 38},
      {"from_lightning_pytorch.py", 3, 38},
      {"module_alias_L.py", 3, 40},
      {"submodule_alias.py", 3, 41},
      {"dotted_path.py", 3, 56},
      {"pytorch_lightning_alias.py", 3, 41},
      {"from_pytorch_lightning.py", 3, 38},
      {"renamed.py", 3, 32},
      {"wildcard.py", 3, 38},
      {"trainer_module.py", 3, 38},
      {"fabric.py", 3, 36},
      {"fabric_alias.py", 3, 38},
      {"in_function.py", 4, 41},
  };
  for (const auto& [file, line, column] : cases) {
    SCOPED_TRACE(file);
    const CheckRun run = check({kCorpus + "spellings/" + file});
    EXPECT_EQ(run.exit_code, 2);
    const std::vector<json> errors = findings(run.report, "trainer.devices");
    ASSERT_EQ(errors.size(), 1u) << run.out;
    EXPECT_EQ(errors[0]["line"], line);
    EXPECT_EQ(errors[0]["column"], column);
    EXPECT_EQ(errors[0]["severity"], "error");
    EXPECT_EQ(errors[0]["message"], expected);
    EXPECT_FALSE(errors[0]["hint"].get<std::string>().empty());
    EXPECT_FALSE(errors[0]["source"].get<std::string>().empty());
  }
}

TEST(CheckCommand, IgnoresTrainersThatAreNotLightnings) {
  const CheckRun run = check({kCorpus + "spellings/not_lightning.py"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(run.report["findings"].empty()) << run.out;
}

TEST(CheckCommand, EvaluatesLiteralsAndModuleConstants) {
  const CheckRun run = check({kCorpus + "values/constants.py"});
  EXPECT_EQ(run.exit_code, 2);
  const std::vector<json> devices = findings(run.report, "trainer.devices");
  ASSERT_EQ(devices.size(), 3u) << run.out;
  EXPECT_EQ(devices[0]["line"], 7);
  EXPECT_NE(devices[0]["message"].get<std::string>().find("Got 5"), std::string::npos);
  EXPECT_NE(devices[1]["message"].get<std::string>().find("Got [0, 1]"), std::string::npos);
  EXPECT_NE(devices[2]["message"].get<std::string>().find("Got -1"), std::string::npos);
  const std::vector<json> precision = findings(run.report, "trainer.precision");
  ASSERT_EQ(precision.size(), 1u);
  EXPECT_EQ(precision[0]["line"], 7);
  EXPECT_EQ(precision[0]["column"], 59);
}

TEST(CheckCommand, SaysWhatItCouldNotKnowAndNeverGuesses) {
  const CheckRun run = check({kCorpus + "values/unknowable.py"});
  const std::vector<json> notes = findings(run.report, "not-checked");
  std::vector<int> lines;
  for (const json& note : notes) {
    EXPECT_EQ(note["severity"], "note");
    lines.push_back(note["line"]);
  }
  EXPECT_EQ(lines, (std::vector<int>{12, 13, 14, 15, 22, 23})) << run.out;
  EXPECT_NE(notes[0]["message"].get<std::string>().find("`devices` is a parameter of `build`"),
            std::string::npos);
  EXPECT_NE(notes[1]["message"].get<std::string>().find("**kwargs"), std::string::npos);
  EXPECT_NE(notes[2]["message"].get<std::string>().find("`DEVICES` is bound more than once"),
            std::string::npos);
  EXPECT_NE(notes[4]["message"].get<std::string>().find("`args.devices`"), std::string::npos);
  // devices=3 beside an unknown strategy or accelerator is not reported, nor
  // any devices error: only the precision of line 12, which no device
  // setting changes.
  EXPECT_TRUE(findings(run.report, "trainer.devices").empty()) << run.out;
  const std::vector<json> precision = findings(run.report, "trainer.precision");
  ASSERT_EQ(precision.size(), 1u);
  EXPECT_EQ(precision[0]["line"], 12);
  EXPECT_EQ(run.exit_code, 2);
}

TEST(CheckCommand, ACleanScriptExitsZero) {
  const CheckRun run = check({kCorpus + "values/clean.py"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(run.report["findings"].empty());
  EXPECT_EQ(run.report["files"]["checked"].size(), 1u);
}

TEST(CheckCommand, ReportsEachRuleReachableFromAScriptWithValidationsText) {
  struct Case {
    std::string file;
    std::vector<std::string> options;
    std::string field;
    int line;
    int column;
    lightning::TrainerSettings settings;
    std::string type = "v3-32";
  };
  std::vector<Case> cases;
  {
    Case c{"accelerator.py", {}, "trainer.accelerator", 3, 21, {}};
    c.settings.accelerator = "gpu";
    c.settings.devices = int_value(1);
    cases.push_back(c);
  }
  {
    Case c{"tpu_cores.py", {}, "trainer.tpu_cores", 3, 41, {}};
    c.settings.accelerator = "tpu";
    c.settings.tpu_cores = int_value(8);
    cases.push_back(c);
  }
  {
    Case c{"gpus.py", {}, "trainer.gpus", 3, 41, {}};  // Python's TypeError under 2.x
    c.settings.accelerator = "tpu";
    c.settings.gpus = int_value(4);
    c.settings.removed_arguments = {"gpus"};
    cases.push_back(c);
  }
  {
    // 1.9 maps gpus=4 onto the TPU's devices, which its parser refuses.
    Case c{"gpus.py", {"--lightning", "1.9"}, "trainer.gpus", 3, 41, {}};
    c.settings.accelerator = "tpu";
    c.settings.gpus = int_value(4);
    c.settings.removed_arguments = {"gpus"};
    c.settings.lightning_version = "1.9";
    cases.push_back(c);
  }
  {
    Case c{"num_nodes.py", {}, "trainer.num_nodes", 3, 51, {}};
    c.settings.accelerator = "tpu";
    c.settings.devices = int_value(8);
    c.settings.num_nodes.kind = lightning::DeviceValue::Kind::kString;
    c.settings.num_nodes.text = "4";
    cases.push_back(c);
  }
  {
    Case c{"strategy.py", {}, "trainer.strategy", 3, 51, {}};
    c.settings.accelerator = "tpu";
    c.settings.devices = int_value(8);
    c.settings.strategy = "ddp";
    cases.push_back(c);
  }
  {
    Case c{"precision_1x.py", {"--lightning", "2.1"}, "trainer.precision", 3, 52, {}};
    c.settings.accelerator = "tpu";
    c.settings.devices = int_value(8);
    c.settings.precision = "16";
    c.settings.precision_is_number = true;
    c.settings.lightning_version = "2.1";
    cases.push_back(c);
  }
  for (const std::string version : {"2.2", "2.5"}) {
    // The Timer's duration: 2.2 splits "1:02:00" and indexes a fourth part
    // (IndexError), 2.3+ matches a pattern (MisconfigurationException).
    Case c{"max_time.py", {"--lightning", version}, "trainer.max_time", 5, 51, {}};
    c.settings.accelerator = "tpu";
    c.settings.devices = int_value(8);
    c.settings.max_time.kind = lightning::DurationValue::Kind::kString;
    c.settings.max_time.text = "1:02:00";
    c.settings.lightning_version = version;
    cases.push_back(c);
  }
  {
    Case c{"slice.py", {"--accelerator-type", "v4-8"}, "trainer.devices", 3, 40, {}, "v4-8"};
    c.settings.accelerator = "tpu";
    c.settings.devices = int_value(8);
    c.settings.accelerator_type = "v4-8";
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + (c.options.empty() ? "" : " " + c.options.back()));
    std::vector<std::string> args = c.options;
    args.push_back(kCorpus + "rules/" + c.file);
    const CheckRun run = check(args);
    EXPECT_EQ(run.exit_code, 2) << run.out;
    const std::vector<json> errors = findings(run.report, c.field);
    ASSERT_EQ(errors.size(), 1u) << run.out;
    EXPECT_EQ(errors[0]["line"], c.line);
    EXPECT_EQ(errors[0]["column"], c.column);
    EXPECT_EQ(errors[0]["message"], message_for(validate(c.settings, c.type), c.field));
  }
}

// A max_time the check cannot know (a timedelta(...) call) is a note about
// max_time alone: no other rule reads it, so the call's devices=3 is still
// judged.
TEST(CheckCommand, AnUnknownMaxTimeLeavesTheOtherSettingsChecked) {
  const CheckRun run = check({kCorpus + "rules/max_time.py"});
  std::vector<json> notes = findings(run.report, "not-checked");
  ASSERT_EQ(notes.size(), 1u) << run.out;
  EXPECT_EQ(notes[0]["line"], 6);
  EXPECT_NE(notes[0]["message"].get<std::string>().find("`max_time`"), std::string::npos);
  EXPECT_EQ(notes[0]["message"].get<std::string>().find("settings were not checked"),
            std::string::npos)
      << notes[0]["message"];
  const std::vector<json> devices = findings(run.report, "trainer.devices");
  ASSERT_EQ(devices.size(), 1u) << run.out;
  EXPECT_EQ(devices[0]["line"], 6);
  EXPECT_EQ(devices[0]["column"], 38);
  EXPECT_EQ(findings(run.report, "trainer.max_time").size(), 1u) << run.out;  // line 5's
}

TEST(CheckCommand, TheVersionSelectsTheRules) {
  // tpu_cores: Python's TypeError under 2.x, Lightning's deprecation under 1.7.
  const CheckRun v2 = check({kCorpus + "rules/tpu_cores.py"});
  EXPECT_EQ(v2.exit_code, 2);
  const CheckRun v17 = check({"--lightning", "1.7", kCorpus + "rules/tpu_cores.py"});
  EXPECT_EQ(v17.exit_code, 0) << v17.out;
  const std::vector<json> warnings = findings(v17.report, "lightning-warning");
  ASSERT_FALSE(warnings.empty()) << v17.out;
  lightning::TrainerSettings settings;
  settings.accelerator = "tpu";
  settings.tpu_cores = int_value(8);
  settings.lightning_version = "1.7";
  EXPECT_EQ(warnings[0]["message"], lightning::resolution_warnings(validate(settings)).at(0));
  EXPECT_EQ(warnings[0]["severity"], "warning");
}

TEST(CheckCommand, TakesVersionsFromARequirementsFile) {
  const CheckRun run = check(
      {"--requirements", kCorpus + "requirements/requirements.txt", kCorpus + "values/clean.py"});
  EXPECT_EQ(run.exit_code, 2);
  const std::vector<json> xla = findings(run.report, "environment.torch_xla");
  ASSERT_EQ(xla.size(), 1u) << run.out;
  EXPECT_EQ(xla[0]["path"], kCorpus + "requirements/requirements.txt");
  EXPECT_EQ(xla[0]["line"], 3);  // torch_xla[tpu]==2.2.0 with torch==2.1.0
  EXPECT_NE(xla[0]["message"].get<std::string>().find("ImportError"), std::string::npos);
  lightning::TrainerSettings settings;
  settings.environment = lightning::Environment{std::nullopt, "2.1.0", "2.2.0", "2.1.3"};
  EXPECT_EQ(xla[0]["message"], message_for(validate(settings), "environment.torch_xla"));
  const std::vector<json> notes = findings(run.report, "not-checked");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["line"], 6);  // -r other.txt
}

TEST(CheckCommand, TakesVersionsFromPipFreezeAndThePinnedPackageSelectsTheRules) {
  // pytorch-lightning==1.9.5: precision=16 is bf16 with 1.9's warning; the
  // lightning script beside it has no pin (a note).
  const CheckRun run =
      check({"--python", "3.8", "--requirements", kCorpus + "requirements/freeze.txt",
             kCorpus + "rules/precision_1x.py", kCorpus + "values/clean.py"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const std::vector<json> warnings = findings(run.report, "lightning-warning");
  ASSERT_EQ(warnings.size(), 1u) << run.out;
  lightning::TrainerSettings settings;
  settings.accelerator = "tpu";
  settings.devices = int_value(8);
  settings.precision = "16";
  settings.precision_is_number = true;
  settings.environment = lightning::Environment{"3.8", "1.13.1", "1.13", "1.9.5"};
  EXPECT_EQ(warnings[0]["message"], lightning::resolution_warnings(validate(settings)).at(0));
  const std::vector<json> unpinned = findings(run.report, "unpinned");
  ASSERT_EQ(unpinned.size(), 1u);
  EXPECT_NE(unpinned[0]["message"].get<std::string>().find("import lightning"), std::string::npos);
  // Without --python, 3.10 is assumed, for which torch_xla 1.13 has no wheel.
  const CheckRun assumed = check(
      {"--requirements", kCorpus + "requirements/freeze.txt", kCorpus + "rules/precision_1x.py"});
  EXPECT_EQ(assumed.exit_code, 2);
  ASSERT_EQ(findings(assumed.report, "environment.torch_xla").size(), 1u);
  EXPECT_EQ(findings(assumed.report, "environment.torch_xla")[0]["line"], 4);
}

TEST(CheckCommand, TakesVersionsFromPyprojectToml) {
  const CheckRun run = check(
      {"--requirements", kCorpus + "requirements/pyproject.toml", kCorpus + "values/clean.py"});
  EXPECT_EQ(run.exit_code, 2);
  const std::vector<json> torch = findings(run.report, "environment.torch");
  ASSERT_EQ(torch.size(), 1u) << run.out;
  EXPECT_EQ(torch[0]["line"], 7);
  EXPECT_EQ(torch[0]["column"], 4);
  lightning::TrainerSettings settings;
  settings.environment = lightning::Environment{std::nullopt, "2.0.1", "2.0", "2.5.6"};
  EXPECT_EQ(torch[0]["message"], message_for(validate(settings), "environment.torch"));
}

TEST(CheckCommand, UnpinnedPackagesAreNotes) {
  const CheckRun run =
      check({"--requirements", kCorpus + "requirements/unpinned.txt", kCorpus + "values/clean.py"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const std::vector<json> notes = findings(run.report, "unpinned");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0]["line"], 1);
  EXPECT_EQ(notes[1]["line"], 2);
}

TEST(CheckCommand, AVersionThatDisagreesWithThePinIsAnError) {
  const CheckRun run =
      check({"--lightning", "1.9", "--requirements", kCorpus + "requirements/requirements.txt",
             kCorpus + "values/clean.py"});
  const std::vector<json> errors = findings(run.report, "lightning_version");
  ASSERT_EQ(errors.size(), 1u) << run.out;
  EXPECT_EQ(errors[0]["line"], 4);
}

TEST(CheckCommand, BadInputIsAFindingNeverACrash) {
  const CheckRun syntax = check({kCorpus + "values/syntax_error.py"});
  EXPECT_EQ(syntax.exit_code, 2);
  ASSERT_EQ(findings(syntax.report, "syntax-error").size(), 1u);
  EXPECT_EQ(findings(syntax.report, "syntax-error")[0]["line"], 3);
  for (const char* file : {"values/binary.py", "values/latin1.py"}) {
    const CheckRun run = check({kCorpus + file});
    EXPECT_EQ(run.exit_code, 0) << run.out;
    ASSERT_EQ(findings(run.report, "file-skipped").size(), 1u) << run.out;
    EXPECT_EQ(run.report["files"]["skipped"].size(), 1u);
  }
  const fs::path big =
      fs::temp_directory_path() / ("tpujobs_check_big_" + std::to_string(::getpid()) + ".py");
  {
    std::ofstream out(big);
    out << "x = 1\n";
  }
  fs::resize_file(big, 50ull * 1024 * 1024 + 1);  // sparse: no 50 MB written
  const CheckRun run = check({big.string()});
  fs::remove(big);
  EXPECT_EQ(run.exit_code, 2);
  const std::vector<json> refused = findings(run.report, "file-too-large");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0]["message"].get<std::string>().find("52428801 bytes"), std::string::npos);
}

// The UTF-8 test reads eight ASCII bytes at a time: a bad byte or a NUL is
// found at every offset in and after such a word, and valid sequences of
// 2, 3 and 4 bytes straddling one are read.
TEST(CheckCommand, TextIsUtf8WhereverTheBadByteIs) {
  const auto parser = pyparse::make_tree_sitter_parser();
  const auto skipped = [&](const std::string& text) {
    const lightning::CheckReport report =
        lightning::check_sources({{"t.py", text, text.size()}}, {}, {}, *parser);
    return report.skipped.size() == 1;
  };
  const std::string bad[] = {std::string(1, '\0'), "\xFF",         "\x80",
                             "\xC0\xAF",           "\xED\xA0\x80", "\xE2\x82"};
  const std::string good[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  for (std::size_t before = 0; before < 20; ++before) {
    const std::string prefix = "#" + std::string(before, 'a');
    for (const std::string& bytes : bad)
      EXPECT_TRUE(skipped(prefix + bytes + "\nx = 1\n")) << before;
    for (const std::string& bytes : good)
      EXPECT_FALSE(skipped(prefix + bytes + "\nx = 1\n")) << before;
    EXPECT_TRUE(skipped("x = 1\n" + prefix + "\xFF")) << "at the end, after " << before;
  }
}

TEST(CheckCommand, SearchesDirectoriesSkippingVirtualenvsAndGit) {
  const fs::path root =
      fs::temp_directory_path() / ("tpujobs_check_tree_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string script = "import lightning as L\nL.Trainer(accelerator='tpu', devices=3)\n";
  for (const char* dir : {"pkg/sub", ".git", ".venv/lib", "env", "__pycache__"})
    fs::create_directories(root / dir);
  for (const char* file :
       {"pkg/sub/train.py", ".git/hook.py", ".venv/lib/vendored.py", "env/x.py", "top.py"})
    std::ofstream(root / file) << script;
  std::ofstream(root / ".venv/pyvenv.cfg") << "home = /usr/bin\n";
  std::ofstream(root / "env/pyvenv.cfg") << "home = /usr/bin\n";
  std::ofstream(root / "pkg/notes.txt") << "devices=3\n";
  const CheckRun run = check({root.string()});
  fs::remove_all(root);
  EXPECT_EQ(run.report["files"]["checked"],
            json::array({(root / "pkg/sub/train.py").string(), (root / "top.py").string()}));
  EXPECT_EQ(findings(run.report, "trainer.devices").size(), 2u);
}

TEST(CheckCommand, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--format", "xml", kCorpus + "values/clean.py"},
           {"--accelerator-type", "v9-8", kCorpus + "values/clean.py"},
           {"--lightning", "3.0", kCorpus + "values/clean.py"},
           {"--wat", kCorpus + "values/clean.py"},
           {kCorpus + "values/does_not_exist.py"},
           {"--requirements"},
       }) {
    const CheckRun run = check(args, false);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find("tpujobs check: "), std::string::npos);
  }
  EXPECT_EQ(check({"--help"}, false).exit_code, 0);
}

// The options are CLI11's, as every client command's: --help lists each one
// declared, and each usage error names what is wrong and exits 2.
TEST(CheckCommand, OptionsParseWithCli11AndSayWhatIsWrong) {
  const CheckRun help = check({"--help"}, false);
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--accelerator-type TYPE", "--lightning VERSION", "--python VERSION",
                             "--requirements FILE", "--format F", "--output FILE", "-h, --help"})
    EXPECT_NE(help.out.find(std::string("\n  ") + option), std::string::npos) << option;
  EXPECT_NE(help.out.find("exit codes: 0 no error finding, 2 an error finding"), std::string::npos);
  const std::string clean = kCorpus + "values/clean.py";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--wat", clean}, "tpujobs check: unknown option '--wat'"},
      {{"--wat=1", clean}, "tpujobs check: unknown option '--wat'"},
      {{clean, "--requirements"}, "tpujobs check: --requirements needs a value"},
      {{"--format=xml", clean}, "tpujobs check: --format must be text, json, sarif or junit"},
      {{"--python", "", clean}, "tpujobs check: --python needs a value"},
      {{}, "tpujobs check: give at least one PATH"},
  };
  for (const auto& [args, message] : cases) {
    const CheckRun run = check(args, false);
    EXPECT_EQ(run.exit_code, 2) << message;
    EXPECT_EQ(run.err.rfind(message, 0), 0u) << run.err;
    EXPECT_NE(run.err.find("\noptions:\n"), std::string::npos) << "the usage follows the error";
  }
  // Options after the paths, `--opt=value`, and `--` before a path that looks like an option.
  const CheckRun mixed = check({clean, "--format=json", "--lightning", "2.1"}, false);
  EXPECT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_TRUE(json::parse(mixed.out, nullptr, false).is_object()) << mixed.out;
  EXPECT_EQ(check({"--", "-not-a-file.py"}, false).err,
            "tpujobs check: -not-a-file.py: no such file or directory\n");
}

TEST(CheckCommand, TextIsLikeACompilers) {
  const CheckRun run = check({kCorpus + "spellings/renamed.py"}, false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out.rfind(kCorpus + "spellings/renamed.py:3:32: error: `devices` can only be", 0),
            0u)
      << run.out;
}

TEST(CheckCommand, JunitHasOneTestCasePerFile) {
  const CheckRun run = check({"--format", "junit", kCorpus + "spellings/renamed.py",
                              kCorpus + "values/clean.py", kCorpus + "values/binary.py"},
                             false);
  EXPECT_EQ(run.exit_code, 2);
  std::size_t cases = 0;
  for (std::size_t at = run.out.find("<testcase "); at != std::string::npos;
       at = run.out.find("<testcase ", at + 1))
    ++cases;
  EXPECT_EQ(cases, 3u) << run.out;
  EXPECT_NE(run.out.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(run.out.find("<skipped"), std::string::npos);
}

TEST(CheckCommand, WritesTheReportToOutput) {
  const fs::path file =
      fs::temp_directory_path() / ("tpujobs_check_" + std::to_string(::getpid()) + ".json");
  const CheckRun run = check({"--output", file.string(), kCorpus + "values/clean.py"}, true);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.out.empty());
  std::ifstream in(file);
  const json report = json::parse(in);
  fs::remove(file);
  EXPECT_TRUE(report["findings"].empty());
}

}  // namespace
}  // namespace tpujobs::client
