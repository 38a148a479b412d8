// Fuzzes the script check (issue 31): any bytes as a Python script and as a
// requirements file, through the tree-sitter parser, the call analysis, the
// rule tables and every report. Checks that nothing crashes, every finding
// has a position, the reports serialize (the JSON needs valid UTF-8), and
// the exit decision agrees with the findings.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "client/check_report.h"
#include "lightning/script_check.h"
#include "lightning/script_report.h"
#include "pyparse/tree_sitter_python.h"

namespace {

const tpujobs::lightning::PythonParser& parser() {
  static const auto instance = tpujobs::pyparse::make_tree_sitter_parser();
  return *instance;
}

tpujobs::lightning::PoolView pool() {
  tpujobs::lightning::PoolView view;
  view.generations = {{"v2", 8, 1, {8, 32, 128, 256, 512}, 0},
                      {"v3", 8, 1, {8, 32, 64, 128, 256, 512, 1024, 2048}, 4},
                      {"v4", 4, 2, {8, 16, 32, 64, 128}, 0}};
  return view;
}

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tpujobs::lightning::ScriptCheckOptions options;
  options.pool = pool();
  // The first byte picks a version, the second a requirements format (bit 0),
  // the runtime (--runtime: none, pjrt or xrt) and the TPU type, so the rule
  // tables of several releases and both spawn runtimes are reached.
  const char* versions[] = {"1.6", "1.9", "2.0", "2.1", "2.5"};
  if (size > 0) options.lightning_version = versions[data[0] % 5];
  const std::string requirements_path =
      size > 1 && (data[1] & 1) ? "pyproject.toml" : "requirements.txt";
  if (size > 1 && (data[1] >> 1) % 3 != 0)
    options.runtime = (data[1] >> 1) % 3 == 1 ? "pjrt" : "xrt";
  const char* types[] = {"v3-8", "v4-8", "v2-32"};
  if (size > 1 && (data[1] >> 3) % 4 != 0) options.accelerator_type = types[(data[1] >> 3) % 4 - 1];
  const tpujobs::lightning::CheckReport report = tpujobs::lightning::check_sources(
      {{"train.py", text, size}}, {{requirements_path, text, size}}, options, parser());
  int errors = 0;
  for (const tpujobs::lightning::Finding& finding : report.findings) {
    require(finding.line >= 1 && finding.column >= 1);
    require(!finding.rule.empty() && !finding.message.empty());
    errors += finding.severity == tpujobs::lightning::Severity::kError;
  }
  require(report.has_errors() == (errors > 0));
  require(report.checked.size() + report.skipped.size() >= 1);
  (void)tpujobs::lightning::check_report_json(report).dump();
  (void)tpujobs::client::check_report_sarif(report).dump();
  (void)tpujobs::client::check_report_junit(report);
  (void)tpujobs::client::check_report_text(report);
  return 0;
}
