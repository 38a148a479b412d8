// Pool administration: an admin marks a host's health, takes a job's cores
// back (force release) and sets a tenant's core quota.
//
// What is the same in both modes, and decided here: the host must be in the
// pool ("no host '...' in the pool", kNotFound); the change is stored before
// it takes effect (a restart must not bring a failed host back, nor drop a
// quota); the answers {"host","health","affected_jobs"}, {"job","released"}
// and {"tenant","max_cores"}.
//
// What differs: in cluster mode (DESIGN §9) the pool is the agents' hosts
// in the tables, a failed host's jobs are those whose stored allocation
// names it (the scheduler leader moves them on its next pass), and a
// released job's lease ends in the database, its agent and the leader
// notified. In single-process mode the pool is the JobManager's scheduler
// in memory (InMemoryPool), which finds the host, takes a failed host's
// jobs off it and releases cores. Quotas go to the in-memory scheduler in
// both modes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job_service.h"
#include "db/cluster_repository.h"
#include "db/job_repository.h"
#include "db/result.h"
#include "scheduler/pool.h"

namespace tpujobs::db {
struct Repositories;
}  // namespace tpujobs::db

namespace tpujobs::service {

// What pool administration reads and writes in PostgreSQL.
class PoolAdminStore {
 public:
  virtual ~PoolAdminStore() = default;
  // Cluster mode: every registered agent's hosts.
  virtual db::Result<std::vector<db::ClusterHostRow>> list_hosts() = 0;
  // Inserts or replaces the host's stored health.
  virtual db::Status store_host_health(const std::string& host, const std::string& generation,
                                       const std::string& health) = 0;
  // Cluster mode: the jobs not yet terminal, with their allocations.
  virtual db::Result<std::vector<db::JobRow>> load_unfinished() = 0;
  // nullopt when there is no such job.
  virtual db::Result<std::optional<db::JobRow>> get_job(std::int64_t id) = 0;
  // False when the job was not in one of t.from.
  virtual db::Result<bool> transition(const db::Transition& t) = 0;
  // nullopt: removes the tenant's quota (removing a missing one is fine).
  virtual db::Status store_quota(const std::string& tenant, std::optional<int> max_cores) = 0;
  // NOTIFY channel, payload; best effort (the listeners also poll).
  virtual void notify(const char* channel, const std::string& payload) = 0;
};

// PoolAdminStore over the repositories; both must outlive it.
class RepositoryPoolAdminStore final : public PoolAdminStore {
 public:
  RepositoryPoolAdminStore(db::Repositories& repo, db::ClusterRepository& cluster);
  db::Result<std::vector<db::ClusterHostRow>> list_hosts() override;
  db::Status store_host_health(const std::string& host, const std::string& generation,
                               const std::string& health) override;
  db::Result<std::vector<db::JobRow>> load_unfinished() override;
  db::Result<std::optional<db::JobRow>> get_job(std::int64_t id) override;
  db::Result<bool> transition(const db::Transition& t) override;
  db::Status store_quota(const std::string& tenant, std::optional<int> max_cores) override;
  void notify(const char* channel, const std::string& payload) override;

 private:
  db::Repositories& repo_;
  db::ClusterRepository& cluster_;
};

// The pool the JobManager schedules in memory. Each call takes the
// manager's lock itself; PoolAdmin calls it only after the store answered.
class InMemoryPool {
 public:
  virtual ~InMemoryPool() = default;
  // Single-process mode: the host's generation name; nullopt when the pool
  // has no such host.
  virtual std::optional<std::string> host_generation(const std::string& host) = 0;
  // Single-process mode: applies the health; returns the jobs the
  // scheduler took off the host (they stop and retry or fail).
  virtual std::vector<std::int64_t> set_host_health(const std::string& host,
                                                    scheduler::HostHealth health) = 0;
  // Single-process mode: takes the job's cores back; false when it holds
  // none here.
  virtual bool release(std::int64_t job) = 0;
  // Both modes: the tenant's quota (nullopt: none) for the scheduler.
  virtual void set_quota(const std::string& tenant, std::optional<int> max_cores) = 0;
};

class PoolAdmin {
 public:
  // The store and the pool must outlive it. `cluster`: DESIGN §9's mode.
  PoolAdmin(PoolAdminStore& store, InMemoryPool& pool, bool cluster);

  // {"host","health","affected_jobs"}; kNotFound when the pool has no such
  // host; the store's error when the health could not be stored (then
  // nothing changed).
  api::JsonResult set_host_health(const std::string& host, scheduler::HostHealth health);
  // {"job","released":true}; kNotFound when the job holds no cores.
  api::JsonResult force_release(std::int64_t job);
  // {"tenant","max_cores"} (null: cleared); the store's error when it could
  // not be stored (then the scheduler keeps the quota it had).
  api::JsonResult set_quota(const std::string& tenant, std::optional<int> max_cores);

 private:
  // Cluster mode: the unfinished jobs whose allocation names `host`.
  db::Result<std::vector<std::int64_t>> jobs_placed_on(const std::string& host);

  PoolAdminStore& store_;
  InMemoryPool& pool_;
  const bool cluster_;
};

}  // namespace tpujobs::service
