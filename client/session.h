// What every client command that talks to the service shares: the transport
// with its retries, the report of a failed request, reading the spec, the
// progress line, and waiting for or following a job to its end. Each command
// (client/*_command.cc) is a Session with its own run().
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "client/commands.h"
#include "client/http_client.h"
#include "client/options.h"

namespace tpujobs::client {

// How long an ordinary request may take.
inline constexpr std::chrono::milliseconds kRequestTimeout{30000};

// `text` with everything but unreserved characters (RFC 3986) %-encoded.
std::string percent_encode(std::string_view text);

// A URL query built a parameter at a time: "" until the first add(), then
// "?a=1&b=2", each value %-encoded. The list and usage commands' filters.
class QueryString {
 public:
  QueryString& add(const std::string& name, const std::string& value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// `object[key]` as text: a string as it is, another value as JSON, a missing
// key or null (or a non-object) as "".
std::string string_of(const nlohmann::json& object, const char* key);

// `value` printed with the printf `format`.
std::string number_text(double value, const char* format = "%.4g");

// A key that makes the client's own retries of a submit safe: the service
// answers a repeated key and body with the job the first attempt created.
std::string generated_idempotency_key();

// What a wait ended with.
struct WaitOutcome {
  int exit_code = kExitSucceeded;  // of the request; the job's is in `job`
  bool timed_out = false;
  nlohmann::json job;  // the last answer (terminal unless timed_out or exit_code != 0)
};

// What following a log ended with.
struct FollowOutcome {
  int exit_code = kExitSucceeded;  // of the streaming: 0, or 2/4 for a problem
  bool timed_out = false;          // the deadline passed before the job ended
};

class Session {
 public:
  Session(const CommandLine& line, const ClientContext& context);

 protected:
  using json = nlohmann::json;
  using milliseconds = std::chrono::milliseconds;
  using TimePoint = base::Clock::time_point;

  // ------------------------------------------------------------ transport
  HttpResponse send_once(HttpRequest request, milliseconds timeout);
  static bool retryable(const HttpResponse& response);
  milliseconds backoff(int attempt) const;
  // Sends with retries on no answer and on 5xx (honouring Retry-After up to
  // the backoff cap). The last response is returned either way.
  HttpResponse call(const HttpRequest& request);
  // Reports a response that is not the expected answer and returns the exit
  // code it stands for.
  int report_failure(const HttpResponse& response, const std::string& what);

  // ------------------------------------------------------------ specs
  // The text of the file named by the positional argument ("-": stdin);
  // nullopt after reporting the problem.
  std::optional<std::string> read_input();
  // The spec file ("-": stdin) with the --set overrides applied; nullopt
  // after reporting the problem.
  std::optional<json> load_spec();

  // ------------------------------------------------------------ output
  static std::string progress_text(const json& job);
  void show_progress(const json& job, TimePoint started);
  void end_progress();
  // The last lines of a job's log (empty if they cannot be fetched).
  std::vector<std::string> log_tail(const std::string& id);
  // Prints how a job ended; on failure the log tail, error and hint go to
  // stderr. Writes the JUnit report when asked. Returns the exit code.
  int finish(const WaitOutcome& outcome, TimePoint started);
  // Prints rows as left-aligned columns.
  void print_table(const std::vector<std::vector<std::string>>& rows);

  // ------------------------------------------------------------ waiting
  std::optional<TimePoint> deadline_from(TimePoint started) const;
  // Sleeps for the backoff, but not past the deadline.
  void pause(milliseconds delay, std::optional<TimePoint> deadline);
  void note_outage(const HttpResponse& response, milliseconds retry_in);
  void note_recovered();
  // Long-polls until the job ends or the deadline passes. Network errors and
  // 5xx (a restarting service) are retried with backoff for as long as it
  // takes; only an answer about the job ends the wait.
  WaitOutcome wait_for(const std::string& id, TimePoint started, std::optional<TimePoint> deadline,
                       bool show);
  // Streams the job's log to stdout until the service says the job ended.
  // Reconnects after drops from the last line seen.
  FollowOutcome follow_log(const std::string& id, std::optional<TimePoint> deadline);
  // Waits for (or with --follow, follows) job `id` to its end and reports it
  // (`submit --wait`, `wait`).
  int wait_and_finish(const std::string& id, TimePoint started);

  const CommandLine& line_;
  const ClientContext& context_;
  base::Clock& clock_;
  std::ostream& out_;
  std::ostream& err_;

 private:
  bool progress_drawn_ = false;
  bool in_outage_ = false;
  std::string last_state_;
  TimePoint last_progress_line_{};
};

}  // namespace tpujobs::client
