// POST /v1/checks (DESIGN §10): the script check of `tpujobs check` over
// files sent as text, answered with the same JSON report
// (lightning/script_report.h). Offline like the command: it reads no database.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/http.h"
#include "api/router.h"
#include "lightning/resolve.h"

namespace tpujobs::api {

// The pool a check of `accelerator_type` ("v3-8") answers for: hosts of its
// generation enough for it, in the pool job validation resolves against
// (pool_view); nullopt for a type the pool does not know. `tpujobs check`
// gets it from service/main.cc (client/check_command.h's CheckPoolSource).
std::optional<lightning::PoolView> check_pool(const std::string& accelerator_type);

// Adds the route, for any authenticated caller (as :validate).
void add_check_routes(Router& router);

// The answer to a request body (exposed for tests): 200 with the report
// (and "valid": no error finding), or a problem+json 400/422 naming the
// field and a hint.
Response check_request(const nlohmann::json& body);

}  // namespace tpujobs::api
