#include "api/sweep.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace tpujobs::api {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxSweepPaths = 8;

struct Segment {
  std::string key;
  std::optional<std::size_t> index;
};

// "model.layers[0].out" -> {model}, {layers, 0}, {out}; nullopt if malformed.
std::optional<std::vector<Segment>> parse_path(std::string_view path) {
  std::vector<Segment> segments;
  if (path.empty() || path.size() > 128) return std::nullopt;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    std::string_view part =
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    Segment segment;
    if (const std::size_t bracket = part.find('['); bracket != std::string_view::npos) {
      if (part.back() != ']' || bracket + 2 >= part.size()) return std::nullopt;
      std::size_t index = 0;
      for (char c : part.substr(bracket + 1, part.size() - bracket - 2)) {
        if (c < '0' || c > '9' || index > 10000) return std::nullopt;
        index = index * 10 + static_cast<std::size_t>(c - '0');
      }
      segment.index = index;
      part = part.substr(0, bracket);
    }
    if (part.empty()) return std::nullopt;
    for (char c : part) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return std::nullopt;
    }
    segment.key = std::string(part);
    segments.push_back(std::move(segment));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return segments;
}

// Sets `value` at `segments` in `spec`; an error message when the path runs
// through something that is not an object or past the end of an array.
std::optional<std::string> set_path(json& spec, const std::vector<Segment>& segments,
                                    const json& value) {
  json* at = &spec;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (!at->is_object()) return "goes through something that is not an object";
    const bool last = i + 1 == segments.size();
    if (!s.index) {
      if (last) {
        (*at)[s.key] = value;
        return std::nullopt;
      }
      if (!at->contains(s.key)) (*at)[s.key] = json::object();
      at = &(*at)[s.key];
      continue;
    }
    auto it = at->find(s.key);
    if (it == at->end() || !it->is_array() || *s.index >= it->size()) {
      return "names element " + std::to_string(*s.index) + " of '" + s.key +
             "', which the spec does not have";
    }
    at = &(*it)[*s.index];
    if (last) {
      *at = value;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

base::Result<std::vector<SweepChild>> expand_sweep(const json& body, std::size_t max_children) {
  std::vector<base::FieldError> errors;
  const json& sweep = body.at("sweep");
  const char* example = "e.g. {\"optimizer.lr\": [0.001, 0.003], \"data.batch_size\": [32, 64]}";
  if (!sweep.is_object() || sweep.empty()) {
    errors.push_back({"sweep", "must be an object of spec paths to lists of values", example});
    return base::invalid_fields(std::move(errors));
  }
  if (sweep.size() > kMaxSweepPaths) {
    errors.push_back({"sweep", "sweeps at most " + std::to_string(kMaxSweepPaths) + " paths", ""});
    return base::invalid_fields(std::move(errors));
  }
  struct Axis {
    std::string path;
    std::vector<Segment> segments;
    const json* values;
  };
  std::vector<Axis> axes;
  std::size_t children = 1;
  for (auto it = sweep.begin(); it != sweep.end(); ++it) {
    const std::string field = "sweep." + it.key().substr(0, 128);
    std::optional<std::vector<Segment>> segments = parse_path(it.key());
    if (!segments) {
      errors.push_back({field, "is not a spec path",
                        "dot-separated fields, e.g. optimizer.lr or model.layers[0].out"});
      continue;
    }
    const std::string& root = segments->front().key;
    if (root == "sweep" || root == "depends_on" || root == "name") {
      errors.push_back({field, "cannot be swept", "sweep the fields that decide how a job trains"});
      continue;
    }
    if (!it->is_array() || it->empty()) {
      errors.push_back({field, "must be a non-empty list of values", example});
      continue;
    }
    children *= it->size();
    if (children > kMaxSweepChildren) {
      errors.push_back({"sweep", "makes more than " + std::to_string(kMaxSweepChildren) + " jobs",
                        "sweep fewer values, or split the sweep into several"});
      return base::invalid_fields(std::move(errors));
    }
    axes.push_back({it.key(), std::move(*segments), &*it});
  }
  if (!errors.empty()) return base::invalid_fields(std::move(errors));

  json base = body;
  base.erase("sweep");
  std::vector<SweepChild> out;
  children = std::min(children, max_children);
  out.reserve(children);
  for (std::size_t n = 0; n < children; ++n) {
    SweepChild child;
    child.index = static_cast<int>(n);
    child.spec = base;
    child.values = json::object();
    // Mixed radix, the last path varying fastest.
    std::size_t rest = n;
    for (std::size_t a = axes.size(); a-- > 0;) {
      const json& value = (*axes[a].values)[rest % axes[a].values->size()];
      rest /= axes[a].values->size();
      if (std::optional<std::string> problem = set_path(child.spec, axes[a].segments, value)) {
        errors.push_back({"sweep." + axes[a].path, *problem, "sweep only paths the spec can have"});
        return base::invalid_fields(std::move(errors));
      }
      child.values[axes[a].path] = value;
    }
    out.push_back(std::move(child));
  }
  return out;
}

}  // namespace tpujobs::api
