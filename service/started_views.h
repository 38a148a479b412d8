// Where an agent hands the view of a job it just started: the API service
// of the same process (a standalone serve), which keeps it
// (service/view_cache.h) so that a client following the start reads it
// without a database read. The view is the row the job's RUNNING
// transition answered, so it is the stored one, field for field.
#pragma once

#include <cstdint>

#include "db/job_repository.h"

namespace tpujobs::service {

class StartedViews {
 public:
  virtual ~StartedViews() = default;
  // Read right before the RUNNING transition (ViewCache::generation).
  virtual std::uint64_t views_generation() = 0;
  // The transition committed and answered `job` as a read right after
  // would; `seen` is what views_generation() answered before it.
  virtual void started(std::uint64_t seen, const db::JobWithCheckpoint& job) = 0;
};

}  // namespace tpujobs::service
