// `tpujobs wait ID`: waits for a job to end (or follows its log) and exits
// with how it ended; Session::wait_and_finish is shared with `submit --wait`.
#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class WaitCommand final : public Session {
 public:
  using Session::Session;

  int run() { return wait_and_finish(line_.positionals.front(), clock_.now()); }
};

}  // namespace

int run_wait_command(const CommandLine& line, const ClientContext& context) {
  return WaitCommand(line, context).run();
}

}  // namespace tpujobs::client
