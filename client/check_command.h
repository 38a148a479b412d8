// `tpujobs check` (DESIGN §10): checks Lightning training scripts against
// a TPU type and the library versions in play, offline. Exit 0 when no
// finding is an error, 2 when one is, or on a usage error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "lightning/resolve.h"

namespace tpujobs::client {

// The pool a check answers for: without a type, the default pool of `tpujobs
// serve` (v3-32); with one ("v4-8"), hosts of that generation enough for
// it. Empty when `accelerator_type` names no type the pool knows.
std::optional<lightning::PoolView> check_pool(const std::string& accelerator_type);

// Runs `tpujobs check ARGS...`: prints the report to `out` (or --output),
// usage errors and unreadable files to `err`; returns the exit code.
int run_check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tpujobs::client
