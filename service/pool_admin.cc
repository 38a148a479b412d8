#include "service/pool_admin.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "db/repositories.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"

namespace tpujobs::service {

using nlohmann::json;

RepositoryPoolAdminStore::RepositoryPoolAdminStore(db::Repositories& repo,
                                                   db::ClusterRepository& cluster)
    : repo_(repo), cluster_(cluster) {}

base::Result<std::vector<db::ClusterHostRow>> RepositoryPoolAdminStore::list_hosts() {
  return cluster_.list_hosts();
}

base::Status RepositoryPoolAdminStore::store_host_health(const std::string& host,
                                                         const std::string& generation,
                                                         const std::string& health) {
  return repo_.pool_state.upsert_host_health(host, generation, health);
}

base::Result<std::vector<db::JobRow>> RepositoryPoolAdminStore::load_placed() {
  return repo_.jobs.load_placed();
}

base::Result<std::optional<db::JobRow>> RepositoryPoolAdminStore::get_job(std::int64_t id) {
  return repo_.jobs.get_job(id);
}

base::Result<bool> RepositoryPoolAdminStore::transition(const db::Transition& t) {
  return repo_.jobs.transition(t);
}

base::Status RepositoryPoolAdminStore::store_quota(const std::string& tenant,
                                                   std::optional<int> max_cores) {
  return max_cores ? repo_.pool_state.set_quota(tenant, *max_cores)
                   : repo_.pool_state.clear_quota(tenant);
}

void RepositoryPoolAdminStore::notify(const char* channel, const std::string& payload) {
  (void)cluster_.notify(channel, payload);
}

base::Result<nlohmann::json> PoolAdmin::set_host_health(const std::string& host,
                                                        scheduler::HostHealth health) {
  auto hosts = store_.list_hosts();
  if (!hosts.ok()) return hosts.error();
  auto it = std::find_if(hosts->begin(), hosts->end(),
                         [&](const db::ClusterHostRow& h) { return h.name == host; });
  if (it == hosts->end())
    return base::make_error(base::ErrorCode::kNotFound,
                            "no host '" + host.substr(0, 64) + "' in the pool");
  const std::string health_name(scheduler::host_health_name(health));
  // Durable first: a restart must not bring a failed host back.
  if (base::Status s = store_.store_host_health(host, it->generation, health_name); !s.ok())
    return s.error();
  // The leader places nothing more on a host that is not healthy, and
  // takes a failed host's jobs off it on its next pass.
  json affected = json::array();
  if (health == scheduler::HostHealth::kFailed) {
    auto placed = jobs_placed_on(host);
    if (!placed.ok()) return placed.error();
    affected = *placed;
  }
  store_.notify(db::kSubmitChannel, "pool");
  return json{{"host", host}, {"health", health_name}, {"affected_jobs", affected}};
}

base::Result<std::vector<std::int64_t>> PoolAdmin::jobs_placed_on(const std::string& host) {
  auto rows = store_.load_placed();
  if (!rows.ok()) return rows.error();
  std::vector<std::int64_t> placed;
  for (const db::JobRow& row : *rows) {
    const json allocation = views::parse_or_null(row.allocation_json);
    if (!allocation.is_object() || !allocation.contains("hosts")) continue;
    if (std::find(allocation["hosts"].begin(), allocation["hosts"].end(), json(host)) !=
        allocation["hosts"].end())
      placed.push_back(row.id);
  }
  return placed;
}

base::Result<nlohmann::json> PoolAdmin::force_release(std::int64_t job) {
  // The job ends here; its agent finds it moved on and stops its copy.
  auto row = store_.get_job(job);
  if (!row.ok()) return row.error();
  auto moved = store_.transition(lifecycle::release_lease(job));
  if (!moved.ok()) return moved.error();
  if (!*moved)
    return base::make_error(base::ErrorCode::kNotFound,
                            "job " + std::to_string(job) + " holds no cores");
  if (*row) store_.notify(db::kAgentChannel, (*row)->agent.value_or(""));
  store_.notify(db::kSubmitChannel, "released");
  return json{{"job", job}, {"released", true}};
}

base::Result<nlohmann::json> PoolAdmin::set_quota(const std::string& tenant,
                                                  std::optional<int> max_cores) {
  if (base::Status s = store_.store_quota(tenant, max_cores); !s.ok()) return s.error();
  // The leader places by the new quota from its next pass, now.
  store_.notify(db::kSubmitChannel, "quota");
  return json{{"tenant", tenant}, {"max_cores", max_cores ? json(*max_cores) : json(nullptr)}};
}

}  // namespace tpujobs::service
