#include "api/jobs_api.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

#include "api/checks_api.h"
#include "api/job_spec.h"
#include "api/list_cap.h"
#include "api/notify.h"
#include "api/problem.h"
#include "api/public_error.h"
#include "api/sweep.h"

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

constexpr const char* kCsvCurl =
    "curl -H 'Content-Type: text/csv' --data-binary @data.csv "
    "'localhost:8080/v1/datasets?name=mydata'";

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
bool query_int(const Request& request, const ResponseWriterPtr& writer, std::string_view name,
               std::int64_t min, std::int64_t max, std::int64_t* value) {
  std::optional<std::string> text = request.query_value(name);
  if (!text) return true;
  std::optional<std::int64_t> n = parse_int(*text);
  if (!n || *n < min || *n > max) {
    writer->respond(problem(400,
                            std::string(name) + " must be an integer from " + std::to_string(min) +
                                " to " + std::to_string(max),
                            {{"field", name}}));
    return false;
  }
  *value = *n;
  return true;
}

Response answer(const JsonResult& result, int ok_status = 200) {
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

struct CheckedSpec {
  json body;
  std::optional<JobSpec> spec;
  Resolution resolution;
  json estimate;
  std::vector<FieldError> errors;
  std::vector<std::string> warnings;
  // The check could not be made (the database is away): answered as such.
  std::optional<base::Error> failure;
};

// Each job named in depends_on must exist, be the tenant's, and so (ids
// grow) have been submitted before this one.
void check_dependencies_exist(const std::string& tenant, JobService& service,
                              CheckedSpec* checked) {
  const std::vector<scheduler::Dependency>& dependencies = checked->spec->depends_on;
  if (dependencies.empty()) return;
  std::vector<std::int64_t> ids;
  for (const scheduler::Dependency& d : dependencies) ids.push_back(d.job);
  base::Result<std::map<std::int64_t, base::JobState>> states = service.job_states(tenant, ids);
  if (!states.ok()) {
    checked->failure = states.error();
    return;
  }
  for (std::size_t i = 0; i < dependencies.size(); ++i) {
    if (states->contains(dependencies[i].job)) continue;
    checked->errors.push_back(
        {"depends_on[" + std::to_string(i) + "].job",
         "job " + std::to_string(dependencies[i].job) + " does not exist",
         "a job may depend only on jobs of its tenant submitted before it (GET /v1/jobs "
         "lists them); submit the job it needs first"});
  }
}

// A notify URL must be on the admin's allow-list, and the tenant needs a
// secret to sign the deliveries with.
void check_notify(const std::string& tenant, NotificationService* notifications,
                  CheckedSpec* checked) {
  if (!checked->spec->notify) return;
  if (!notifications) {
    checked->errors.push_back({"notify", "this service does not send notifications", ""});
    return;
  }
  base::Result<std::vector<std::string>> allowlist = notifications->allowlist();
  if (!allowlist.ok()) {
    checked->failure = allowlist.error();
    return;
  }
  const HttpUrl url = *parse_notify_url(checked->spec->notify->url).url;
  const std::string authority = url.host + ":" + std::to_string(url.port);
  if (!notify_url_allowed(url, *allowlist)) {
    checked->errors.push_back(
        {"notify.url", "http://" + authority + " is not on the notification allow-list",
         "an admin allows it with `tpujobs notify-allow " + authority +
             "` (PUT /v1/notifications/allowlist) or `tpujobs serve --notify-allow " + authority +
             "`; GET /v1/notifications/allowlist shows the list"});
  }
  base::Result<bool> has_secret = notifications->has_secret(tenant);
  if (!has_secret.ok()) {
    checked->failure = has_secret.error();
    return;
  }
  if (!*has_secret) {
    checked->errors.push_back(
        {"notify", "tenant '" + tenant + "' has no secret to sign notifications with",
         "create one (it is shown once) with `tpujobs notify-secret --rotate` (POST "
         "/v1/notifications/secret), then submit again"});
  }
}

// Everything submit and :validate share: parse, check the jobs it depends
// on, resolve the trainer settings against the pool, dry-run the executor.
CheckedSpec check_spec(json body, const std::string& tenant, JobService& service,
                       NotificationService* notifications) {
  CheckedSpec checked;
  checked.body = std::move(body);
  checked.spec = parse_job_spec(checked.body, &checked.errors);
  if (!checked.spec) return checked;
  check_dependencies_exist(tenant, service, &checked);
  if (checked.failure) return checked;
  check_notify(tenant, notifications, &checked);
  if (checked.failure) return checked;
  checked.resolution = resolve(checked.spec->trainer, service.capacity());
  checked.warnings = checked.resolution.warnings;
  for (const lightning::FieldProblem& p : checked.resolution.errors) {
    checked.errors.push_back({p.field, p.message, p.hint});
  }
  if (!checked.errors.empty()) return checked;
  apply_resolution(checked.resolution, &*checked.spec);
  JobService::Estimate estimate = service.estimate(*checked.spec, checked.resolution);
  checked.estimate = std::move(estimate.estimate);
  for (std::string& advice : estimate.advice) checked.warnings.push_back(std::move(advice));
  if (estimate.error) checked.errors.push_back(*estimate.error);
  return checked;
}

std::string content_type_for(std::string_view path) {
  auto ends = [&](std::string_view s) {
    return path.size() >= s.size() && path.substr(path.size() - s.size()) == s;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

}  // namespace

void LatencyHistogram::observe(const std::string& route, const std::string& method, int status,
                               double seconds) {
  const std::string key =
      "method=\"" + method + "\",route=\"" + route + "\",code=\"" + std::to_string(status) + "\"";
  base::MutexLock lock(mutex_);
  Series& s = series_[key];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++s.buckets[i];
  }
  ++s.count;
  s.sum += seconds;
}

std::string LatencyHistogram::prometheus() const {
  std::string out =
      "# HELP tpujobs_http_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE tpujobs_http_request_duration_seconds histogram\n";
  base::MutexLock lock(mutex_);
  char number[64];
  for (const auto& [labels, s] : series_) {
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      std::snprintf(number, sizeof number, "%g", kBuckets[i]);
      out += "tpujobs_http_request_duration_seconds_bucket{" + labels + ",le=\"" + number + "\"} " +
             std::to_string(s.buckets[i]) + "\n";
    }
    out += "tpujobs_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " +
           std::to_string(s.count) + "\n";
    std::snprintf(number, sizeof number, "%.6f", s.sum);
    out += "tpujobs_http_request_duration_seconds_sum{" + labels + "} " + number + "\n";
    out += "tpujobs_http_request_duration_seconds_count{" + labels + "} " +
           std::to_string(s.count) + "\n";
  }
  return out;
}

