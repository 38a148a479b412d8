#include "executor/network.h"

// The pool parallelizes; Eigen itself must never start threads of its own.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "executor/precision.h"
#include "executor/random.h"
#include "executor/training_state.h"

namespace tpujobs::executor {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using View = Eigen::Map<RowMatrix>;
using ConstView = Eigen::Map<const RowMatrix>;
using RowVectorView = Eigen::Map<Eigen::RowVectorXf>;
using ConstRowVectorView = Eigen::Map<const Eigen::RowVectorXf>;

constexpr float kLayerNormEpsilon = 1e-5f;

// dx = dy where x > 0, else +0: ReLU's backward pass. Eigen 3.4's select()
// runs one element at a time behind a branch that mispredicts on about half of
// the elements (it was a quarter of the CPU time of the digits MLP); this
// uses Eigen's packet primitives instead, with the same result bit for bit.
// (Packet types are vector types whose attributes GCC warns about as template
// arguments; Eigen silences that warning the same way inside its headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
void relu_backward(const float* x, const float* dy, float* dx, std::int64_t count) {
  namespace packet = Eigen::internal;
  using Packet = packet::packet_traits<float>::type;
  constexpr std::int64_t kLanes = packet::packet_traits<float>::size;
  const Packet zero = packet::pset1<Packet>(0.0f);
  std::int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    const Packet positive = packet::pcmp_lt(zero, packet::ploadu<Packet>(x + i));
    packet::pstoreu(dx + i, packet::pand(positive, packet::ploadu<Packet>(dy + i)));
  }
  for (; i < count; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
#pragma GCC diagnostic pop

float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
float gelu_derivative(float x) {
  const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * std::exp(-0.5f * x * x);
  return cdf + x * pdf;
}

}  // namespace

Network::Network(const ModelSpec& model, const ModelShape& shape, Precision precision,
                 std::uint64_t seed)
    : model_(model), shape_(shape), precision_(precision) {
  std::size_t cursor = 0;
  layout_.resize(shape.layers.size());
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& layer = shape.layers[i];
    const LayerSpec& spec = model.layers[i];
    LayerParameters& where = layout_[i];
    if (layer.type == LayerType::kLinear) {
      if (spec.tie) {
        where.weight = layout_[*spec.tie].weight;
        where.weight_size = layout_[*spec.tie].weight_size;
      } else {
        where.weight = cursor;
        where.weight_size = std::size_t(layer.in) * layer.out;
        cursor += where.weight_size;
        ++parameter_tensors_;
      }
      if (spec.bias) {
        where.bias = cursor;
        cursor += layer.out;
        ++parameter_tensors_;
      }
    } else if (layer.type == LayerType::kLayerNorm) {
      where.weight = cursor;
      where.weight_size = layer.out;
      where.bias = cursor + layer.out;
      cursor += 2 * std::size_t(layer.out);
      parameter_tensors_ += 2;
    }
  }
  parameters_.assign(cursor, 0.0f);
  Rng rng(derive_seed(seed, {0x1417}));
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& layer = shape.layers[i];
    const LayerParameters& where = layout_[i];
    if (layer.type == LayerType::kLinear) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(layer.in));
      if (!layer.tied) {
        for (std::size_t k = 0; k < where.weight_size; ++k) {
          parameters_[where.weight + k] = static_cast<float>(rng.uniform(-bound, bound));
        }
      }
      if (where.bias != LayerParameters::kNone) {
        for (int k = 0; k < layer.out; ++k) {
          parameters_[where.bias + k] = static_cast<float>(rng.uniform(-bound, bound));
        }
      }
    } else if (layer.type == LayerType::kLayerNorm) {
      std::fill_n(parameters_.begin() + where.weight, layer.out, 1.0f);
    }
  }
  parameters_changed();
}

int Network::tied_layers() const {
  return static_cast<int>(std::count_if(shape_.layers.begin(), shape_.layers.end(),
                                        [](const LayerShape& layer) { return layer.tied; }));
}

void Network::parameters_changed() {
  if (precision_ == Precision::kFp32) return;
  rounded_.resize(parameters_.size());
  round_for_matmul(precision_, parameters_.data(), rounded_.data(), parameters_.size());
}

const float* Network::matmul_parameters() const {
  return precision_ == Precision::kFp32 ? parameters_.data() : rounded_.data();
}

