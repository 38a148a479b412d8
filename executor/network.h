// The model: one flat parameter vector shared (read-only during a step) by all
// replicas, and per-replica workspaces that run forward and backward passes on
// a batch with preallocated buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "executor/float_buffer.h"
#include "executor/gemm.h"
#include "executor/model_shape.h"
#include "executor/spec.h"

namespace tpujobs::executor {

// Where one layer's parameters live in the flat vector (offsets in floats).
struct LayerParameters {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t weight = kNone;  // linear: [in x out] row-major; a tied linear points at
                               // its source's [out x in] weight, used transposed
  std::size_t bias = kNone;    // linear bias [out]; layernorm: gamma at weight, beta at bias
  std::size_t weight_size = 0;
};

class Network {
 public:
  // Lays out and initializes the parameters as torch does by default
  // (linear: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; layernorm: 1, 0),
  // drawing from `seed`. `shape` must come from infer_shape(model, ...).
  Network(const ModelSpec& model, const ModelShape& shape, Precision precision, std::uint64_t seed);

  const ModelSpec& model() const { return model_; }
  const ModelShape& shape() const { return shape_; }
  Precision precision() const { return precision_; }
  const std::vector<LayerParameters>& layout() const { return layout_; }

  // Every trainable value, each shared tensor once.
  FloatBuffer& parameters() { return parameters_; }
  const FloatBuffer& parameters() const { return parameters_; }
  // Distinct parameter tensors (what torch's len(list(model.parameters())) counts).
  int parameter_tensors() const { return parameter_tensors_; }
  int tied_layers() const;

  // Must be called after parameters() change: refreshes the reduced-precision
  // copy that matmuls read under bf16-true / 16-true.
  void parameters_changed();
  // What matmuls read: parameters() under fp32, else their rounded copy.
  const float* matmul_parameters() const;

 private:
  ModelSpec model_;
  ModelShape shape_;
  Precision precision_;
  std::vector<LayerParameters> layout_;
  FloatBuffer parameters_;
  FloatBuffer rounded_;  // empty under fp32
  int parameter_tensors_ = 0;
};

struct BatchLoss {
  double loss_sum = 0;       // sum over the batch's samples
  std::int64_t correct = 0;  // classification: argmax == label
};

// One replica's buffers for batches of up to `max_rows` samples. Allocates
// everything in the constructor but its products' packed shared operand,
// which its first passes size; later passes do not allocate.
class Replica {
 public:
  Replica(const Network& network, int max_rows, ComputeSplit split);
  Replica(const Replica&) = delete;  // split_ points into it
  Replica& operator=(const Replica&) = delete;

  int max_rows() const { return max_rows_; }
  // The batch to fill before a pass: rows x input features, and one label per row.
  float* input() { return activations_[0].data(); }
  float* labels() { return labels_.data(); }

  // Accumulated d(loss)/d(parameters), in the network's layout.
  FloatBuffer& gradients() { return gradients_; }
  void zero_gradients();

  // Forward in training mode (dropout active, masks drawn from `dropout_seed`),
  // the batch's mean loss, and backward: adds loss_scale * d(mean loss) to
  // gradients() when `accumulate`, else overwrites them with it (which saves
  // a pass over memory for the first micro-batch of a step). Returns the
  // batch's loss sum and correct count.
  BatchLoss train_batch(int rows, float loss_scale, std::uint64_t dropout_seed,
                        bool accumulate = true);
  // Forward in evaluation mode only.
  BatchLoss evaluate_batch(int rows);

 private:
  const float* forward(int rows, bool training, std::uint64_t dropout_seed);
  BatchLoss loss(int rows, float* output_gradient, float scale);
  void backward(int rows, bool accumulate);
  // One layer's part of backward: its parameters' gradients from
  // `upstream` (d loss / d its output), and d loss / d its input into
  // `downstream` unless it is the first layer.
  void backward_linear(std::size_t l, int rows, bool accumulate, const float* upstream,
                       float* downstream);
  void backward_layer_norm(std::size_t l, int rows, bool accumulate, const float* upstream,
                           float* downstream);

  const Network& network_;
  int max_rows_;
  ComputeSplit split_;
  std::vector<FloatBuffer> activations_;     // [layer] rows x width; [0] is the input
  std::vector<FloatBuffer> rounded_inputs_;  // linear layers under bf16/fp16
  std::vector<FloatBuffer> aux_;             // dropout masks; layernorm normalized inputs
  std::vector<FloatBuffer> inverse_std_;     // layernorm
  FloatBuffer labels_;
  FloatBuffer gradient_a_, gradient_b_, rounded_gradient_;
  FloatBuffer gradients_;
  std::vector<char> weight_written_;  // per layer: its weight got a gradient this pass
  FloatBuffer shared_operand_;        // split_.shared_operand
};

// hash64 of the exact bytes of `values`, as "hash64:<16 hex digits>": equal
// digests mean (barring a collision) bit-identical values.
std::string digest(std::span<const float> values);

}  // namespace tpujobs::executor
