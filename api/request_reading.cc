#include "api/request_reading.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "api/problem.h"
#include "api/public_error.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 64;

// nlohmann's parser has no depth limit; refuse absurd nesting before it.
bool nesting_within(std::string_view body, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// The path ("labels.k", "env[2]") of the first string, key or value, that
// holds U+0000, which PostgreSQL can store in neither text nor jsonb;
// nullopt when there is none.
std::optional<std::string> nul_string_path(const json& value, const std::string& path) {
  auto has_nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  if (value.is_string()) {
    if (has_nul(value.get_ref<const std::string&>())) return path;
  } else if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      const std::string member_path = path.empty() ? key : path + "." + key;
      if (has_nul(key)) return member_path;
      if (auto found = nul_string_path(member, member_path)) return found;
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (auto found = nul_string_path(value[i], path + "[" + std::to_string(i) + "]"))
        return found;
    }
  }
  return std::nullopt;
}

constexpr const char* kJsonCurl =
    "curl -H 'Content-Type: application/json' --data-binary @examples/digits-mlp.json "
    "localhost:8080/v1/jobs";

// The media type of a Content-Type, lowercased and without parameters;
// nullopt when there is none (no header, or an empty one).
std::optional<std::string> media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  if (type.empty() && content_type.find(';') == std::string_view::npos) return std::nullopt;
  std::string lower(type);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// Whether a Content-Type declares JSON: application/json or any
// application/...+json (RFC 6839), whatever its parameters (charset=utf-8).
// A body without a Content-Type is read as JSON as well: some clients send
// none, and nothing else could be meant.
bool declares_json(std::string_view content_type) {
  const std::optional<std::string> type = media_type(content_type);
  if (!type) return true;
  constexpr std::string_view kApplication = "application/";
  if (type->rfind(kApplication, 0) != 0) return false;
  const std::string_view subtype = std::string_view(*type).substr(kApplication.size());
  return subtype == "json" || (subtype.size() > 5 && subtype.ends_with("+json"));
}

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing
// past U+10FFFF.
bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (c < 0x80) {
      extra = 0;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (extra > 0 && i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      const unsigned char lo = k == 1 ? low : 0x80;
      const unsigned char hi = k == 1 ? high : 0xBF;
      if (next < lo || next > hi) return false;
    }
    i += extra + 1;
  }
  return true;
}

}  // namespace

// Whether a Content-Type may carry a CSV file as it is: text/csv (RFC 7111)
// and its application/csv alias, text/plain, application/octet-stream, or
// none. A form (curl -d, which also strips the file's newlines; curl -F,
// which wraps it in a multipart body) or JSON would be stored as something
// else than the file.
bool declares_csv(std::string_view content_type) {
  const std::optional<std::string> type = media_type(content_type);
  return !type || *type == "text/csv" || *type == "application/csv" || *type == "text/plain" ||
         *type == "application/octet-stream";
}

// A Content-Type as the answer may show it: at most 64 bytes, printable.
std::string shown_type(std::string_view type) {
  std::string shown(type.substr(0, 64));
  for (char& c : shown) {
    if (c < 0x20 || c > 0x7e) c = '?';  // headers are bytes; the answer is UTF-8 JSON
  }
  return shown;
}

