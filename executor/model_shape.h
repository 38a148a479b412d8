// The shapes a model spec implies once the dataset's width is known: what
// HBM accounting, the performance advisor and the model summary all need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "executor/spec.h"

namespace tpujobs::executor {

struct LayerShape {
  LayerType type;
  int in = 0;                   // width of the layer's input
  int out = 0;                  // width of the layer's output
  std::int64_t parameters = 0;  // owned by this layer (0 for a tied linear's weight)
  bool tied = false;
};

struct ModelShape {
  int input_features = 0;
  int outputs = 0;  // width of the last layer
  std::vector<LayerShape> layers;
  std::int64_t parameters = 0;  // total, counting a tied weight once

  // Forward-pass multiply-adds per sample (linear layers only).
  std::int64_t macs_per_sample() const;
};

// Infers every layer's width. kInvalid, naming the layer, when the spec cannot
// be built: a linear without `out`, a tie pointing at a layer that is not an
// earlier linear, or a tied layer whose transposed weight does not fit the
// width it receives.
base::Result<ModelShape> infer_shape(const ModelSpec& model, int input_features);

}  // namespace tpujobs::executor
