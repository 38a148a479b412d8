// The client commands of the `tpujobs` binary (submit, validate, status,
// logs, wait, cancel, list, pool): REST calls to a running service, text
// for people, --json for scripts, and exit codes for CI (DESIGN §2).
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "base/clock.h"
#include "client/http_client.h"
#include "client/options.h"

namespace tpujobs::client {

// How hard the client tries before it reports the server unreachable.
struct RetryPolicy {
  // Ordinary requests: attempts on no answer or a 5xx before exit code 4.
  int attempts = 6;
  std::chrono::milliseconds first_backoff{250};
  std::chrono::milliseconds max_backoff{5000};
  // The long-poll of `GET /v1/jobs/{id}/wait` (seconds, at most 300).
  int wait_poll_seconds = 30;
  // The long-poll while a progress line is redrawn on a terminal.
  int tty_poll_seconds = 2;
  // How many log lines a failure report shows.
  int log_tail_lines = 20;
};

// Everything a client command talks to; tests pass fakes.
struct ClientContext {
  HttpClient* http = nullptr;  // not owned; must outlive the command
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool err_is_tty = false;  // redraw the progress line with \r only on a terminal
  // The progress line, deadlines, the backoff between retries and the waits
  // between polls; null: the real clock.
  base::Clock* clock = nullptr;
  RetryPolicy retry;
};

// Runs one parsed client command and returns its exit code. Transport
// failures, server errors and bad files are reported on *context.err; this
// never throws.
int run_client_command(const CommandLine& command_line, const ClientContext& context);

// `tpujobs <command> args...` for a client command: parses the arguments
// (TPUJOBS_URL / TPUJOBS_TOKEN from the process environment), connects to
// the server over HTTP and prints to stdout / stderr.
int run_client(const std::string& command, const std::vector<std::string>& args);

}  // namespace tpujobs::client