// Parses a JSON request body; on failure answers 400 (malformed), 415 (a
// body declared as something else: a form, text) or 422 (a string the
// database cannot hold) and returns nullopt.
std::optional<json> parse_body(const Request& request, const ResponseWriterPtr& writer) {
  if (request.body.empty()) {
    writer->respond(problem(400, "the request body is empty; send the job spec as JSON",
                            {{"hint", kJsonCurl}}));
    return std::nullopt;
  }
  if (const std::string_view type = request.header("content-type"); !declares_json(type)) {
    // curl -d sends application/x-www-form-urlencoded: reading that as JSON
    // would accept what a form or a proxy could have rewritten.
    writer->respond(problem(
        415, "the body is sent as '" + shown_type(type) + "'; this route reads JSON",
        {{"field", "Content-Type"},
         {"hint",
          std::string("send the header Content-Type: application/json, e.g. ") + kJsonCurl}}));
    return std::nullopt;
  }
  if (!nesting_within(request.body, kMaxJsonDepth)) {
    writer->respond(problem(
        400, "the JSON body is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
    return std::nullopt;
  }
  try {
    json body = json::parse(request.body);
    // A JSON text holds U+0000 only as the escape \u0000: most bodies are
    // not walked at all.
    std::optional<std::string> path;
    if (request.body.find("\\u0000") != std::string::npos) path = nul_string_path(body, "");
    if (path) {
      // One such value would fail the whole batch of submits it is committed in.
      writer->respond(spec_problems({{*path, "contains the character U+0000 (NUL)",
                                      "remove it: no text field may contain U+0000"}}));
      return std::nullopt;
    }
    return body;
  } catch (const json::parse_error& e) {
    writer->respond(problem(400, std::string("malformed JSON: ") + e.what(),
                            {{"hint", "check the body with `python3 -m json.tool < spec.json`"},
                             {"position", e.byte}}));
    return std::nullopt;
  } catch (const json::exception& e) {  // e.g. a number beyond a double's range
    writer->respond(problem(400, std::string("malformed JSON: ") + e.what(),
                            {{"hint", "numbers must fit a 64-bit float"}}));
    return std::nullopt;
  }
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Text PostgreSQL can store: UTF-8 without U+0000.
bool storable_text(std::string_view text) {
  return valid_utf8(text) && text.find('\0') == std::string_view::npos;
}

// Text query parameters end up in SQL parameters: refuse what PostgreSQL
// would refuse here (400) rather than let it refuse them.
bool utf8_query(const Request& request, const ResponseWriterPtr& writer) {
  for (const auto& [name, value] : request.query) {
    if (!storable_text(name) || !storable_text(value)) {
      const bool name_ok = storable_text(name);
      writer->respond(problem(400,
                              "query parameter '" + std::string(name_ok ? name : "?") +
                                  "' is not valid UTF-8 text (or contains U+0000)",
                              {{"field", name_ok ? name : std::string("query")}}));
      return false;
    }
  }
  return true;
}

// Reads an optional integer query parameter within [min, max]. Returns
// false (having answered 400 naming the parameter) when it is malformed.
std::optional<std::int64_t> query_int(const Request& request, const ResponseWriterPtr& writer,
                                      std::string_view name, std::int64_t min, std::int64_t max,
                                      std::int64_t absent) {
  std::optional<std::string> text = request.query_value(name);
  if (!text) return absent;
  std::optional<std::int64_t> n = parse_int(*text);
  if (!n || *n < min || *n > max) {
    writer->respond(problem(400,
                            std::string(name) + " must be an integer from " + std::to_string(min) +
                                " to " + std::to_string(max),
                            {{"field", name}}));
    return std::nullopt;
  }
  return n;
}

Response answer(base::Result<std::string> text) {
  if (!text.ok()) return answer(base::Result<nlohmann::json>(text.error()));
  Response response;
  response.body = std::move(*text);
  return response;
}

Response answer(const base::Result<nlohmann::json>& result, int ok_status) {
  if (result.ok()) return json_response(ok_status, *result);
  switch (result.code()) {
    case base::ErrorCode::kNotFound:
      return problem(404, result.error().message);
    case base::ErrorCode::kConflict:
      return problem(409, result.error().message);
    case base::ErrorCode::kInvalid:
      return problem(422, result.error().message);
    case base::ErrorCode::kUnavailable:
      return problem(503, public_database_detail(result.error().message))
          .header("Retry-After", "1");
    case base::ErrorCode::kInternal:
      break;
  }
  return problem(500, public_internal_detail(result.error().message));
}

// Job ids in paths are positive integers in canonical decimal (no sign, no
// leading zero: "/v1/jobs/01" is not job 1); anything else cannot exist.
std::optional<std::int64_t> job_id(const PathParams& params, const ResponseWriterPtr& writer) {
  auto it = params.find("id");
  const bool canonical = it != params.end() && !it->second.empty() && it->second.front() >= '1' &&
                         it->second.front() <= '9';
  std::optional<std::int64_t> id = canonical ? parse_int(it->second) : std::nullopt;
  if (!id || *id <= 0) {
    writer->respond(
        problem(404, "no job '" + (it == params.end() ? "" : it->second.substr(0, 64)) + "'"));
    return std::nullopt;
  }
  return id;
}

// FNV-1a: the same spec (its canonical dump) or file always hashes the same.
std::string content_hash(std::string_view canonical) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : canonical) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

// The request's Idempotency-Key header into *key (nullopt when absent);
// false, answered 400, when it is not a key.
std::optional<std::optional<std::string>> read_idempotency_key(const Request& request,
                                                               const ResponseWriterPtr& writer) {
  const std::string_view k = request.header("idempotency-key");
  if (k.empty()) return std::optional<std::string>();
  if (k.size() > 255) {
    writer->respond(problem(400, "the Idempotency-Key header is longer than 255 characters",
                            {{"field", "Idempotency-Key"}}));
    return std::nullopt;
  }
  if (!std::all_of(k.begin(), k.end(), [](char c) { return c >= 0x20 && c < 0x7F; })) {
    writer->respond(
        problem(400, "the Idempotency-Key header must be printable ASCII",
                {{"field", "Idempotency-Key"},
                 {"hint", "use e.g. the CI pipeline and step ids: pipeline-1234-train"}}));
    return std::nullopt;
  }
  return std::optional<std::string>(std::string(k));
}

}  // namespace tpujobs::api
