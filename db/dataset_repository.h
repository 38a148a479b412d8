// Uploaded CSV datasets (table datasets), referenced by specs as
// {"upload": "ds_..."}.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

namespace tpujobs::db {

struct NewDataset {
  std::string tenant{};
  std::string name{};
  std::int64_t rows = 0;
  int columns = 0;
  int classes = 0;  // 0 for a regression target
  std::string csv{};
  // Set by an upload sent with an Idempotency-Key: a second upload with the
  // same (tenant, key) finds this dataset instead of storing another.
  std::optional<std::string> idempotency_key{};
  std::string content_hash{};  // identifies csv, compared on a repeated key
};

// What create_dataset did: stored a new dataset, or found the one an earlier
// upload with the same Idempotency-Key, name and file stored.
struct StoredDataset {
  std::string id{};
  bool existing = false;
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

  // Stores the dataset under a new random id. With an idempotency key already
  // used by the tenant: the stored dataset when its name and content hash are
  // the same, else kConflict naming it.
  base::Result<StoredDataset> create_dataset(const NewDataset& dataset);
  // nullopt when there is no such dataset.
  base::Result<std::optional<DatasetRow>> get_dataset(const std::string& id);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
};

}  // namespace tpujobs::db
