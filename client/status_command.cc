// `tpujobs status ID`: a job's state, progress, metrics, error and gates.
#include <ostream>

#include "client/client_commands.h"
#include "client/junit_report.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class StatusCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::string& id = line_.positionals.front();
    HttpResponse response = call({"GET", "/v1/jobs/" + id, "", {}});
    if (response.status != 200) return report_failure(response, "reading job " + id);
    const json job = json::parse(response.body, nullptr, false);
    if (line_.json) {
      out_ << job.dump(2) << "\n";
      return kExitSucceeded;
    }
    out_ << progress_text(job) << "\n";
    for (const char* field : {"created_at", "started_at", "finished_at"}) {
      if (const std::string at = string_of(job, field); !at.empty())
        out_ << "  " << field << ": " << at << "\n";
    }
    if (job.contains("allocation") && !job["allocation"].is_null()) {
      out_ << "  allocation: " << job["allocation"].dump() << "\n";
    }
    if (job.contains("metrics") && job["metrics"].is_object()) {
      out_ << "  metrics:";
      for (const auto& [name, value] : job["metrics"].items()) {
        out_ << " " << name << "="
             << (value.is_number() ? number_text(value.get<double>()) : value.dump());
      }
      out_ << "\n";
    }
    const json error = job.value("error", json(nullptr));
    if (error.is_object()) {
      out_ << "  error: " << string_of(error, "type") << ": " << string_of(error, "message")
           << "\n";
      if (const std::string hint = string_of(error, "hint"); !hint.empty())
        out_ << "  hint: " << hint << "\n";
    }
    for (const GateOutcome& gate : evaluate_gates(job)) {
      out_ << "  expect " << gate.metric << ": "
           << (gate.passed    ? "passed"
               : gate.skipped ? "not checked (" + gate.message + ")"
                              : gate.message)
           << "\n";
    }
    for (const json& warning : job.value("warnings", json::array())) {
      if (warning.is_string()) out_ << "  warning: " << warning.get<std::string>() << "\n";
    }
    return kExitSucceeded;
  }
};

}  // namespace

int run_status_command(const CommandLine& line, const ClientContext& context) {
  return StatusCommand(line, context).run();
}

}  // namespace tpujobs::client
