#include "executor/parsed_tables.h"

#include <utility>

namespace tpujobs::executor {

namespace {

std::string full_key(std::string_view key, Loss loss) {
  // Regression takes any finite label, classification only class indices.
  return std::string(loss == Loss::kMse ? "regression:" : "classes:") + std::string(key);
}

}  // namespace

base::Result<std::shared_ptr<const CsvTable>> ParsedTables::parse(std::string_view key,
                                                                  std::string_view csv, Loss loss) {
  std::string kept_as = full_key(key, loss);
  {
    base::MutexLock lock(mutex_);
    if (auto it = by_key_.find(kept_as); it != by_key_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second);
      ++hits_;
      return it->second->table;
    }
    ++parses_;
  }
  // Parsed outside the lock: another job's table need not wait for this one.
  base::Result<CsvTable> parsed = parse_csv(csv, loss);
  if (!parsed.ok()) return parsed.error();
  auto table = std::make_shared<const CsvTable>(std::move(*parsed));
  base::MutexLock lock(mutex_);
  if (auto it = by_key_.find(kept_as); it != by_key_.end()) return it->second->table;
  keep_locked(std::move(kept_as), table);
  return table;
}

void ParsedTables::keep_locked(std::string key, std::shared_ptr<const CsvTable> table) {
  const std::size_t bytes = size_of(*table);
  if (bytes > max_bytes_) return;
  while (!recent_.empty() && bytes_ + bytes > max_bytes_) {
    bytes_ -= recent_.back().bytes;
    by_key_.erase(recent_.back().key);
    recent_.pop_back();
  }
  recent_.push_front({key, std::move(table), bytes});
  by_key_.emplace(std::move(key), recent_.begin());
  bytes_ += bytes;
}

std::size_t ParsedTables::size_of(const CsvTable& table) {
  std::size_t bytes =
      sizeof(CsvTable) + (table.values.size() + table.labels.size()) * sizeof(float);
  for (const std::string& column : table.columns) bytes += sizeof(std::string) + column.size();
  return bytes;
}

std::size_t ParsedTables::bytes() const {
  base::MutexLock lock(mutex_);
  return bytes_;
}

std::int64_t ParsedTables::parses() const {
  base::MutexLock lock(mutex_);
  return parses_;
}

std::int64_t ParsedTables::hits() const {
  base::MutexLock lock(mutex_);
  return hits_;
}

}  // namespace tpujobs::executor