Replica::Replica(const Network& network, int max_rows, ComputeSplit split)
    : network_(network), max_rows_(max_rows), split_(split) {
  split_.shared_operand = &shared_operand_;
  const ModelShape& shape = network.shape();
  const std::size_t rows = static_cast<std::size_t>(max_rows);
  int widest = shape.input_features;
  activations_.resize(shape.layers.size() + 1);
  rounded_inputs_.resize(shape.layers.size());
  aux_.resize(shape.layers.size());
  inverse_std_.resize(shape.layers.size());
  activations_[0].resize(rows * shape.input_features);
  const bool reduced = network.precision() != Precision::kFp32;
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& layer = shape.layers[i];
    widest = std::max({widest, layer.in, layer.out});
    activations_[i + 1].resize(rows * layer.out);
    if (layer.type == LayerType::kLinear && reduced) rounded_inputs_[i].resize(rows * layer.in);
    if (layer.type == LayerType::kDropout || layer.type == LayerType::kLayerNorm) {
      aux_[i].resize(rows * layer.out);
    }
    if (layer.type == LayerType::kLayerNorm) inverse_std_[i].resize(rows);
  }
  labels_.resize(rows);
  gradient_a_.resize(rows * widest);
  gradient_b_.resize(rows * widest);
  if (reduced) rounded_gradient_.resize(rows * widest);
  gradients_.assign(network.parameters().size(), 0.0f);
  weight_written_.assign(shape.layers.size(), 0);
}

void Replica::zero_gradients() { std::fill(gradients_.begin(), gradients_.end(), 0.0f); }

const float* Replica::forward(int rows, bool training, std::uint64_t dropout_seed) {
  const ModelShape& shape = network_.shape();
  const float* parameters = network_.parameters().data();
  const float* matmul = network_.matmul_parameters();
  const Precision precision = network_.precision();
  for (std::size_t l = 0; l < shape.layers.size(); ++l) {
    const LayerShape& layer = shape.layers[l];
    const LayerParameters& where = network_.layout()[l];
    const int in = layer.in, out = layer.out;
    const std::int64_t size = std::int64_t{rows} * out;
    ConstView x(activations_[l].data(), rows, in);
    View y(activations_[l + 1].data(), rows, out);
    switch (layer.type) {
      case LayerType::kLinear: {
        const float* input = activations_[l].data();
        if (precision != Precision::kFp32) {
          round_for_matmul(precision, input, rounded_inputs_[l].data(), std::size_t(rows) * in);
          input = rounded_inputs_[l].data();
        }
        // y = b + x W with W [in x out], or b + x W^T with a tied source's
        // W [out x in]: the product accumulates onto rows that start as the
        // bias, which saves zeroing y and a second pass to add b.
        const bool bias = where.bias != LayerParameters::kNone;
        if (bias) {
          for (int r = 0; r < rows; ++r) {
            std::copy_n(parameters + where.bias, out, y.data() + std::size_t(r) * out);
          }
        }
        const MatrixOperand w = layer.tied ? MatrixOperand{matmul + where.weight, in, true}
                                           : MatrixOperand{matmul + where.weight, out, false};
        gemm(rows, out, in, MatrixOperand{input, in, false}, w, y.data(), out, bias, split_);
        break;
      }
      case LayerType::kRelu:
        y = x.cwiseMax(0.0f);
        break;
      case LayerType::kGelu:
        for (std::int64_t k = 0; k < size; ++k) y.data()[k] = gelu(x.data()[k]);
        break;
      case LayerType::kTanh:
        y = x.array().tanh().matrix();
        break;
      case LayerType::kSigmoid:
        y = ((-x.array()).exp() + 1.0f).inverse().matrix();
        break;
      case LayerType::kDropout: {
        const double p = network_.model().layers[l].p;
        if (!training || p <= 0) {
          y = x;
          break;
        }
        float* mask = aux_[l].data();
        const float keep_scale = p >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
        Rng rng(derive_seed(dropout_seed, {l}));
        for (std::int64_t k = 0; k < size; ++k) mask[k] = rng.uniform() < p ? 0.0f : keep_scale;
        y = x.cwiseProduct(ConstView(mask, rows, out));
        break;
      }
      case LayerType::kLayerNorm: {
        View normalized(aux_[l].data(), rows, out);
        float* inverse_std = inverse_std_[l].data();
        for (int r = 0; r < rows; ++r) {
          const float mean = x.row(r).mean();
          normalized.row(r) = x.row(r).array() - mean;
          const float variance = normalized.row(r).squaredNorm() / static_cast<float>(out);
          inverse_std[r] = 1.0f / std::sqrt(variance + kLayerNormEpsilon);
          normalized.row(r) *= inverse_std[r];
        }
        ConstRowVectorView gamma(parameters + where.weight, out);
        ConstRowVectorView beta(parameters + where.bias, out);
        y = normalized.array().rowwise() * gamma.array();
        y.rowwise() += beta;
        break;
      }
    }
  }
  return activations_.back().data();
}

