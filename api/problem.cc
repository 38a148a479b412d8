#include "api/problem.h"

namespace tpujobs::api {
namespace {

std::string_view status_title(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return status < 500 ? "Client Error" : "Server Error";
  }
}

}  // namespace

nlohmann::json to_json(const base::FieldError& error) {
  nlohmann::json out = {{"field", error.field}, {"message", error.message}};
  if (!error.hint.empty()) out["hint"] = error.hint;
  return out;
}

Response json_response(int status, const nlohmann::json& body) {
  Response response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return response;
}

Response problem(int status, std::string_view detail, nlohmann::json extra) {
  nlohmann::json body = {{"type", "about:blank"},
                         {"title", status_title(status)},
                         {"status", status},
                         {"detail", detail}};
  if (extra.is_object()) body.update(extra);
  Response response = json_response(status, body);
  response.content_type = "application/problem+json";
  return response;
}

Response spec_problems(const std::vector<base::FieldError>& errors,
                       const std::vector<std::string>& warnings) {
  // The answer stays small whatever the body held: the first
  // kMaxListedErrors problems, and the count of all of them.
  constexpr std::size_t kMaxListedErrors = 100;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < errors.size() && i < kMaxListedErrors; ++i)
    list.push_back(to_json(errors[i]));
  std::string detail = errors.size() == 1
                           ? errors.front().message
                           : std::to_string(errors.size()) + " problems with the job spec";
  if (errors.size() > kMaxListedErrors)
    detail += " (the first " + std::to_string(kMaxListedErrors) + " are listed)";
  nlohmann::json extra = {{"errors", list}};
  if (errors.size() > kMaxListedErrors) extra["errors_total"] = errors.size();
  if (!warnings.empty()) extra["warnings"] = warnings;
  return problem(422, detail, extra);
}

}  // namespace tpujobs::api
