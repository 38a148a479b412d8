#include "api/job_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tpujobs::api {
namespace {

using nlohmann::json;

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

// "U+000A": how an error names a control character.
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

// Reads the fields of one JSON object, collecting a FieldError for each
// problem, and at the end one for each field nobody asked for.
class ObjectReader {
 public:
  // `schema` names the entry of field_table() used for "did you mean" hints.
  ObjectReader(const json& object, std::string path, std::string schema,
               std::vector<FieldError>* errors)
      : object_(object), path_(std::move(path)), schema_(std::move(schema)), errors_(errors) {}

  ~ObjectReader() { report_unknown(); }

  const std::string& path() const { return path_; }
  std::string field(std::string_view key) const { return join_path(path_, key); }

  // The raw value, or nullptr when absent (or explicitly null if allow_null).
  const json* raw(std::string_view key, bool allow_null = false) {
    seen_.emplace_back(key);
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return nullptr;
    if (it->is_null() && !allow_null) return nullptr;
    return &*it;
  }

  std::optional<std::string> string(std::string_view key, std::size_t max_length = 256) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) {
      error(key, "must be a string, got " + type_name(*value));
      return std::nullopt;
    }
    std::string text = value->get<std::string>();
    if (text.size() > max_length) {
      error(key, "is longer than " + std::to_string(max_length) + " characters");
      return std::nullopt;
    }
    return text;
  }

  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    return integer_value(*value, field(key), min, max, errors_);
  }

  std::optional<double> number(std::string_view key, double min, double max) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_number()) {
      error(key, "must be a number, got " + type_name(*value));
      return std::nullopt;
    }
    const double number = value->get<double>();
    if (!std::isfinite(number) || number < min || number > max) {
      error(key,
            "must be between " + format(min) + " and " + format(max) + ", got " + value->dump());
      return std::nullopt;
    }
    return number;
  }

  std::optional<bool> boolean(std::string_view key) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) {
      error(key, "must be true or false, got " + type_name(*value));
      return std::nullopt;
    }
    return value->get<bool>();
  }

  // Accepts one of `choices`; otherwise an error listing them.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& choices) {
    std::optional<std::string> text = string(key);
    if (!text) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
      std::string list;
      for (const std::string& c : choices) list += (list.empty() ? "'" : ", '") + c + "'";
      error(key, "must be one of " + list + ", got '" + *text + "'");
      return std::nullopt;
    }
    return text;
  }

  void error(std::string_view key, std::string message, std::string hint = {}) {
    errors_->push_back({field(key), std::move(message), std::move(hint)});
  }

  static std::optional<std::int64_t> integer_value(const json& value, const std::string& path,
                                                   std::int64_t min, std::int64_t max,
                                                   std::vector<FieldError>* errors) {
    std::optional<std::int64_t> number;
    if (value.is_number_integer()) {
      number = value.get<std::int64_t>();
    } else if (value.is_number_unsigned()) {
      const auto u = value.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        number = static_cast<std::int64_t>(u);
    } else if (value.is_number_float()) {
      const double d = value.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
        number = static_cast<std::int64_t>(d);
    }
    if (!value.is_number()) {
      errors->push_back({path, "must be an integer, got " + type_name(value), ""});
      return std::nullopt;
    }
    if (!number || *number < min || *number > max) {
      errors->push_back({path,
                         "must be an integer between " + std::to_string(min) + " and " +
                             std::to_string(max) + ", got " + value.dump(),
                         ""});
      return std::nullopt;
    }
    return number;
  }

 private:
  static std::string format(double value) {
    json j = value;
    return j.dump();
  }

  // The work is bounded whatever the body holds: "did you mean" (an edit
  // distance against every known field) only for the first few unknown
  // keys and only short ones, the list of known fields once, and at most
  // kMaxUnknownReported errors, then one that counts the rest.
  void report_unknown() {
    if (!object_.is_object()) return;
    constexpr std::size_t kMaxSuggestions = 8;
    constexpr std::size_t kMaxSuggestedKeyLength = 32;
    constexpr std::size_t kMaxUnknownReported = 20;
    std::size_t unknown = 0;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (std::find(seen_.begin(), seen_.end(), it.key()) != seen_.end()) continue;
      if (++unknown > kMaxUnknownReported) continue;
      std::string hint;
      const auto& known = known_fields(schema_);
      std::size_t best = 3;
      const bool suggest = unknown <= kMaxSuggestions && it.key().size() <= kMaxSuggestedKeyLength;
      for (std::size_t k = 0; suggest && k < known.size(); ++k) {
        const std::string& candidate = known[k];
        const std::size_t d = edit_distance(it.key(), candidate);
        if (d < best) {
          best = d;
          hint = "did you mean '" + candidate + "'?";
        }
      }
      if (hint.empty() && !known.empty()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        hint = "known fields here: " + list;
      }
      errors_->push_back({join_path(path_, it.key().substr(0, 128)), "unknown field", hint});
    }
    if (unknown > kMaxUnknownReported) {
      errors_->push_back({path_,
                          std::to_string(unknown - kMaxUnknownReported) +
                              " more unknown fields (the first " +
                              std::to_string(kMaxUnknownReported) + " are listed)",
                          "remove the fields this version does not know"});
    }
  }

  const json& object_;
  std::string path_;
  std::string schema_;
  std::vector<FieldError>* errors_;
  std::vector<std::string> seen_;
};

