#include "db/scheduling_read.h"

#include "db/pool_state_repository.h"

namespace tpujobs::db {

base::Result<SchedulingRead> read_for_scheduling(
    ConnectionPool& pool, const std::optional<JobRepository::ScheduleSince>& since,
    std::chrono::milliseconds acquire_timeout) {
  std::vector<Statement> statements = {ClusterRepository::agents_statement(),
                                       ClusterRepository::hosts_statement()};
  for (Statement& s : JobRepository::schedule_statements(since)) statements.push_back(std::move(s));
  statements.push_back(PoolStateRepository::quotas_statement());
  return with_connection(
      pool, acquire_timeout, [&](Connection& connection) -> base::Result<SchedulingRead> {
        base::Result<std::vector<QueryResult>> answers = connection.execute_pipeline(statements);
        if (!answers.ok()) return answers.error();
        const std::vector<QueryResult>& a = *answers;
        const bool sweep = since && since->sweep;
        return SchedulingRead{
            ClusterRepository::agents_from(a[0]), ClusterRepository::hosts_from(a[1]),
            JobRepository::schedule_read_from(a[2], a[3], since, sweep ? &a[4] : nullptr),
            PoolStateRepository::quotas_from(a.back())};
      });
}

}  // namespace tpujobs::db
