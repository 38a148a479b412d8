#include "lightning/python.h"

#include <algorithm>
#include <charconv>

namespace tpujobs::lightning {

namespace {

// The next code point of UTF-8 `text` at *at, advancing *at; nullopt (and
// one byte consumed) for a byte that starts no valid sequence.
std::optional<char32_t> next_code_point(std::string_view text, std::size_t* at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(*at);
  int length = 0;
  char32_t code_point = 0;
  if (lead < 0x80) {
    ++*at;
    return lead;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
  }
  if (length == 0 || *at + length > text.size()) {
    ++*at;
    return std::nullopt;
  }
  for (int i = 1; i < length; ++i) {
    if ((byte(*at + i) & 0xC0) != 0x80) {
      ++*at;
      return std::nullopt;
    }
    code_point = (code_point << 6) | (byte(*at + i) & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  const char32_t smallest = length == 3 ? 0x800 : length == 4 ? 0x10000 : 0x80;
  if (code_point < smallest || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    ++*at;
    return std::nullopt;
  }
  *at += length;
  return code_point;
}

// \x0a, \u2028, \U000e0001: a code point as repr() escapes it.
std::string hex_escape(char32_t code_point) {
  const char* prefix = code_point <= 0xFF ? "\\x" : code_point <= 0xFFFF ? "\\u" : "\\U";
  const int digits = code_point <= 0xFF ? 2 : code_point <= 0xFFFF ? 4 : 8;
  std::string out = prefix;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out += "0123456789abcdef"[(code_point >> shift) & 0xF];
  }
  return out;
}

}  // namespace

// CPython's unicode_repr: single quotes unless the text holds a single quote
// and no double quote; the quote used and the backslash escaped; \t \n \r
// by name; other non-printable code points (py_printable) as \xNN, \uNNNN or
// \UNNNNNNNN; printable text, ASCII or not, as it is. A byte that is not
// UTF-8 (a JSON string never holds one) is shown as Python's surrogateescape
// decoding shows it, \udcNN.
std::string py_repr(std::string_view text) {
  const bool double_quotes =
      text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t start = at;
    const std::optional<char32_t> code_point = next_code_point(text, &at);
    if (!code_point) {
      out += hex_escape(0xDC00 + static_cast<unsigned char>(text[start]));
      continue;
    }
    const char32_t c = *code_point;
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (!py_printable(c)) {
      out += hex_escape(c);
    } else {
      out.append(text.substr(start, at - start));
    }
  }
  out += quote;
  return out;
}

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

base::Result<std::vector<std::int64_t>, std::string> py_int_list(std::string_view text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view piece = text.substr(start, comma - start);
    if (!piece.empty()) {
      const std::optional<std::int64_t> value = py_int(piece);
      if (!value) return std::string(strip(piece));
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
