#include "service/pool_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tpujobs::service {

base::Result<scheduler::PoolLayout> load_pool(const std::string& flag) {
  if (flag.empty() || flag[0] != '@') return scheduler::parse_pool(flag);
  auto fail = [](std::string message) -> base::Result<scheduler::PoolLayout> {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  const std::string path = flag.substr(1);
  std::ifstream in(path);
  if (!in) {
    return fail("cannot read pool file '" + path + "'");
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return fail("pool file '" + path + "' is not a JSON object");
  }
  if (doc.contains("slices")) {
    const nlohmann::json& slices = doc["slices"];
    std::string list;
    if (!slices.is_array() || slices.empty()) {
      return fail("pool file '" + path +
                  "': \"slices\" must be a non-empty array of names such as \"v3-32\"");
    }
    for (const auto& s : slices) {
      if (!s.is_string()) {
        return fail("pool file '" + path + "': every slice must be a string such as \"v3-8\"");
      }
      list += (list.empty() ? "" : ",") + s.get<std::string>();
    }
    return scheduler::parse_pool(list);
  }
  if (!doc.contains("hosts") || !doc["hosts"].is_array() || doc["hosts"].empty()) {
    return fail("pool file '" + path +
                "' needs \"slices\": [...] or \"hosts\": [{\"name\", \"generation\"}, ...]");
  }
  scheduler::PoolLayout layout;
  for (const auto& h : doc["hosts"]) {
    if (!h.is_object() || !h.contains("name") || !h["name"].is_string() ||
        !h.contains("generation") || !h["generation"].is_string()) {
      return fail("pool file '" + path + "': each host needs a string \"name\" and \"generation\"");
    }
    std::optional<scheduler::Generation> generation =
        scheduler::parse_generation(h["generation"].get<std::string>());
    if (!generation) {
      return fail("pool file '" + path + "': unknown generation '" +
                  h["generation"].get<std::string>() + "' (v2, v3 or v4)");
    }
    layout.hosts.push_back({h["name"].get<std::string>(), *generation});
  }
  if (base::Status valid = scheduler::validate_pool(layout); !valid.ok()) {
    return fail("pool file '" + path + "': " + valid.error().message);
  }
  return layout;
}

}  // namespace tpujobs::service
