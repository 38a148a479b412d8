#include "service/standalone_restart.h"

#include "db/job_repository.h"
#include "service/job_lifecycle.h"

namespace tpujobs::service {

base::Status requeue_left_placed(db::ConnectionPool& pool) {
  db::JobRepository jobs(pool);
  auto placed = jobs.load_placed();
  if (!placed.ok()) return placed.error();
  for (const db::JobRow& row : *placed) {
    const db::Transition t =
        row.cancel_requested
            ? lifecycle::cancel_placed(row.id, row.placement)
            : lifecycle::requeue_elsewhere(
                  row.id, "Requeued after a service restart; resumes from its last checkpoint",
                  row.placement, /*retry=*/false,
                  {db::JobState::kStarting, db::JobState::kRunning});
    if (auto moved = jobs.transition(t); !moved.ok()) return moved.error();
  }
  return base::Status::Ok();
}

}  // namespace tpujobs::service
