// `tpujobs notify-allow [--remove] [ENTRY ...]`: the notification allow-list.
#include <algorithm>
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class NotifyAllowCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    HttpResponse response = call({"GET", "/v1/notifications/allowlist", "", {}});
    if (response.status != 200) return report_failure(response, "reading the allow-list");
    json view = json::parse(response.body, nullptr, false);
    if (!line_.positionals.empty()) {
      // Read, change, write back the whole list.
      std::vector<std::string> entries;
      for (const json& e : view.value("entries", json::array()))
        if (e.is_string()) entries.push_back(e.get<std::string>());
      for (const std::string& entry : line_.positionals) {
        auto at = std::find(entries.begin(), entries.end(), entry);
        if (line_.remove && at != entries.end()) entries.erase(at);
        if (!line_.remove && at == entries.end()) entries.push_back(entry);
      }
      response =
          call({"PUT", "/v1/notifications/allowlist", json{{"entries", entries}}.dump(), {}});
      if (response.status != 200) return report_failure(response, "changing the allow-list");
      view = json::parse(response.body, nullptr, false);
    } else if (line_.remove) {
      err_ << "tpujobs: --remove needs the entries to remove\n";
      return kExitRejected;
    }
    if (line_.json || !view.is_object()) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    const json entries = view.value("entries", json::array());
    for (const json& e : entries) out_ << e.get<std::string>() << "\n";
    if (entries.empty()) out_ << "(the allow-list is empty: no job may ask for notifications)\n";
    return kExitSucceeded;
  }
};

}  // namespace

int run_notify_allow_command(const CommandLine& line, const ClientContext& context) {
  return NotifyAllowCommand(line, context).run();
}

}  // namespace tpujobs::client
