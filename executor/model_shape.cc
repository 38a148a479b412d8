#include "executor/model_shape.h"

namespace tpujobs::executor {

std::int64_t ModelShape::macs_per_sample() const {
  std::int64_t macs = 0;
  for (const LayerShape& layer : layers) {
    if (layer.type == LayerType::kLinear) macs += std::int64_t{layer.in} * layer.out;
  }
  return macs;
}

base::Result<ModelShape> infer_shape(const ModelSpec& model, int input_features) {
  auto invalid = [](std::string message) {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  ModelShape shape;
  shape.input_features = input_features;
  int width = input_features;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const LayerSpec& spec = model.layers[i];
    LayerShape layer{spec.type, width, width, 0, false};
    const std::string where = "model.layers[" + std::to_string(i) + "]";
    switch (spec.type) {
      case LayerType::kLinear:
        if (spec.tie) {
          const int source = *spec.tie;
          if (source < 0 || static_cast<std::size_t>(source) >= i ||
              model.layers[source].type != LayerType::kLinear || model.layers[source].tie) {
            return invalid(where + ".tie must name an earlier, untied linear layer");
          }
          const LayerShape& tied_to = shape.layers[source];
          // The tied weight is used transposed: it maps out -> in of the source.
          if (tied_to.out != width) {
            return invalid(where + ": tied weight of layer " + std::to_string(source) +
                           " expects width " + std::to_string(tied_to.out) + " but receives " +
                           std::to_string(width));
          }
          layer.out = tied_to.in;
          layer.tied = true;
          layer.parameters = spec.bias ? layer.out : 0;
        } else {
          if (spec.out <= 0) return invalid(where + ".out must be a positive integer");
          layer.out = spec.out;
          layer.parameters = std::int64_t{layer.in} * layer.out + (spec.bias ? layer.out : 0);
        }
        break;
      case LayerType::kLayerNorm:
        layer.parameters = 2 * std::int64_t{width};
        break;
      default:
        break;
    }
    width = layer.out;
    shape.parameters += layer.parameters;
    shape.layers.push_back(layer);
  }
  shape.outputs = width;
  return shape;
}

}  // namespace tpujobs::executor