// Requires `value` to be an object; reports otherwise.
bool expect_object(const json* value, const std::string& path, std::vector<FieldError>* errors) {
  if (!value) return false;
  if (!value->is_object()) {
    errors->push_back({path, "must be an object, got " + type_name(*value), ""});
    return false;
  }
  return true;
}

// Python's name for the type of a JSON value, as Lightning's messages print it.
std::string python_type(const json& value) {
  if (value.is_boolean()) return "bool";
  if (value.is_number_integer() || value.is_number_unsigned()) return "int";
  if (value.is_number_float()) return "float";
  if (value.is_string()) return "str";
  if (value.is_array()) return "list";
  if (value.is_object()) return "dict";
  return "NoneType";
}

// Python's repr() of a scalar JSON value (8.0, True); "{...}" for objects.
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

// `devices` / `tpu_cores` as Python would see it: Lightning itself judges
// the value, so every JSON type reaches it (8.0 is a float, true a bool).
lightning::DeviceValue device_value(const json& value, const std::string& path,
                                    std::vector<FieldError>* errors) {
  lightning::DeviceValue out;
  if (value.is_number_integer() || value.is_number_unsigned()) {
    std::optional<std::int64_t> n =
        ObjectReader::integer_value(value, path, -1'000'000, 1'000'000, errors);
    if (n) {
      out.kind = lightning::DeviceValue::Kind::kInt;
      out.number = *n;
    }
  } else if (value.is_string()) {
    out.kind = lightning::DeviceValue::Kind::kString;
    out.text = value.get<std::string>().substr(0, 64);
  } else if (value.is_array()) {
    out.kind = lightning::DeviceValue::Kind::kList;
    if (value.size() > 64) {
      errors->push_back({path, "lists more than 64 devices", ""});
      return {};
    }
    out.list_length = value.size();
    if (!value.empty()) {
      out.list_first_type = python_type(value[0]);
      if (value[0].is_number()) out.list_first_number = value[0].get<double>();
      if (value[0].is_boolean()) out.list_first_number = value[0].get<bool>() ? 1 : 0;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      const json& item = value[i];
      if (item.is_number_integer() || item.is_number_unsigned()) {
        std::optional<std::int64_t> n = ObjectReader::integer_value(
            item, path + "[" + std::to_string(i) + "]", -1'000'000, 1'000'000, errors);
        if (n) out.list.push_back(*n);
      } else if (out.list_other_type.empty()) {
        out.list_other_type = python_type(item);
      }
    }
  } else {
    out.kind = lightning::DeviceValue::Kind::kOther;
    out.python_type = python_type(value);
    out.python_repr = python_repr(value);
    out.equals_zero = (value.is_number() && value.get<double>() == 0.0) ||
                      (value.is_boolean() && !value.get<bool>());
  }
  return out;
}

