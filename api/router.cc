#include "api/router.h"

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

bool match_path(std::string_view pattern, std::string_view path, PathParams* params) {
  const auto pattern_parts = split(pattern);
  const auto path_parts = split(path);
  if (pattern_parts.size() != path_parts.size()) return false;
  params->clear();
  for (std::size_t i = 0; i < pattern_parts.size(); ++i) {
    if (!match_segment(pattern_parts[i], path_parts[i], params)) return false;
  }
  return true;
}

}  // namespace

void Router::add(std::string method, std::string pattern, Access access, RouteHandler handler) {
  routes_.push_back({std::move(method), std::move(pattern), access, std::move(handler)});
}

Router::Match Router::match(std::string_view method, std::string_view path, const Route** route,
                            PathParams* params, std::string* allowed) const {
  bool path_found = false;
  const Route* get_route = nullptr;
  PathParams get_params;
  allowed->clear();
  for (const Route& r : routes_) {
    PathParams candidate;
    if (!match_path(r.pattern, path, &candidate)) continue;
    if (r.method == method) {
      *route = &r;
      *params = std::move(candidate);
      return Match::kFound;
    }
    if (method == "HEAD" && r.method == "GET" && !get_route) {
      get_route = &r;
      get_params = std::move(candidate);
    }
    path_found = true;
    for (const std::string_view name : {std::string_view(r.method), std::string_view("HEAD")}) {
      if (allowed->find(name) == std::string::npos)
        *allowed += std::string(allowed->empty() ? "" : ", ") + std::string(name);
      if (r.method != "GET") break;  // HEAD comes with GET (RFC 9110 §9.3.2)
    }
  }
  if (get_route) {
    *route = get_route;
    *params = std::move(get_params);
    return Match::kFound;
  }
  return path_found ? Match::kNoMethod : Match::kNoPath;
}

std::string Router::pattern_of(std::string_view method, std::string_view path) const {
  PathParams params;
  for (const Route& r : routes_) {
    if ((r.method == method || (method == "HEAD" && r.method == "GET")) &&
        match_path(r.pattern, path, &params))
      return r.pattern;
  }
  return {};
}

}  // namespace tpujobs::api
