// A PostgreSQL cluster an end-to-end test owns (a temporary directory, its
// own server): the tests point services at it with --database-url, stop
// and start it. Removed at the end.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "db/embedded_postgres.h"
#include "service_process.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::testing {

class OwnPostgres {
 public:
  // `settings`: server settings beyond the defaults (say, a TCP address
  // to listen on, with an hba_file that lets it in).
  explicit OwnPostgres(const std::string& prefix = "tpujobs-e2e-",
                       std::vector<std::pair<std::string, std::string>> settings = {})
      : directory_(db::testing::make_temp_dir(prefix)) {
    db::EmbeddedPostgres::Options options;
    options.state_dir = directory_;
    options.sync_initdb = false;
    options.settings = std::move(settings);
    auto started = db::EmbeddedPostgres::start(options);
    if (started.ok())
      postgres_ = std::move(*started);
    else
      error_ = started.error().message;
  }
  ~OwnPostgres() {
    postgres_.reset();  // stops it
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  // "" once it runs.
  const std::string& error() const { return error_; }
  std::string url() const { return postgres_->conninfo(); }
  db::EmbeddedPostgres* operator->() const { return postgres_.get(); }

 private:
  std::filesystem::path directory_;
  std::unique_ptr<db::EmbeddedPostgres> postgres_;
  std::string error_;
};

// A replica of a cluster on `database`: `tpujobs serve --database-url URL
// --name NAME --pool none` (the API only) and `extra` arguments.
inline ServiceProcess::Options replica_options(const OwnPostgres& database, const std::string& name,
                                               std::vector<std::string> extra = {}) {
  ServiceProcess::Options options;
  options.pool = "none";
  options.extra_args = {"--database-url", database.url(), "--name", name};
  options.extra_args.insert(options.extra_args.end(), extra.begin(), extra.end());
  return options;
}

// An agent of a cluster on `database`: `tpujobs agent --pool POOL --name
// NAME --workers 2`.
inline ServiceProcess::Options agent_options(const OwnPostgres& database, const std::string& name,
                                             const std::string& pool = "v3-8") {
  ServiceProcess::Options options;
  options.command = "agent";
  options.extra_args = {"--database-url", database.url(), "--pool",    pool,
                        "--name",         name,           "--workers", "2"};
  return options;
}

}  // namespace tpujobs::testing