// `trainer.max_time` as Lightning's Timer receives it; null is None (no
// Timer). What it means is the rule table's (lightning/loop_limits.cc).
lightning::DurationValue duration_value(const json& value) {
  lightning::DurationValue out;
  if (value.is_string()) {
    out.kind = lightning::DurationValue::Kind::kString;
    out.text = value.get<std::string>().substr(0, 64);
  } else if (value.is_object()) {
    out.kind = lightning::DurationValue::Kind::kObject;
    for (auto it = value.begin(); it != value.end() && out.parts.size() < 16; ++it) {
      lightning::DurationValue::Part part{it.key().substr(0, 64), std::nullopt, python_type(*it)};
      if (it->is_number()) part.number = it->get<double>();
      if (it->is_boolean()) part.number = it->get<bool>() ? 1 : 0;
      out.parts.push_back(std::move(part));
    }
  } else {
    out.kind = lightning::DurationValue::Kind::kOther;
    out.python_type = python_type(value);
  }
  return out;
}

void parse_trainer(ObjectReader& r, JobSpec* spec) {
  lightning::TrainerSettings& t = spec->trainer;
  executor::TrainingSpec& training = spec->training;
  t.accelerator = r.string("accelerator", 32);
  if (const json* v = r.raw("precision")) {
    if (v->is_string()) {
      t.precision = v->get<std::string>().substr(0, 32);
    } else if (v->is_number_integer() || v->is_number_unsigned()) {
      t.precision = std::to_string(v->get<std::int64_t>());
      t.precision_is_number = true;
    } else {
      r.error("precision",
              "must be a string such as 'bf16-true' or an integer, got " + type_name(*v),
              "on TPUs use precision: '32-true', '16-true' or 'bf16-true'");
    }
  }
  t.strategy = r.string("strategy", 64);
  t.max_epochs_given = r.raw("max_epochs") != nullptr;
  if (auto v = r.integer("max_epochs", -1, 100000)) training.max_epochs = static_cast<int>(*v);
  if (auto v = r.integer("max_steps", -1, 100'000'000)) training.max_steps = *v;
  t.max_steps = training.max_steps;
  if (const json* v = r.raw("max_time")) t.max_time = duration_value(*v);
  if (auto v = r.integer("accumulate_grad_batches", 1, 1024))
    training.accumulate_grad_batches = static_cast<int>(*v);
  if (auto v = r.number("gradient_clip_val", 0.0, 1e9)) training.gradient_clip_val = *v;
  if (auto v = r.integer("log_every_n_steps", 1, 1'000'000))
    training.log_every_n_steps = static_cast<int>(*v);
  if (auto v = r.integer("check_val_every_n_epoch", 1, 100000))
    training.check_val_every_n_epoch = static_cast<int>(*v);
  if (auto v = r.integer("checkpoint_every_n_steps", 0, 100'000'000))
    training.checkpoint_every_n_steps = static_cast<int>(*v);
  if (auto v = r.integer("seed", 0, std::numeric_limits<std::int64_t>::max()))
    training.seed = static_cast<std::uint64_t>(*v);
}

