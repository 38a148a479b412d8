// The client commands' command line: options, durations and `--set`
// overrides of a job spec. Pure functions, no I/O.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tpujobs::client {

// Exit codes of the client commands (DESIGN §2).
enum ExitCode : int {
  kExitSucceeded = 0,    // the job succeeded, the spec is valid, the request was done
  kExitJobFailed = 1,    // the job failed, including a missed `expect` gate
  kExitRejected = 2,     // the spec was rejected (400/422), or a usage error
  kExitCancelled = 3,    // the job was cancelled
  kExitUnreachable = 4,  // no answer from the server, or 5xx after retries
  kExitTimedOut = 124,   // --timeout elapsed first (as timeout(1))
};

// The client commands, and whether `command` is one of them.
const std::vector<std::string>& client_commands();
bool is_client_command(std::string_view command);

// Everything a client command can be told on its command line.
struct CommandLine {
  std::string command;                   // "submit", "status", ...
  std::vector<std::string> positionals;  // SPEC.json or ID
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  bool help = false;
  bool json = false;
  bool wait = false;
  bool follow = false;
  std::optional<std::chrono::milliseconds> timeout;
  std::string idempotency_key;
  std::string junit_path;
  std::vector<std::string> overrides;  // "path=value", in the order given
  std::optional<std::string> state;
  std::vector<std::string> labels;  // "k=v"
  std::optional<int> limit;
  std::optional<std::int64_t> array;  // list: one job array's children
  // usage:
  std::optional<std::string> from;
  std::optional<std::string> to;
  std::string group_by = "tenant";  // tenant, label or label:KEY
  bool csv = false;
  std::optional<std::string> dataset_name;  // upload --name
  bool rotate = false;                      // notify-secret
  bool remove = false;                      // notify-allow
};

// Parses the arguments after the command name. TPUJOBS_URL and TPUJOBS_TOKEN
// come from `environment` and are overridden by --server / --token.
// Returns the command line, or kInvalid with the usage error (exit code 2).
// With --help, its `help` is set and the other arguments are not checked.
base::Result<CommandLine> parse_command_line(std::string_view command,
                                             const std::vector<std::string>& args,
                                             const std::map<std::string, std::string>& environment);

// The --help text of a client command ("" for an unknown command).
std::string command_usage(std::string_view command);

// The one-line summaries of the client commands for `tpujobs --help`.
std::string client_commands_summary();

// "90" (seconds), "500ms", "30s", "10m", "2h", "1d", "1h30m", "1.5s".
// Returns nullopt for anything else, including negative and empty text.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// "12s", "3m05s", "1h02m": a duration for people.
std::string format_duration(std::chrono::milliseconds duration);

// Applies one `--set path=value` to *spec. The path is dot-separated object
// keys with `[i]` array indices ("model.layers[0].out"); missing objects
// along the way are created, an index may append (i == size) but not skip.
// The value is taken as JSON when it parses as JSON, else as a string, so
// `trainer.devices=8` sets a number and `trainer.precision=bf16-true` a string.
// kInvalid with a message naming the assignment when it cannot apply; *spec
// is unchanged then.
base::Status apply_override(nlohmann::json* spec, std::string_view assignment);

}  // namespace tpujobs::client
