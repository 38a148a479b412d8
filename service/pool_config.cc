#include "service/pool_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tpujobs::service {

std::optional<scheduler::PoolLayout> load_pool(const std::string& flag, std::string* error) {
  if (flag.empty() || flag[0] != '@') return scheduler::parse_pool(flag, error);
  const std::string path = flag.substr(1);
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read pool file '" + path + "'";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "pool file '" + path + "' is not a JSON object";
    return std::nullopt;
  }
  if (doc.contains("slices")) {
    const nlohmann::json& slices = doc["slices"];
    std::string list;
    if (!slices.is_array() || slices.empty()) {
      *error = "pool file '" + path + "': \"slices\" must be a non-empty array of names such as \"v3-32\"";
      return std::nullopt;
    }
    for (const auto& s : slices) {
      if (!s.is_string()) {
        *error = "pool file '" + path + "': every slice must be a string such as \"v3-8\"";
        return std::nullopt;
      }
      list += (list.empty() ? "" : ",") + s.get<std::string>();
    }
    return scheduler::parse_pool(list, error);
  }
  if (!doc.contains("hosts") || !doc["hosts"].is_array() || doc["hosts"].empty()) {
    *error = "pool file '" + path + "' needs \"slices\": [...] or \"hosts\": [{\"name\", \"generation\"}, ...]";
    return std::nullopt;
  }
  scheduler::PoolLayout layout;
  for (const auto& h : doc["hosts"]) {
    if (!h.is_object() || !h.contains("name") || !h["name"].is_string() || !h.contains("generation") ||
        !h["generation"].is_string()) {
      *error = "pool file '" + path + "': each host needs a string \"name\" and \"generation\"";
      return std::nullopt;
    }
    std::optional<scheduler::Generation> generation = scheduler::parse_generation(h["generation"].get<std::string>());
    if (!generation) {
      *error = "pool file '" + path + "': unknown generation '" + h["generation"].get<std::string>() +
               "' (v2, v3 or v4)";
      return std::nullopt;
    }
    layout.hosts.push_back({h["name"].get<std::string>(), *generation});
  }
  if (std::optional<std::string> problem = scheduler::validate_pool(layout)) {
    *error = "pool file '" + path + "': " + *problem;
    return std::nullopt;
  }
  return layout;
}

}  // namespace tpujobs::service