void parse_layers(const json& layers, const std::string& path, executor::ModelSpec* model,
                  std::vector<FieldError>* errors) {
  if (!layers.is_array()) {
    errors->push_back({path, "must be an array of layers, got " + type_name(layers), ""});
    return;
  }
  if (layers.empty() || layers.size() > 64) {
    errors->push_back({path, "must hold between 1 and 64 layers", ""});
    return;
  }
  static const std::map<std::string, executor::LayerType, std::less<>> kTypes = {
      {"linear", executor::LayerType::kLinear},      {"relu", executor::LayerType::kRelu},
      {"gelu", executor::LayerType::kGelu},          {"tanh", executor::LayerType::kTanh},
      {"sigmoid", executor::LayerType::kSigmoid},    {"dropout", executor::LayerType::kDropout},
      {"layernorm", executor::LayerType::kLayerNorm}};
  std::vector<std::string> type_names;
  for (const auto& [name, _] : kTypes) type_names.push_back(name);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string layer_path = path + "[" + std::to_string(i) + "]";
    if (!expect_object(&layers[i], layer_path, errors)) continue;
    ObjectReader r(layers[i], layer_path, "model.layers[]", errors);
    executor::LayerSpec layer;
    std::optional<std::string> type = r.choice("type", type_names);
    if (!type) {
      if (!r.raw("type"))
        r.error("type", "is required", "e.g. {\"type\": \"linear\", \"out\": 128}");
      continue;
    }
    layer.type = kTypes.find(*type)->second;
    if (layer.type == executor::LayerType::kLinear) {
      if (auto v = r.integer("out", 1, 65536)) layer.out = static_cast<int>(*v);
      if (auto v = r.boolean("bias")) layer.bias = *v;
      if (const json* tie = r.raw("tie")) {
        std::optional<std::int64_t> index;
        if (tie->is_string()) {
          const std::string text = tie->get<std::string>();
          std::int64_t parsed = 0;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
          if (ec == std::errc() && end == text.data() + text.size()) index = parsed;
        } else if (tie->is_number_integer()) {
          index = tie->get<std::int64_t>();
        }
        const auto is_linear = [](const json& earlier) {
          // An earlier layer may itself be malformed (not an object, a numeric
          // "type"): it has its own error, and it is no linear layer to tie to.
          if (!earlier.is_object()) return false;
          const auto type = earlier.find("type");
          return type != earlier.end() && type->is_string() && *type == "linear";
        };
        if (!index || *index < 0 || static_cast<std::size_t>(*index) >= i ||
            !is_linear(layers[*index])) {
          r.error("tie", "must be the index of an earlier linear layer, got " + tie->dump(),
                  "weight tying reuses (transposed) the weight of an earlier linear layer: "
                  "\"tie\": \"0\"");
        } else {
          layer.tie = static_cast<int>(*index);
        }
      }
      if (!r.raw("tie") && layer.out == 0 && !r.raw("out")) {
        r.error("out", "is required for a linear layer",
                "give the output width, e.g. \"out\": 128");
      }
    } else if (layer.type == executor::LayerType::kDropout) {
      if (auto v = r.number("p", 0.0, 0.999)) layer.p = *v;
    }
    model->layers.push_back(layer);
  }
}

void parse_data(ObjectReader& r, executor::DataSpec* data, std::vector<FieldError>* errors) {
  if (const json* dataset = r.raw("dataset")) {
    const std::string path = r.field("dataset");
    if (dataset->is_string()) {
      const std::string name = dataset->get<std::string>();
      static const std::vector<std::string> kBuiltins = {"iris", "wine", "breast_cancer", "digits"};
      if (std::find(kBuiltins.begin(), kBuiltins.end(), name) == kBuiltins.end()) {
        errors->push_back({path, "unknown dataset '" + name.substr(0, 64) + "'",
                           "built-in datasets: iris, wine, breast_cancer, digits; or "
                           "{\"synthetic\": \"blobs\"} or {\"upload\": \"ds_...\"}"});
      } else {
        data->source = executor::BuiltinData{name};
      }
    } else if (expect_object(dataset, path, errors)) {
      ObjectReader d(*dataset, path, "data.dataset", errors);
      if (d.raw("upload")) {
        if (auto id = d.string("upload", 64)) data->source = executor::UploadedData{*id};
      } else if (auto kind = d.choice("synthetic", {"blobs", "spirals", "xor", "regression"})) {
        executor::SyntheticData synthetic;
        static const std::map<std::string, executor::SyntheticKind, std::less<>> kKinds = {
            {"blobs", executor::SyntheticKind::kBlobs},
            {"spirals", executor::SyntheticKind::kSpirals},
            {"xor", executor::SyntheticKind::kXor},
            {"regression", executor::SyntheticKind::kRegression}};
        synthetic.kind = kKinds.find(*kind)->second;
        if (auto v = d.integer("n", 16, 1'000'000)) synthetic.n = static_cast<int>(*v);
        if (auto v = d.integer("features", 1, 8192)) synthetic.features = static_cast<int>(*v);
        if (auto v = d.integer("classes", 2, 1000)) synthetic.classes = static_cast<int>(*v);
        if (auto v = d.number("noise", 0.0, 100.0)) synthetic.noise = *v;
        data->source = synthetic;
      } else if (!d.raw("synthetic")) {
        d.error("synthetic", "is required when dataset is an object",
                "{\"synthetic\": \"blobs\", \"n\": 10000, \"features\": 32, \"classes\": 4} or "
                "{\"upload\": \"ds_...\"}");
      }
    }
  }
  if (auto v = r.integer("batch_size", 1, 65536)) data->batch_size = static_cast<int>(*v);
  if (auto v = r.number("val_fraction", 0.0, 0.9)) data->val_fraction = *v;
  if (auto v = r.boolean("shuffle")) data->shuffle = *v;
  if (auto v = r.boolean("drop_last")) data->drop_last = *v;
}

