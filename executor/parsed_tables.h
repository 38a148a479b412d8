// Parsed CSV tables kept for the next job that trains on the same data.
//
// Every job used to parse its dataset's CSV before its first step, and every
// dry run (the estimate of a new spec) again: 2.6 ms of CPU for the built-in
// digits on a 2-core AMD EPYC (bench/RESULTS.md, session 33). A table is
// parsed once and shared, read-only, by every job that loads it after; each
// job still takes its own train and validation copies.
//
//   executor::ParsedTables tables(64 << 20);
//   auto table = tables.parse("builtin:digits", csv, Loss::kCrossEntropy);
//
// The key names the text: a caller gives the same key only for the same
// text (a built-in's name; an upload's id with its text's hash). The loss is
// part of the key, as it decides which labels parse. A text that does not
// parse is not kept. Bounded by bytes: the least recently used go first, and
// a table larger than the bound is parsed for its job and not kept.
// Thread-safe; two jobs that miss at once both parse, and the first kept wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/mutex.h"
#include "base/result.h"
#include "executor/executor.h"

namespace tpujobs::executor {

class ParsedTables {
 public:
  explicit ParsedTables(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  ParsedTables(const ParsedTables&) = delete;
  ParsedTables& operator=(const ParsedTables&) = delete;

  // The table of `csv` (parse_csv's errors when it does not parse).
  base::Result<std::shared_ptr<const CsvTable>> parse(std::string_view key, std::string_view csv,
                                                      Loss loss) EXCLUDES(mutex_);

  std::size_t bytes() const EXCLUDES(mutex_);
  std::int64_t parses() const EXCLUDES(mutex_);  // calls that parsed (kept or not)
  std::int64_t hits() const EXCLUDES(mutex_);    // calls answered with a kept table

  // What a table takes in memory, as the bound counts it.
  static std::size_t size_of(const CsvTable& table);

 private:
  struct Kept {
    std::string key;
    std::shared_ptr<const CsvTable> table;
    std::size_t bytes = 0;
  };
  void keep_locked(std::string key, std::shared_ptr<const CsvTable> table) REQUIRES(mutex_);

  const std::size_t max_bytes_;
  mutable base::Mutex mutex_;
  std::list<Kept> recent_ GUARDED_BY(mutex_);  // most recently used first
  std::unordered_map<std::string, std::list<Kept>::iterator> by_key_ GUARDED_BY(mutex_);
  std::size_t bytes_ GUARDED_BY(mutex_) = 0;
  std::int64_t parses_ GUARDED_BY(mutex_) = 0;
  std::int64_t hits_ GUARDED_BY(mutex_) = 0;
};

}  // namespace tpujobs::executor
