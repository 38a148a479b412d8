#include "tests/support/kept_plans.h"

#include <nlohmann/json.hpp>

#include "tests/support/test_cluster.h"

namespace tpujobs::db::testing {
namespace {

using nlohmann::json;

// `heap`: the table of the Bitmap Heap Scan above, if any (EXPLAIN names
// no table in a Bitmap Index Scan, only its index).
void walks_of(const json& plan, const std::set<std::string>& tables, bool limited,
              const std::string& heap, std::vector<std::string>& walks) {
  const std::string node = plan.value("Node Type", "");
  const std::string relation = node == "Bitmap Index Scan" ? heap : plan.value("Relation Name", "");
  const std::string index = plan.value("Index Name", "");
  // A Limit bounds the scans it streams from, not those under a node that
  // reads all its input first (a Sort's, an Aggregate's, a Hash's).
  limited = (limited || node == "Limit") && node != "Sort" && node != "Incremental Sort" &&
            node != "Aggregate" && node != "Hash";
  if (tables.contains(relation) && !limited) {
    const bool by_key = plan.contains("Index Cond");
    const bool placed_only = index == "jobs_placed";
    if (node == "Seq Scan" || (!index.empty() && !by_key && !placed_only))
      walks.push_back(node + " on " + relation + (index.empty() ? "" : " using " + index));
  }
  for (const json& child : plan.value("Plans", json::array()))
    walks_of(child, tables, limited, node == "Bitmap Heap Scan" ? relation : heap, walks);
}

}  // namespace

base::Status without_autovacuum(ConnectionPool& pool, const std::set<std::string>& tables,
                                Statistics statistics) {
  for (const std::string& table : tables) {
    if (auto off = column(pool, "ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
        !off.ok())
      return off.error();
    if (statistics == Statistics::kAnalyzedEmpty) {
      if (auto analyzed = column(pool, "VACUUM ANALYZE " + table); !analyzed.ok())
        return analyzed.error();
      continue;
    }
    // Never analyzed nor vacuumed: pg_class has no count of its rows yet.
    auto rows =
        column(pool, "SELECT reltuples FROM pg_class WHERE oid = '" + table + "'::regclass");
    if (!rows.ok()) return rows.error();
    if (rows->size() != 1 || std::stod(rows->front()) >= 0)
      return base::Error{base::ErrorCode::kInternal,
                         table + " was vacuumed or analyzed already (reltuples " +
                             (rows->empty() ? "none" : rows->front()) + ")"};
  }
  return base::Status::Ok();
}

base::Status add_finished_jobs(ConnectionPool& pool, int count) {
  auto done = column(pool,
                     "INSERT INTO jobs (tenant, spec, state) SELECT 't', '{}', 'SUCCEEDED'"
                     " FROM generate_series(1, " +
                         std::to_string(count) + ")");
  return done.ok() ? base::Status::Ok() : base::Status(done.error());
}

base::Status add_queued_jobs(ConnectionPool& pool, int count) {
  const std::vector<std::string> fill = {
      "INSERT INTO jobs (tenant, spec) SELECT 't', '{}' FROM generate_series(1, " +
          std::to_string(count) + ")",
      "INSERT INTO job_pending SELECT id, '{\"reason\": \"Resources\"}' FROM jobs j"
      " WHERE state = 'QUEUED' AND NOT EXISTS (SELECT 1 FROM job_pending p WHERE p.job_id = j.id)",
      "INSERT INTO job_events (job_id, to_state, reason) SELECT id, 'QUEUED', 'Submitted'"
      " FROM jobs WHERE state = 'QUEUED' AND spec = '{}'"};
  for (const std::string& sql : fill) {
    if (auto done = column(pool, sql); !done.ok()) return done.error();
  }
  return base::Status::Ok();
}

std::vector<std::string> kept_walks(ConnectionPool& session, const std::set<std::string>& tables) {
  std::vector<std::string> found;
  auto fail = [&](const std::string& what, const std::string& why) {
    found.push_back("not read: " + what + ": " + why);
    return found;
  };
  if (auto set = column(session, "SET plan_cache_mode = force_generic_plan"); !set.ok())
    return fail("SET plan_cache_mode", set.error().message);
  auto prepared =
      column(session,
             "SELECT name FROM pg_prepared_statements"
             " WHERE statement ~* '^\\s*(WITH|SELECT|INSERT|UPDATE|DELETE)'"
             "   AND statement NOT LIKE '%pg_prepared_statements%' ORDER BY name");  // not this one
  if (!prepared.ok()) return fail("pg_prepared_statements", prepared.error().message);
  if (prepared->empty()) return fail("pg_prepared_statements", "none on this session");
  for (const std::string& name : *prepared) {
    auto text = column(session,
                       "SELECT cardinality(parameter_types)::text || ' ' || statement"
                       " FROM pg_prepared_statements WHERE name = '" +
                           name + "'");
    if (!text.ok() || text->empty()) return fail(name, text.ok() ? "gone" : text.error().message);
    const std::string& line = text->front();
    const int values = std::stoi(line.substr(0, line.find(' ')));
    const std::string statement = line.substr(line.find(' ') + 1);
    std::string call = name;
    for (int i = 0; i < values; ++i) call += (i == 0 ? "(NULL" : ", NULL");
    if (values > 0) call += ")";
    auto explained = column(session, "EXPLAIN (FORMAT JSON) EXECUTE " + call);
    if (!explained.ok() || explained->size() != 1)
      return fail(statement, explained.ok() ? "no plan" : explained.error().message);
    const json plan = json::parse(explained->front(), nullptr, false);
    if (!plan.is_array() || plan.empty()) return fail(statement, explained->front());
    std::vector<std::string> walks;
    walks_of(plan[0].value("Plan", json::object()), tables, false, "", walks);
    for (const std::string& walk : walks) found.push_back(walk + ": " + statement);
  }
  if (auto reset = column(session, "RESET plan_cache_mode"); !reset.ok())
    return fail("RESET plan_cache_mode", reset.error().message);
  return found;
}

}  // namespace tpujobs::db::testing