void parse_optimizer(ObjectReader& r, executor::OptimizerSpec* optimizer,
                     std::vector<FieldError>* errors) {
  if (auto type = r.choice("type", {"sgd", "adam", "adamw"})) {
    optimizer->type = *type == "sgd"    ? executor::OptimizerType::kSgd
                      : *type == "adam" ? executor::OptimizerType::kAdam
                                        : executor::OptimizerType::kAdamW;
  }
  if (auto v = r.number("lr", 1e-12, 100.0)) optimizer->lr = *v;
  if (auto v = r.number("weight_decay", 0.0, 10.0)) optimizer->weight_decay = *v;
  if (auto v = r.number("momentum", 0.0, 0.9999)) optimizer->momentum = *v;
  if (auto v = r.boolean("nesterov")) optimizer->nesterov = *v;
  if (auto v = r.number("eps", 1e-16, 1.0)) optimizer->eps = *v;
  if (const json* betas = r.raw("betas")) {
    const std::string path = r.field("betas");
    if (!betas->is_array() || betas->size() != 2 || !(*betas)[0].is_number() ||
        !(*betas)[1].is_number()) {
      errors->push_back(
          {path, "must be a pair of numbers [beta1, beta2]", "e.g. \"betas\": [0.9, 0.999]"});
    } else {
      const double b1 = (*betas)[0].get<double>();
      const double b2 = (*betas)[1].get<double>();
      if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) {
        errors->push_back({path, "betas must each be in [0, 1)", ""});
      } else {
        optimizer->beta1 = b1;
        optimizer->beta2 = b2;
      }
    }
  }
  if (optimizer->nesterov &&
      (optimizer->type != executor::OptimizerType::kSgd || optimizer->momentum <= 0)) {
    errors->push_back({r.field("nesterov"),
                       "Nesterov momentum requires a momentum and zero dampening",
                       "use type 'sgd' with momentum > 0, or drop nesterov"});
  }
}

void parse_expect(const json& expect, std::map<std::string, executor::Bound>* out,
                  std::vector<FieldError>* errors) {
  static const std::vector<std::string> kMetrics = {"loss", "val_loss", "val_accuracy",
                                                    "train_accuracy", "samples_per_sec"};
  for (auto it = expect.begin(); it != expect.end(); ++it) {
    const std::string path = "expect." + it.key();
    if (std::find(kMetrics.begin(), kMetrics.end(), it.key()) == kMetrics.end()) {
      errors->push_back(
          {path, "unknown metric '" + it.key().substr(0, 64) + "'",
           "gates can check: loss, val_loss, val_accuracy, train_accuracy, samples_per_sec"});
      continue;
    }
    if (!expect_object(&*it, path, errors)) continue;
    ObjectReader r(*it, path, "expect.*", errors);
    executor::Bound bound;
    bound.min = r.number("min", -1e300, 1e300);
    bound.max = r.number("max", -1e300, 1e300);
    if (!bound.min && !bound.max) {
      errors->push_back({path, "needs a min or a max", "e.g. {\"min\": 0.95}"});
      continue;
    }
    (*out)[it.key()] = bound;
  }
}

// A duration field: "30m", "90s", "1h30m" or a number of seconds, at most
// 30 days. nullopt when absent or malformed (an error then).
std::optional<std::chrono::milliseconds> duration_field(ObjectReader& r, std::string_view key) {
  const json* value = r.raw(key);
  if (!value) return std::nullopt;
  std::optional<std::chrono::milliseconds> parsed;
  if (value->is_string())
    parsed = parse_duration(value->get<std::string>());
  else if (value->is_number() && value->get<double>() > 0 && value->get<double>() <= 30.0 * 86400)
    parsed = std::chrono::milliseconds(static_cast<std::int64_t>(value->get<double>() * 1000));
  if (!parsed) {
    r.error(key,
            "must be a duration such as \"30m\", \"90s\" or \"1h30m\" (at most 30 days), got " +
                value->dump().substr(0, 64));
  } else if (*parsed < std::chrono::milliseconds(1)) {
    // The clock counts whole milliseconds: this would be a zero.
    r.error(key,
            "must be at least 1ms (the clock's resolution), got " + value->dump().substr(0, 64),
            "a duration below 1ms would be 0; give \"1ms\" or more, or leave the field out");
    return std::nullopt;
  }
  return parsed;
}

