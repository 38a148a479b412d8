// `tpujobs list`: the jobs, filtered by state, label or array.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class ListCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    QueryString query;
    if (line_.state) query.add("state", *line_.state);
    for (const std::string& label : line_.labels) query.add("label", label);
    if (line_.array) query.add("array", std::to_string(*line_.array));
    query.add("limit", std::to_string(line_.limit.value_or(50)));
    HttpResponse response = call({"GET", "/v1/jobs" + query.text(), "", {}});
    if (response.status != 200) return report_failure(response, "listing jobs");
    const json page = json::parse(response.body, nullptr, false);
    if (line_.json) {
      out_ << page.dump(2) << "\n";
      return kExitSucceeded;
    }
    std::vector<std::vector<std::string>> rows = {
        {"ID", "NAME", "STATE", "PROGRESS", "VAL_ACCURACY", "CREATED"}};
    const json jobs = page.is_object() ? page.value("jobs", json::array()) : json::array();
    for (const json& job : jobs) {
      std::string progress = "-";
      const json p = job.value("progress", json(nullptr));
      if (p.is_object() && p.contains("epoch")) {
        progress = "epoch " + string_of(p, "epoch") + "/" + string_of(p, "max_epochs");
      }
      if (string_of(job, "state") == "QUEUED" && !string_of(job, "pending_reason").empty()) {
        progress = "waiting: " + string_of(job, "pending_reason");
      }
      const json metrics = job.value("metrics", json(nullptr));
      const std::string accuracy = metrics.is_object() && metrics.contains("val_accuracy") &&
                                           metrics["val_accuracy"].is_number()
                                       ? number_text(metrics["val_accuracy"].get<double>())
                                       : "-";
      rows.push_back({string_of(job, "id"), string_of(job, "name"), string_of(job, "state"),
                      progress, accuracy, string_of(job, "created_at")});
      // A job array: the values each child was given, beside its name.
      if (line_.array && job.contains("array") && job["array"].is_object()) {
        rows.back().insert(rows.back().begin() + 2,
                           job["array"].value("values", json::object()).dump());
      }
    }
    if (line_.array) rows.front().insert(rows.front().begin() + 2, "VALUES");
    print_table(rows);
    if (jobs.empty()) out_ << "(no jobs)\n";
    if (!string_of(page, "next_cursor").empty()) out_ << "(more jobs: raise --limit or filter)\n";
    return kExitSucceeded;
  }
};

}  // namespace

int run_list_command(const CommandLine& line, const ClientContext& context) {
  return ListCommand(line, context).run();
}

}  // namespace tpujobs::client
