#include "lightning/script_report.h"

#include <string>

namespace tpujobs::lightning {

nlohmann::json check_report_json(const CheckReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : report.findings) {
    findings.push_back({{"path", f.path},
                        {"line", f.line},
                        {"column", f.column},
                        {"rule", f.rule},
                        {"severity", std::string(severity_name(f.severity))},
                        {"message", f.message},
                        {"hint", f.hint},
                        {"source", f.source}});
  }
  return {{"findings", findings},
          {"files", {{"checked", report.checked}, {"skipped", report.skipped}}},
          {"summary",
           {{"errors", report.count(Severity::kError)},
            {"warnings", report.count(Severity::kWarning)},
            {"notes", report.count(Severity::kNote)}}}};
}

}  // namespace tpujobs::lightning