constexpr std::size_t kMaxDependencies = 64;

// [{"job": 12, "condition": "succeeded"}, ...]; the condition defaults to
// "succeeded" (Slurm's afterok).
void parse_depends_on(const json& list, std::vector<scheduler::Dependency>* out,
                      std::vector<FieldError>* errors) {
  if (!list.is_array()) {
    errors->push_back({"depends_on", "must be an array, got " + type_name(list),
                       "e.g. [{\"job\": 12, \"condition\": \"succeeded\"}]"});
    return;
  }
  if (list.size() > kMaxDependencies) {
    errors->push_back(
        {"depends_on", "has more than " + std::to_string(kMaxDependencies) + " dependencies", ""});
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "depends_on[" + std::to_string(i) + "]";
    if (!expect_object(&list[i], path, errors)) continue;
    ObjectReader r(list[i], path, "depends_on[]", errors);
    scheduler::Dependency dependency;
    const json* job = r.raw("job");
    const bool has_condition = r.raw("condition") != nullptr;
    std::optional<std::string> condition =
        r.choice("condition", {"succeeded", "failed", "finished"});
    if (!job) {
      r.error("job", "is required", "the id of an earlier job, as POST /v1/jobs answered it");
      continue;
    }
    std::optional<std::int64_t> id = ObjectReader::integer_value(
        *job, r.field("job"), 1, std::numeric_limits<std::int64_t>::max(), errors);
    if (!id || (has_condition && !condition)) continue;
    dependency.job = *id;
    if (condition) dependency.condition = *scheduler::parse_condition(*condition);
    out->push_back(dependency);
  }
}

}  // namespace

const std::vector<std::string>& known_fields(std::string_view path) {
  static const std::vector<std::string> kNone;
  const auto& table = field_table();
  auto it = table.find(path);
  return it == table.end() ? kNone : it->second;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (start == i) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) return std::nullopt;
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s" || (unit.empty() && i == text.size() && start == 0))
      scale = 1000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else if (unit == "d")
      scale = 86'400'000;
    else
      return std::nullopt;
    total_ms += value * scale;
  }
  if (total_ms <= 0 || total_ms > 30.0 * 86'400'000) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(total_ms));
}

std::optional<unsigned char> control_character(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return byte;
  }
  return std::nullopt;
}

