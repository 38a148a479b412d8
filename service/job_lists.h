// GET /v1/jobs' pages. A page's keys are read first (id, state, cursor);
// the views a list shows of finished jobs, which never change, are kept in
// memory, and only the other jobs' rows are read and rendered, a chunk at a
// time, as far as the answer's byte cap (issue 34: every list of 500 read,
// sent and parsed 500 rows of about 4 KB and rendered each view again, and
// a page past the cap was read and rendered a second time).
#pragma once

#include <cstddef>

#include "api/job_service.h"
#include "db/job_repository.h"
#include "service/view_cache.h"

namespace tpujobs::service {

class JobLists {
 public:
  // Keeps at most `view_bytes` of finished jobs' listed views.
  JobLists(db::JobRepository& jobs, std::size_t view_bytes);

  // The page `query` asks for. A job that ends or is deleted between the
  // read of the keys and that of its row is shown as it is then, or left
  // out when it is gone or no longer in the states asked for.
  base::Result<api::JobListPage> list(const api::JobQuery& query);

  // How many finished jobs' views are kept.
  std::size_t kept() const { return finished_.size(); }

 private:
  db::JobRepository& jobs_;
  ViewCache finished_;
};

}  // namespace tpujobs::service