BatchLoss Replica::loss(int rows, float* output_gradient, float scale) {
  const ModelShape& shape = network_.shape();
  const int outputs = shape.outputs;
  ConstView y(activations_.back().data(), rows, outputs);
  BatchLoss result;
  if (network_.model().loss == Loss::kCrossEntropy) {
    const float per_sample = scale / static_cast<float>(rows);
    for (int r = 0; r < rows; ++r) {
      const int label = static_cast<int>(labels_[r]);
      Eigen::Index best = 0;
      const float max = y.row(r).maxCoeff(&best);
      const double sum = (y.row(r).array() - max).exp().sum();
      result.loss_sum += std::log(sum) + max - y(r, label);
      if (best == label) ++result.correct;
      if (output_gradient != nullptr) {
        RowVectorView gradient(output_gradient + std::size_t(r) * outputs, outputs);
        gradient = (y.row(r).array() - max).exp() * static_cast<float>(per_sample / sum);
        gradient[label] -= per_sample;
      }
    }
  } else {
    const float per_value = 2.0f * scale / static_cast<float>(std::int64_t{rows} * outputs);
    for (int r = 0; r < rows; ++r) {
      double squares = 0;
      for (int k = 0; k < outputs; ++k) {
        const float difference = y(r, k) - labels_[r];
        squares += double{difference} * difference;
        if (output_gradient != nullptr)
          output_gradient[std::size_t(r) * outputs + k] = per_value * difference;
      }
      result.loss_sum += squares / outputs;
    }
  }
  return result;
}

void Replica::backward_linear(std::size_t l, int rows, bool accumulate, const float* upstream,
                              float* downstream) {
  const LayerShape& layer = network_.shape().layers[l];
  const LayerParameters& where = network_.layout()[l];
  const int in = layer.in, out = layer.out;
  const Precision precision = network_.precision();
  float* gradients = gradients_.data();
  const float* matmul = network_.matmul_parameters();
  const bool need_input_gradient = l > 0;
  const float* dy_data = upstream;
  const float* x_data = activations_[l].data();
  if (precision != Precision::kFp32) {
    round_for_matmul(precision, upstream, rounded_gradient_.data(), std::size_t(rows) * out);
    dy_data = rounded_gradient_.data();
    x_data = rounded_inputs_[l].data();
  }
  // A tied weight gets gradients from two layers: the later one (seen
  // first here) may overwrite, the source then adds.
  const std::size_t owner =
      layer.tied ? static_cast<std::size_t>(*network_.model().layers[l].tie) : l;
  const bool overwrite = !accumulate && !weight_written_[owner];
  weight_written_[owner] = 1;
  const MatrixOperand dym{dy_data, out, false};
  float* dw = gradients + where.weight;
  if (!layer.tied) {
    // W [in x out]: dW += x^T dy, dx = dy W^T.
    gemm(in, out, rows, MatrixOperand{x_data, in, true}, dym, dw, out, !overwrite, split_);
    if (need_input_gradient) {
      gemm(rows, in, out, dym, MatrixOperand{matmul + where.weight, out, true}, downstream, in,
           false, split_);
    }
  } else {
    // y = x W^T with the source's W [out x in]: dW += dy^T x, dx = dy W.
    gemm(out, in, rows, MatrixOperand{dy_data, out, true}, MatrixOperand{x_data, in, false}, dw, in,
         !overwrite, split_);
    if (need_input_gradient) {
      gemm(rows, in, out, dym, MatrixOperand{matmul + where.weight, in, false}, downstream, in,
           false, split_);
    }
  }
  if (where.bias != LayerParameters::kNone) {
    ConstView dy(upstream, rows, out);
    RowVectorView bias_gradient(gradients + where.bias, out);
    if (!accumulate) bias_gradient.setZero();
    for (int r = 0; r < rows; ++r) bias_gradient += dy.row(r);
  }
}