JobsApi::JobsApi(JobService& service, ApiOptions options)
    : service_(service),
      options_(std::move(options)),
      followers_(StreamSlots::create("log followers", "tpujobs_log_followers", options_.followers)),
      waiters_(
          StreamSlots::create("long-poll waiters", "tpujobs_wait_requests", options_.waiters)) {
  add_routes();
}

void JobsApi::handle(Request request, ResponseWriterPtr writer) {
  const Route* route = nullptr;
  PathParams params;
  std::string allowed;
  switch (router_.match(request.method, request.path, &route, &params, &allowed)) {
    case Router::Match::kFound:
      if (!utf8_query(request, writer) || !authorize(request, *route, writer)) return;
      if (options_.limits && route->access != Access::kOpen) {
        if (auto refused = options_.limits->admit_request(request.tenant)) {
          writer->respond(std::move(*refused));
          return;
        }
      }
      try {
        route->handler(request, params, writer);
      } catch (const std::exception& e) {
        writer->respond(problem(500, public_internal_detail(e.what())));
      }
      return;
    case Router::Match::kNoMethod:
      writer->respond(problem(405,
                              request.method.substr(0, 16) + " is not allowed on " +
                                  request.path.substr(0, 256),
                              {{"allowed", allowed}})
                          .header("Allow", allowed));
      return;
    case Router::Match::kNoPath:
      if (request.method == "GET" || request.method == "HEAD") {
        writer->respond(serve_static(request));
        return;
      }
      writer->respond(problem(
          404, "no route for " + request.method.substr(0, 16) + " " + request.path.substr(0, 256),
          {{"hint", "GET /openapi.json lists every route"}}));
      return;
  }
}

void JobsApi::completed(std::string_view method, std::string_view path, int status,
                        std::chrono::steady_clock::duration elapsed) {
  std::string route = router_.pattern_of(method, path);
  if (route.empty()) route = status == 404 ? "unmatched" : "static";
  latency_.observe(route, std::string(method.substr(0, 8)), status,
                   std::chrono::duration<double>(elapsed).count());
}

