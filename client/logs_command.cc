// `tpujobs logs ID [--follow]`: a job's log, or its stream until the job ends.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class LogsCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::string& id = line_.positionals.front();
    if (line_.follow) return follow_log(id, std::nullopt).exit_code;
    std::int64_t after = 0;
    for (;;) {
      HttpResponse response =
          call({"GET",
                "/v1/jobs/" + id + "/logs?after=" + std::to_string(after) + "&limit=10000",
                "",
                {}});
      if (response.status != 200) return report_failure(response, "reading the log of job " + id);
      const json body = json::parse(response.body, nullptr, false);
      if (!body.is_object() || !body.contains("lines") || !body["lines"].is_array() ||
          body["lines"].empty())
        break;
      for (const json& line : body["lines"]) {
        if (line_.json) {
          out_ << line.dump() << "\n";
        } else {
          out_ << string_of(line, "line") << "\n";
        }
      }
      const std::int64_t next = body.value("next_after", after);
      if (next <= after) break;
      after = next;
    }
    return kExitSucceeded;
  }
};

}  // namespace

int run_logs_command(const CommandLine& line, const ClientContext& context) {
  return LogsCommand(line, context).run();
}

}  // namespace tpujobs::client
