// The script check's reports (DESIGN §10) other than JSON (which the API
// answers too: lightning/script_report.h): text like a compiler's, JUnit XML
// (one test case per file) and SARIF 2.1.0 for code-scanning tools. Pure
// functions of a lightning::CheckReport.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lightning/script_check.h"

namespace tpujobs::client {

// One line a finding: `path:line:col: error: message`, its hint on the next
// line ("  hint: ..."), then a count.
std::string check_report_text(const lightning::CheckReport& report);

// <testsuites> with one <testcase> per file: a <failure> listing its error
// findings, <skipped> when the file was not read; warnings and notes in
// <system-out>.
std::string check_report_junit(const lightning::CheckReport& report);

// A SARIF 2.1.0 log: one run of the driver "tpujobs check", a rule per rule
// id used, a result per finding with its physical location.
nlohmann::json check_report_sarif(const lightning::CheckReport& report);

}  // namespace tpujobs::client
