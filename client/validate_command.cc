// `tpujobs validate SPEC`: the service's verdict on a spec, without submitting it.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class ValidateCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::optional<json> spec = load_spec();
    if (!spec) return kExitRejected;
    HttpResponse response = call({"POST", "/v1/jobs:validate", spec->dump(), {}});
    if (response.status != 200)
      return report_failure(response, "validating " + line_.positionals.front());
    const json body = json::parse(response.body, nullptr, false);
    const bool valid = body.is_object() && body.value("valid", false);
    if (line_.json) {
      out_ << body.dump(2) << "\n";
    } else {
      out_ << line_.positionals.front() << ": " << (valid ? "valid" : "not valid") << "\n";
      if (body.is_object() && body.contains("resolved") && body["resolved"].is_object()) {
        out_ << "  resolved: " << body["resolved"].dump() << "\n";
      }
      if (body.is_object() && body.contains("estimate") && body["estimate"].is_object()) {
        out_ << "  estimate: " << body["estimate"].dump() << "\n";
      }
      for (const json& warning : body.value("warnings", json::array())) {
        out_ << "  warning: " << (warning.is_string() ? warning.get<std::string>() : warning.dump())
             << "\n";
      }
    }
    return valid ? kExitSucceeded : kExitRejected;
  }
};

}  // namespace

int run_validate_command(const CommandLine& line, const ClientContext& context) {
  return ValidateCommand(line, context).run();
}

}  // namespace tpujobs::client
