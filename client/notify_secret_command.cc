// `tpujobs notify-secret [--rotate]`: the tenant's notification signing secret.
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class NotifySecretCommand final : public Session {
 public:
  using Session::Session;

  int run() {
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
};

}  // namespace

int run_notify_secret_command(const CommandLine& line, const ClientContext& context) {
  return NotifySecretCommand(line, context).run();
}

}  // namespace tpujobs::client
