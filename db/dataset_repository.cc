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

base::Result<StoredDataset> DatasetRepository::create_dataset(const NewDataset& dataset) {
  return with_connection(
      pool_, acquire_timeout_, [&](Connection& connection) -> base::Result<StoredDataset> {
        // 64 random bits: a clash is practically impossible, but one is retried
        // rather than reported.
        for (int attempt = 0; attempt < 3; ++attempt) {
          const std::string id = random_dataset_id();
          base::Result<QueryResult> rows = connection.execute(
              "INSERT INTO datasets (id, tenant, name, row_count, column_count, class_count, csv,"
              "                      idempotency_key, content_hash)"
              " VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::integer, $6::integer, "
              "$7::text, $8::text, $9::text)"
              " ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
              " RETURNING id",
              {id, dataset.tenant, dataset.name, dataset.rows, dataset.columns, dataset.classes,
               dataset.csv, dataset.idempotency_key, dataset.content_hash});
          if (!rows.ok()) {
            if (rows.code() != base::ErrorCode::kConflict) return rows.error();
            continue;  // the id was taken
          }
          if (rows->rows() == 1) return StoredDataset{id, false};
          // The key was used: by this upload's earlier attempt, or by another.
          base::Result<QueryResult> stored = connection.execute(
              "SELECT id, name, content_hash FROM datasets"
              " WHERE tenant = $1::text AND idempotency_key = $2::text",
              {dataset.tenant, dataset.idempotency_key});
          if (!stored.ok()) return stored.error();
          if (stored->rows() == 0) continue;  // not committed after all; try again
          const std::string stored_id = stored->string(0, 0);
          if (stored->string(0, 1) != dataset.name ||
              stored->optional_string(0, 2).value_or("") != dataset.content_hash) {
            return base::make_error(base::ErrorCode::kConflict,
                                    "Idempotency-Key '" + dataset.idempotency_key.value_or("") +
                                        "' already stored dataset " + stored_id + " ('" +
                                        stored->string(0, 1) + "') from another file or under " +
                                        "another name");
          }
          return StoredDataset{stored_id, true};
        }
        return base::make_error(base::ErrorCode::kInternal, "could not pick a free dataset id");
      });
}

base::Result<std::optional<DatasetRow>> DatasetRepository::get_dataset(const std::string& id) {
  return with_connection(
      pool_, acquire_timeout_,
      [&](Connection& connection) -> base::Result<std::optional<DatasetRow>> {
        base::Result<QueryResult> rows = connection.execute(
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
