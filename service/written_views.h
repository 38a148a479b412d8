// Where an agent hands the view of a job whose start or end it just wrote:
// the API service of the same process (a standalone serve), which keeps it
// (service/view_cache.h), so that a client following the job reads it
// without a database read, and a finished job reads as it ended also while
// the database is away. The view is the row the transition answered, so it
// is the stored one, field for field.
#pragma once

#include <cstdint>

#include "db/job_repository.h"

namespace tpujobs::service {

class WrittenViews {
 public:
  virtual ~WrittenViews() = default;
  // Read right before the transition (ViewCache::generation).
  virtual std::uint64_t views_generation() = 0;
  // The transition committed and answered `job` as a read right after
  // would; `seen` is what views_generation() answered before it.
  virtual void written(std::uint64_t seen, const db::JobWithCheckpoint& job) = 0;
};

}  // namespace tpujobs::service
