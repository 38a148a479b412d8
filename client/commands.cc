#include "client/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/bytes.h"
#include "base/text_table.h"
#include "client/check_command.h"
#include "client/event_stream.h"
#include "client/junit_report.h"
#include "client/limits_command.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kRequestTimeout{30000};

std::string percent_encode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

std::string string_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string number_text(double value, const char* format = "%.4g") {
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// A key that makes the client's own retries of a submit safe: the service
// answers a repeated key and body with the job the first attempt created.
std::string generated_idempotency_key() {
  unsigned char bytes[16];
  base::fill_random(bytes);
  return "tpujobs-cli-" + base::lower_hex(bytes);
}

// What a wait ended with.
struct WaitOutcome {
  int exit_code = kExitSucceeded;  // of the request; the job's is in `job`
  bool timed_out = false;
  json job;  // the last answer (terminal unless timed_out or exit_code != 0)
};

class Client {
 public:
  Client(const CommandLine& line, const ClientContext& context)
      : line_(line), context_(context), out_(*context.out), err_(*context.err) {}

  int run() {
    const std::string& command = line_.command;
    if (command == "submit") return submit();
    if (command == "validate") return validate();
    if (command == "status") return status();
    if (command == "logs") return logs();
    if (command == "wait") return wait_command();
    if (command == "cancel") return cancel();
    if (command == "list") return list();
    if (command == "pool") return pool();
    if (command == "usage") return usage();
    if (command == "notifications") return notifications();
    if (command == "upload") return upload();
    if (command == "notify-secret") return notify_secret();
    if (command == "notify-allow") return notify_allow();
    if (command == "limits") return run_limits_command(line_, context_);
    err_ << "tpujobs: unknown command '" << command << "'\n";
    return kExitRejected;
  }

 private:
  // ------------------------------------------------------------ transport

  HttpResponse send_once(HttpRequest request, milliseconds timeout) {
    if (!line_.token.empty())
      request.headers.emplace_back("Authorization", "Bearer " + line_.token);
    return context_.http->send(request, timeout);
  }

  static bool retryable(const HttpResponse& response) {
    return response.status == 0 || response.status >= 500;
  }

  milliseconds backoff(int attempt) const {
    milliseconds delay = context_.retry.first_backoff;
    for (int i = 0; i < attempt && delay < context_.retry.max_backoff; ++i) delay *= 2;
    return std::min(delay, context_.retry.max_backoff);
  }

  // Sends with retries on no answer and on 5xx (honouring Retry-After up to
  // the backoff cap). The last response is returned either way.
  HttpResponse call(const HttpRequest& request) {
    HttpResponse response;
    for (int attempt = 0; attempt < std::max(1, context_.retry.attempts); ++attempt) {
      if (attempt > 0) context_.sleep(backoff(attempt - 1));
      response = send_once(request, kRequestTimeout);
      if (!retryable(response)) break;
    }
    return response;
  }

  // Reports a response that is not the expected answer and returns the exit
  // code it stands for.
  int report_failure(const HttpResponse& response, const std::string& what) {
    if (response.status == 0) {
      err_ << "tpujobs: cannot reach the service at " << line_.server << " (" << what
           << "): " << response.error
           << "\n  hint: start it with `tpujobs serve`, or point --server / TPUJOBS_URL at it\n";
      return kExitUnreachable;
    }
    const json problem = json::parse(response.body, nullptr, false);
    std::string detail = string_of(problem, "detail");
    if (detail.empty()) detail = string_of(problem, "title");
    if (detail.empty()) detail = response.body.substr(0, 500);
    err_ << "tpujobs: " << what << ": HTTP " << response.status << ": " << detail << "\n";
    if (problem.is_object() && problem.contains("errors") && problem["errors"].is_array()) {
      for (const json& e : problem["errors"]) {
        err_ << "  " << string_of(e, "field") << ": " << string_of(e, "message") << "\n";
        if (const std::string hint = string_of(e, "hint"); !hint.empty())
          err_ << "    hint: " << hint << "\n";
      }
    }
    if (const std::string hint = string_of(problem, "hint"); !hint.empty())
      err_ << "  hint: " << hint << "\n";
    if (problem.is_object() && problem.contains("warnings") && problem["warnings"].is_array()) {
      for (const json& w : problem["warnings"])
        err_ << "  warning: " << (w.is_string() ? w.get<std::string>() : w.dump()) << "\n";
    }
    if (response.status >= 500) return kExitUnreachable;
    return kExitRejected;
  }

  // ------------------------------------------------------------ specs

  // Reads the file named by the positional argument ("-": stdin) into
  // *text. Returns false after reporting the problem.
  bool read_input(std::string* text) {
    const std::string& path = line_.positionals.front();
    std::stringstream buffer;
    if (path == "-") {
      buffer << std::cin.rdbuf();
    } else {
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        err_ << "tpujobs: cannot read " << path << "\n";
        return false;
      }
      buffer << in.rdbuf();
    }
    *text = buffer.str();
    return true;
  }

  // Reads the spec file ("-": stdin) and applies the --set overrides.
  // Returns false after reporting the problem.
  bool load_spec(json* spec) {
    const std::string& path = line_.positionals.front();
    std::string text;
    if (!read_input(&text)) return false;
    try {
      *spec = json::parse(text);
    } catch (const json::parse_error& e) {
      err_ << "tpujobs: " << path << " is not valid JSON: " << e.what() << "\n";
      return false;
    }
    if (!spec->is_object()) {
      err_ << "tpujobs: " << path << " must hold a JSON object (the job spec)\n";
      return false;
    }
    for (const std::string& assignment : line_.overrides) {
      if (base::Status applied = apply_override(spec, assignment); !applied.ok()) {
        err_ << "tpujobs: " << applied.error().message << "\n";
        return false;
      }
    }
    return true;
  }

  // ------------------------------------------------------------ output

  static std::string progress_text(const json& job) {
    std::string text = "job " + string_of(job, "id");
    if (const std::string name = string_of(job, "name"); !name.empty()) text += " " + name;
    const std::string state = string_of(job, "state");
    text += "  " + state;
    if (state == "QUEUED") {
      const std::string reason = string_of(job, "pending_reason");
      if (const std::string position = string_of(job, "queue_position");
          !position.empty() && position != "0") {
        text += " (position " + position;
        if (!reason.empty()) text += ", waiting for " + reason;
        text += ")";
      } else if (!reason.empty()) {
        // Held before the queue (a dependency): no position yet.
        text += " (waiting for " + reason + ")";
      }
      if (const std::string detail = string_of(job, "pending_detail"); !detail.empty())
        text += ": " + detail;
      // Issue 17: the effective priority's parts.
      const json parts = job.value("priority_parts", json(nullptr));
      if (parts.is_object() && parts.value("effective", json()).is_number() &&
          parts.value("fair_share", json()).is_number()) {
        text += "  priority " + number_text(parts["effective"].get<double>(), "%.3f") + " (base " +
                string_of(parts, "base") + " + fair share " +
                number_text(parts["fair_share"].get<double>(), "%.3f") + ")";
      }
    }
    const json progress = job.is_object() ? job.value("progress", json(nullptr)) : json(nullptr);
    if (progress.is_object() && !is_terminal_state(state)) {
      if (progress.contains("epoch") && progress.contains("max_epochs")) {
        text += "  epoch " + string_of(progress, "epoch") + "/" + string_of(progress, "max_epochs");
      }
      if (progress.contains("step")) {
        text += "  step " + string_of(progress, "step");
        if (const std::string total = string_of(progress, "total_steps");
            !total.empty() && total != "0") {
          text += "/" + total;
        }
      }
      if (progress.contains("percent") && progress["percent"].is_number()) {
        text += " (" + number_text(progress["percent"].get<double>(), "%.0f") + "%)";
      }
    }
    const json metrics = job.is_object() ? job.value("metrics", json(nullptr)) : json(nullptr);
    if (metrics.is_object()) {
      for (const char* name : {"loss", "val_loss", "val_accuracy"}) {
        if (metrics.contains(name) && metrics[name].is_number()) {
          text += std::string("  ") + name + " " + number_text(metrics[name].get<double>());
        }
      }
    }
    if (progress.is_object() && progress.contains("eta_seconds") &&
        progress["eta_seconds"].is_number() && !is_terminal_state(state)) {
      text += "  eta " + format_duration(milliseconds(static_cast<std::int64_t>(
                             1000 * std::max(0.0, progress["eta_seconds"].get<double>()))));
    }
    return text;
  }

  void show_progress(const json& job, Clock::time_point started) {
    const std::string text =
        progress_text(job) + "  [" +
        format_duration(std::chrono::duration_cast<milliseconds>(Clock::now() - started)) + "]";
    const std::string state = string_of(job, "state");
    if (context_.err_is_tty) {
      err_ << "\r\033[K" << text << std::flush;
      progress_drawn_ = true;
      return;
    }
    // In CI logs: a line when the state changes, else at most every 30 s.
    if (state != last_state_ || Clock::now() - last_progress_line_ >= std::chrono::seconds(30)) {
      err_ << text << "\n" << std::flush;
      last_state_ = state;
      last_progress_line_ = Clock::now();
    }
  }

  void end_progress() {
    if (progress_drawn_) err_ << "\r\033[K" << std::flush;
    progress_drawn_ = false;
  }

  // The last lines of a job's log (empty if they cannot be fetched).
  std::vector<std::string> log_tail(const std::string& id) {
    std::deque<std::string> tail;
    std::int64_t after = 0;
    for (int page = 0; page < 1000; ++page) {
      HttpResponse response =
          call({"GET",
                "/v1/jobs/" + id + "/logs?after=" + std::to_string(after) + "&limit=10000",
                "",
                {}});
      if (response.status != 200) break;
      const json body = json::parse(response.body, nullptr, false);
      if (!body.is_object() || !body.contains("lines") || !body["lines"].is_array() ||
          body["lines"].empty())
        break;
      for (const json& line : body["lines"]) {
        tail.push_back(string_of(line, "line"));
        if (static_cast<int>(tail.size()) > context_.retry.log_tail_lines) tail.pop_front();
      }
      const std::int64_t next = body.value("next_after", after);
      if (next <= after) break;
      after = next;
    }
    return {tail.begin(), tail.end()};
  }

  // Prints how a job ended; on failure the log tail, error and hint go to
  // stderr. Writes the JUnit report when asked. Returns the exit code.
  int finish(const WaitOutcome& outcome, Clock::time_point started) {
    end_progress();
    if (outcome.exit_code != kExitSucceeded) return outcome.exit_code;
    const json& job = outcome.job;
    const std::string id = string_of(job, "id");
    const std::optional<int> job_exit = exit_code_for_job(job);
    const bool failed = outcome.timed_out || job_exit.value_or(kExitSucceeded) != kExitSucceeded;
    std::vector<std::string> tail;
    if (failed || !line_.junit_path.empty()) tail = log_tail(id);
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();

    int code = kExitSucceeded;
    if (outcome.timed_out) {
      code = kExitTimedOut;
    } else {
      code = job_exit.value_or(kExitJobFailed);
    }
    if (!line_.junit_path.empty()) {
      std::ofstream file(line_.junit_path, std::ios::binary | std::ios::trunc);
      file << junit_report(job, tail, outcome.timed_out, elapsed);
      if (!file.good())
        err_ << "tpujobs: cannot write the JUnit report to " << line_.junit_path << "\n";
    }
    if (line_.json) out_ << job.dump(2) << "\n";

    const std::string state = string_of(job, "state");
    if (failed && !tail.empty() && !line_.follow) {
      err_ << "--- last " << tail.size() << " log lines of job " << id << " ---\n";
      for (const std::string& l : tail) err_ << l << "\n";
      err_ << "---\n";
    }
    if (outcome.timed_out) {
      err_ << "tpujobs: --timeout " << format_duration(*line_.timeout) << " elapsed; job " << id
           << " is still " << state << " (it keeps running: `tpujobs cancel " << id
           << "` stops it)\n";
    } else if (state == "SUCCEEDED") {
      if (!line_.json)
        out_ << progress_text(job) << " in "
             << format_duration(milliseconds(static_cast<std::int64_t>(elapsed * 1000))) << "\n";
    } else {
      const json error = job.value("error", json(nullptr));
      err_ << "tpujobs: job " << id << " " << state;
      if (const std::string type = string_of(error, "type"); !type.empty()) err_ << ": " << type;
      if (const std::string message = string_of(error, "message"); !message.empty())
        err_ << ": " << message;
      err_ << "\n";
      if (const std::string hint = string_of(error, "hint"); !hint.empty())
        err_ << "  hint: " << hint << "\n";
    }
    for (const GateOutcome& gate : evaluate_gates(job)) {
      if (!gate.passed && !gate.skipped && !line_.json)
        err_ << "  expect " << gate.metric << ": " << gate.message << "\n";
    }
    return code;
  }

  // ------------------------------------------------------------ waiting

  std::optional<Clock::time_point> deadline_from(Clock::time_point started) const {
    if (!line_.timeout) return std::nullopt;
    return started + *line_.timeout;
  }

  // Sleeps for the backoff, but not past the deadline.
  void pause(milliseconds delay, std::optional<Clock::time_point> deadline) {
    if (deadline) {
      delay = std::min(delay, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                                            *deadline - Clock::now())));
    }
    if (delay.count() > 0) context_.sleep(delay);
  }

  void note_outage(const HttpResponse& response, milliseconds retry_in) {
    end_progress();
    if (!in_outage_) {
      err_ << "tpujobs: lost the service ("
           << (response.status == 0 ? response.error : "HTTP " + std::to_string(response.status))
           << "); reconnecting every "
           << format_duration(std::max(retry_in, milliseconds(1000))).c_str() << " or sooner\n";
    }
    in_outage_ = true;
  }

  void note_recovered() {
    if (in_outage_) err_ << "tpujobs: reconnected\n";
    in_outage_ = false;
  }

  // Long-polls until the job ends or the deadline passes. Network errors and
  // 5xx (a restarting service) are retried with backoff for as long as it
  // takes; only an answer about the job ends the wait.
  WaitOutcome wait_for(const std::string& id, Clock::time_point started,
                       std::optional<Clock::time_point> deadline, bool show) {
    WaitOutcome outcome;
    int failures = 0;
    for (;;) {
      int poll = context_.err_is_tty && show ? context_.retry.tty_poll_seconds
                                             : context_.retry.wait_poll_seconds;
      if (deadline) {
        const auto remaining = std::chrono::duration_cast<milliseconds>(*deadline - Clock::now());
        if (remaining.count() <= 0 && !outcome.job.is_null()) {
          outcome.timed_out = true;
          return outcome;
        }
        poll = static_cast<int>(std::clamp<std::int64_t>(remaining.count() / 1000, 0, poll));
      }
      HttpResponse response =
          send_once({"GET", "/v1/jobs/" + id + "/wait?timeout=" + std::to_string(poll), "", {}},
                    milliseconds(poll * 1000) + kRequestTimeout);
      if (response.status == 200) {
        note_recovered();
        failures = 0;
        json job = json::parse(response.body, nullptr, false);
        if (!job.is_object()) {
          outcome.exit_code = report_failure(response, "waiting for job " + id);
          return outcome;
        }
        outcome.job = std::move(job);
        if (is_terminal_state(string_of(outcome.job, "state"))) return outcome;
        if (show) show_progress(outcome.job, started);
        if (poll == 0) pause(milliseconds(200), deadline);
        continue;
      }
      if (retryable(response)) {
        const milliseconds delay = backoff(failures++);
        note_outage(response, delay);
        if (deadline && Clock::now() >= *deadline) {
          outcome.timed_out = true;
          if (outcome.job.is_null())
            outcome.job = json{{"id", std::stoll(id)}, {"state", "UNKNOWN"}};
          return outcome;
        }
        pause(delay, deadline);
        continue;
      }
      end_progress();
      outcome.exit_code = report_failure(response, "waiting for job " + id);
      return outcome;
    }
  }

  // Streams the job's log to stdout until the service says the job ended.
  // Reconnects after drops from the last line seen. Returns the exit code of
  // the streaming (0, or 2/4 for a problem); *timed_out when the deadline hit.
  int follow_log(const std::string& id, std::optional<Clock::time_point> deadline,
                 bool* timed_out) {
    std::int64_t after = 0;
    int failures = 0;
    bool ended = false;
    *timed_out = false;
    while (!ended) {
      if (deadline && Clock::now() >= *deadline) {
        *timed_out = true;
        return kExitSucceeded;
      }
      EventStreamParser parser;
      bool received = false;
      HttpRequest request{"GET",
                          "/v1/jobs/" + id + "/logs?after=" + std::to_string(after),
                          "",
                          {{"Accept", "text/event-stream"}}};
      if (!line_.token.empty())
        request.headers.emplace_back("Authorization", "Bearer " + line_.token);
      HttpResponse response = context_.http->stream(
          request,
          [&](std::string_view bytes) {
            received = true;
            for (const EventStreamParser::Event& event : parser.feed(bytes)) {
              if (event.name == "log") {
                const json data = json::parse(event.data, nullptr, false);
                if (line_.json) {
                  out_ << data.dump() << "\n";
                } else {
                  out_ << string_of(data, "line") << "\n";
                }
                if (data.is_object() && data.contains("seq") && data["seq"].is_number_integer()) {
                  after = std::max(after, data["seq"].get<std::int64_t>());
                }
              } else if (event.name == "end") {
                ended = true;
                return false;
              }
            }
            out_ << std::flush;
            return true;
          },
          milliseconds(60000), deadline.value_or(Clock::now() + std::chrono::hours(24 * 365)));
      if (ended) break;
      if (response.status >= 200 && response.status < 300) {
        if (received) failures = 0;
      } else if (!retryable(response)) {
        return report_failure(response, "following the log of job " + id);
      }
      // The stream dropped (a restart, a proxy timeout): resume after `after`.
      const milliseconds delay = backoff(failures++);
      if (response.status == 0 || response.status >= 500) note_outage(response, delay);
      pause(delay, deadline);
    }
    note_recovered();
    return kExitSucceeded;
  }

  // ------------------------------------------------------------ commands

  int submit() {
    json spec;
    if (!load_spec(&spec)) return kExitRejected;
    const std::string key =
        line_.idempotency_key.empty() ? generated_idempotency_key() : line_.idempotency_key;
    const Clock::time_point started = Clock::now();
    HttpResponse response = call({"POST", "/v1/jobs", spec.dump(), {{"Idempotency-Key", key}}});
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
  int submitted_array(const json& answer, int status, Clock::time_point started) {
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
    const std::optional<Clock::time_point> deadline = deadline_from(started);
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
      const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
      file << junit_array_report(std::stoll(array), children, timed_out, elapsed);
      if (!file.good())
        err_ << "tpujobs: cannot write the JUnit report to " << line_.junit_path << "\n";
    }
    return code;
  }

  int wait_and_finish(const std::string& id, Clock::time_point started) {
    const std::optional<Clock::time_point> deadline = deadline_from(started);
    if (line_.follow) {
      bool timed_out = false;
      if (int code = follow_log(id, deadline, &timed_out); code != kExitSucceeded) return code;
      if (timed_out) {
        WaitOutcome outcome;
        HttpResponse response = call({"GET", "/v1/jobs/" + id, "", {}});
        outcome.job = json::parse(response.body, nullptr, false);
        if (response.status != 200 || !outcome.job.is_object())
          outcome.job = json{{"id", std::stoll(id)}, {"state", "UNKNOWN"}};
        outcome.timed_out = !is_terminal_state(string_of(outcome.job, "state"));
        return finish(outcome, started);
      }
    }
    return finish(wait_for(id, started, deadline, !line_.follow && !line_.json), started);
  }

  int wait_command() { return wait_and_finish(line_.positionals.front(), Clock::now()); }

  int validate() {
    json spec;
    if (!load_spec(&spec)) return kExitRejected;
    HttpResponse response = call({"POST", "/v1/jobs:validate", spec.dump(), {}});
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

  int status() {
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

  int logs() {
    const std::string& id = line_.positionals.front();
    if (line_.follow) {
      bool timed_out = false;
      return follow_log(id, std::nullopt, &timed_out);
    }
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

  int upload() {
    const std::string& path = line_.positionals.front();
    std::string csv;
    if (!read_input(&csv)) return kExitRejected;
    if (csv.empty()) {
      err_ << "tpujobs: " << path << " is empty; a dataset needs a header and rows\n";
      return kExitRejected;
    }
    std::string name = line_.dataset_name.value_or("");
    if (name.empty()) {
      name = path == "-" ? "upload" : std::filesystem::path(path).filename().string();
      if (name.size() > 4 && name.ends_with(".csv")) name.resize(name.size() - 4);
    }
    // Sent as the file it is (the service refuses a form, which would have
    // lost its newlines). Retried on no answer or a 5xx as every request
    // is; the key makes a retry whose first attempt was stored (its answer
    // lost) answer that dataset rather than store a second copy.
    const std::string key =
        line_.idempotency_key.empty() ? generated_idempotency_key() : line_.idempotency_key;
    HttpResponse response = call({"POST",
                                  "/v1/datasets?name=" + percent_encode(name),
                                  std::move(csv),
                                  {{"Content-Type", "text/csv"}, {"Idempotency-Key", key}}});
    if (response.status != 201 && response.status != 200)
      return report_failure(response, "uploading " + path);
    const json dataset = json::parse(response.body, nullptr, false);
    const std::string id = string_of(dataset, "id");
    if (!dataset.is_object() || id.empty()) {
      err_ << "tpujobs: the service answered the upload without a dataset id: "
           << response.body.substr(0, 300) << "\n";
      return kExitUnreachable;
    }
    if (line_.json) {
      out_ << dataset.dump(2) << "\n";
      return kExitSucceeded;
    }
    out_ << id << "\n";
    err_ << "uploaded " << path << " as dataset " << id << " ('" << name << "')"
         << (response.status == 200 ? " (same idempotency key)" : "") << ": "
         << dataset.value("rows", 0) << " rows, " << dataset.value("features", 0) << " features, "
         << dataset.value("classes", 0) << " classes\n"
         << "  train on it with: --set 'data.dataset={\"upload\":\"" << id << "\"}'\n";
    return kExitSucceeded;
  }

  int cancel() {
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

  // Prints rows as left-aligned columns.
  void print_table(const std::vector<std::vector<std::string>>& rows) {
    out_ << base::text_table(rows);
  }

  int list() {
    std::string query;
    auto add = [&](const std::string& name, const std::string& value) {
      query += (query.empty() ? "?" : "&") + name + "=" + percent_encode(value);
    };
    if (line_.state) add("state", *line_.state);
    for (const std::string& label : line_.labels) add("label", label);
    if (line_.array) add("array", std::to_string(*line_.array));
    add("limit", std::to_string(line_.limit.value_or(50)));
    HttpResponse response = call({"GET", "/v1/jobs" + query, "", {}});
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

  int usage() {
    std::string query;
    auto add = [&](const std::string& name, const std::string& value) {
      query += (query.empty() ? "?" : "&") + name + "=" + percent_encode(value);
    };
    if (line_.from) add("from", *line_.from);
    if (line_.to) add("to", *line_.to);
    const std::size_t colon = line_.group_by.find(':');
    add("group_by", line_.group_by.substr(0, colon));
    if (colon != std::string::npos) add("label", line_.group_by.substr(colon + 1));
    if (line_.csv) add("format", "csv");
    HttpResponse response = call({"GET", "/v1/usage" + query, "", {}});
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

  // ------------------------------------------------------- notifications

  int notifications() {
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

  int notify_secret() {
    HttpResponse response =
        call({line_.rotate ? "POST" : "GET", "/v1/notifications/secret", "", {}});
    if (response.status != 200 && response.status != 201)
      return report_failure(response, "the notification secret");
    const json view = json::parse(response.body, nullptr, false);
    if (line_.json || !view.is_object()) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    if (line_.rotate) {
      out_ << string_of(view, "secret") << "\n";
      err_ << "tpujobs: the notification secret of tenant '" << string_of(view, "tenant")
           << "'; it is not shown again. Receivers check X-Tpujobs-Signature: sha256=<hex "
              "HMAC-SHA256 of the body>.\n";
    } else if (view.value("exists", false)) {
      out_ << "tenant '" << string_of(view, "tenant") << "' has a notification secret since "
           << string_of(view, "created_at") << "\n";
    } else {
      out_ << "tenant '" << string_of(view, "tenant")
           << "' has no notification secret; make one with `tpujobs notify-secret --rotate`\n";
    }
    return kExitSucceeded;
  }

  int notify_allow() {
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

  // Each generation's layout (GET /v1/pool "generations"): hosts, devices
  // per host, the largest slice they form and its topology, the host's own
  // block of chips, HBM (and what XLA reports usable), MXU, bf16 peak.
  void print_generations(const json& generations) {
    if (!generations.is_array() || generations.empty()) return;
    std::vector<std::vector<std::string>> rows = {{"GENERATION", "HOSTS", "DEVICES/HOST", "SLICE",
                                                   "TOPOLOGY", "HOST BLOCK", "HBM/DEVICE",
                                                   "XLA HBM", "MXU", "BF16 TFLOP/S"}};
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    for (const json& g : generations) {
      const std::string topology = string_of(g, "topology");
      const std::string mxu = string_of(g, "mxu_dim");
      rows.push_back(
          {string_of(g, "generation"), string_of(g, "hosts"), string_of(g, "devices_per_host"),
           string_of(g, "slice"), topology.empty() ? "-" : topology,
           g.value("host_block", json()).is_string() ? g["host_block"].get<std::string>() : "-",
           number_text(g.value("hbm_bytes_per_device", 0.0) / kGiB, "%.0f") + " GiB",
           number_text(g.value("hbm_reported_bytes", 0.0) / kGiB, "%.2f") + "G", mxu + "x" + mxu,
           number_text(g.value("peak_bf16_flops_per_device", 0.0) / 1e12, "%.0f")});
    }
    print_table(rows);
  }

  int pool() {
    HttpResponse response = call({"GET", "/v1/pool", "", {}});
    if (response.status != 200) return report_failure(response, "reading the pool");
    const json view = json::parse(response.body, nullptr, false);
    if (line_.json) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    // A cluster (DESIGN §9) names each host's agent, and lists the agents below.
    const bool cluster = view.contains("agents");
    std::vector<std::vector<std::string>> rows = {
        {"HOST", "GENERATION", "HEALTH", "CORES", "IN USE", "JOBS"}};
    if (cluster) rows[0].insert(rows[0].begin() + 1, "AGENT");
    for (const json& host : view.value("hosts", json::array())) {
      std::vector<std::string> jobs;
      for (const json& core : host.value("cores", json::array())) {
        const std::string job = string_of(core, "job");
        if (!job.empty() && std::find(jobs.begin(), jobs.end(), job) == jobs.end())
          jobs.push_back(job);
      }
      std::string job_text;
      for (const std::string& j : jobs) job_text += (job_text.empty() ? "" : ",") + j;
      rows.push_back({string_of(host, "name"), string_of(host, "generation"),
                      string_of(host, "health"), string_of(host, "devices"),
                      string_of(host, "cores_in_use"), job_text.empty() ? "-" : job_text});
      if (cluster) {
        const std::string state = string_of(host, "agent_state");
        rows.back().insert(rows.back().begin() + 1,
                           string_of(host, "agent") + (state == "alive" ? "" : " (" + state + ")"));
      }
    }
    print_table(rows);
    const double utilization = view.value("utilization", 0.0);
    out_ << view.value("total_cores", 0) << " cores, " << view.value("used_cores", 0) << " in use ("
         << number_text(100 * utilization, "%.0f") << "%), " << view.value("healthy_cores", 0)
         << " healthy; " << view.value("running_jobs", 0) << " jobs running, "
         << view.value("queued_jobs", 0) << " queued\n";
    print_generations(view.value("generations", json::array()));
    if (cluster) {  // who runs which hosts
      std::vector<std::vector<std::string>> agents = {
          {"AGENT", "STATE", "LAST HEARTBEAT", "HOSTS", "RUNNING JOBS"}};
      for (const json& agent : view["agents"]) {
        std::string hosts, running;
        for (const json& h : agent.value("hosts", json::array()))
          hosts += (hosts.empty() ? "" : ",") + h.get<std::string>();
        for (const json& j : agent.value("running_jobs", json::array()))
          running += (running.empty() ? "" : ",") + j.dump();
        agents.push_back({string_of(agent, "name"), string_of(agent, "state"),
                          string_of(agent, "last_heartbeat"), hosts.empty() ? "-" : hosts,
                          running.empty() ? "-" : running});
      }
      print_table(agents);
    }
    return kExitSucceeded;
  }

  const CommandLine& line_;
  const ClientContext& context_;
  std::ostream& out_;
  std::ostream& err_;
  bool progress_drawn_ = false;
  bool in_outage_ = false;
  std::string last_state_;
  Clock::time_point last_progress_line_{};
};

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> environment;
  for (const char* name : {"TPUJOBS_URL", "TPUJOBS_TOKEN"}) {
    if (const char* value = std::getenv(name)) environment[name] = value;
  }
  return environment;
}

}  // namespace

int run_client_command(const CommandLine& command_line, const ClientContext& context) {
  try {
    return Client(command_line, context).run();
  } catch (const std::exception& e) {
    *context.err << "tpujobs: " << e.what() << "\n";
    return kExitJobFailed;
  }
}

int run_client(const std::string& command, const std::vector<std::string>& args) {
  CommandLine line;
  if (base::Status parsed = parse_command_line(command, args, process_environment(), &line);
      !parsed.ok()) {
    std::cerr << "tpujobs " << command << ": " << parsed.error().message << "\n\n"
              << command_usage(command);
    return kExitRejected;
  }
  if (line.help) {
    std::cout << command_usage(command);
    return kExitSucceeded;
  }
  base::Result<ServerUrl> server = parse_server_url(line.server);
  if (!server.ok()) {
    std::cerr << "tpujobs " << command << ": --server: " << server.error().message << "\n";
    return kExitRejected;
  }
  HttpClientPtr http = make_http_client(*server);
  ClientContext context;
  context.http = http.get();
  context.out = &std::cout;
  context.err = &std::cerr;
  context.err_is_tty = isatty(STDERR_FILENO) == 1;
  context.sleep = [](milliseconds delay) { std::this_thread::sleep_for(delay); };
  return run_client_command(line, context);
}

}  // namespace tpujobs::client
