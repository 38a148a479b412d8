// The one binary: `tpujobs serve` runs the service; the other subcommands
// are its command-line client.
#include <iostream>
#include <string>
#include <vector>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "client/commands.h"
#include "client/options.h"
#include "service/serve.h"
#include "service/tokens.h"

namespace {

std::string usage() {
  return "usage: tpujobs <command> [options]\n\n"
         "commands:\n"
         "  serve        run the service (REST API, scheduler, executor, embedded PostgreSQL)\n"
         "  agent        run the jobs of a cluster on this machine's hosts (docs/deploy.md)\n"
         "  token        create, list and revoke API tokens (admin)\n" +
         tpujobs::client::client_commands_summary() +
         "\nClient commands talk to --server URL (or $TPUJOBS_URL, default http://127.0.0.1:8080)\n"
         "and send --token T (or $TPUJOBS_TOKEN). Exit codes: 0 succeeded/valid, 1 job failed,\n"
         "2 spec rejected or usage error, 3 cancelled, 4 server unreachable or 5xx,\n"
         "124 --timeout elapsed.\n\n"
         "Run `tpujobs <command> --help` for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << usage();
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "serve") return tpujobs::service::run_serve(args);
  if (command == "agent") return tpujobs::service::run_agent(args);
  if (command == "token") return tpujobs::service::run_token_command(args);
  // `check` is offline (no server); the TPU types' facts come from the API's
  // pool, which client/ may not reach itself (DESIGN §1).
  if (command == "check")
    return tpujobs::client::run_check_command(args, std::cout, std::cerr, tpujobs::api::check_pool);
  if (tpujobs::client::is_client_command(command))
    return tpujobs::client::run_client(command, args);
  std::cerr << "tpujobs: unknown command '" << command << "'\n\n" << usage();
  return 2;
}
