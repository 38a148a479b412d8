// A PostgreSQL cluster an end-to-end test owns (a temporary directory, its
// own server): the tests point services at it with --database-url, stop
// and start it. Removed at the end.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "db/embedded_postgres.h"
#include "db/test_cluster.h"

namespace tpujobs::testing {

class OwnPostgres {
 public:
  explicit OwnPostgres(const std::string& prefix = "tpujobs-e2e-")
      : directory_(db::testing::make_temp_dir(prefix)) {
    db::EmbeddedPostgres::Options options;
    options.state_dir = directory_;
    options.sync_initdb = false;
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

}  // namespace tpujobs::testing
