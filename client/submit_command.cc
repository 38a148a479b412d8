// `tpujobs submit SPEC`: submits a job (or a sweep's job array) and, with
// --wait, waits for it and exits with how it ended.
#include <fstream>
#include <ostream>

#include "client/client_commands.h"
#include "client/junit_report.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class SubmitCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::optional<json> spec = load_spec();
    if (!spec) return kExitRejected;
    const std::string key =
        line_.idempotency_key.empty() ? generated_idempotency_key() : line_.idempotency_key;
    const TimePoint started = clock_.now();
    HttpResponse response = call({"POST", "/v1/jobs", spec->dump(), {{"Idempotency-Key", key}}});
    if (response.status != 201 && response.status != 200)
      return report_failure(response, "submitting the job");
    json job = json::parse(response.body, nullptr, false);
    if (job.is_object() && job.contains("array"))
      return submitted_array(job, response.status, started);
    const std::string id = string_of(job, "id");
    if (id.empty()) {
      err_ << "tpujobs: the service answered the submit without a job id: "
           << response.body.substr(0, 300) << "\n";
      return kExitUnreachable;
    }
    if (!line_.wait) {
      if (line_.json) {
        out_ << job.dump(2) << "\n";
      } else {
        out_ << (response.status == 200 ? "attached to job " : "submitted job ") << id;
        if (const std::string name = string_of(job, "name"); !name.empty())
          out_ << " (" << name << ")";
        out_ << ": " << string_of(job, "state") << "\n";
      }
      return kExitSucceeded;
    }
    err_ << (response.status == 200 ? "attached to job " : "submitted job ") << id
         << (response.status == 200 ? " (same idempotency key)" : "") << "\n";
    for (const json& warning : job.value("warnings", json::array())) {
      if (warning.is_string()) err_ << "  warning: " << warning.get<std::string>() << "\n";
    }
    return wait_and_finish(id, started);
  }

  // A sweep's answer: {"array": {"id", "size"}, "jobs": [...]}. With --wait,
  // waits for every child and exits with the worst outcome (timeout, then
  // failed, then cancelled); --junit writes one test case per child.
  int submitted_array(const json& answer, int status, TimePoint started) {
    const std::string array = string_of(answer["array"], "id");
    const json jobs = answer.value("jobs", json::array());
    if (line_.json && !line_.wait) {
      out_ << answer.dump(2) << "\n";
      return kExitSucceeded;
    }
    std::ostream& note = line_.wait ? err_ : out_;
    note << (status == 200 ? "attached to job array " : "submitted job array ") << array << ": "
         << jobs.size() << " jobs\n";
    for (const json& job : jobs) {
      note << "  job " << string_of(job, "id") << " "
           << (job.contains("array") ? job["array"]["values"].dump() : "") << "\n";
    }
    if (!line_.wait) return kExitSucceeded;
    const std::optional<TimePoint> deadline = deadline_from(started);
    std::vector<json> children;
    std::vector<bool> timed_out;
    int code = kExitSucceeded;
    for (const json& job : jobs) {
      WaitOutcome outcome = wait_for(string_of(job, "id"), started, deadline, false);
      if (outcome.exit_code != kExitSucceeded) return outcome.exit_code;
      const int job_code = outcome.timed_out
                               ? kExitTimedOut
                               : exit_code_for_job(outcome.job).value_or(kExitJobFailed);
      // The worst outcome wins: timeout, failed, cancelled, succeeded.
      auto rank = [](int c) {
        return c == kExitTimedOut ? 3 : c == kExitJobFailed ? 2 : c == kExitCancelled ? 1 : 0;
      };
      if (rank(job_code) > rank(code)) code = job_code;
      children.push_back(outcome.job);
      timed_out.push_back(outcome.timed_out);
    }
    if (line_.json) {
      out_ << json{{"array", answer["array"]}, {"jobs", children}}.dump(2) << "\n";
    } else {
      // The children side by side: state, the values swept, the final metrics.
      for (const json& job : children) {
        out_ << progress_text(job);
        if (job.contains("array") && job["array"].is_object())
          out_ << "  " << job["array"].value("values", json()).dump();
        if (job.contains("metrics") && job["metrics"].is_object())
          out_ << "  " << job["metrics"].dump();
        out_ << "\n";
      }
    }
    if (!line_.junit_path.empty()) {
      std::ofstream file(line_.junit_path, std::ios::binary | std::ios::trunc);
      const double elapsed = std::chrono::duration<double>(clock_.now() - started).count();
      file << junit_array_report(std::stoll(array), children, timed_out, elapsed);
      if (!file.good())
        err_ << "tpujobs: cannot write the JUnit report to " << line_.junit_path << "\n";
    }
    return code;
  }
};

}  // namespace

int run_submit_command(const CommandLine& line, const ClientContext& context) {
  return SubmitCommand(line, context).run();
}

}  // namespace tpujobs::client