bool JobsApi::authorize(Request& request, const Route& route, const ResponseWriterPtr& writer) {
  if (route.access == Access::kOpen) return true;
  std::string token;
  if (std::string_view auth = request.header("authorization"); !auth.empty()) {
    if (auth.size() < 8 ||
        !std::equal(auth.begin(), auth.begin() + 7, "bearer ", [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      writer->respond(
          problem(401, "the Authorization header must be `Bearer <token>`",
                  {{"hint", "create a token with `tpujobs token create --tenant NAME`"}})
              .header("WWW-Authenticate", "Bearer realm=\"tpujobs\""));
      return false;
    }
    token = std::string(auth.substr(7));
  } else if (auto query = request.query_value("access_token")) {
    token = *query;  // EventSource cannot send headers
  }
  Principal principal{options_.default_tenant, true};
  if (!token.empty()) {
    auto found = service_.authenticate(token);
    if (!found.ok()) {
      writer->respond(
          problem(503, "cannot check the token: " + public_database_detail(found.error().message))
              .header("Retry-After", "1"));
      return false;
    }
    if (!*found) {
      writer->respond(
          problem(401, "unknown or revoked token",
                  {{"hint", "create a token with `tpujobs token create --tenant NAME`"}})
              .header("WWW-Authenticate", "Bearer realm=\"tpujobs\", error=\"invalid_token\""));
      return false;
    }
    principal = **found;
  } else if (service_.auth_required()) {
    writer->respond(problem(401, "this service requires a bearer token",
                            {{"hint",
                              "send `Authorization: Bearer <token>`; an admin creates one with "
                              "`tpujobs token create --tenant NAME`"}})
                        .header("WWW-Authenticate", "Bearer realm=\"tpujobs\""));
    return false;
  }
  if (route.access == Access::kAdmin && !principal.admin) {
    writer->respond(
        problem(403, "pool operations need an admin token",
                {{"hint", "ask an admin: `tpujobs token create --tenant NAME --role admin`"}}));
    return false;
  }
  request.tenant = std::move(principal.tenant);
  request.admin = principal.admin;
  return true;
}

Response JobsApi::serve_static(const Request& request) {
  std::string path = request.path == "/" ? "/index.html" : request.path;
  if (path.find("..") != std::string::npos || path.find('\\') != std::string::npos) {
    return problem(400, "path traversal is not allowed");
  }
  std::string_view file = options_.static_file ? options_.static_file(path) : std::string_view();
  if (file.empty()) {
    return problem(404, "no route or file for GET " + request.path.substr(0, 256),
                   {{"hint", "GET /openapi.json lists every route"}});
  }
  Response response;
  response.content_type = content_type_for(path);
  response.body = std::string(file);
  response.header("Cache-Control", path == "/index.html" ? "no-cache" : "public, max-age=300");
  return response;
}

namespace {

// The quota check a submit adds to the spec's own.
void check_quota(const std::string& tenant, JobService& service, CheckedSpec* checked) {
  if (!checked->errors.empty()) return;
  const int cores = checked->resolution.request.cores();
  if (std::optional<int> limit = service.quota(tenant); limit && cores > *limit) {
    checked->errors.push_back(
        {"trainer.devices",
         "the job needs " + std::to_string(cores) + " TPU cores but tenant '" + tenant +
             "' may use at most " + std::to_string(*limit),
         "ask for fewer devices or hosts, or ask an admin to raise the quota"});
  }
}

SubmitRequest submit_request(const std::string& tenant, CheckedSpec checked,
                             std::optional<std::string> key) {
  SubmitRequest submit;
  submit.tenant = tenant;
  submit.spec = std::move(*checked.spec);
  submit.spec_text = checked.body.dump();
  submit.spec_hash = content_hash(submit.spec_text);
  submit.spec_json = std::move(checked.body);
  submit.resolution = checked.resolution;
  submit.estimate = std::move(checked.estimate);
  submit.warnings = std::move(checked.warnings);
  submit.idempotency_key = std::move(key);
  return submit;
}

// The answer to a submit that did not create or find its job(s); nullopt
// when it did.
std::optional<Response> submit_failure(const SubmitOutcome& outcome) {
  switch (outcome.kind) {
    case SubmitOutcome::Kind::kCreated:
    case SubmitOutcome::Kind::kExisting:
      return std::nullopt;
    case SubmitOutcome::Kind::kConflict:
      return problem(
          409, outcome.message,
          {{"hint", "an Idempotency-Key names one job spec; use a new key for a different spec"},
           {"job_id", outcome.id}});
    case SubmitOutcome::Kind::kUnavailable:
      return problem(503, public_database_detail(outcome.message),
                     {{"hint", "retry after the database is back"}})
          .header("Retry-After", "1");
    case SubmitOutcome::Kind::kError:
      break;
  }
  return problem(500, public_internal_detail(outcome.message));
}

// The request's Idempotency-Key header into *key (nullopt when absent);
// false, answered 400, when it is not a key.
bool read_idempotency_key(Request& request, const ResponseWriterPtr& writer,
                          std::optional<std::string>* key) {
  const std::string_view k = request.header("idempotency-key");
  if (k.empty()) return true;
  if (k.size() > 255) {
    writer->respond(problem(400, "the Idempotency-Key header is longer than 255 characters",
                            {{"field", "Idempotency-Key"}}));
    return false;
  }
  if (!std::all_of(k.begin(), k.end(), [](char c) { return c >= 0x20 && c < 0x7F; })) {
    writer->respond(
        problem(400, "the Idempotency-Key header must be printable ASCII",
                {{"field", "Idempotency-Key"},
                 {"hint", "use e.g. the CI pipeline and step ids: pipeline-1234-train"}}));
    return false;
  }
  *key = std::string(k);
  return true;
}

}  // namespace

void JobsApi::submit(Request& request, ResponseWriterPtr writer) {
  std::optional<json> body = parse_body(request, writer);
  if (!body) return;
  std::optional<std::string> key;
  if (!read_idempotency_key(request, writer, &key)) return;
  if (body->is_object() && body->contains("sweep")) {
    submit_sweep(request, std::move(*body), std::move(key), writer);
    return;
  }
  CheckedSpec checked =
      check_spec(std::move(*body), request.tenant, service_, options_.notifications);
  if (checked.failure) {
    writer->respond(answer(JsonResult(*checked.failure)));
    return;
  }
  check_quota(request.tenant, service_, &checked);
  if (!checked.errors.empty()) {
    writer->respond(spec_problems(checked.errors, checked.warnings));
    return;
  }
  if (options_.limits) {
    if (auto refused = options_.limits->admit_submit(request.tenant, 1, false)) {
      writer->respond(std::move(*refused));
      return;
    }
  }
  service_.submit(submit_request(request.tenant, std::move(checked), std::move(key)),
                  [writer](SubmitOutcome outcome) {
                    if (std::optional<Response> failure = submit_failure(outcome)) {
                      writer->respond(std::move(*failure));
                      return;
                    }
                    Response response;
                    response.status = outcome.kind == SubmitOutcome::Kind::kCreated ? 201 : 200;
                    response.body = std::move(outcome.job);
                    writer->respond(std::move(
                        response.header("Location", "/v1/jobs/" + std::to_string(outcome.id))));
                  });
}

std::optional<std::vector<SubmitRequest>> JobsApi::check_sweep(
    const std::string& tenant, const json& body, const std::optional<std::string>& key,
    const ResponseWriterPtr& writer) {
  std::vector<FieldError> errors;
  // The first child alone first: a spec wrong in every child (unknown
  // fields, a bad type) costs one copy and one check, not 256.
  std::vector<SweepChild> children = expand_sweep(body, &errors, 1);
  if (!errors.empty()) {
    writer->respond(spec_problems(errors, {}));
    return std::nullopt;
  }
  // Each child validated on its own; its errors say which child.
  constexpr std::size_t kMaxErrors = 50;
  std::vector<SubmitRequest> requests;
  std::vector<std::string> warnings;
  for (std::size_t n = 0; n < children.size(); ++n) {
    SweepChild& child = children[n];
    CheckedSpec checked =
        check_spec(std::move(child.spec), tenant, service_, options_.notifications);
    if (checked.failure) {
      writer->respond(answer(JsonResult(*checked.failure)));
      return std::nullopt;
    }
    check_quota(tenant, service_, &checked);
    for (FieldError& e : checked.errors) {
      if (errors.size() == kMaxErrors) break;
      e.message = "sweep child " + std::to_string(child.index) + " " + child.values.dump() + ": " +
                  e.message;
      errors.push_back(std::move(e));
    }
    if (!errors.empty()) break;  // the sweep is refused: the other children need no check
    if (warnings.empty()) warnings = checked.warnings;
    std::optional<std::string> child_key;
    if (key) child_key = *key + "#" + std::to_string(child.index);
    SubmitRequest request = submit_request(tenant, std::move(checked), std::move(child_key));
    request.array_index = child.index;
    request.array_values = std::move(child.values);
    requests.push_back(std::move(request));
    if (n == 0) children = expand_sweep(body, &errors);  // the first is valid: now the rest
  }
  if (!errors.empty()) {
    writer->respond(spec_problems(errors, warnings));
    return std::nullopt;
  }
  return requests;
}

void JobsApi::submit_sweep(Request& request, json body, std::optional<std::string> key,
                           ResponseWriterPtr writer) {
  std::optional<std::vector<SubmitRequest>> children =
      check_sweep(request.tenant, body, key, writer);
  if (!children) return;
  if (options_.limits) {  // the whole sweep, or none of it
    if (auto refused = options_.limits->admit_submit(
            request.tenant, static_cast<std::int64_t>(children->size()), true)) {
      writer->respond(std::move(*refused));
      return;
    }
  }
  service_.submit_array(std::move(*children), [writer](std::vector<SubmitOutcome> outcomes) {
    bool created = false;
    json jobs = json::array();
    for (SubmitOutcome& outcome : outcomes) {
      if (std::optional<Response> failure = submit_failure(outcome)) {
        writer->respond(std::move(*failure));
        return;
      }
      created = created || outcome.kind == SubmitOutcome::Kind::kCreated;
      jobs.push_back(json::parse(outcome.job, nullptr, false));
    }
    const std::int64_t array = outcomes.front().array_id;
    Response response = json_response(
        created ? 201 : 200,
        {{"array", {{"id", array}, {"size", outcomes.size()}}}, {"jobs", std::move(jobs)}});
    writer->respond(
        std::move(response.header("Location", "/v1/jobs?array=" + std::to_string(array))));
  });
}

void JobsApi::validate(Request& request, ResponseWriterPtr writer) {
  std::optional<json> body = parse_body(request, writer);
  if (!body) return;
  if (body->is_object() && body->contains("sweep")) {
    std::optional<std::vector<SubmitRequest>> children =
        check_sweep(request.tenant, *body, std::nullopt, writer);
    if (!children) return;
    json values = json::array();
    for (const SubmitRequest& child : *children) values.push_back(child.array_values);
    writer->respond(
        json_response(200, {{"valid", true},
                            {"lightning_version", children->front().resolution.lightning_version},
                            {"warnings", children->front().warnings},
                            {"resolved", resolution_json(children->front().resolution)},
                            {"estimate", children->front().estimate},
                            {"sweep", {{"size", children->size()}, {"children", values}}}}));
    return;
  }
  CheckedSpec checked =
      check_spec(std::move(*body), request.tenant, service_, options_.notifications);
  if (checked.failure) {
    writer->respond(answer(JsonResult(*checked.failure)));
    return;
  }
  check_quota(request.tenant, service_, &checked);  // as submit does
  if (!checked.errors.empty()) {
    Response response = spec_problems(checked.errors, checked.warnings);
    json payload = json::parse(response.body);
    payload["valid"] = false;
    // The rules the errors come from (unset when the spec did not parse).
    if (!checked.resolution.lightning_version.empty()) {
      payload["lightning_version"] = checked.resolution.lightning_version;
    }
    if (!checked.estimate.is_null()) payload["estimate"] = checked.estimate;
    response.body = payload.dump();
    writer->respond(std::move(response));
    return;
  }
  writer->respond(json_response(200, {{"valid", true},
                                      {"lightning_version", checked.resolution.lightning_version},
                                      {"warnings", checked.warnings},
                                      {"resolved", resolution_json(checked.resolution)},
                                      {"estimate", checked.estimate}}));
}

void JobsApi::usage(Request& request, ResponseWriterPtr writer) {
  const auto now = std::chrono::system_clock::now();
  UsageQuery query;
  query.to = now;
  query.from = now - std::chrono::hours(24);
  for (auto [name, target] : {std::pair{"from", &query.from}, std::pair{"to", &query.to}}) {
    std::optional<std::string> text = request.query_value(name);
    if (!text) continue;
    std::optional<std::chrono::system_clock::time_point> time = parse_usage_time(*text, now);
    if (!time) {
      writer->respond(problem(
          400,
          std::string(name) + " must be a UTC time or an age, got '" + text->substr(0, 64) + "'",
          {{"field", name}, {"hint", "e.g. 2026-11-23T10:00:00Z, or 24h for a day ago"}}));
      return;
    }
    *target = *time;
  }
  if (query.from >= query.to) {
    writer->respond(problem(400, "from must be before to",
                            {{"field", "from"}, {"hint", "the window is [from, to)"}}));
    return;
  }
  const std::string group_by = request.query_value("group_by").value_or("tenant");
  if (group_by != "tenant" && group_by != "label") {
    writer->respond(
        problem(400, "group_by must be tenant or label, got '" + group_by.substr(0, 32) + "'",
                {{"field", "group_by"},
                 {"hint", "group_by=label groups by each key=value; add label=KEY for one key"}}));
    return;
  }
  query.by_label = group_by == "label";
  query.label_key = request.query_value("label");
  // A tenant sees its own use; an admin everyone's, or one tenant's.
  query.tenant =
      request.admin ? request.query_value("tenant") : std::optional<std::string>(request.tenant);
  base::Result<std::vector<UsageRow>> rows = service_.usage(query);
  if (!rows.ok()) {
    writer->respond(answer(JsonResult(rows.error())));
    return;
  }
  const bool csv = request.query_value("format") == "csv" ||
                   request.header("accept").find("text/csv") != std::string_view::npos;
  if (csv) {
    Response response;
    response.content_type = "text/csv; charset=utf-8";
    response.body = usage_csv(*rows);
    writer->respond(std::move(response));
    return;
  }
  writer->respond(json_response(200, usage_json(query, *rows)));
}

void JobsApi::add_routes() {
  add_job_routes();
  add_pool_routes();
  add_dataset_routes();
  add_service_routes();
  add_notification_routes();
  add_limit_routes();
  add_check_routes(router_);  // api/checks_api.h
}

void JobsApi::add_job_routes() {
  router_.add("POST", "/v1/jobs", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { submit(r, w); });
  router_.add("POST", "/v1/jobs:validate", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { validate(r, w); });
  router_.add(
      "GET", "/v1/jobs", Access::kTenant,
      [this](Request& r, const PathParams&, ResponseWriterPtr w) {
        JobQuery query;
        query.tenant = r.tenant;
        for (auto [it, end] = r.query.equal_range("state"); it != end; ++it) {
          std::string_view list = it->second;
          while (!list.empty()) {
            const std::size_t comma = list.find(',');
            std::string state(list.substr(0, comma));
            for (char& c : state)
              c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            if (!base::parse_job_state(state)) {
              w->respond(problem(
                  400, "unknown state '" + state.substr(0, 32) + "'",
                  {{"field", "state"},
                   {"hint", "states: QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED"}}));
              return;
            }
            query.states.push_back(std::move(state));
            list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
          }
        }
        for (auto [it, end] = r.query.equal_range("label"); it != end; ++it) {
          const std::size_t eq = it->second.find('=');
          if (eq == std::string::npos || eq == 0) {
            w->respond(
                problem(400, "label filters look like label=key=value", {{"field", "label"}}));
            return;
          }
          query.labels.emplace_back(it->second.substr(0, eq), it->second.substr(eq + 1));
        }
        query.name = r.query_value("name");
        std::int64_t limit = query.limit;
        if (!query_int(r, w, "limit", 1, 500, &limit)) return;
        query.limit = static_cast<int>(limit);
        query.cursor = r.query_value("cursor");
        if (r.query_value("array")) {
          std::int64_t array = 0;
          if (!query_int(r, w, "array", 1, std::numeric_limits<std::int64_t>::max(), &array))
            return;
          query.array_id = array;
        }
        JsonResult listed = service_.list_jobs(query);
        if (!listed.ok() && listed.code() == base::ErrorCode::kInvalid && query.cursor) {
          // The only thing of a list query the store can refuse is the cursor.
          w->respond(problem(422, "malformed cursor: it is not a next_cursor this service gave",
                             {{"field", "cursor"},
                              {"hint",
                               "pass the next_cursor of the previous page as it was given, or "
                               "leave cursor out for the first page"}}));
          return;
        }
        w->respond(answer(cap_job_list(std::move(listed), query, service_)));
      });
  router_.add("GET", "/v1/jobs/{id}", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                base::Result<std::string> body = service_.get_job_text(*id, r.tenant);
                if (!body.ok()) {
                  w->respond(answer(JsonResult(body.error())));
                  return;
                }
                Response response;
                response.body = std::move(*body);
                w->respond(std::move(response));
              });
  router_.add("GET", "/v1/jobs/{id}/wait", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                std::int64_t seconds = 30;
                if (!query_int(r, w, "timeout", 0, 300, &seconds)) return;
                auto admitted = waiters_->admit(r.tenant, std::move(w));
                if (!admitted) return;
                w = std::move(*admitted);
                service_.wait_job(*id, r.tenant, std::chrono::seconds(seconds),
                                  [w](JsonResult result) { w->respond(answer(result)); });
              });
  router_.add("POST", "/v1/jobs/{id}/cancel", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w))
                  w->respond(answer(service_.cancel_job(*id, r.tenant), 202));
              });
  router_.add(
      "GET", "/v1/jobs/{id}/logs", Access::kTenant,
      [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
        auto id = job_id(p, w);
        if (!id) return;
        std::int64_t after = 0;
        std::int64_t limit = 1000;
        if (!query_int(r, w, "after", 0, std::numeric_limits<std::int64_t>::max(), &after) ||
            !query_int(r, w, "limit", 1, 10000, &limit)) {
          return;
        }
        if (auto last = r.header("last-event-id"); !last.empty()) {
          if (auto n = parse_int(last)) after = std::max(after, *n);
        }
        const bool follow =
            r.header("accept").find("text/event-stream") != std::string_view::npos ||
            r.query_value("follow") == "true";
        if (follow) {
          auto admitted = followers_->admit(r.tenant, std::move(w));
          if (admitted) service_.follow_logs(*id, r.tenant, after, std::move(*admitted));
          return;
        }
        w->respond(answer(service_.job_logs(*id, r.tenant, after, static_cast<int>(limit))));
      });
  router_.add("GET", "/v1/jobs/{id}/metrics", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                std::int64_t after = 0;
                if (!query_int(r, w, "after", 0, std::numeric_limits<std::int64_t>::max(), &after))
                  return;
                w->respond(answer(service_.job_metrics(*id, r.tenant, after)));
              });
  router_.add("GET", "/v1/jobs/{id}/events", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w)) w->respond(answer(service_.job_events(*id, r.tenant)));
              });
  router_.add("GET", "/v1/jobs/{id}/xla-report", Access::kTenant,
              [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
                auto id = job_id(p, w);
                if (!id) return;
                base::Result<std::string> report = service_.xla_report(*id, r.tenant);
                if (!report.ok()) {
                  w->respond(answer(JsonResult(report.error())));
                  return;
                }
                Response response;
                response.content_type = "text/plain; charset=utf-8";
                response.body = std::move(*report);
                w->respond(std::move(response));
              });
}

