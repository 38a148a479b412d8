// The one way this service answers with JSON or with an error: RFC 9457
// problem+json bodies carrying, for spec problems, the field, the message
// and a hint.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/http.h"
#include "base/result.h"

namespace tpujobs::api {

nlohmann::json to_json(const base::FieldError& error);

Response json_response(int status, const nlohmann::json& body);

// A problem+json response. `title` is the short, fixed summary of the status
// ("Unprocessable Entity"), `detail` what went wrong this time.
Response problem(int status, std::string_view detail,
                 nlohmann::json extra = nlohmann::json::object());

// 422 listing every problem with the spec.
Response spec_problems(const std::vector<base::FieldError>& errors,
                       const std::vector<std::string>& warnings = {});

}  // namespace tpujobs::api
