// The executor's uploaded datasets, read from PostgreSQL (table datasets).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "db/dataset_repository.h"
#include "executor/executor.h"

namespace tpujobs::service {

class DatabaseDatasets final : public executor::DatasetSource {
 public:
  // The repository must outlive this.
  explicit DatabaseDatasets(db::DatasetRepository& repo) : repo_(repo) {}
  // nullopt also when the database cannot be read: the job fails naming the
  // upload, as for a missing one.
  std::optional<std::string> uploaded_csv(std::string_view id) override {
    auto row = repo_.get_dataset(std::string(id));
    if (!row.ok() || !*row) return std::nullopt;
    return (*row)->csv;
  }

 private:
  db::DatasetRepository& repo_;
};

}  // namespace tpujobs::service
