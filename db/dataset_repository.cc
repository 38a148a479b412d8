#include "db/dataset_repository.h"

#include "base/bytes.h"

namespace tpujobs::db {
namespace {

std::string random_dataset_id() {
  unsigned char bytes[8];
  base::fill_random(bytes);
  return "ds_" + base::lower_hex(bytes);
}

}  // namespace

Result<std::string> DatasetRepository::create_dataset(const NewDataset& dataset) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> Result<std::string> {
        // 64 random bits: a clash is practically impossible, but one is retried
        // rather than reported.
        for (int attempt = 0; attempt < 3; ++attempt) {
          const std::string id = random_dataset_id();
          Result<QueryResult> rows = connection.execute(
              "INSERT INTO datasets (id, tenant, name, row_count, column_count, class_count, csv)"
              " VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::integer, $6::integer, "
              "$7::text)",
              {id, dataset.tenant, dataset.name, dataset.rows, dataset.columns, dataset.classes,
               dataset.csv});
          if (rows.ok()) return id;
          if (rows.code() != ErrorCode::kConflict) return rows.error();
        }
        return make_error(ErrorCode::kInternal, "could not pick a free dataset id");
      });
}

Result<std::optional<DatasetRow>> DatasetRepository::get_dataset(const std::string& id) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> Result<std::optional<DatasetRow>> {
        Result<QueryResult> rows = connection.execute(
            "SELECT id, tenant, name, row_count, column_count, class_count, csv, created_at"
            " FROM datasets WHERE id = $1::text",
            {id});
        if (!rows.ok()) return rows.error();
        if (rows->rows() == 0) return std::optional<DatasetRow>();
        return std::optional<DatasetRow>(DatasetRow{
            rows->string(0, 0), rows->string(0, 1), rows->string(0, 2), rows->int64(0, 3),
            static_cast<int>(rows->int64(0, 4)), static_cast<int>(rows->int64(0, 5)),
            rows->string(0, 6), rows->timestamp(0, 7)});
      });
}

}  // namespace tpujobs::db
