// What workload management reads (scheduler/dependencies.h): the states of
// the jobs others depend on.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/job_state.h"
#include "db/connection_pool.h"
#include "db/result.h"

namespace tpujobs::db {

class WorkloadRepository {
 public:
  // The pool must outlive the repository. Every call borrows a connection
  // for its duration, waiting at most acquire_timeout (kUnavailable after).
  explicit WorkloadRepository(ConnectionPool& pool,
                              std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // The state of each job among `ids`; with a tenant, only that tenant's
  // jobs. Ids with no (visible) job are absent from the answer.
  Result<std::map<std::int64_t, base::JobState>> job_states(const std::vector<std::int64_t>& ids,
                                                            const std::optional<std::string>& tenant = std::nullopt);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
