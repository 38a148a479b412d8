#include "service/pool_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tpujobs::service {
namespace {

base::Result<std::string> slice_error(std::string message) {
  return base::make_error(base::ErrorCode::kInvalid, std::move(message));
}

// "v5p-32" from {"generation": "v5p", "topology": "2x2x4"}, or from
// {"type": "v5p-32", "topology": "2x2x4"} when the two agree.
base::Result<std::string> slice_from_topology(const nlohmann::json& entry) {
  const std::string written = entry["topology"].get<std::string>();
  const std::optional<scheduler::Topology> topology = scheduler::parse_topology(written);
  if (!topology) {
    return slice_error("topology '" + written + "' is not like \"4x4\" or \"2x2x4\"");
  }
  std::optional<scheduler::SliceType> type;
  if (entry.contains("type")) {
    type = scheduler::parse_slice_type(entry["type"].get<std::string>());
    if (!type) return slice_error("'" + entry["type"].get<std::string>() + "' is not a slice type");
  }
  std::optional<scheduler::Generation> generation;
  if (entry.contains("generation")) {
    generation = scheduler::parse_generation(entry["generation"].get<std::string>());
    if (!generation) {
      return slice_error("unknown generation '" + entry["generation"].get<std::string>() + "'");
    }
  }
  if (!generation && type) generation = type->generation;
  if (!generation) return slice_error("a topology needs a \"generation\" or a \"type\"");
  const std::optional<scheduler::SliceType> slice =
      scheduler::slice_of_topology(*generation, *topology);
  if (!slice) {
    std::string valid;
    for (int size : scheduler::facts(*generation).slice_sizes) {
      const std::optional<scheduler::Topology> shape =
          scheduler::SliceType{*generation, size}.topology();
      if (shape) valid += (valid.empty() ? "" : ", ") + shape->text();
    }
    return slice_error("topology '" + written + "' is not a whole-host " +
                       std::string(scheduler::facts(*generation).name) + " slice" +
                       (valid.empty() ? " (it has no topology names)" : " (valid: " + valid + ")"));
  }
  if ((type && type->name() != slice->name()) || (type && generation != type->generation)) {
    return slice_error("topology '" + written + "' is " + slice->name() + ", but \"type\" is " +
                       type->name() + " (" +
                       type->topology().value_or(scheduler::Topology{}).text() + ")");
  }
  return slice->name();
}

// One entry of "slices": "v5litepod-16", or an object with "type" and/or
// "generation" and an explicit "topology".
base::Result<std::string> slice_name(const nlohmann::json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (!entry.is_object()) {
    return slice_error(
        "must be a name such as \"v5litepod-16\" or {\"generation\": \"v5p\", "
        "\"topology\": \"2x2x4\"}");
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "type" && key != "generation" && key != "topology") {
      return slice_error("unknown field \"" + key + "\" (type, generation, topology)");
    }
    if (!value.is_string()) return slice_error("\"" + key + "\" must be a string");
  }
  if (entry.contains("topology")) return slice_from_topology(entry);
  if (entry.contains("type")) return entry["type"].get<std::string>();
  return slice_error("needs a \"type\", or a \"generation\" and a \"topology\"");
}

std::string generation_names() {
  std::string out;
  for (scheduler::Generation g : scheduler::all_generations()) {
    out += (out.empty() ? "" : ", ") + std::string(scheduler::facts(g).name);
  }
  return out;
}

}  // namespace

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
    for (std::size_t i = 0; i < slices.size(); ++i) {
      base::Result<std::string> name = slice_name(slices[i]);
      if (!name.ok()) {
        return fail("pool file '" + path + "': slice " + std::to_string(i + 1) + ": " +
                    name.error().message);
      }
      list += (list.empty() ? "" : ",") + *name;
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
                  h["generation"].get<std::string>() + "' (" + generation_names() + ")");
    }
    layout.hosts.push_back({h["name"].get<std::string>(), *generation});
  }
  if (base::Status valid = scheduler::validate_pool(layout); !valid.ok()) {
    return fail("pool file '" + path + "': " + valid.error().message);
  }
  return layout;
}

}  // namespace tpujobs::service
