// JobManager's LISTEN thread: the log notifications of agents in other
// processes, and on a replica the changes of queued jobs the database sends
// (db/migrations/038).
#include "db/listener.h"
#include "service/job_manager.h"

namespace tpujobs::service {

void JobManager::log_listener_loop() {
  const bool told_by_database = options_.wake_bus == nullptr;
  std::vector<std::string> channels = {db::kLogChannel};
  if (told_by_database) {
    channels.push_back(kJobsChangedChannel);
    channels.push_back(kPendingWrittenChannel);
  }
  db::Listener listener(pool_.conninfo(), channels);
  std::uint64_t sessions = 0;
  for (;;) {
    {
      base::MutexLock lock(log_listener_mutex_);
      if (log_listener_stopping_) return;
    }
    auto notes = listener.wait(std::chrono::milliseconds(250));
    if (!notes.ok()) {
      // The changes sent from now until a new LISTEN are lost: the queued
      // views kept go, and none is kept meanwhile.
      if (told_by_database && queued_views_told_.exchange(false)) views_.forget_queued();
      // The streams' fallback ticks meanwhile.
      base::MutexLock lock(log_listener_mutex_);
      clock_.wait_for(lock, log_listener_wake_, std::chrono::seconds(1),
                      [this]() REQUIRES(log_listener_mutex_) { return log_listener_stopping_; });
      continue;
    }
    if (told_by_database && listener.sessions() != sessions) {
      // A new LISTEN: whatever changed before it went unheard.
      sessions = listener.sessions();
      views_.forget_queued();
    }
    take_view_changes(*notes);
    if (told_by_database) queued_views_told_ = true;
    for (const db::Notification& note : *notes) {
      if (note.channel != db::kLogChannel) continue;
      // The payload: the ids of the jobs whose lines were stored, comma-separated.
      const std::vector<std::int64_t> jobs = parse_job_ids(note.payload);
      log_streams_.wake(jobs);
      waits_.wake(jobs);
    }
  }
}

void JobManager::take_view_changes(const std::vector<db::Notification>& notes) {
  // One call each for all that came: the reasons first, so that a job
  // also changed otherwise loses its view whatever the order.
  PendingChanges pending;
  std::vector<std::int64_t> changed;
  for (const db::Notification& note : notes) {
    if (note.channel == kPendingWrittenChannel) {
      for (auto& change : parse_pending_changes(note.payload)) pending.push_back(std::move(change));
    } else if (note.channel == kJobsChangedChannel) {
      for (std::int64_t id : parse_job_ids(note.payload)) changed.push_back(id);
    }
  }
  if (!pending.empty()) {
    views_.set_pending(std::move(pending));
    renderer_->wake();
  }
  if (!changed.empty()) views_.forget(changed);
}

}  // namespace tpujobs::service
