// Schema migrations: the numbered .sql files of db/migrations/, compiled into
// the binary, applied in order at start-up.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"

namespace tpujobs::db {

struct Migration {
  int version;         // 1 for "001_initial.sql"
  std::string name{};  // the file name
  std::string sql{};
};

// The embedded migrations, ascending by version.
std::vector<Migration> embedded_migrations();

// Applies every migration not yet recorded in schema_migrations, each in its
// own transaction together with its record, so a failure leaves the schema at
// the last good version. Several processes may call this at once: a
// transaction-scoped advisory lock makes them take turns, and each applies
// only what the others have not.
base::Status migrate(ConnectionPool& pool);
base::Status migrate(ConnectionPool& pool, const std::vector<Migration>& migrations);

// The versions recorded in schema_migrations, ascending.
base::Result<std::vector<int>> applied_migrations(ConnectionPool& pool);

}  // namespace tpujobs::db
