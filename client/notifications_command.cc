// `tpujobs notifications ID`: a job's notification deliveries and their attempts.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class NotificationsCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::string& id = line_.positionals.front();
    HttpResponse response = call({"GET", "/v1/jobs/" + id + "/notifications", "", {}});
    if (response.status != 200) return report_failure(response, "reading job " + id);
    const json view = json::parse(response.body, nullptr, false);
    if (line_.json || !view.is_object()) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    std::vector<std::vector<std::string>> rows = {
        {"DELIVERY", "EVENT", "STATE", "STATUS", "ATTEMPTS", "URL"}};
    std::vector<std::string> attempt_lines;
    for (const json& n : view.value("notifications", json::array())) {
      const json attempts = n.value("attempts", json::array());
      rows.push_back({string_of(n, "id"), string_of(n, "event"), string_of(n, "state"),
                      string_of(n, "status"), std::to_string(attempts.size()),
                      string_of(n, "url")});
      for (const json& a : attempts) {
        std::string line = "  delivery " + string_of(n, "id") + " attempt " +
                           string_of(a, "attempt") + " at " + string_of(a, "at") + ": ";
        line += a.contains("status_code") && a["status_code"].is_number()
                    ? "HTTP " + string_of(a, "status_code")
                    : std::string("no answer");
        if (const std::string error = string_of(a, "error"); !error.empty())
          line += " (" + error + ")";
        line += ", " + number_text(a.value("duration_ms", 0.0), "%.0f") + " ms, by " +
                string_of(a, "sender");
        attempt_lines.push_back(std::move(line));
      }
      if (string_of(n, "status") == "pending" && !string_of(n, "next_attempt_at").empty())
        attempt_lines.push_back("  delivery " + string_of(n, "id") + ": next attempt at " +
                                string_of(n, "next_attempt_at"));
    }
    if (rows.size() == 1) {
      out_ << "(no notifications: the job has no notify, or no event it asked for happened yet)\n";
      return kExitSucceeded;
    }
    print_table(rows);
    for (const std::string& line : attempt_lines) out_ << line << "\n";
    return kExitSucceeded;
  }
};

}  // namespace

int run_notifications_command(const CommandLine& line, const ClientContext& context) {
  return NotificationsCommand(line, context).run();
}

}  // namespace tpujobs::client
