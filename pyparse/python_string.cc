#include "pyparse/python_string.h"

#include <cctype>
#include <cstdint>

namespace tpujobs::pyparse {
namespace {

void append_utf8(std::uint32_t code, std::string* out) {
  if (code < 0x80) {
    out->push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code >> 6)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

// Reads `digits` hex digits at body[*i]; false when they are not there.
bool read_hex(std::string_view body, std::size_t* i, int digits, std::uint32_t* code) {
  if (*i + digits > body.size()) return false;
  *code = 0;
  for (int k = 0; k < digits; ++k) {
    const char c = body[*i + k];
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    *code = *code * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(c))
                                                        ? c - '0'
                                                        : std::tolower(c) - 'a' + 10);
  }
  *i += digits;
  return true;
}

// Decodes one escape starting after the backslash; false: not decoded here.
bool decode_escape(std::string_view body, std::size_t* i, std::string* out) {
  const char c = body[*i];
  ++*i;
  std::uint32_t code = 0;
  switch (c) {
    case '\n':
      return true;  // a line continuation
    case '\\':
      out->push_back('\\');
      return true;
    case '\'':
      out->push_back('\'');
      return true;
    case '"':
      out->push_back('"');
      return true;
    case 'a':
      out->push_back('\a');
      return true;
    case 'b':
      out->push_back('\b');
      return true;
    case 'f':
      out->push_back('\f');
      return true;
    case 'n':
      out->push_back('\n');
      return true;
    case 'r':
      out->push_back('\r');
      return true;
    case 't':
      out->push_back('\t');
      return true;
    case 'v':
      out->push_back('\v');
      return true;
    case 'x':
      if (!read_hex(body, i, 2, &code)) return false;
      append_utf8(code, out);
      return true;
    case 'u':
      if (!read_hex(body, i, 4, &code)) return false;
      append_utf8(code, out);
      return true;
    case 'U':
      if (!read_hex(body, i, 8, &code) || code > 0x10FFFF) return false;
      append_utf8(code, out);
      return true;
    default:
      break;
  }
  if (c >= '0' && c <= '7') {  // up to three octal digits
    code = static_cast<std::uint32_t>(c - '0');
    for (int k = 0; k < 2 && *i < body.size() && body[*i] >= '0' && body[*i] <= '7'; ++k, ++*i)
      code = code * 8 + static_cast<std::uint32_t>(body[*i] - '0');
    append_utf8(code, out);
    return true;
  }
  if (c == 'N') return false;  // \N{NAME}: needs the Unicode name table
  out->push_back('\\');        // an unknown escape stays as written
  out->push_back(c);
  return true;
}

}  // namespace

DecodedString decode_python_string(std::string_view literal) {
  DecodedString out;
  std::size_t prefix = 0;
  bool raw = false, bytes = false, formatted = false;
  while (prefix < literal.size() && std::isalpha(static_cast<unsigned char>(literal[prefix]))) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(literal[prefix])));
    raw |= c == 'r';
    bytes |= c == 'b';
    formatted |= c == 'f';
    ++prefix;
  }
  std::string_view rest = literal.substr(prefix);
  std::size_t quote = 0;
  if (rest.size() >= 6 && (rest.starts_with("'''") || rest.starts_with("\"\"\""))) {
    quote = 3;
  } else if (rest.size() >= 2 && (rest[0] == '\'' || rest[0] == '"')) {
    quote = 1;
  }
  if (quote == 0 || rest.substr(rest.size() - quote) != rest.substr(0, quote)) {
    out.kind = DecodedString::Kind::kNotConstant;
    return out;
  }
  if (bytes) {
    out.kind = DecodedString::Kind::kBytes;
    return out;
  }
  const std::string_view body = rest.substr(quote, rest.size() - 2 * quote);
  if (formatted) {  // without a replacement field an f-string is a constant
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '{' || body[i] == '}') {
        if (i + 1 < body.size() && body[i + 1] == body[i]) {
          ++i;
          continue;
        }
        out.kind = DecodedString::Kind::kNotConstant;
        return out;
      }
    }
  }
  for (std::size_t i = 0; i < body.size();) {
    if (body[i] == '\\' && !raw && i + 1 < body.size()) {
      ++i;
      if (!decode_escape(body, &i, &out.text)) {
        out.kind = DecodedString::Kind::kNotConstant;
        out.text.clear();
        return out;
      }
      continue;
    }
    if (formatted && (body[i] == '{' || body[i] == '}')) ++i;  // {{ is {
    if (raw && body[i] == '\\' && i + 1 < body.size()) {       // r'\'' keeps both
      out.text.push_back(body[i++]);
    }
    out.text.push_back(body[i++]);
  }
  return out;
}

}  // namespace tpujobs::pyparse
