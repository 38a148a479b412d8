#include "db/workload_repository.h"

namespace tpujobs::db {

Result<std::map<std::int64_t, base::JobState>> WorkloadRepository::job_states(
    const std::vector<std::int64_t>& ids, const std::optional<std::string>& tenant) {
  using States = std::map<std::int64_t, base::JobState>;
  if (ids.empty()) return States{};
  std::vector<std::optional<std::string>> id_texts;
  id_texts.reserve(ids.size());
  for (std::int64_t id : ids) id_texts.emplace_back(std::to_string(id));
  return with_connection(pool_, acquire_timeout_, [&](Connection& connection) -> Result<States> {
    Result<QueryResult> rows = connection.execute(
        "SELECT id, state FROM jobs WHERE id = ANY($1::bigint[]) AND ($2::text IS NULL OR tenant = $2::text)",
        {Param::array(id_texts), tenant});
    if (!rows.ok()) return rows.error();
    States states;
    for (int row = 0; row < rows->rows(); ++row) {
      if (std::optional<base::JobState> state = base::parse_job_state(rows->text(row, 1))) {
        states[rows->int64(row, 0)] = *state;
      }
    }
    return states;
  });
}

}  // namespace tpujobs::db
