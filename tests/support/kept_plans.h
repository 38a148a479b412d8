// For tests: the plans a PostgreSQL session keeps. Every statement is
// prepared once per connection (db/connection.h), and PostgreSQL keeps a
// prepared statement's generic plan, made once, until the statistics of a
// table it reads change: the plan of a statement without parameters always,
// and of others once five custom plans cost no less, or later, when the
// custom plans grow dearer with the table. A session's first statements
// often run while the tables are nearly empty; the plans they keep then may
// scan a table whole, and still do once it holds 100,000 queued jobs, until
// autovacuum analyzes it (bench/RESULTS.md, sessions 37, 61 and 62).
//
// The way to test it: run the code's statements on one session (a pool of
// one connection) over tables in a known state (without_autovacuum), add
// many rows unanalyzed (add_queued_jobs), then ask kept_walks which of the
// session's statements would walk them. Two states matter: tables analyzed
// while empty, and tables never analyzed (a new deployment's until
// autovacuum's first analysis), whose rows the planner guesses from the
// pages with default selectivities. The second gave the orphans' read a
// BitmapAnd over every unfinished job (bench/RESULTS.md, sessions 62 and 63).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"

namespace tpujobs::db::testing {

// The tables that grow with the queue.
inline const std::set<std::string> kQueueTables = {"jobs", "job_pending", "job_events"};

// What the planner knows of a table when a session plans on it.
enum class Statistics {
  kAnalyzedEmpty,  // analyzed as it is, empty
  kNeverAnalyzed,  // none: as migrated (an error if it was vacuumed or analyzed)
};

// Turns autovacuum off on `tables`, leaving them with `statistics`: only
// the test's own rows change what the planner knows, or drop kept plans.
base::Status without_autovacuum(ConnectionPool& pool, const std::set<std::string>& tables,
                                Statistics statistics);

// Adds `count` succeeded jobs of tenant "t" with an empty spec, as a
// deployment's history, through `pool`.
base::Status add_finished_jobs(ConnectionPool& pool, int count);

// Adds `count` queued jobs of tenant "t" with an empty spec, each with a
// pending reason and a submit event, through `pool` (not the session under
// test: its own statements would be kept there).
base::Status add_queued_jobs(ConnectionPool& pool, int count);

// For each statement prepared on the only session of `session`, its
// generic plan as EXPLAIN shows it (for NULL values; not run): the one
// kept, or if none was made yet, one made now. The walks in them: a scan
// of one of `tables` that is sequential, or by an index with no condition
// (a bitmap's too; but jobs_placed, which holds the STARTING and RUNNING
// jobs only), unless a Limit streams from it (no Sort, Aggregate or Hash
// between). One line each, "walk: statement"; empty when none.
std::vector<std::string> kept_walks(ConnectionPool& session, const std::set<std::string>& tables);

}  // namespace tpujobs::db::testing
