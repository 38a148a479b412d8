#include "api/spec_reader.h"

#include <algorithm>
#include <cstdio>

namespace tpujobs::api::spec_parsing {

const std::map<std::string, std::vector<std::string>, std::less<>>& field_table() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> table = {
      {"",
       {"name", "labels", "priority", "trainer", "model", "data", "optimizer", "expect",
        "max_retries", "timeout", "lightning_version", "environment", "runtime", "env", "resources",
        "depends_on", "start_by", "notify", "preemptible"}},
      {"depends_on[]", {"job", "condition"}},
      {"notify", {"url", "events"}},
      {"environment", {"python", "torch", "torch_xla", "lightning"}},
      {"trainer",
       {"accelerator", "devices", "tpu_cores", "num_nodes", "precision", "strategy", "max_epochs",
        "max_steps", "max_time", "accumulate_grad_batches", "gradient_clip_val",
        "log_every_n_steps", "check_val_every_n_epoch", "checkpoint_every_n_steps", "seed", "gpus",
        "ipus", "num_processes"}},
      {"resources", {"accelerator_type", "topology", "workers"}},
      {"model", {"layers", "loss"}},
      {"model.layers[]", {"type", "out", "bias", "p", "tie"}},
      {"data", {"dataset", "batch_size", "val_fraction", "shuffle", "drop_last"}},
      {"data.dataset", {"synthetic", "n", "features", "classes", "noise", "upload"}},
      {"optimizer", {"type", "lr", "weight_decay", "momentum", "nesterov", "betas", "eps"}},
      {"expect.*", {"min", "max"}},
  };
  return table;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t previous = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = previous + (a[i - 1] == b[j - 1] ? 0 : 1);
      previous = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

std::string code_point(unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, "U+%04X", static_cast<unsigned>(c));
  return text;
}

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

std::string join_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string python_type(const json& value) {
  if (value.is_boolean()) return "bool";
  if (value.is_number_integer() || value.is_number_unsigned()) return "int";
  if (value.is_number_float()) return "float";
  if (value.is_string()) return "str";
  if (value.is_array()) return "list";
  if (value.is_object()) return "dict";
  return "NoneType";
}

std::string python_repr(const json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_object()) return value.empty() ? "{}" : "{...}";
  if (value.is_number_float()) {
    std::string text = value.dump();
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text.substr(0, 32);
  }
  return value.dump().substr(0, 64);
}

}  // namespace tpujobs::api::spec_parsing