std::optional<JobSpec> parse_job_spec(const json& body, std::vector<FieldError>* errors) {
  const std::size_t errors_before = errors->size();
  if (!body.is_object()) {
    errors->push_back({"", "the job spec must be a JSON object, got " + type_name(body), ""});
    return std::nullopt;
  }
  JobSpec spec;
  {
    ObjectReader top(body, "", "", errors);
    if (auto name = top.string("name", 128)) {
      if (name->empty()) {
        errors->push_back({"name", "is empty",
                           "give the job a name such as \"digits-mlp\", or leave `name` out"});
      } else if (auto c = control_character(*name)) {
        errors->push_back(
            {"name", "contains the control character " + code_point(*c), kControlCharacterHint});
      } else {
        spec.name = *name;
      }
    }
    if (const json* labels = top.raw("labels"); expect_object(labels, "labels", errors)) {
      if (labels->size() > 32) errors->push_back({"labels", "has more than 32 labels", ""});
      for (auto it = labels->begin(); it != labels->end(); ++it) {
        if (!it->is_string()) {
          errors->push_back({"labels." + it.key(), "must be a string, got " + type_name(*it), ""});
        } else if (it.key().empty() || it.key().size() > 63 ||
                   it->get<std::string>().size() > 256) {
          errors->push_back({"labels." + it.key().substr(0, 64),
                             "keys are 1-63 and values 0-256 characters", ""});
        } else if (auto c = control_character(it.key())) {
          errors->push_back({"labels", "a key contains the control character " + code_point(*c),
                             kControlCharacterHint});
        } else if (auto c = control_character(it->get_ref<const std::string&>())) {
          errors->push_back({"labels." + it.key(),
                             "contains the control character " + code_point(*c),
                             kControlCharacterHint});
        } else {
          spec.labels[it.key()] = it->get<std::string>();
        }
      }
    }
    if (auto v = top.integer("priority", -1000, 1000)) spec.priority = static_cast<int>(*v);
    if (auto v = top.integer("max_retries", 0, 10)) spec.max_retries = static_cast<int>(*v);
    spec.training.timeout = duration_field(top, "timeout");
    spec.start_by = duration_field(top, "start_by");
    if (auto v = top.boolean("preemptible")) spec.preemptible = *v;
    if (const json* depends_on = top.raw("depends_on"))
      parse_depends_on(*depends_on, &spec.depends_on, errors);
    if (const json* notify = top.raw("notify")) spec.notify = parse_notify(*notify, errors);
    // Which versions exist is Lightning's rule (lightning/versions.h).
    spec.trainer.lightning_version = top.string("lightning_version", 32);
    if (const json* environment = top.raw("environment");
        expect_object(environment, "environment", errors)) {
      ObjectReader r(*environment, "environment", "environment", errors);
      lightning::Environment& env = spec.trainer.environment.emplace();
      for (auto [key, target] :
           {std::pair{"python", &env.python}, std::pair{"torch", &env.torch},
            std::pair{"torch_xla", &env.torch_xla}, std::pair{"lightning", &env.lightning}}) {
        const json* value = r.raw(key);
        if (value && !value->is_string()) {
          r.error(key,
                  "must be a version string as `pip freeze` prints it, got " + type_name(*value),
                  "quote it: \"3.10\" (the JSON number 3.10 is 3.1)");
          continue;
        }
        *target = r.string(key, 32);
      }
    }
    spec.trainer.runtime = top.string("runtime", 32);
    if (const json* env = top.raw("env"); expect_object(env, "env", errors)) {
      for (auto it = env->begin(); it != env->end(); ++it) {
        if (!it->is_string())
          errors->push_back({"env." + it.key(), "must be a string, got " + type_name(*it), ""});
        else
          spec.trainer.env[it.key()] = it->get<std::string>();
      }
    }
    if (const json* resources = top.raw("resources");
        expect_object(resources, "resources", errors)) {
      ObjectReader r(*resources, "resources", "resources", errors);
      spec.trainer.accelerator_type = r.string("accelerator_type", 32);
      spec.trainer.topology = r.string("topology", 16);
      if (const json* workers = r.raw("workers")) parse_workers(*workers, &spec.trainer, errors);
    }
    if (const json* trainer = top.raw("trainer"); expect_object(trainer, "trainer", errors)) {
      ObjectReader r(*trainer, "trainer", "trainer", errors);
      parse_trainer(r, &spec);
      // An explicit null is Python's None, which Lightning tells apart from
      // the default where the default is not None: `devices` defaults to
      // 'auto' from 2.0 on, and 2.x has no `tpu_cores` keyword at all. In 1.x
      // both default to None, and the rules treat None and absent alike.
      if (const json* v = r.raw("devices", /*allow_null=*/true))
        spec.trainer.devices = device_value(*v, "trainer.devices", errors);
      if (const json* v = r.raw("tpu_cores", /*allow_null=*/true))
        spec.trainer.tpu_cores = device_value(*v, "trainer.tpu_cores", errors);
      // Lightning judges num_nodes of any JSON type ("`num_nodes` must be a
      // positive integer, but got 2.0.", or int("2") in 2.0 and older).
      if (const json* v = r.raw("num_nodes", /*allow_null=*/true))
        spec.trainer.num_nodes = device_value(*v, "trainer.num_nodes", errors);
      // Removed in Lightning 2.0, judged by version (devices.cc check_removed_arguments).
      for (const char* name : {"gpus", "ipus", "num_processes"})
        if (r.raw(name, /*allow_null=*/true)) spec.trainer.removed_arguments.push_back(name);
    }
    if (const json* model = top.raw("model"); expect_object(model, "model", errors)) {
      ObjectReader r(*model, "model", "model", errors);
      if (const json* layers = r.raw("layers"))
        parse_layers(*layers, "model.layers", &spec.training.model, errors);
      else
        r.error("layers", "is required",
                "e.g. [{\"type\": \"linear\", \"out\": 128}, {\"type\": \"relu\"}, {\"type\": "
                "\"linear\", \"out\": 10}]");
      if (auto loss = r.choice("loss", {"cross_entropy", "mse"})) {
        spec.training.model.loss =
            *loss == "mse" ? executor::Loss::kMse : executor::Loss::kCrossEntropy;
      }
    } else if (!body.contains("model")) {
      errors->push_back({"model", "is required", "a model needs at least {\"layers\": [...]}"});
    }
    if (const json* data = top.raw("data"); expect_object(data, "data", errors)) {
      ObjectReader r(*data, "data", "data", errors);
      parse_data(r, &spec.training.data, errors);
    } else if (!body.contains("data")) {
      errors->push_back(
          {"data", "is required", "e.g. {\"dataset\": \"digits\", \"batch_size\": 64}"});
    }
    if (const json* optimizer = top.raw("optimizer");
        expect_object(optimizer, "optimizer", errors)) {
      ObjectReader r(*optimizer, "optimizer", "optimizer", errors);
      parse_optimizer(r, &spec.training.optimizer, errors);
    }
    if (const json* expect = top.raw("expect"); expect_object(expect, "expect", errors)) {
      parse_expect(*expect, &spec.training.expect, errors);
    }
  }
  if (errors->size() != errors_before) return std::nullopt;
  json key = json::object();
  for (const char* part : {"trainer", "model", "data", "optimizer", "expect", "lightning_version",
                           "environment", "runtime", "env", "resources", "timeout"}) {
    if (body.contains(part)) key[part] = body[part];
  }
  spec.training_key = key.dump();
  return spec;
}

