#include "service/standalone_restart.h"

#include "db/job_repository.h"
#include "service/job_lifecycle.h"

namespace tpujobs::service {

db::Status requeue_left_placed(db::ConnectionPool& pool) {
  db::JobRepository jobs(pool);
  auto unfinished = jobs.load_unfinished();
  if (!unfinished.ok()) return unfinished.error();
  for (const db::JobRow& row : *unfinished) {
    if (row.state != db::JobState::kStarting && row.state != db::JobState::kRunning) continue;
    const db::Transition t =
        row.cancel_requested
            ? lifecycle::cancel_placed(row.id, row.placement_epoch)
            : lifecycle::requeue_elsewhere(
                  row.id, "Requeued after a service restart; resumes from its last checkpoint",
                  row.placement_epoch, /*retry=*/false,
                  {db::JobState::kStarting, db::JobState::kRunning});
    if (auto moved = jobs.transition(t); !moved.ok()) return moved.error();
  }
  return db::Status::Ok();
}

}  // namespace tpujobs::service
