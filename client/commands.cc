#include "client/commands.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>

#include "base/clock.h"
#include "client/check_command.h"
#include "client/client_commands.h"
#include "client/limits_command.h"

namespace tpujobs::client {
namespace {

using std::chrono::milliseconds;

// The client commands that talk to the service, by name.
using CommandRun = int (*)(const CommandLine&, const ClientContext&);
const std::map<std::string, CommandRun>& command_runs() {
  static const std::map<std::string, CommandRun> runs = {
      {"submit", run_submit_command},
      {"validate", run_validate_command},
      {"status", run_status_command},
      {"logs", run_logs_command},
      {"wait", run_wait_command},
      {"cancel", run_cancel_command},
      {"list", run_list_command},
      {"pool", run_pool_command},
      {"usage", run_usage_command},
      {"notifications", run_notifications_command},
      {"upload", run_upload_command},
      {"notify-secret", run_notify_secret_command},
      {"notify-allow", run_notify_allow_command},
      {"limits", run_limits_command},
  };
  return runs;
}

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
    const auto run = command_runs().find(command_line.command);
    if (run == command_runs().end()) {
      *context.err << "tpujobs: unknown command '" << command_line.command << "'\n";
      return kExitRejected;
    }
    return run->second(command_line, context);
  } catch (const std::exception& e) {
    *context.err << "tpujobs: " << e.what() << "\n";
    return kExitJobFailed;
  }
}

int run_client(const std::string& command, const std::vector<std::string>& args) {
  base::Result<CommandLine> parsed = parse_command_line(command, args, process_environment());
  if (!parsed.ok()) {
    std::cerr << "tpujobs " << command << ": " << parsed.error().message << "\n\n"
              << command_usage(command);
    return kExitRejected;
  }
  const CommandLine& line = *parsed;
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
  return run_client_command(line, context);
}

}  // namespace tpujobs::client
