#include "db/workload_repository.h"

namespace tpujobs::db {

base::Result<std::map<std::int64_t, base::JobState>> WorkloadRepository::job_states(
    const std::vector<std::int64_t>& ids, const std::optional<std::string>& tenant) {
  using States = std::map<std::int64_t, base::JobState>;
  if (ids.empty()) return States{};
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<States> {
        base::Result<QueryResult> rows = connection.execute(
            "SELECT id, state FROM jobs WHERE id = ANY($1::bigint[]) AND ($2::text IS NULL OR "
            "tenant = "
            "$2::text)",
            {Param::bigints(ids), tenant});
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

namespace {

constexpr const char* kUsage =
    "WITH candidates AS ("
    "  SELECT j.id, j.tenant, j.labels,"
    "         COALESCE(j.allocation->>'generation', j.resolved->'request'->>'generation', "
    "'unknown')"
    "           AS generation,"
    "         COALESCE((j.resolved->'request'->>'cores')::integer, 0) AS cores"
    "  FROM jobs j"
    "  WHERE j.started_at IS NOT NULL AND j.created_at < $2::timestamptz"
    "    AND (j.finished_at IS NULL OR j.finished_at >= $1::timestamptz)"
    "    AND ($5::text IS NULL OR j.tenant = $5::text)"
    "), spans AS ("
    "  SELECT e.job_id, e.to_state, e.at,"
    "         lead(e.at) OVER (PARTITION BY e.job_id ORDER BY e.id) AS next_at"
    "  FROM job_events e JOIN candidates c ON c.id = e.job_id"
    "), held AS ("
    "  SELECT job_id,"
    "         EXTRACT(EPOCH FROM LEAST(COALESCE(next_at, now()), $2::timestamptz)"
    "                            - GREATEST(at, $1::timestamptz)) AS seconds"
    "  FROM spans WHERE to_state IN ('STARTING', 'RUNNING')"
    "), per_job AS ("
    "  SELECT job_id, SUM(seconds) AS seconds FROM held WHERE seconds > 0 GROUP BY job_id"
    ")"
    " SELECT CASE WHEN $3::boolean THEN COALESCE(l.key || '=' || l.value, '') ELSE c.tenant END AS "
    "grp,"
    "        c.generation, count(*) AS jobs, SUM(p.seconds * c.cores)::double precision AS "
    "core_seconds"
    " FROM per_job p JOIN candidates c ON c.id = p.job_id"
    " LEFT JOIN LATERAL jsonb_each_text(CASE WHEN $3::boolean THEN c.labels ELSE '{}'::jsonb END) "
    "AS l(key, value)"
    "   ON $4::text IS NULL OR l.key = $4::text"
    " WHERE c.cores > 0"
    " GROUP BY 1, 2 ORDER BY 1, 2";

constexpr const char* kDecayedUsage =
    "WITH candidates AS ("
    "  SELECT j.id, j.tenant, COALESCE((j.resolved->'request'->>'cores')::integer, 0) AS cores"
    "  FROM jobs j"
    "  WHERE j.started_at IS NOT NULL AND j.created_at < $1::timestamptz"
    "    AND (j.finished_at IS NULL"
    "         OR j.finished_at >= $1::timestamptz - $3::bigint * interval '1 second')"
    "), spans AS ("
    "  SELECT e.job_id, e.to_state, e.at,"
    "         lead(e.at) OVER (PARTITION BY e.job_id ORDER BY e.id) AS next_at"
    "  FROM job_events e JOIN candidates c ON c.id = e.job_id WHERE c.cores > 0"
    "), ages AS ("
    "  SELECT job_id,"
    "         LEAST(EXTRACT(EPOCH FROM $1::timestamptz - at)::double precision,"
    "               $3::bigint::double precision) AS began,"
    "         GREATEST(EXTRACT(EPOCH FROM $1::timestamptz - COALESCE(next_at, now()))"
    "                    ::double precision, 0) AS ended"
    "  FROM spans WHERE to_state IN ('STARTING', 'RUNNING')"
    ")"
    " SELECT c.tenant, SUM(c.cores * $2::double precision / ln(2::double precision) *"
    "        (power(2::double precision, -a.ended / $2::double precision)"
    "         - power(2::double precision, -a.began / $2::double precision)))"
    " FROM ages a JOIN candidates c ON c.id = a.job_id"
    " WHERE a.began > a.ended GROUP BY c.tenant ORDER BY c.tenant";

}  // namespace

base::Result<std::map<std::string, double>> WorkloadRepository::decayed_usage(
    TimePoint now, std::chrono::seconds half_life, std::chrono::seconds horizon) {
  using Usage = std::map<std::string, double>;
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<Usage> {
        base::Result<QueryResult> rows =
            connection.execute(kDecayedUsage, {now, static_cast<double>(half_life.count()),
                                               static_cast<std::int64_t>(horizon.count())});
        if (!rows.ok()) return rows.error();
        Usage usage;
        for (int row = 0; row < rows->rows(); ++row) {
          usage[rows->string(row, 0)] = rows->float64(row, 1);
        }
        return usage;
      });
}

base::Result<PurgeBatch> WorkloadRepository::purge_finished_outputs(std::chrono::seconds older_than,
                                                                    int max_jobs) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<PurgeBatch> {
        base::Result<QueryResult> rows = connection.execute(
            "WITH picked AS ("
            "  SELECT id FROM jobs"
            "  WHERE finished_at IS NOT NULL AND outputs_purged_at IS NULL"
            "    AND finished_at < now() - $1::bigint * interval '1 second'"
            "    AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
            "  ORDER BY finished_at LIMIT $2::integer"
            "  FOR UPDATE SKIP LOCKED"
            "), logs AS ("
            "  DELETE FROM job_logs l USING picked p WHERE l.job_id = p.id RETURNING 1"
            "), metrics AS ("
            "  DELETE FROM job_metrics m USING picked p WHERE m.job_id = p.id RETURNING 1"
            "), marked AS ("
            "  UPDATE jobs j SET outputs_purged_at = now() FROM picked p WHERE j.id = p.id "
            "RETURNING 1"
            ")"
            " SELECT (SELECT count(*) FROM marked), (SELECT count(*) FROM logs), (SELECT count(*) "
            "FROM metrics)",
            {static_cast<std::int64_t>(older_than.count()), max_jobs});
        if (!rows.ok()) return rows.error();
        return PurgeBatch{rows->int64(0, 0), rows->int64(0, 1), rows->int64(0, 2)};
      });
}

base::Result<std::vector<UsageRow>> WorkloadRepository::usage(
    TimePoint from, TimePoint to, bool by_label, const std::optional<std::string>& label_key,
    const std::optional<std::string>& tenant) {
  return with_connection(pool_, acquire_timeout_,
                         [&](Connection& connection) -> base::Result<std::vector<UsageRow>> {
                           base::Result<QueryResult> rows =
                               connection.execute(kUsage, {from, to, by_label, label_key, tenant});
                           if (!rows.ok()) return rows.error();
                           std::vector<UsageRow> out;
                           for (int row = 0; row < rows->rows(); ++row) {
                             out.push_back({rows->string(row, 0), rows->string(row, 1),
                                            rows->int64(row, 2), rows->float64(row, 3)});
                           }
                           return out;
                         });
}

}  // namespace tpujobs::db
