#include "client/limits_command.h"

#include <nlohmann/json.hpp>
#include <ostream>

namespace tpujobs::client {
namespace {

using nlohmann::json;

constexpr std::chrono::seconds kTimeout{30};

HttpResponse send(const CommandLine& line, const ClientContext& context, HttpRequest request) {
  if (!line.token.empty()) request.headers.emplace_back("Authorization", "Bearer " + line.token);
  return context.http->send(request, kTimeout);
}

int report(const HttpResponse& response, const ClientContext& context) {
  if (response.status == 0) {
    *context.err << "tpujobs: the server did not answer\n";
    return kExitUnreachable;
  }
  const json problem = json::parse(response.body, nullptr, false);
  *context.err << "tpujobs: " << response.status << ": "
               << (problem.is_object() ? problem.value("detail", response.body) : response.body)
               << "\n";
  if (problem.is_object() && problem.contains("errors")) {
    for (const json& e : problem["errors"])
      *context.err << "  " << e.value("field", "") << ": " << e.value("message", "") << "\n";
  }
  return response.status >= 500 ? kExitUnreachable : kExitRejected;
}

}  // namespace

int run_limits_command(const CommandLine& line, const ClientContext& context) {
  if (line.positionals.empty()) {
    *context.err
        << "tpujobs: limits: TENANT is missing (tpujobs limits TENANT [LIMIT=VALUE ...])\n";
    return kExitRejected;
  }
  const std::string& tenant = line.positionals.front();
  const std::string path = "/v1/tenants/" + tenant + "/limits";
  HttpResponse response;
  if (line.positionals.size() == 1) {
    response = send(line, context, {"GET", path, "", {}});
  } else {
    json body = json::object();
    for (std::size_t i = 1; i < line.positionals.size(); ++i) {
      const std::string& arg = line.positionals[i];
      const std::size_t eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        *context.err << "tpujobs: limits: '" << arg
                     << "' is not LIMIT=VALUE (e.g. max_queued=1000, submits_per_second=5)\n";
        return kExitRejected;
      }
      const std::string value = arg.substr(eq + 1);
      json parsed = value == "default" ? json(nullptr) : json::parse(value, nullptr, false);
      if (parsed.is_discarded()) parsed = value;  // the service says why it is wrong
      body[arg.substr(0, eq)] = parsed;
    }
    response = send(line, context, {"POST", path, body.dump(), {}});
  }
  if (response.status != 200) return report(response, context);
  const json limits = json::parse(response.body, nullptr, false);
  if (line.json || !limits.is_object()) {
    *context.out << limits.dump(2) << "\n";
    return kExitSucceeded;
  }
  for (const char* key : {"max_queued", "submits_per_second", "submit_burst", "requests_per_second",
                          "request_burst", "max_array_size"}) {
    const json& v = limits.contains(key) ? limits[key] : json(nullptr);
    *context.out << key << std::string(22 - std::string(key).size(), ' ')
                 << (v.is_null() ? std::string("no bound") : v.dump()) << "\n";
  }
  return kExitSucceeded;
}

}  // namespace tpujobs::client
