#include "client/check_report.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "client/junit_report.h"

namespace tpujobs::client {
namespace {

using lightning::Finding;
using lightning::Severity;
using nlohmann::json;

// What each rule id checks, for SARIF's rule descriptions.
std::string rule_description(const std::string& rule) {
  static const std::map<std::string, std::string, std::less<>> kDescriptions = {
      {"syntax-error", "The file does not parse as Python."},
      {"not-checked", "A setting whose value is known only when the script runs was not checked."},
      {"unpinned", "A package is not pinned to one version, so its version was not checked."},
      {"file-skipped", "A file was skipped: binary, or not UTF-8 text."},
      {"file-too-large", "A file is larger than the check reads."},
      {"lightning-warning", "A warning Lightning or torch_xla prints for these settings."},
      {"tpujobs-notice", "Where the TPU behaves in a way users do not expect."},
  };
  if (auto it = kDescriptions.find(rule); it != kDescriptions.end()) return it->second;
  return "Lightning's and torch_xla's rules for `" + rule + "`, as job validation applies them.";
}

// A relative path as a URI reference: RFC 3986 unreserved characters and
// "/" kept, everything else percent-encoded.
std::string uri(const std::string& path) {
  std::string out;
  static const char* kHex = "0123456789ABCDEF";
  std::string_view rest = path;
  if (rest.starts_with("./")) rest.remove_prefix(2);
  for (unsigned char c : rest) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string check_report_text(const lightning::CheckReport& report) {
  std::string out;
  for (const Finding& f : report.findings) {
    out += f.path + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ": " +
           std::string(lightning::severity_name(f.severity)) + ": " + f.message + " [" + f.rule +
           "]\n";
    if (!f.hint.empty()) out += "  hint: " + f.hint + "\n";
  }
  out += std::to_string(report.checked.size()) +
         " file(s) checked: " + std::to_string(report.count(Severity::kError)) + " error(s), " +
         std::to_string(report.count(Severity::kWarning)) + " warning(s), " +
         std::to_string(report.count(Severity::kNote)) + " note(s)\n";
  return out;
}

std::string check_report_junit(const lightning::CheckReport& report) {
  std::vector<std::string> files = report.checked;
  for (const std::string& path : report.skipped) files.push_back(path);
  for (const Finding& f : report.findings)
    if (std::find(files.begin(), files.end(), f.path) == files.end()) files.push_back(f.path);
  int failures = 0;
  std::string cases;
  for (const std::string& path : files) {
    std::string errors, others;
    int error_count = 0;
    for (const Finding& f : report.findings) {
      if (f.path != path) continue;
      std::string line = path + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) +
                         ": " + std::string(lightning::severity_name(f.severity)) + ": " +
                         f.message + "\n";
      if (!f.hint.empty()) line += "  hint: " + f.hint + "\n";
      (f.severity == Severity::kError ? errors : others) += line;
      error_count += f.severity == Severity::kError;
    }
    cases += "    <testcase classname=\"tpujobs.check\" name=\"" + xml_escape(path) + "\">\n";
    const bool skipped =
        std::find(report.skipped.begin(), report.skipped.end(), path) != report.skipped.end();
    if (error_count > 0) {
      ++failures;
      cases += "      <failure message=\"" + xml_escape(std::to_string(error_count) + " error(s)") +
               "\" type=\"tpujobs.check\">" + xml_escape(errors) + "</failure>\n";
    } else if (skipped) {
      cases += "      <skipped message=\"" + xml_escape(others) + "\"/>\n";
    }
    if (!others.empty()) cases += "      <system-out>" + xml_escape(others) + "</system-out>\n";
    cases += "    </testcase>\n";
  }
  const std::string counts = " tests=\"" + std::to_string(files.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\"";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tpujobs check\"" + counts +
         ">\n  <testsuite name=\"tpujobs.check\"" + counts + ">\n" + cases +
         "  </testsuite>\n</testsuites>\n";
}

json check_report_sarif(const lightning::CheckReport& report) {
  std::set<std::string> rule_ids;
  for (const Finding& f : report.findings) rule_ids.insert(f.rule);
  json rules = json::array();
  std::map<std::string, int> rule_index;
  for (const std::string& id : rule_ids) {
    rule_index[id] = static_cast<int>(rules.size());
    rules.push_back({{"id", id}, {"shortDescription", {{"text", rule_description(id)}}}});
  }
  json results = json::array();
  for (const Finding& f : report.findings) {
    json result = {
        {"ruleId", f.rule},
        {"ruleIndex", rule_index[f.rule]},
        {"level", std::string(lightning::severity_name(f.severity))},
        {"message", {{"text", f.hint.empty() ? f.message : f.message + "\nHint: " + f.hint}}},
        {"locations",
         {{{"physicalLocation",
            {{"artifactLocation", {{"uri", uri(f.path)}}},
             {"region", {{"startLine", f.line}, {"startColumn", f.column}}}}}}}}};
    if (!f.source.empty()) result["properties"] = {{"source", f.source}};
    results.push_back(std::move(result));
  }
  json driver = {{"name", "tpujobs check"}, {"rules", rules}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", {{{"tool", {{"driver", driver}}}, {"results", results}}}}};
}

}  // namespace tpujobs::client
