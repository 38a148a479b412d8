// Reading a request as the routes of api/jobs_api.h do: its JSON body, its
// query parameters and path ids, each refused with the problem+json answer
// (400/415/422) that names what is wrong; and a result turned into an answer.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/http.h"
#include "api/job_service.h"
#include "api/router.h"

namespace tpujobs::api {

// Parses a JSON request body; on failure answers 400 (malformed), 415 (a
// body declared as something else: a form, text) or 422 (a string the
// database cannot hold) and returns nullopt.
std::optional<nlohmann::json> parse_body(const Request& request, const ResponseWriterPtr& writer);

// Whether a Content-Type may carry a CSV file as it is (text/csv and the
// like, or none).
bool declares_csv(std::string_view content_type);

// A Content-Type as the answer may show it: at most 64 bytes, printable.
std::string shown_type(std::string_view type);

// A decimal integer that is the whole of `text`; nullopt otherwise.
std::optional<std::int64_t> parse_int(std::string_view text);

// Text PostgreSQL can store: UTF-8 without U+0000.
bool storable_text(std::string_view text);

// Text query parameters end up in SQL parameters: refuse what PostgreSQL
// would refuse here (400) rather than let it refuse them.
bool utf8_query(const Request& request, const ResponseWriterPtr& writer);

// An optional integer query parameter within [min, max]: its value, or
// `absent` when the request has none; nullopt (having answered 400 naming
// the parameter) when it is malformed.
std::optional<std::int64_t> query_int(const Request& request, const ResponseWriterPtr& writer,
                                      std::string_view name, std::int64_t min, std::int64_t max,
                                      std::int64_t absent);

// The answer to a result: `ok_status` with its JSON, or the problem its
// error stands for.
Response answer(const base::Result<nlohmann::json>& result, int ok_status = 200);
// The same, for JSON already written as text (a view kept in memory, a list).
Response answer(base::Result<std::string> text);

// Job ids in paths are positive integers in canonical decimal (no sign, no
// leading zero: "/v1/jobs/01" is not job 1); anything else cannot exist
// (answered 404, nullopt).
std::optional<std::int64_t> job_id(const PathParams& params, const ResponseWriterPtr& writer);

// FNV-1a: the same spec (its canonical dump) or file always hashes the same.
std::string content_hash(std::string_view canonical);

// The request's Idempotency-Key header, the inner nullopt when it has none;
// nullopt, answered 400, when it is not a key.
std::optional<std::optional<std::string>> read_idempotency_key(const Request& request,
                                                               const ResponseWriterPtr& writer);

}  // namespace tpujobs::api
