// Fuzzes executor::parse_csv, the parser behind POST /v1/datasets, against
// its contract (executor/executor.h): a table whose sizes agree, finite
// values and in-range labels, or an error naming the line. The first byte
// picks the loss (classification or regression); the rest is the file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "executor/executor.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using tpujobs::executor::Loss;
  const Loss loss = (data[0] & 1) ? Loss::kMse : Loss::kCrossEntropy;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto parsed = tpujobs::executor::parse_csv(text, loss);
  if (!parsed.ok()) {
    // Every error names its line, except for a file with no line at all.
    const std::string& message = parsed.error().message;
    check(message.find("line ") != std::string::npos || message.find("empty input") == 0);
    return 0;
  }
  const tpujobs::executor::CsvTable& table = *parsed;
  check(table.rows > 0);
  check(table.features >= 1);
  check(table.columns.size() == static_cast<std::size_t>(table.features) + 1);
  check(table.values.size() ==
        static_cast<std::size_t>(table.rows) * static_cast<std::size_t>(table.features));
  check(table.labels.size() == static_cast<std::size_t>(table.rows));
  for (float v : table.values) check(std::isfinite(v));
  float largest = -1;
  for (float label : table.labels) {
    check(std::isfinite(label));
    if (loss == Loss::kCrossEntropy) {
      check(label >= 0 && label <= 65535 && label == std::floor(label));
      largest = std::max(largest, label);
    }
  }
  if (loss == Loss::kCrossEntropy) check(table.classes == static_cast<int>(largest) + 1);
  return 0;
}
