// Pool administration: an admin marks a host's health, takes a job's cores
// back (force release) and sets a tenant's core quota.
//
// Everything is stored, and takes effect through the tables (a restart must
// not bring a failed host back, nor drop a quota): the pool is the agents'
// hosts in the tables ("no host '...' in the pool", kNotFound); a failed
// host's jobs are those whose stored allocation names it, and the scheduler
// leader moves them on its next pass; a released job's lease ends in the
// database, and its agent and the leader are told. The answers are
// {"host","health","affected_jobs"}, {"job","released"} and
// {"tenant","max_cores"}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job_service.h"
#include "base/result.h"
#include "db/cluster_repository.h"
#include "db/job_repository.h"
#include "scheduler/pool.h"

namespace tpujobs::db {
struct Repositories;
}  // namespace tpujobs::db

namespace tpujobs::service {

// What pool administration reads and writes in PostgreSQL.
class PoolAdminStore {
 public:
  virtual ~PoolAdminStore() = default;
  // Every registered agent's hosts.
  virtual base::Result<std::vector<db::ClusterHostRow>> list_hosts() = 0;
  // Inserts or replaces the host's stored health.
  virtual base::Status store_host_health(const std::string& host, const std::string& generation,
                                         const std::string& health) = 0;
  // The STARTING and RUNNING jobs, with their allocations.
  virtual base::Result<std::vector<db::JobRow>> load_placed() = 0;
  // nullopt when there is no such job.
  virtual base::Result<std::optional<db::JobRow>> get_job(std::int64_t id) = 0;
  // False when the job was not in one of t.from.
  virtual base::Result<bool> transition(const db::Transition& t) = 0;
  // nullopt: removes the tenant's quota (removing a missing one is fine).
  virtual base::Status store_quota(const std::string& tenant, std::optional<int> max_cores) = 0;
  // NOTIFY channel, payload; best effort (the listeners also poll).
  virtual void notify(const char* channel, const std::string& payload) = 0;
};

// PoolAdminStore over the repositories; both must outlive it.
class RepositoryPoolAdminStore final : public PoolAdminStore {
 public:
  RepositoryPoolAdminStore(db::Repositories& repo, db::ClusterRepository& cluster);
  base::Result<std::vector<db::ClusterHostRow>> list_hosts() override;
  base::Status store_host_health(const std::string& host, const std::string& generation,
                                 const std::string& health) override;
  base::Result<std::vector<db::JobRow>> load_placed() override;
  base::Result<std::optional<db::JobRow>> get_job(std::int64_t id) override;
  base::Result<bool> transition(const db::Transition& t) override;
  base::Status store_quota(const std::string& tenant, std::optional<int> max_cores) override;
  void notify(const char* channel, const std::string& payload) override;

 private:
  db::Repositories& repo_;
  db::ClusterRepository& cluster_;
};

class PoolAdmin {
 public:
  // The store must outlive it.
  explicit PoolAdmin(PoolAdminStore& store) : store_(store) {}

  // {"host","health","affected_jobs"}; kNotFound when the pool has no such
  // host; the store's error when the health could not be stored (then
  // nothing changed).
  base::Result<nlohmann::json> set_host_health(const std::string& host,
                                               scheduler::HostHealth health);
  // {"job","released":true}; kNotFound when the job holds no cores.
  base::Result<nlohmann::json> force_release(std::int64_t job);
  // {"tenant","max_cores"} (null: cleared); the store's error when it could
  // not be stored (then the quota stays as it was).
  base::Result<nlohmann::json> set_quota(const std::string& tenant, std::optional<int> max_cores);

 private:
  // The placed jobs whose allocation names `host`.
  base::Result<std::vector<std::int64_t>> jobs_placed_on(const std::string& host);

  PoolAdminStore& store_;
};

}  // namespace tpujobs::service