// The pool's view (any tenant) and its administration (admins).
void JobsApi::add_pool_routes() {
  router_.add("GET", "/v1/pool", Access::kTenant,
              [this](Request&, const PathParams&, ResponseWriterPtr w) {
                w->respond(json_response(200, service_.pool_view()));
              });
  router_.add("GET", "/v1/usage", Access::kTenant,
              [this](Request& r, const PathParams&, ResponseWriterPtr w) { usage(r, w); });
  // An action not listed has no route: a 404, never a guess.
  constexpr std::pair<const char*, scheduler::HostHealth> kHostActions[] = {
      {"drain", scheduler::HostHealth::kDraining},
      {"fail", scheduler::HostHealth::kFailed},
      {"recover", scheduler::HostHealth::kHealthy}};
  for (const auto& [action, health] : kHostActions) {
    router_.add("POST", std::string("/v1/pool/hosts/{host}:") + action, Access::kAdmin,
                [this, health = health](Request&, const PathParams& p, ResponseWriterPtr w) {
                  w->respond(answer(service_.set_host_health(p.find("host")->second, health)));
                });
  }
  router_.add(
      "POST", "/v1/tenants/{tenant}/quota", Access::kAdmin,
      [this](Request& r, const PathParams& p, ResponseWriterPtr w) {
        std::optional<json> body = parse_body(r, w);
        if (!body) return;
        if (!body->is_object() || !body->contains("max_cores") ||
            !((*body)["max_cores"].is_null() || (*body)["max_cores"].is_number_unsigned() ||
              ((*body)["max_cores"].is_number_integer() &&
               (*body)["max_cores"].get<std::int64_t>() >= 0)) ||
            body->size() != 1) {
          w->respond(
              problem(422, "the body must be {\"max_cores\": N} with N >= 0, or null for no limit",
                      {{"errors",
                        json::array({{{"field", "max_cores"},
                                      {"message", "must be a non-negative integer or null"}}})}}));
          return;
        }
        const json& value = (*body)["max_cores"];
        std::optional<int> max_cores;
        if (!value.is_null())
          max_cores = static_cast<int>(std::min<std::int64_t>(value.get<std::int64_t>(), 1 << 20));
        w->respond(answer(service_.set_quota(p.find("tenant")->second.substr(0, 64), max_cores)));
      });
  router_.add("POST", "/v1/pool/leases/{id}:release", Access::kAdmin,
              [this](Request&, const PathParams& p, ResponseWriterPtr w) {
                if (auto id = job_id(p, w)) w->respond(answer(service_.force_release(*id)));
              });
}

