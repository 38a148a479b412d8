// `tpujobs serve`: the service process from start to graceful stop.
#pragma once

#include <string>
#include <vector>

namespace tpujobs::service {

// Runs until SIGTERM/SIGINT. Returns the process exit code.
int run_serve(const std::vector<std::string>& args);
// `tpujobs agent`: the worker of one machine in a cluster (DESIGN §9).
int run_agent(const std::vector<std::string>& args);

}  // namespace tpujobs::service
