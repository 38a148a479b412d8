// What the scheduler leader (service/scheduler_leader.h) reads and writes
// in PostgreSQL, as one small interface: the repositories in production, a
// fake in its unit tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "db/cluster_repository.h"
#include "db/job_repository.h"
#include "db/repositories.h"
#include "db/scheduling_read.h"
#include "service/fair_share_usage.h"

namespace tpujobs::service {

class LeaderStore {
 public:
  virtual ~LeaderStore() = default;

  // Agents (db/cluster_repository.h).
  virtual base::Result<std::vector<std::string>> mark_lost(
      std::chrono::milliseconds silence, std::chrono::milliseconds max_answer) = 0;
  // A new scheduler term (ClusterRepository::begin_scheduler_term).
  virtual base::Result<db::ClusterRepository::SchedulerTerm> begin_term(
      const std::string& leader) = 0;
  // Placement numbers (ClusterRepository::reserve_placements).
  virtual base::Result<std::int64_t> reserve_placements() = 0;
  virtual base::Status forget_rendezvous_before(std::chrono::milliseconds age) = 0;
  virtual base::Status notify(const char* channel, const std::string& payload) = 0;

  // Jobs (db/job_repository.h).
  // The specs of `ids` (the queue's rows come without them).
  virtual base::Result<std::map<std::int64_t, std::string>> job_specs(
      const std::vector<std::int64_t>& ids) = 0;
  virtual base::Result<std::vector<db::JobRow>> orphaned_jobs() = 0;
  virtual base::Result<bool> transition(const db::Transition& t) = 0;
  // Many in one transaction, one commit (JobRepository::transitions): a
  // pass's placements, those for this process's agent answered as it
  // starts them.
  virtual base::Result<std::vector<db::TransitionOutcome>> transitions(
      std::span<const db::BatchedTransition> batch) = 0;
  // Fenced by the leader's term (JobRepository::set_pending).
  virtual base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch,
      std::optional<std::int64_t> leader_term) = 0;
  virtual base::Result<bool> request_preemption(std::int64_t victim, std::int64_t placement,
                                                std::int64_t preemptor,
                                                const std::string& preemptor_reason,
                                                const std::string& preemptor_detail,
                                                std::optional<std::int64_t> leader_term) = 0;

  // Workload (db/workload_repository.h, db/pool_state_repository.h).
  virtual base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::vector<std::int64_t>& ids) = 0;
  // The tenants' fair-share factors (service/fair_share_usage.h).
  virtual base::Result<std::map<std::string, double>> fair_share(
      std::chrono::system_clock::time_point now, const std::set<std::string>& active,
      const FairShareOptions& options) = 0;

  // What every pass reads, in one round trip (db/scheduling_read.h): the
  // agents, their hosts, the unfinished jobs (all, or those written since
  // a low water, the new ones with their specs) and the quotas.
  virtual base::Result<db::SchedulingRead> read_pass(
      const std::optional<db::JobRepository::ScheduleSince>& since) = 0;
};

// The store over the repositories. The pool must outlive it.
class RepositoryLeaderStore final : public LeaderStore {
 public:
  explicit RepositoryLeaderStore(db::ConnectionPool& pool)
      : pool_(pool), repo_(pool), cluster_(pool) {}

  base::Result<std::vector<std::string>> mark_lost(std::chrono::milliseconds silence,
                                                   std::chrono::milliseconds max_answer) override {
    return cluster_.mark_lost(silence, max_answer);
  }
  base::Result<db::ClusterRepository::SchedulerTerm> begin_term(
      const std::string& leader) override {
    return cluster_.begin_scheduler_term(leader);
  }
  base::Result<std::int64_t> reserve_placements() override { return cluster_.reserve_placements(); }
  base::Status forget_rendezvous_before(std::chrono::milliseconds age) override {
    return cluster_.forget_rendezvous_before(age);
  }
  base::Status notify(const char* channel, const std::string& payload) override {
    return cluster_.notify(channel, payload);
  }
  base::Result<std::map<std::int64_t, std::string>> job_specs(
      const std::vector<std::int64_t>& ids) override {
    return repo_.jobs.job_specs(ids);
  }
  base::Result<std::vector<db::JobRow>> orphaned_jobs() override {
    return repo_.jobs.orphaned_jobs();
  }
  base::Result<bool> transition(const db::Transition& t) override {
    return repo_.jobs.transition(t);
  }
  base::Result<std::vector<db::TransitionOutcome>> transitions(
      std::span<const db::BatchedTransition> batch) override {
    return repo_.jobs.transitions(batch);
  }
  base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch,
      std::optional<std::int64_t> leader_term) override {
    return repo_.jobs.set_pending(batch, leader_term);
  }
  base::Result<bool> request_preemption(std::int64_t victim, std::int64_t placement,
                                        std::int64_t preemptor, const std::string& preemptor_reason,
                                        const std::string& preemptor_detail,
                                        std::optional<std::int64_t> leader_term) override {
    return repo_.jobs.request_preemption(victim, placement, preemptor, preemptor_reason,
                                         preemptor_detail, leader_term);
  }
  base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::vector<std::int64_t>& ids) override {
    return repo_.workload.job_states(ids);
  }
  base::Result<std::map<std::string, double>> fair_share(std::chrono::system_clock::time_point now,
                                                         const std::set<std::string>& active,
                                                         const FairShareOptions& options) override {
    return read_fair_share(repo_.workload, now, active, options);
  }
  base::Result<db::SchedulingRead> read_pass(
      const std::optional<db::JobRepository::ScheduleSince>& since) override {
    return db::read_for_scheduling(pool_, since);
  }

 private:
  db::ConnectionPool& pool_;
  db::Repositories repo_;
  db::ClusterRepository cluster_;
};

}  // namespace tpujobs::service