void JobsApi::add_dataset_routes() {
  router_.add(
      "POST", "/v1/datasets", Access::kTenant,
      [this](Request& r, const PathParams&, ResponseWriterPtr w) {
        if (r.body.empty()) {
          w->respond(
              problem(400, "the request body is empty; send the CSV file", {{"hint", kCsvCurl}}));
          return;
        }
        if (const std::string_view type = r.header("content-type"); !declares_csv(type)) {
          w->respond(problem(
              415, "the body is sent as '" + shown_type(type) + "'; this route reads a CSV file",
              {{"field", "Content-Type"},
               {"hint", std::string("send the file as it is with the header Content-Type: "
                                    "text/csv (curl -d strips its newlines and curl -F "
                                    "wraps it in a form), e.g. ") +
                            kCsvCurl}}));
          return;
        }
        // The name is storable text already (utf8_query).
        const std::string name = r.query_value("name").value_or("upload");
        if (name.size() > 128) {
          w->respond(problem(400, "the query parameter 'name' is longer than 128 bytes",
                             {{"field", "name"}, {"hint", "e.g. ?name=mydata"}}));
          return;
        }
        if (name.empty() || control_character(name)) {
          w->respond(
              problem(400, "the query parameter 'name' is empty or holds a control character",
                      {{"field", "name"},
                       {"hint", "a name is one line of printable text, e.g. ?name=mydata"}}));
          return;
        }
        if (!storable_text(r.body)) {
          w->respond(problem(422,
                             "the CSV file is not UTF-8 text, or contains the character U+0000",
                             {{"field", "body"}, {"hint", "save the file as UTF-8 CSV"}}));
          return;
        }
        std::optional<std::string> key;
        if (!read_idempotency_key(r, w, &key)) return;
        base::Result<JobService::UploadedDataset> uploaded = service_.upload_dataset(
            {r.tenant, name, r.body, key, key ? content_hash(r.body) : std::string()});
        if (!uploaded.ok() && uploaded.code() == base::ErrorCode::kConflict) {
          w->respond(problem(409, uploaded.error().message,
                             {{"field", "Idempotency-Key"},
                              {"hint",
                               "an Idempotency-Key names one upload of one file; use a new key for "
                               "another file or name"}}));
          return;
        }
        if (!uploaded.ok()) {
          w->respond(answer(JsonResult(uploaded.error())));
          return;
        }
        w->respond(json_response(uploaded->existing ? 200 : 201, uploaded->dataset));
      });
}

