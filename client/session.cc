#include "client/session.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/bytes.h"
#include "base/text_table.h"
#include "client/event_stream.h"
#include "client/junit_report.h"

namespace tpujobs::client {

using nlohmann::json;
using std::chrono::milliseconds;
using TimePoint = base::Clock::time_point;

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

QueryString& QueryString::add(const std::string& name, const std::string& value) {
  text_ += (text_.empty() ? "?" : "&") + name + "=" + percent_encode(value);
  return *this;
}

std::string string_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string number_text(double value, const char* format) {
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string generated_idempotency_key() {
  unsigned char bytes[16];
  base::fill_random(bytes);
  return "tpujobs-cli-" + base::lower_hex(bytes);
}

Session::Session(const CommandLine& line, const ClientContext& context)
    : line_(line),
      context_(context),
      clock_(context.clock != nullptr ? *context.clock : base::real_clock()),
      out_(*context.out),
      err_(*context.err) {}

// ------------------------------------------------------------ transport

HttpResponse Session::send_once(HttpRequest request, milliseconds timeout) {
  if (!line_.token.empty()) request.headers.emplace_back("Authorization", "Bearer " + line_.token);
  return context_.http->send(request, timeout);
}

bool Session::retryable(const HttpResponse& response) {
  return response.status == 0 || response.status >= 500;
}

milliseconds Session::backoff(int attempt) const {
  milliseconds delay = context_.retry.first_backoff;
  for (int i = 0; i < attempt && delay < context_.retry.max_backoff; ++i) delay *= 2;
  return std::min(delay, context_.retry.max_backoff);
}

// Sends with retries on no answer and on 5xx (honouring Retry-After up to
// the backoff cap). The last response is returned either way.
HttpResponse Session::call(const HttpRequest& request) {
  HttpResponse response;
  for (int attempt = 0; attempt < std::max(1, context_.retry.attempts); ++attempt) {
    if (attempt > 0) clock_.sleep_for(backoff(attempt - 1));
    response = send_once(request, kRequestTimeout);
    if (!retryable(response)) break;
  }
  return response;
}

// Reports a response that is not the expected answer and returns the exit
// code it stands for.
int Session::report_failure(const HttpResponse& response, const std::string& what) {
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

std::optional<std::string> Session::read_input() {
  const std::string& path = line_.positionals.front();
  std::stringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      err_ << "tpujobs: cannot read " << path << "\n";
      return std::nullopt;
    }
    buffer << in.rdbuf();
  }
  return buffer.str();
}

std::optional<json> Session::load_spec() {
  const std::string& path = line_.positionals.front();
  std::optional<std::string> text = read_input();
  if (!text) return std::nullopt;
  json spec;
  try {
    spec = json::parse(*text);
  } catch (const json::parse_error& e) {
    err_ << "tpujobs: " << path << " is not valid JSON: " << e.what() << "\n";
    return std::nullopt;
  }
  if (!spec.is_object()) {
    err_ << "tpujobs: " << path << " must hold a JSON object (the job spec)\n";
    return std::nullopt;
  }
  for (const std::string& assignment : line_.overrides) {
    if (base::Status applied = apply_override(&spec, assignment); !applied.ok()) {
      err_ << "tpujobs: " << applied.error().message << "\n";
      return std::nullopt;
    }
  }
  return spec;
}

// ------------------------------------------------------------ output

std::string Session::progress_text(const json& job) {
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

void Session::show_progress(const json& job, TimePoint started) {
  const std::string text =
      progress_text(job) + "  [" +
      format_duration(std::chrono::duration_cast<milliseconds>(clock_.now() - started)) + "]";
  const std::string state = string_of(job, "state");
  if (context_.err_is_tty) {
    err_ << "\r\033[K" << text << std::flush;
    progress_drawn_ = true;
    return;
  }
  // In CI logs: a line when the state changes, else at most every 30 s.
  if (state != last_state_ || clock_.now() - last_progress_line_ >= std::chrono::seconds(30)) {
    err_ << text << "\n" << std::flush;
    last_state_ = state;
    last_progress_line_ = clock_.now();
  }
}

void Session::end_progress() {
  if (progress_drawn_) err_ << "\r\033[K" << std::flush;
  progress_drawn_ = false;
}

// The last lines of a job's log (empty if they cannot be fetched).
std::vector<std::string> Session::log_tail(const std::string& id) {
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
int Session::finish(const WaitOutcome& outcome, TimePoint started) {
  end_progress();
  if (outcome.exit_code != kExitSucceeded) return outcome.exit_code;
  const json& job = outcome.job;
  const std::string id = string_of(job, "id");
  const std::optional<int> job_exit = exit_code_for_job(job);
  const bool failed = outcome.timed_out || job_exit.value_or(kExitSucceeded) != kExitSucceeded;
  std::vector<std::string> tail;
  if (failed || !line_.junit_path.empty()) tail = log_tail(id);
  const double elapsed = std::chrono::duration<double>(clock_.now() - started).count();

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

std::optional<TimePoint> Session::deadline_from(TimePoint started) const {
  if (!line_.timeout) return std::nullopt;
  return started + *line_.timeout;
}

// Sleeps for the backoff, but not past the deadline.
void Session::pause(milliseconds delay, std::optional<TimePoint> deadline) {
  if (deadline) {
    delay = std::min(delay, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                                          *deadline - clock_.now())));
  }
  if (delay.count() > 0) clock_.sleep_for(delay);
}

void Session::note_outage(const HttpResponse& response, milliseconds retry_in) {
  end_progress();
  if (!in_outage_) {
    err_ << "tpujobs: lost the service ("
         << (response.status == 0 ? response.error : "HTTP " + std::to_string(response.status))
         << "); reconnecting every "
         << format_duration(std::max(retry_in, milliseconds(1000))).c_str() << " or sooner\n";
  }
  in_outage_ = true;
}

void Session::note_recovered() {
  if (in_outage_) err_ << "tpujobs: reconnected\n";
  in_outage_ = false;
}

// Long-polls until the job ends or the deadline passes. Network errors and
// 5xx (a restarting service) are retried with backoff for as long as it
// takes; only an answer about the job ends the wait.
WaitOutcome Session::wait_for(const std::string& id, TimePoint started,
                              std::optional<TimePoint> deadline, bool show) {
  WaitOutcome outcome;
  int failures = 0;
  for (;;) {
    int poll = context_.err_is_tty && show ? context_.retry.tty_poll_seconds
                                           : context_.retry.wait_poll_seconds;
    if (deadline) {
      const auto remaining = std::chrono::duration_cast<milliseconds>(*deadline - clock_.now());
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
      if (deadline && clock_.now() >= *deadline) {
        outcome.timed_out = true;
        if (outcome.job.is_null()) outcome.job = json{{"id", std::stoll(id)}, {"state", "UNKNOWN"}};
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

FollowOutcome Session::follow_log(const std::string& id, std::optional<TimePoint> deadline) {
  std::int64_t after = 0;
  int failures = 0;
  bool ended = false;
  while (!ended) {
    if (deadline && clock_.now() >= *deadline) return {kExitSucceeded, true};
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
        milliseconds(60000), deadline.value_or(clock_.now() + std::chrono::hours(24 * 365)));
    if (ended) break;
    if (response.status >= 200 && response.status < 300) {
      if (received) failures = 0;
    } else if (!retryable(response)) {
      return {report_failure(response, "following the log of job " + id), false};
    }
    // The stream dropped (a restart, a proxy timeout): resume after `after`.
    const milliseconds delay = backoff(failures++);
    if (response.status == 0 || response.status >= 500) note_outage(response, delay);
    pause(delay, deadline);
  }
  note_recovered();
  return {};
}

int Session::wait_and_finish(const std::string& id, TimePoint started) {
  const std::optional<TimePoint> deadline = deadline_from(started);
  if (line_.follow) {
    const FollowOutcome followed = follow_log(id, deadline);
    if (followed.exit_code != kExitSucceeded) return followed.exit_code;
    if (followed.timed_out) {
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

// Prints rows as left-aligned columns.
void Session::print_table(const std::vector<std::vector<std::string>>& rows) {
  out_ << base::text_table(rows);
}

}  // namespace tpujobs::client
