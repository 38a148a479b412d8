#include "db/scheduling_read.h"

#include "db/pool_state_repository.h"

namespace tpujobs::db {

base::Result<SchedulingRead> read_for_scheduling(
    ConnectionPool& pool, const std::optional<JobRepository::ScheduleSince>& since,
    std::chrono::milliseconds acquire_timeout) {
  std::vector<Statement> statements = {ClusterRepository::agents_statement(),
                                       ClusterRepository::hosts_statement()};
  std::vector<Statement> jobs = JobRepository::schedule_statements(since);
  const std::size_t job_answers = jobs.size();
  for (Statement& s : jobs) statements.push_back(std::move(s));
  statements.push_back(PoolStateRepository::quotas_statement());
  return with_connection(
      pool, acquire_timeout, [&](Connection& connection) -> base::Result<SchedulingRead> {
        // Planned for each read's values and the tables' present sizes.
        base::Result<std::vector<QueryResult>> answers = connection.execute_custom(statements);
        if (!answers.ok()) return answers.error();
        const std::vector<QueryResult>& a = *answers;
        return SchedulingRead{
            ClusterRepository::agents_from(a[0]), ClusterRepository::hosts_from(a[1]),
            JobRepository::schedule_read_from(std::span(a).subspan(2, job_answers), since),
            PoolStateRepository::quotas_from(a.back())};
      });
}

}  // namespace tpujobs::db