// Probes, metrics and the API document: open to anyone.
void JobsApi::add_service_routes() {
  router_.add("GET", "/healthz", Access::kOpen,
              [](Request&, const PathParams&, ResponseWriterPtr w) {
                w->respond(json_response(200, {{"status", "ok"}}));
              });
  router_.add(
      "GET", "/readyz", Access::kOpen, [this](Request&, const PathParams&, ResponseWriterPtr w) {
        const bool ready = service_.ready();
        Response response = json_response(
            ready ? 200 : 503, {{"ready", ready}, {"database", ready ? "ok" : "unreachable"}});
        if (!ready) response.header("Retry-After", "1");
        w->respond(std::move(response));
      });
  router_.add("GET", "/metrics", Access::kOpen,
              [this](Request&, const PathParams&, ResponseWriterPtr w) {
                Response response;
                response.content_type = "text/plain; version=0.0.4; charset=utf-8";
                response.body = service_.prometheus_metrics();
                if (options_.notifications)
                  response.body += options_.notifications->prometheus_metrics();
                response.body += latency_.prometheus();
                response.body += followers_->prometheus() + waiters_->prometheus();
                if (options_.more_metrics) response.body += options_.more_metrics();
                if (options_.limits) response.body += options_.limits->prometheus();
                w->respond(std::move(response));
              });
  router_.add("GET", "/openapi.json", Access::kOpen,
              [](Request&, const PathParams&, ResponseWriterPtr w) {
                Response response;
                response.body = std::string(openapi_document());
                w->respond(std::move(response));
              });
}

