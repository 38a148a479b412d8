// `tpujobs limits TENANT [LIMIT=VALUE ...]`: shows a tenant's limits, or
// (admin) sets some of them: POST /v1/tenants/{tenant}/limits (README
// "Limits"). VALUE "default" gives the limit back to the service's default.
#pragma once

#include "client/commands.h"
#include "client/options.h"

namespace tpujobs::client {

int run_limits_command(const CommandLine& line, const ClientContext& context);

}  // namespace tpujobs::client
