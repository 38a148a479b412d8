// The training part of the job spec: the model's layers and loss, the data,
// the optimizer and the expected metrics (executor/spec.h).
#include <charconv>
#include <cmath>
#include <limits>

#include "api/spec_reader.h"

namespace tpujobs::api::spec_parsing {
namespace {

// Errors go to the list of `parent`, the reader of "model".
void parse_layers(ObjectReader& parent, const json& layers, const std::string& path,
                  executor::ModelSpec* model) {
  if (!layers.is_array()) {
    parent.add({path, "must be an array of layers, got " + type_name(layers), ""});
    return;
  }
  if (layers.empty() || layers.size() > 64) {
    parent.add({path, "must hold between 1 and 64 layers", ""});
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
    if (!parent.expect_object(&layers[i], layer_path)) continue;
    ObjectReader r(parent, layers[i], layer_path, "model.layers[]");
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

void parse_data(ObjectReader& r, executor::DataSpec* data) {
  if (const json* dataset = r.raw("dataset")) {
    const std::string path = r.field("dataset");
    if (dataset->is_string()) {
      const std::string name = dataset->get<std::string>();
      static const std::vector<std::string> kBuiltins = {"iris", "wine", "breast_cancer", "digits"};
      if (std::find(kBuiltins.begin(), kBuiltins.end(), name) == kBuiltins.end()) {
        r.add({path, "unknown dataset '" + name.substr(0, 64) + "'",
               "built-in datasets: iris, wine, breast_cancer, digits; or "
               "{\"synthetic\": \"blobs\"} or {\"upload\": \"ds_...\"}"});
      } else {
        data->source = executor::BuiltinData{name};
      }
    } else if (r.expect_object(dataset, path)) {
      ObjectReader d(r, *dataset, path, "data.dataset");
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

void parse_optimizer(ObjectReader& r, executor::OptimizerSpec* optimizer) {
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
      r.add({path, "must be a pair of numbers [beta1, beta2]", "e.g. \"betas\": [0.9, 0.999]"});
    } else {
      const double b1 = (*betas)[0].get<double>();
      const double b2 = (*betas)[1].get<double>();
      if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) {
        r.add({path, "betas must each be in [0, 1)", ""});
      } else {
        optimizer->beta1 = b1;
        optimizer->beta2 = b2;
      }
    }
  }
  if (optimizer->nesterov &&
      (optimizer->type != executor::OptimizerType::kSgd || optimizer->momentum <= 0)) {
    r.add({r.field("nesterov"), "Nesterov momentum requires a momentum and zero dampening",
           "use type 'sgd' with momentum > 0, or drop nesterov"});
  }
}

// Errors go to `top`'s list.
void parse_expect(ObjectReader& top, const json& expect,
                  std::map<std::string, executor::Bound>* out) {
  static const std::vector<std::string> kMetrics = {"loss", "val_loss", "val_accuracy",
                                                    "train_accuracy", "samples_per_sec"};
  for (auto it = expect.begin(); it != expect.end(); ++it) {
    const std::string path = "expect." + it.key();
    if (std::find(kMetrics.begin(), kMetrics.end(), it.key()) == kMetrics.end()) {
      top.add({path, "unknown metric '" + it.key().substr(0, 64) + "'",
               "gates can check: loss, val_loss, val_accuracy, train_accuracy, samples_per_sec"});
      continue;
    }
    if (!top.expect_object(&*it, path)) continue;
    ObjectReader r(top, *it, path, "expect.*");
    executor::Bound bound;
    bound.min = r.number("min", -1e300, 1e300);
    bound.max = r.number("max", -1e300, 1e300);
    if (!bound.min && !bound.max) {
      top.add({path, "needs a min or a max", "e.g. {\"min\": 0.95}"});
      continue;
    }
    (*out)[it.key()] = bound;
  }
}

}  // namespace

void parse_training_sections(ObjectReader& top, const json& body, JobSpec* spec) {
  if (const json* model = top.raw("model"); top.expect_object(model, "model")) {
    ObjectReader r(top, *model, "model", "model");
    if (const json* layers = r.raw("layers"))
      parse_layers(r, *layers, "model.layers", &spec->training.model);
    else
      r.error("layers", "is required",
              "e.g. [{\"type\": \"linear\", \"out\": 128}, {\"type\": \"relu\"}, {\"type\": "
              "\"linear\", \"out\": 10}]");
    if (auto loss = r.choice("loss", {"cross_entropy", "mse"})) {
      spec->training.model.loss =
          *loss == "mse" ? executor::Loss::kMse : executor::Loss::kCrossEntropy;
    }
  } else if (!body.contains("model")) {
    top.add({"model", "is required", "a model needs at least {\"layers\": [...]}"});
  }
  if (const json* data = top.raw("data"); top.expect_object(data, "data")) {
    ObjectReader r(top, *data, "data", "data");
    parse_data(r, &spec->training.data);
  } else if (!body.contains("data")) {
    top.add({"data", "is required", "e.g. {\"dataset\": \"digits\", \"batch_size\": 64}"});
  }
  if (const json* optimizer = top.raw("optimizer"); top.expect_object(optimizer, "optimizer")) {
    ObjectReader r(top, *optimizer, "optimizer", "optimizer");
    parse_optimizer(r, &spec->training.optimizer);
  }
  if (const json* expect = top.raw("expect"); top.expect_object(expect, "expect")) {
    parse_expect(top, *expect, &spec->training.expect);
  }
}

}  // namespace tpujobs::api::spec_parsing
