// The script check's report as JSON (DESIGN §10): what `tpujobs check
// --format json` prints and what POST /v1/checks answers, one implementation
// in the library both the client and the API may use (DESIGN §1). The other
// formats (text, JUnit, SARIF) are the command's (client/check_report.h).
#pragma once

#include <nlohmann/json.hpp>

#include "lightning/script_check.h"

namespace tpujobs::lightning {

// {"findings": [{path, line, column, rule, severity, message, hint, source}],
//  "files": {"checked": [...], "skipped": [...]},
//  "summary": {"errors", "warnings", "notes"}}
nlohmann::json check_report_json(const CheckReport& report);

}  // namespace tpujobs::lightning
