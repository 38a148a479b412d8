#include "api/url.h"

namespace tpujobs::api {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode_or_keep(std::string_view in, bool plus_is_space) {
  base::Result<std::string> decoded = percent_decode(in, plus_is_space);
  return decoded.ok() ? std::move(*decoded) : std::string(in);
}

}  // namespace

base::Result<std::string> percent_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      const int hi = i + 2 < in.size() ? hex_value(in[i + 1]) : -1;
      const int lo = i + 2 < in.size() ? hex_value(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return base::make_error(base::ErrorCode::kInvalid,
                                "a malformed %-escape at byte " + std::to_string(i));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

RequestTarget split_target(std::string_view target) {
  RequestTarget out;
  const std::size_t question = target.find('?');
  out.path = decode_or_keep(target.substr(0, question), false);
  if (question == std::string_view::npos) return out;
  std::string_view rest = target.substr(question + 1);
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    std::string key = decode_or_keep(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : decode_or_keep(pair.substr(eq + 1), true);
    out.query.emplace(std::move(key), std::move(value));
  }
  return out;
}

}  // namespace tpujobs::api
