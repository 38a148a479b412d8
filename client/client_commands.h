// The client commands that talk to the service, one file each
// (client/<command>_command.cc); run_client_command (client/commands.h)
// picks one by name. Each returns the command's exit code.
#pragma once

#include "client/commands.h"
#include "client/options.h"

namespace tpujobs::client {

int run_submit_command(const CommandLine& line, const ClientContext& context);
int run_validate_command(const CommandLine& line, const ClientContext& context);
int run_status_command(const CommandLine& line, const ClientContext& context);
int run_logs_command(const CommandLine& line, const ClientContext& context);
int run_wait_command(const CommandLine& line, const ClientContext& context);
int run_cancel_command(const CommandLine& line, const ClientContext& context);
int run_list_command(const CommandLine& line, const ClientContext& context);
int run_pool_command(const CommandLine& line, const ClientContext& context);
int run_usage_command(const CommandLine& line, const ClientContext& context);
int run_notifications_command(const CommandLine& line, const ClientContext& context);
int run_upload_command(const CommandLine& line, const ClientContext& context);
int run_notify_secret_command(const CommandLine& line, const ClientContext& context);
int run_notify_allow_command(const CommandLine& line, const ClientContext& context);

}  // namespace tpujobs::client