void Replica::backward_layer_norm(std::size_t l, int rows, bool accumulate, const float* upstream,
                                  float* downstream) {
  const LayerParameters& where = network_.layout()[l];
  const int out = network_.shape().layers[l].out;
  float* gradients = gradients_.data();
  ConstView dy(upstream, rows, out);
  ConstView normalized(aux_[l].data(), rows, out);
  ConstRowVectorView gamma(network_.parameters().data() + where.weight, out);
  RowVectorView gamma_gradient(gradients + where.weight, out);
  RowVectorView beta_gradient(gradients + where.bias, out);
  if (!accumulate) {
    gamma_gradient.setZero();
    beta_gradient.setZero();
  }
  for (int r = 0; r < rows; ++r) {
    gamma_gradient += dy.row(r).cwiseProduct(normalized.row(r));
    beta_gradient += dy.row(r);
  }
  if (l == 0) return;  // no input gradient for the first layer
  // dx = (g - mean(g) - x_hat * mean(g * x_hat)) / std, with g = dy * gamma.
  View dx(downstream, rows, network_.shape().layers[l].in);
  const float* inverse_std = inverse_std_[l].data();
  for (int r = 0; r < rows; ++r) {
    const float mean_scaled = dy.row(r).dot(gamma) / static_cast<float>(out);
    const float mean_projection =
        dy.row(r).cwiseProduct(gamma).dot(normalized.row(r)) / static_cast<float>(out);
    dx.row(r).array() = (dy.row(r).array() * gamma.array() - mean_scaled -
                         normalized.row(r).array() * mean_projection) *
                        inverse_std[r];
  }
}

void Replica::backward(int rows, bool accumulate) {
  std::fill(weight_written_.begin(), weight_written_.end(), 0);
  const ModelShape& shape = network_.shape();
  float* upstream = gradient_a_.data();  // d loss / d (this layer's output)
  float* downstream = gradient_b_.data();
  for (std::size_t l = shape.layers.size(); l-- > 0;) {
    const LayerShape& layer = shape.layers[l];
    const int in = layer.in, out = layer.out;
    const bool need_input_gradient = l > 0;
    ConstView dy(upstream, rows, out);
    View dx(downstream, rows, in);
    ConstView x(activations_[l].data(), rows, in);
    ConstView y(activations_[l + 1].data(), rows, out);
    switch (layer.type) {
      case LayerType::kLinear:
        backward_linear(l, rows, accumulate, upstream, downstream);
        break;
      case LayerType::kRelu:
        if (need_input_gradient)
          relu_backward(x.data(), dy.data(), dx.data(), std::int64_t{rows} * in);
        break;
      case LayerType::kGelu:
        if (need_input_gradient) {
          for (std::int64_t k = 0; k < std::int64_t{rows} * in; ++k) {
            dx.data()[k] = dy.data()[k] * gelu_derivative(x.data()[k]);
          }
        }
        break;
      case LayerType::kTanh:
        if (need_input_gradient) dx = (dy.array() * (1.0f - y.array().square())).matrix();
        break;
      case LayerType::kSigmoid:
        if (need_input_gradient) dx = (dy.array() * y.array() * (1.0f - y.array())).matrix();
        break;
      case LayerType::kDropout: {
        const double p = network_.model().layers[l].p;
        if (!need_input_gradient) break;
        if (p <= 0) {
          dx = dy;
        } else {
          dx = dy.cwiseProduct(ConstView(aux_[l].data(), rows, out));
        }
        break;
      }
      case LayerType::kLayerNorm:
        backward_layer_norm(l, rows, accumulate, upstream, downstream);
        break;
    }
    std::swap(upstream, downstream);
  }
}

BatchLoss Replica::train_batch(int rows, float loss_scale, std::uint64_t dropout_seed,
                               bool accumulate) {
  forward(rows, true, dropout_seed);
  const BatchLoss result = loss(rows, gradient_a_.data(), loss_scale);
  backward(rows, accumulate);
  return result;
}

BatchLoss Replica::evaluate_batch(int rows) {
  forward(rows, false, 0);
  return loss(rows, nullptr, 0.0f);
}

std::string digest(std::span<const float> values) {
  const std::uint64_t hash = hash64(std::string_view(reinterpret_cast<const char*>(values.data()),
                                                     values.size() * sizeof(float)));
  char text[32];
  std::snprintf(text, sizeof(text), "hash64:%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace tpujobs::executor
