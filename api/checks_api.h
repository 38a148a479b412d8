// POST /v1/checks (DESIGN §10): the script check of `tpujobs check` over
// files sent as text, answered with the same JSON report
// (client/check_report.h). Offline like the command: it reads no database.
#pragma once

#include <nlohmann/json.hpp>

#include "api/http.h"
#include "api/router.h"

namespace tpujobs::api {

// Adds the route, for any authenticated caller (as :validate).
void add_check_routes(Router& router);

// The answer to a request body (exposed for tests): 200 with the report
// (and "valid": no error finding), or a problem+json 400/422 naming the
// field and a hint.
Response check_request(const nlohmann::json& body);

}  // namespace tpujobs::api
