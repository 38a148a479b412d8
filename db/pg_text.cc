#include "db/pg_text.h"

#include <cstdio>

#include "base/bytes.h"

namespace tpujobs::db {
namespace {

bool parse_digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  out = value;
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string format_timestamp(TimePoint time) {
  using namespace std::chrono;
  const auto micros = floor<microseconds>(time);
  const auto day = floor<days>(micros);
  const year_month_day date{day};
  const hh_mm_ss clock{micros - day};
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02u %02d:%02d:%02d.%06lld+00",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(clock.hours().count()),
                static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()),
                static_cast<long long>(clock.subseconds().count()));
  return buffer;
}

std::optional<TimePoint> parse_timestamp(std::string_view text) {
  using namespace std::chrono;
  int y, mo, d, h, mi, s;
  if (!parse_digits(text, 0, 4, y) || text.size() < 19 || text[4] != '-' ||
      !parse_digits(text, 5, 2, mo) || text[7] != '-' || !parse_digits(text, 8, 2, d) ||
      (text[10] != ' ' && text[10] != 'T') || !parse_digits(text, 11, 2, h) || text[13] != ':' ||
      !parse_digits(text, 14, 2, mi) || text[16] != ':' || !parse_digits(text, 17, 2, s)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  long long micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 6; ++digits) micros *= 10;
  }
  const std::string_view zone = text.substr(pos);
  if (zone != "+00" && zone != "Z" && zone != "+00:00") return std::nullopt;
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  const auto result = sys_days{date} + hours{h} + minutes{mi} + seconds{s} + microseconds{micros};
  return time_point_cast<system_clock::duration>(result);
}

std::string array_literal(std::span<const std::optional<std::string>> elements) {
  std::size_t size = 2;
  for (const auto& element : elements) size += element ? element->size() + 3 : 5;
  std::string out;
  out.reserve(size + size / 16);
  out += '{';
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) out += ',';
    if (!elements[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    const std::string_view text = *elements[i];
    std::size_t start = 0;
    for (std::size_t special = text.find_first_of("\"\\"); special != std::string_view::npos;
         special = text.find_first_of("\"\\", start)) {
      out.append(text, start, special - start);
      out += '\\';
      out += text[special];
      start = special + 1;
    }
    out.append(text, start);
    out += '"';
  }
  out += '}';
  return out;
}

std::optional<std::string> decode_bytea_hex(std::string_view text) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x') return std::nullopt;
  return from_hex(text.substr(2));
}

std::string to_hex(std::string_view bytes) {
  return base::lower_hex({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()});
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]);
    const int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
  }
  return out;
}

}  // namespace tpujobs::db
