// The one binary: `tpujobs serve` runs the service; the other subcommands
// are its command-line client.
#include <iostream>
#include <string>
#include <vector>

#include "service/serve.h"

namespace {

constexpr const char* kUsage = R"(usage: tpujobs <command> [options]

commands:
  serve        run the service (REST API, scheduler, executor, embedded PostgreSQL)

Run `tpujobs <command> --help` for a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "serve") return tpujobs::service::run_serve(args);
  std::cerr << "tpujobs: unknown command '" << command << "'\n\n" << kUsage;
  return 2;
}
