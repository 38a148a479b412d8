// For tests: one PostgreSQL server per test process, in a fresh temporary
// directory, started on first use and removed at exit; and a fresh database
// or schema per test so tests never see each other's rows. The shared server
// runs with fsync off: fast, and disposable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/embedded_postgres.h"

namespace tpujobs::db::testing {

// The process-wide server. kUnavailable/kInvalid when it cannot start (the
// message says why); later calls return the same outcome.
base::Result<EmbeddedPostgres*> shared_cluster();

// Creates an empty database test_<n> on the shared server; returns its
// conninfo.
base::Result<std::string> create_database();

// Creates an empty schema test_<n> in database tpujobs of the shared server;
// returns a conninfo whose search_path is that schema, so unqualified names
// (all of db/'s SQL) live there. Much cheaper than a database (CREATE
// DATABASE copies a template: about a second on a busy 2-core machine).
base::Result<std::string> create_schema();

// create_schema() + migrate() + a pool of pool_size connections on it.
base::Result<std::unique_ptr<ConnectionPool>> fresh_migrated_pool(int pool_size = 4);

// The first column of each row `sql` answers on a session of `pool` (a
// NULL as ""), or why there is none.
base::Result<std::vector<std::string>> column(ConnectionPool& pool, const std::string& sql);

// The first value `sql` answers on a session of `pool` ("" for no row or
// a NULL), or "error: " and why, for a test to compare with what it expects.
std::string first_value(ConnectionPool& pool, const std::string& sql);

// A new empty temporary directory (mkdtemp under $TMPDIR or /tmp).
std::string make_temp_dir(const std::string& prefix);

}  // namespace tpujobs::db::testing
