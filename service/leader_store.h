// What the scheduler leader (service/scheduler_leader.h) reads and writes
// in PostgreSQL, as one small interface: the repositories in production, a
// fake in its unit tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
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
  virtual base::Result<std::int64_t> begin_term(const std::string& leader) = 0;
  virtual base::Result<std::vector<db::AgentRow>> list_agents() = 0;
  virtual base::Result<std::vector<db::ClusterHostRow>> list_hosts() = 0;
  virtual base::Result<std::int64_t> next_slice_placement() = 0;
  virtual base::Status forget_rendezvous_before(std::chrono::milliseconds age) = 0;
  virtual base::Status notify(const char* channel, const std::string& payload) = 0;

  // Jobs (db/job_repository.h).
  // The unfinished jobs without their documents but allocation, all of
  // them or those written since a low water (JobRepository::read_to_schedule),
  // and their specs.
  virtual base::Result<db::JobRepository::ScheduleRead> read_to_schedule(
      const std::optional<std::string>& since) = 0;
  virtual base::Result<std::map<std::int64_t, std::string>> job_specs(
      const std::vector<std::int64_t>& ids) = 0;
  virtual base::Result<std::vector<db::JobRow>> orphaned_jobs() = 0;
  virtual base::Result<bool> transition(const db::Transition& t) = 0;
  virtual base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch) = 0;
  virtual base::Result<bool> request_preemption(std::int64_t victim, std::int64_t epoch,
                                                std::int64_t preemptor,
                                                const std::string& preemptor_reason,
                                                const std::string& preemptor_detail,
                                                std::optional<std::int64_t> leader_term) = 0;

  // Workload (db/workload_repository.h, db/pool_state_repository.h).
  virtual base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::vector<std::int64_t>& ids) = 0;
  virtual base::Result<std::map<std::string, int>> load_quotas() = 0;
  // The tenants' fair-share factors (service/fair_share_usage.h).
  virtual base::Result<std::map<std::string, double>> fair_share(
      std::chrono::system_clock::time_point now, const std::set<std::string>& active,
      const FairShareOptions& options) = 0;

  // What every pass reads: the agents, their hosts, the unfinished jobs
  // (read_to_schedule) and the quotas. This one reads them one by one; the
  // repositories' store sends them in one round trip.
  virtual base::Result<db::SchedulingRead> read_pass(const std::optional<std::string>& since) {
    auto agents = list_agents();
    if (!agents.ok()) return agents.error();
    auto hosts = list_hosts();
    if (!hosts.ok()) return hosts.error();
    auto queue = read_to_schedule(since);
    if (!queue.ok()) return queue.error();
    auto quotas = load_quotas();
    if (!quotas.ok()) return quotas.error();
    return db::SchedulingRead{std::move(*agents), std::move(*hosts), std::move(*queue),
                              std::move(*quotas)};
  }
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
  base::Result<std::int64_t> begin_term(const std::string& leader) override {
    return cluster_.begin_scheduler_term(leader);
  }
  base::Result<std::vector<db::AgentRow>> list_agents() override { return cluster_.list_agents(); }
  base::Result<std::vector<db::ClusterHostRow>> list_hosts() override {
    return cluster_.list_hosts();
  }
  base::Result<std::int64_t> next_slice_placement() override {
    return cluster_.next_slice_placement();
  }
  base::Status forget_rendezvous_before(std::chrono::milliseconds age) override {
    return cluster_.forget_rendezvous_before(age);
  }
  base::Status notify(const char* channel, const std::string& payload) override {
    return cluster_.notify(channel, payload);
  }
  base::Result<db::JobRepository::ScheduleRead> read_to_schedule(
      const std::optional<std::string>& since) override {
    return repo_.jobs.read_to_schedule(since);
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
  base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch) override {
    return repo_.jobs.set_pending(batch);
  }
  base::Result<bool> request_preemption(std::int64_t victim, std::int64_t epoch,
                                        std::int64_t preemptor, const std::string& preemptor_reason,
                                        const std::string& preemptor_detail,
                                        std::optional<std::int64_t> leader_term) override {
    return repo_.jobs.request_preemption(victim, epoch, preemptor, preemptor_reason,
                                         preemptor_detail, leader_term);
  }
  base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::vector<std::int64_t>& ids) override {
    return repo_.workload.job_states(ids);
  }
  base::Result<std::map<std::string, int>> load_quotas() override {
    return repo_.pool_state.load_quotas();
  }
  base::Result<std::map<std::string, double>> fair_share(std::chrono::system_clock::time_point now,
                                                         const std::set<std::string>& active,
                                                         const FairShareOptions& options) override {
    return read_fair_share(repo_.workload, now, active, options);
  }
  base::Result<db::SchedulingRead> read_pass(const std::optional<std::string>& since) override {
    return db::read_for_scheduling(pool_, std::chrono::seconds(5), since);
  }

 private:
  db::ConnectionPool& pool_;
  db::Repositories repo_;
  db::ClusterRepository cluster_;
};

}  // namespace tpujobs::service
