// The values a statement takes and gives back: Param, QueryResult and the
// rows of a COPY (CopyField), declared in db/connection.h beside the
// connection that sends them.
#include <libpq-fe.h>

#include <cassert>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "db/connection.h"
#include "db/pg_text.h"

namespace tpujobs::db {

Param::Param(double number) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", number);
  value_ = buffer;
}

Param Param::bytes(std::string_view data) {
  Param param{std::string(data)};
  param.binary_ = true;
  return param;
}

Param Param::array(std::span<const std::optional<std::string>> elements) {
  return Param{array_literal(elements)};
}

Param Param::bigints(std::span<const std::int64_t> values) {
  std::vector<std::optional<std::string>> texts;
  texts.reserve(values.size());
  for (std::int64_t value : values) texts.emplace_back(std::to_string(value));
  return array(texts);
}

QueryResult::QueryResult(pg_result* result) : result_(result) {}
QueryResult::QueryResult(QueryResult&& other) noexcept : result_(other.result_) {
  other.result_ = nullptr;
}
QueryResult& QueryResult::operator=(QueryResult&& other) noexcept {
  if (this != &other) {
    if (result_) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}
QueryResult::~QueryResult() {
  if (result_) PQclear(result_);
}

int QueryResult::rows() const { return PQntuples(result_); }
int QueryResult::columns() const { return PQnfields(result_); }

std::int64_t QueryResult::affected_rows() const {
  const std::string_view text = PQcmdTuples(result_);
  std::int64_t count = 0;
  std::from_chars(text.data(), text.data() + text.size(), count);
  return count;
}

bool QueryResult::is_null(int row, int column) const {
  return PQgetisnull(result_, row, column) != 0;
}

std::string_view QueryResult::text(int row, int column) const {
  assert(row < rows() && column < columns());
  return std::string_view(PQgetvalue(result_, row, column),
                          static_cast<std::size_t>(PQgetlength(result_, row, column)));
}

std::optional<std::string> QueryResult::optional_string(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return string(row, column);
}

std::int64_t QueryResult::int64(int row, int column) const {
  const std::string_view value = text(row, column);
  std::int64_t number = 0;
  std::from_chars(value.data(), value.data() + value.size(), number);
  return number;
}

bool QueryResult::boolean(int row, int column) const { return text(row, column) == "t"; }

double QueryResult::float64(int row, int column) const {
  return std::strtod(std::string(text(row, column)).c_str(), nullptr);
}

TimePoint QueryResult::timestamp(int row, int column) const {
  const std::optional<TimePoint> time = parse_timestamp(text(row, column));
  assert(time || is_null(row, column));
  return time.value_or(TimePoint{});
}

std::optional<TimePoint> QueryResult::optional_timestamp(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return timestamp(row, column);
}

std::string QueryResult::bytes(int row, int column) const {
  return decode_bytea_hex(text(row, column)).value_or(std::string());
}

CopyField CopyField::number(std::uint64_t bits, int size) {
  CopyField field;
  field.is_number_ = true;
  field.number_size_ = size;
  for (int i = size - 1; i >= 0; --i, bits >>= 8) field.number_[i] = static_cast<char>(bits & 0xff);
  return field;
}

CopyField CopyField::int64(std::int64_t value) {
  return number(static_cast<std::uint64_t>(value), 8);
}

CopyField CopyField::int32(std::int32_t value) {
  return number(static_cast<std::uint32_t>(value), 4);
}

CopyField CopyField::bytes(std::string_view data) {
  CopyField field;
  field.bytes_ = data;
  return field;
}

std::string_view CopyField::wire() const {
  return is_number_ ? std::string_view(number_, number_size_) : bytes_;
}

}  // namespace tpujobs::db
