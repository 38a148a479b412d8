// `tpujobs check` (DESIGN §10): checks Lightning training scripts against
// a TPU type and the library versions in play, offline. Exit 0 when no
// finding is an error, 2 when one is, or on a usage error.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "lightning/resolve.h"

namespace tpujobs::client {

// The pool a check answers for, given an accelerator type ("v4-8"; "v3-32",
// the default pool of `tpujobs serve`, when none is given): hosts of that
// generation enough for it, exactly as for a job; nullopt when the type is
// not one the pool knows. The TPU generations' facts are scheduler/'s,
// which client/ does not use (DESIGN §1): service/main.cc passes the API's
// (api::check_pool, the pool job validation resolves against).
using CheckPoolSource =
    std::function<std::optional<lightning::PoolView>(const std::string& accelerator_type)>;

// Runs `tpujobs check ARGS...`: prints the report to `out` (or --output),
// usage errors and unreadable files to `err`; returns the exit code.
int run_check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const CheckPoolSource& pool_for);

}  // namespace tpujobs::client