void apply_resolution(const Resolution& resolution, JobSpec* spec) {
  executor::TrainingSpec& t = spec->training;
  t.world_size = std::max(1, resolution.world_size);
  t.on_tpu = resolution.accelerator == "tpu";
  t.devices_per_host = t.on_tpu ? std::max(1, resolution.device.devices_per_host) : 0;
  t.tpu_available = resolution.tpu_available;
  t.xla_debug = resolution.pt_xla_debug;
  t.xla_metrics_file = resolution.xla_metrics_file;
  t.torch_xla_version = resolution.torch_xla_version;
  // The executor logs device_info first, then the notices: torch_xla's
  // import warnings come before Lightning's device lines, and what it prints
  // when the processes first place a tensor on the TPU after them.
  t.device_info = resolution.torch_xla_import_lines;
  t.device_info.insert(t.device_info.end(), resolution.device_info.begin(),
                       resolution.device_info.end());
  // Fit's _run starts with _parse_loop_limits, before the strategy moves the model.
  t.device_info.insert(t.device_info.end(), resolution.fit_start_lines.begin(),
                       resolution.fit_start_lines.end());
  t.device_info.insert(t.device_info.end(), resolution.torch_xla_first_tensor_lines.begin(),
                       resolution.torch_xla_first_tensor_lines.end());
  t.notices = resolution.notices;
  t.lightning_v1 = resolution.lightning_v1;
  if (resolution.launch_failure) t.launch_failure = launch_failure(*resolution.launch_failure);
  // Lightning's loop limits: max_epochs when not given, and max_time's Timer.
  if (!spec->trainer.max_epochs_given) t.max_epochs = resolution.default_max_epochs;
  if (resolution.max_time_ms) t.max_time = std::chrono::milliseconds(*resolution.max_time_ms);
  switch (resolution.precision) {
    case lightning::Precision::k32True:
      t.precision = executor::Precision::kFp32;
      break;
    // 16-true computes in fp16 only where it does upstream: the CPU (HalfPrecision),
    // or a TPU whose torch_xla reads the user's XLA_USE_FP16 (lightning/precision.cc).
    case lightning::Precision::k16True:
      t.precision = executor::Precision::kFp16;
      break;
    case lightning::Precision::kBf16True:
      t.precision = executor::Precision::kBf16;
      break;
  }
}

}  // namespace tpujobs::api
