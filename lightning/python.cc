#include "lightning/python.h"

#include <algorithm>
#include <charconv>

namespace tpujobs::lightning {

std::string py_repr(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string py_list(const std::vector<std::int64_t>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(list[i]);
  }
  return out + "]";
}

// repr(value) as Lightning prints it with {value!r}.
std::string py_repr(const DeviceValue& value) {
  switch (value.kind) {
    case DeviceValue::Kind::kAbsent:
      return "None";
    case DeviceValue::Kind::kInt:
      return std::to_string(value.number);
    case DeviceValue::Kind::kString:
      return py_repr(value.text);
    case DeviceValue::Kind::kList:
      return py_list(value.list);
    case DeviceValue::Kind::kOther:
      return value.python_repr;
  }
  return "None";
}

// str(value) as Lightning prints it with {value}.
std::string py_str(const DeviceValue& value) {
  return value.kind == DeviceValue::Kind::kString ? value.text : py_repr(value);
}

std::string_view strip(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const std::size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}

// Python's int(text) for the texts users write: optional sign, digits,
// surrounding whitespace. nullopt when Python would raise (or overflow).
std::optional<std::int64_t> py_int(std::string_view text) {
  text = strip(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Splits "0, 1," like Lightning: empty pieces are skipped. nullopt names the
// first piece Python's int() refuses, through *bad.
std::optional<std::vector<std::int64_t>> py_int_list(std::string_view text, std::string* bad) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view piece = text.substr(start, comma - start);
    if (!piece.empty()) {
      const std::optional<std::int64_t> value = py_int(piece);
      if (!value) {
        *bad = std::string(strip(piece));
        return std::nullopt;
      }
      out.push_back(*value);
    }
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string fill(std::string_view text,
                 std::initializer_list<std::pair<std::string_view, std::string>> values) {
  std::string out(text);
  for (const auto& [name, value] : values) {
    const std::string key = "{" + std::string(name) + "}";
    for (std::size_t at = out.find(key); at != std::string::npos;
         at = out.find(key, at + value.size())) {
      out.replace(at, key.size(), value);
    }
  }
  return out;
}

}  // namespace tpujobs::lightning
