// `tpujobs usage`: TPU core-hours by tenant or label.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class UsageCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    QueryString query;
    if (line_.from) query.add("from", *line_.from);
    if (line_.to) query.add("to", *line_.to);
    const std::size_t colon = line_.group_by.find(':');
    query.add("group_by", line_.group_by.substr(0, colon));
    if (colon != std::string::npos) query.add("label", line_.group_by.substr(colon + 1));
    if (line_.csv) query.add("format", "csv");
    HttpResponse response = call({"GET", "/v1/usage" + query.text(), "", {}});
    if (response.status != 200) return report_failure(response, "reading the usage");
    if (line_.csv) {
      out_ << response.body;
      return kExitSucceeded;
    }
    const json view = json::parse(response.body, nullptr, false);
    if (line_.json || !view.is_object()) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    std::vector<std::vector<std::string>> rows = {{line_.group_by == "tenant" ? "TENANT" : "LABEL",
                                                   "CORE-HOURS", "CORE-SECONDS", "JOBS",
                                                   "BY GENERATION"}};
    for (const json& group : view.value("groups", json::array())) {
      const double seconds = group.value("core_seconds", 0.0);
      std::string generations;
      const json by_generation =
          group.contains("by_generation") ? group["by_generation"] : json::object();
      for (auto it = by_generation.begin(); it != by_generation.end(); ++it) {
        const std::string& generation = it.key();
        const json& value = it.value();
        generations += (generations.empty() ? "" : " ") + generation + "=" +
                       number_text(value.is_number() ? value.get<double>() : 0.0, "%.0f");
      }
      const std::string name = string_of(group, "group");
      rows.push_back({name.empty() ? "(none)" : name, number_text(seconds / 3600, "%.3f"),
                      number_text(seconds, "%.1f"), string_of(group, "jobs"), generations});
    }
    print_table(rows);
    out_ << "from " << string_of(view, "from") << " to " << string_of(view, "to") << ": "
         << number_text(view.value("total_core_seconds", 0.0), "%.1f") << " TPU core-seconds\n";
    return kExitSucceeded;
  }
};

}  // namespace

int run_usage_command(const CommandLine& line, const ClientContext& context) {
  return UsageCommand(line, context).run();
}

}  // namespace tpujobs::client
