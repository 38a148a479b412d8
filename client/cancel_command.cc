// `tpujobs cancel ID`: asks the service to stop a job.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class CancelCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::string& id = line_.positionals.front();
    HttpResponse response = call({"POST", "/v1/jobs/" + id + "/cancel", "", {}});
    if (response.status == 409) {
      const json problem = json::parse(response.body, nullptr, false);
      err_ << "tpujobs: job " << id << " has already ended; nothing to cancel ("
           << string_of(problem, "detail") << ")\n";
      return kExitSucceeded;
    }
    if (response.status != 202 && response.status != 200)
      return report_failure(response, "cancelling job " + id);
    if (line_.json) {
      out_ << json::parse(response.body, nullptr, false).dump(2) << "\n";
    } else {
      out_ << "cancelling job " << id << "\n";
    }
    return kExitSucceeded;
  }
};

}  // namespace

int run_cancel_command(const CommandLine& line, const ClientContext& context) {
  return CancelCommand(line, context).run();
}

}  // namespace tpujobs::client
