#include "api/router.h"

#include <optional>

namespace tpujobs::api {
namespace {

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 1;
  if (path.empty() || path[0] != '/') return parts;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Matches one segment against a pattern segment: "jobs", "{id}", "{host}:drain",
// "jobs:validate".
bool match_segment(std::string_view pattern, std::string_view segment, PathParams* params) {
  if (pattern.empty() || pattern[0] != '{') return pattern == segment;
  const std::size_t close = pattern.find('}');
  const std::string_view name = pattern.substr(1, close - 1);
  const std::string_view suffix = pattern.substr(close + 1);
  if (segment.size() <= suffix.size()) return false;
  if (segment.substr(segment.size() - suffix.size()) != suffix) return false;
  const std::string_view value = segment.substr(0, segment.size() - suffix.size());
  if (value.empty() || value.find(':') != std::string_view::npos) return false;
  (*params)[std::string(name)] = std::string(value);
  return true;
}

// The path's parameters when it matches `pattern`.
std::optional<PathParams> match_path(std::string_view pattern, std::string_view path) {
  const auto pattern_parts = split(pattern);
  const auto path_parts = split(path);
  if (pattern_parts.size() != path_parts.size()) return std::nullopt;
  PathParams params;
  for (std::size_t i = 0; i < pattern_parts.size(); ++i) {
    if (!match_segment(pattern_parts[i], path_parts[i], &params)) return std::nullopt;
  }
  return params;
}

}  // namespace

void Router::add(std::string method, std::string pattern, Access access, RouteHandler handler,
                 RouteCost cost) {
  routes_.push_back(
      {std::move(method), std::move(pattern), access, std::move(handler), std::move(cost)});
}

Router::Matched Router::match(std::string_view method, std::string_view path) const {
  bool path_found = false;
  Matched head;  // HEAD on a GET route
  std::string allowed;
  for (const Route& r : routes_) {
    std::optional<PathParams> candidate = match_path(r.pattern, path);
    if (!candidate) continue;
    if (r.method == method) return {Match::kFound, &r, std::move(*candidate), {}};
    if (method == "HEAD" && r.method == "GET" && !head.route) {
      head = {Match::kFound, &r, std::move(*candidate), {}};
    }
    path_found = true;
    for (const std::string_view name : {std::string_view(r.method), std::string_view("HEAD")}) {
      if (allowed.find(name) == std::string::npos)
        allowed += std::string(allowed.empty() ? "" : ", ") + std::string(name);
      if (r.method != "GET") break;  // HEAD comes with GET (RFC 9110 §9.3.2)
    }
  }
  if (head.route) return head;
  if (!path_found) return {};
  return {Match::kNoMethod, nullptr, {}, std::move(allowed)};
}

std::string Router::pattern_of(std::string_view method, std::string_view path) const {
  for (const Route& r : routes_) {
    if ((r.method == method || (method == "HEAD" && r.method == "GET")) &&
        match_path(r.pattern, path))
      return r.pattern;
  }
  return {};
}

}  // namespace tpujobs::api
