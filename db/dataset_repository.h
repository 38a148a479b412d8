// Uploaded CSV datasets (table datasets), referenced by specs as
// {"upload": "ds_..."}.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "db/connection_pool.h"
#include "db/pg_text.h"
#include "db/result.h"

namespace tpujobs::db {

struct NewDataset {
  std::string tenant{};
  std::string name{};
  std::int64_t rows = 0;
  int columns = 0;
  int classes = 0;  // 0 for a regression target
  std::string csv{};
};

struct DatasetRow {
  std::string id{};  // "ds_" + 16 hex digits
  std::string tenant{};
  std::string name{};
  std::int64_t rows = 0;
  int columns = 0;
  int classes = 0;
  std::string csv{};
  TimePoint created_at{};
};

class DatasetRepository {
 public:
  // The pool must outlive the repository.
  explicit DatasetRepository(ConnectionPool& pool,
                             std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5))
      : pool_(pool), acquire_timeout_(acquire_timeout) {}

  // Stores the dataset under a new random id and returns the id.
  Result<std::string> create_dataset(const NewDataset& dataset);
  // nullopt when there is no such dataset.
  Result<std::optional<DatasetRow>> get_dataset(const std::string& id);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
