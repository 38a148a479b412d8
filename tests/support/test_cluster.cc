#include "tests/support/test_cluster.h"

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include "db/migrate.h"

namespace tpujobs::db::testing {
namespace {

// Stops the server, then deletes its directory, when the process exits.
class Cluster {
 public:
  Cluster() : directory_(make_temp_dir("tpujobs-test-")), server_(start(directory_)) {}
  ~Cluster() {
    if (server_.ok()) (void)(*server_)->stop(EmbeddedPostgres::Shutdown::kImmediate);
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  base::Result<std::unique_ptr<EmbeddedPostgres>>& server() { return server_; }

 private:
  static base::Result<std::unique_ptr<EmbeddedPostgres>> start(const std::string& directory) {
    EmbeddedPostgres::Options options;
    options.state_dir = directory;
    // A throw-away cluster: nothing needs to survive a power cut, and without
    // fsync CREATE DATABASE per test is cheap. (The throughput test runs its
    // own cluster with the production settings.)
    options.sync_initdb = false;
    options.settings = {
        {"fsync", "off"}, {"synchronous_commit", "off"}, {"full_page_writes", "off"}};
    return EmbeddedPostgres::start(std::move(options));
  }

  std::string directory_;
  base::Result<std::unique_ptr<EmbeddedPostgres>> server_;
};

}  // namespace

base::Result<std::vector<std::string>> column(ConnectionPool& pool, const std::string& sql) {
  auto connection = pool.acquire(std::chrono::seconds(5));
  if (!connection.ok()) return connection.error();
  auto rows = (*connection)->execute(sql);
  if (!rows.ok()) return rows.error();
  std::vector<std::string> out;
  for (int row = 0; row < rows->rows(); ++row)
    out.push_back(rows->is_null(row, 0) ? "" : rows->string(row, 0));
  return out;
}

std::string first_value(ConnectionPool& pool, const std::string& sql) {
  base::Result<std::vector<std::string>> values = column(pool, sql);
  if (!values.ok()) return "error: " + values.error().message;
  return values->empty() ? "" : values->front();
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

base::Result<EmbeddedPostgres*> shared_cluster() {
  static Cluster cluster;
  if (!cluster.server().ok()) return cluster.server().error();
  return cluster.server()->get();
}

base::Result<std::string> create_database() {
  static std::atomic<int> next{0};
  base::Result<EmbeddedPostgres*> server = shared_cluster();
  if (!server.ok()) return server.error();
  base::Result<std::unique_ptr<Connection>> admin =
      Connection::open((*server)->conninfo_for("postgres"));
  if (!admin.ok()) return admin.error();
  // The name is made here from a counter, never from input.
  const std::string name = "test_" + std::to_string(++next);
  if (base::Status created = (*admin)->execute_script("CREATE DATABASE " + name); !created.ok()) {
    return created.error();
  }
  return (*server)->conninfo_for(name);
}

base::Result<std::string> create_schema() {
  static std::atomic<int> next{0};
  base::Result<EmbeddedPostgres*> server = shared_cluster();
  if (!server.ok()) return server.error();
  base::Result<std::unique_ptr<Connection>> admin = Connection::open((*server)->conninfo());
  if (!admin.ok()) return admin.error();
  // The name is made here from a counter, never from input.
  const std::string name = "test_" + std::to_string(++next);
  if (base::Status created = (*admin)->execute_script("CREATE SCHEMA " + name); !created.ok()) {
    return created.error();
  }
  return (*server)->conninfo() + " options='-c search_path=" + name + "'";
}

base::Result<std::unique_ptr<ConnectionPool>> fresh_migrated_pool(int pool_size) {
  base::Result<std::string> conninfo = create_schema();
  if (!conninfo.ok()) return conninfo.error();
  base::Result<std::unique_ptr<ConnectionPool>> pool = ConnectionPool::create(*conninfo, pool_size);
  if (!pool.ok()) return pool.error();
  if (base::Status migrated = migrate(**pool); !migrated.ok()) return migrated.error();
  return pool;
}

}  // namespace tpujobs::db::testing
