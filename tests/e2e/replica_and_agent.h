// The smallest cluster (DESIGN §9) an end-to-end test runs against: one
// `tpujobs serve` replica without a pool and one `tpujobs agent` with
// `pool`, both on `database`.
#pragma once

#include <string>

#include "own_postgres.h"
#include "service_process.h"

namespace tpujobs::testing {

inline ServiceProcess::Options replica_options(const OwnPostgres& database) {
  ServiceProcess::Options options;
  options.pool = "none";
  options.extra_args = {"--database-url", database.url(), "--name", "replica-a"};
  return options;
}

inline ServiceProcess::Options agent_options(const OwnPostgres& database,
                                             const std::string& pool = "v3-8") {
  ServiceProcess::Options options;
  options.command = "agent";
  options.extra_args = {"--database-url", database.url(), "--pool",    pool,
                        "--name",         "agent-1",      "--workers", "2"};
  return options;
}

}  // namespace tpujobs::testing
