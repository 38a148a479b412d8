// The text forms in which PostgreSQL reads and writes values, for the few
// types whose form is not obvious: timestamps, arrays and bytea. The
// connection pins TimeZone to UTC and DateStyle to ISO, so these are the only
// forms that need handling.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tpujobs::db {

using TimePoint = std::chrono::system_clock::time_point;

// "2026-11-21 12:17:01.123456+00" (microsecond precision, as stored).
std::string format_timestamp(TimePoint time);

// Parses the ISO text of a timestamptz in UTC ("2026-11-21 12:17:01+00",
// optional fraction). Returns nullopt on anything else.
std::optional<TimePoint> parse_timestamp(std::string_view text);

// An array literal ('{"a","b",NULL}') with every element quoted, so any text
// (commas, quotes, braces, backslashes) survives; nullopt elements are NULL.
std::string array_literal(std::span<const std::optional<std::string>> elements);

// Decodes bytea output in hex format ("\x0a1b"). Returns nullopt when malformed.
std::optional<std::string> decode_bytea_hex(std::string_view text);

// Lower-case hex of arbitrary bytes, and back (nullopt when malformed).
std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace tpujobs::db
