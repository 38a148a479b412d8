#include "db/migrate.h"

#include <algorithm>
#include <charconv>

#include "db/migrations_embedded.h"

namespace tpujobs::db {
namespace {

// Any constant shared by every tpujobs process ("tpujobs" in ASCII).
constexpr std::int64_t kMigrationLock = 0x7470756a6f6273;
constexpr std::chrono::seconds kAcquireTimeout{30};

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now())";

}  // namespace

std::vector<Migration> embedded_migrations() {
  std::vector<Migration> migrations;
  for (std::string_view name : migrations_embedded::names()) {
    int version = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), version);
    if (error != std::errc() || end == name.data() || !name.ends_with(".sql")) continue;
    migrations.push_back(
        {version, std::string(name), std::string(migrations_embedded::find(name))});
  }
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  return migrations;
}

base::Status migrate(ConnectionPool& pool) { return migrate(pool, embedded_migrations()); }

base::Status migrate(ConnectionPool& pool, const std::vector<Migration>& migrations) {
  base::Result<PooledConnection> connection = pool.acquire(kAcquireTimeout);
  if (!connection.ok()) return connection.error();
  for (const Migration& migration : migrations) {
    base::Result<Transaction> transaction = Transaction::begin(**connection);
    if (!transaction.ok()) return transaction.error();
    // Every session ends a transaction idle for 5 s (connection.cc). A
    // migration that fails ends the process that runs it, and a process
    // starved of the CPU at its start (a machine whose cores training
    // fills) can be idle that long between two statements: this one
    // transaction waits a minute.
    if (auto patient =
            transaction->execute("SET LOCAL idle_in_transaction_session_timeout = '1min'");
        !patient.ok()) {
      return patient.error();
    }
    // Held until this transaction ends; a second process waits here and then
    // sees the version as applied.
    if (auto locked =
            transaction->execute("SELECT pg_advisory_xact_lock($1::bigint)", {kMigrationLock});
        !locked.ok()) {
      return locked.error();
    }
    if (base::Status created = transaction->execute_script(kCreateTable); !created.ok())
      return created;
    base::Result<QueryResult> applied = transaction->execute(
        "SELECT 1 FROM schema_migrations WHERE version = $1::integer", {migration.version});
    if (!applied.ok()) return applied.error();
    if (applied->rows() > 0) continue;  // the destructor ends the transaction
    if (base::Status ran = transaction->execute_script(migration.sql); !ran.ok()) {
      return base::make_error(ran.code(),
                              "migration " + migration.name + ": " + ran.error().message);
    }
    if (auto recorded = transaction->execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1::integer, $2::text)",
            {migration.version, migration.name});
        !recorded.ok()) {
      return recorded.error();
    }
    if (base::Status committed = transaction->commit(); !committed.ok()) return committed;
  }
  return base::Status::Ok();
}

base::Result<std::vector<int>> applied_migrations(ConnectionPool& pool) {
  base::Result<PooledConnection> connection = pool.acquire(kAcquireTimeout);
  if (!connection.ok()) return connection.error();
  base::Result<QueryResult> rows =
      (*connection)->execute("SELECT version FROM schema_migrations ORDER BY version");
  if (!rows.ok()) return rows.error();
  std::vector<int> versions;
  for (int row = 0; row < rows->rows(); ++row) {
    versions.push_back(static_cast<int>(rows->int64(row, 0)));
  }
  return versions;
}

}  // namespace tpujobs::db
