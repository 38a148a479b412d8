// The executor's uploaded datasets, read from PostgreSQL (table datasets),
// and the tables parsed for earlier jobs of this process.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "db/dataset_repository.h"
#include "executor/executor.h"
#include "executor/parsed_tables.h"

namespace tpujobs::service {

class DatabaseDatasets final : public executor::DatasetSource {
 public:
  // The repository must outlive this. Parsed tables are kept up to
  // `kept_bytes`: the four built-in datasets take 0.6 MB, an upload at most
  // twice its CSV's bytes (a float for each number of two characters or more).
  explicit DatabaseDatasets(db::DatasetRepository& repo, std::size_t kept_bytes = kKeptBytes)
      : repo_(repo), tables_(kept_bytes) {}
  static constexpr std::size_t kKeptBytes = std::size_t{64} << 20;
  // nullopt also when the database cannot be read: the job fails naming the
  // upload, as for a missing one.
  std::optional<std::string> uploaded_csv(std::string_view id) override {
    auto row = repo_.get_dataset(std::string(id));
    if (!row.ok() || !*row) return std::nullopt;
    return (*row)->csv;
  }
  executor::ParsedTables* parsed_tables() override { return &tables_; }

 private:
  db::DatasetRepository& repo_;
  executor::ParsedTables tables_;
};

}  // namespace tpujobs::service