void JobsApi::add_notification_routes() {
  // Every route needs the notifier; a service without one answers 503.
  auto with_notifier = [this](auto body) {
    return [this, body](Request& r, const PathParams& p, ResponseWriterPtr w) {
      if (!options_.notifications) {
        w->respond(problem(503, "this service does not send notifications"));
        return;
      }
      body(*options_.notifications, r, p, w);
    };
  };
  router_.add("GET", "/v1/jobs/{id}/notifications", Access::kTenant,
              with_notifier([](NotificationService& n, Request& r, const PathParams& p,
                               const ResponseWriterPtr& w) {
                if (auto id = job_id(p, w)) w->respond(answer(n.job_notifications(*id, r.tenant)));
              }));
  router_.add("GET", "/v1/notifications/secret", Access::kTenant,
              with_notifier(
                  [](NotificationService& n, Request& r, const PathParams&,
                     const ResponseWriterPtr& w) { w->respond(answer(n.secret_info(r.tenant))); }));
  router_.add("POST", "/v1/notifications/secret", Access::kTenant,
              with_notifier([](NotificationService& n, Request& r, const PathParams&,
                               const ResponseWriterPtr& w) {
                w->respond(answer(n.rotate_secret(r.tenant), 201));
              }));
  router_.add("GET", "/v1/notifications/allowlist", Access::kTenant,
              with_notifier([](NotificationService& n, Request&, const PathParams&,
                               const ResponseWriterPtr& w) {
                base::Result<std::vector<std::string>> entries = n.allowlist();
                if (!entries.ok()) {
                  w->respond(answer(JsonResult(entries.error())));
                  return;
                }
                w->respond(json_response(200, {{"entries", *entries}}));
              }));
  router_.add(
      "PUT", "/v1/notifications/allowlist", Access::kAdmin,
      with_notifier([](NotificationService& n, Request& r, const PathParams&,
                       const ResponseWriterPtr& w) {
        std::optional<json> body = parse_body(r, w);
        if (!body) return;
        const std::string example =
            "{\"entries\": [\"127.0.0.1:9000\", \"ci.example\", "
            "\"http://hooks.example/tpujobs/\"]}";
        std::vector<FieldError> errors;
        std::vector<std::string> entries;
        const json* list =
            body->is_object() && body->contains("entries") ? &(*body)["entries"] : nullptr;
        if (!list || !list->is_array() || body->size() != 1 || list->size() > 1000) {
          errors.push_back({"entries", "the body must be {\"entries\": [...]} (at most 1000)",
                            "e.g. " + example});
        } else {
          for (std::size_t i = 0; i < list->size(); ++i) {
            const std::string field = "entries[" + std::to_string(i) + "]";
            const json& entry = (*list)[i];
            std::string error = !entry.is_string() ? "must be a string"
                                : entry.get<std::string>().size() > 2048
                                    ? "is longer than 2048 characters"
                                    : allowlist_entry_error(entry.get<std::string>());
            if (!error.empty())
              errors.push_back({field, error, "a host, host:port or http:// URL prefix"});
            else
              entries.push_back(entry.get<std::string>());
          }
        }
        if (!errors.empty()) {
          json list = json::array();
          for (const FieldError& e : errors) list.push_back(to_json(e));
          w->respond(problem(422,
                             errors.size() == 1
                                 ? errors.front().message
                                 : std::to_string(errors.size()) + " problems with the allow-list",
                             {{"errors", list}}));
          return;
        }
        if (base::Status stored = n.set_allowlist(entries); !stored.ok()) {
          w->respond(answer(JsonResult(stored.error())));
          return;
        }
        base::Result<std::vector<std::string>> now = n.allowlist();
        if (!now.ok()) {
          w->respond(answer(JsonResult(now.error())));
          return;
        }
        w->respond(json_response(200, {{"entries", *now}}));
      }));
}

std::string_view Request::header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<std::string> Request::query_value(std::string_view name) const {
  auto it = query.find(std::string(name));
  if (it == query.end()) return std::nullopt;
  return it->second;
}

}  // namespace tpujobs::api
