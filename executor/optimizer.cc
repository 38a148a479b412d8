#include "executor/optimizer.h"

#include <algorithm>
#include <cmath>

#include "executor/adam_kernel.h"
#include "executor/worker_pool.h"

namespace tpujobs::executor {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;

// Adam's update in the instruction set of the matrix kernel in use: every
// copy gives the same bits (adam_kernel.h), the wider ones sooner.
void (*adam_update_for(GemmKernel kernel))(const AdamStep&) {
  switch (kernel) {
    case GemmKernel::kGeneric:
      break;
    case GemmKernel::kAvx2Fma:
#if defined(TPUJOBS_HAVE_GEMM_AVX2_FMA)
      if (gemm_kernel_available(kernel)) return &adam_avx2_fma::update;
#endif
      break;
    case GemmKernel::kAvx512:
#if defined(TPUJOBS_HAVE_GEMM_AVX512)
      if (gemm_kernel_available(kernel)) return &adam_avx512::update;
#endif
      break;
  }
  return &adam_generic::update;
}

// Runs work(begin, end) over [0, count) in fixed chunks, on the pool if any.
template <typename Work>
void for_chunks(std::size_t count, WorkerPool* pool, Work&& work) {
  const int chunks = static_cast<int>((count + kChunk - 1) / kChunk);
  auto run = [&](int chunk) {
    const std::size_t begin = std::size_t(chunk) * kChunk;
    work(chunk, begin, std::min(count, begin + kChunk));
  };
  if (pool == nullptr || chunks <= 1) {
    for (int chunk = 0; chunk < chunks; ++chunk) run(chunk);
  } else {
    pool->parallel_for(chunks, run);
  }
}

}  // namespace

Optimizer::Optimizer(const OptimizerSpec& spec, std::size_t parameters, GemmKernel kernel)
    : spec_(spec), adam_update_(adam_update_for(kernel)) {
  const bool adam = spec.type != OptimizerType::kSgd;
  if (adam || spec.momentum != 0) first_moment_.assign(parameters, 0.0f);
  if (adam) second_moment_.assign(parameters, 0.0f);
}

bool Optimizer::restore(std::int64_t steps, std::span<const float> first_moment,
                        std::span<const float> second_moment) {
  if (first_moment.size() != first_moment_.size() ||
      second_moment.size() != second_moment_.size()) {
    return false;
  }
  steps_ = steps;
  std::copy(first_moment.begin(), first_moment.end(), first_moment_.begin());
  std::copy(second_moment.begin(), second_moment.end(), second_moment_.begin());
  return true;
}

void Optimizer::step(std::span<float> parameters, std::span<const float> gradients,
                     WorkerPool* pool) {
  ++steps_;
  for_chunks(parameters.size(), pool, [&](int, std::size_t begin, std::size_t end) {
    update(parameters.data(), gradients.data(), begin, end);
  });
}

void Optimizer::update(float* p, const float* g, std::size_t begin, std::size_t end) {
  const float lr = static_cast<float>(spec_.lr);
  const float decay = static_cast<float>(spec_.weight_decay);
  switch (spec_.type) {
    case OptimizerType::kSgd: {
      const float momentum = static_cast<float>(spec_.momentum);
      float* buffer = first_moment_.data();
      for (std::size_t i = begin; i < end; ++i) {
        float d = g[i] + decay * p[i];
        if (momentum != 0) {
          // torch: the buffer starts as the first gradient (dampening 0).
          buffer[i] = steps_ == 1 ? d : momentum * buffer[i] + d;
          d = spec_.nesterov ? d + momentum * buffer[i] : buffer[i];
        }
        p[i] -= lr * d;
      }
      return;
    }
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW: {
      const double correction1 = 1.0 - std::pow(spec_.beta1, static_cast<double>(steps_));
      const double correction2 = 1.0 - std::pow(spec_.beta2, static_cast<double>(steps_));
      const float beta1 = static_cast<float>(spec_.beta1), beta2 = static_cast<float>(spec_.beta2);
      const bool decoupled = spec_.type == OptimizerType::kAdamW;
      const AdamStep step{beta1,
                          1.0f - beta1,
                          beta2,
                          1.0f - beta2,
                          static_cast<float>(spec_.lr / correction1),
                          static_cast<float>(std::sqrt(correction2)),
                          static_cast<float>(spec_.eps),
                          decoupled ? 0.0f : decay,
                          decoupled ? 1.0f - lr * decay : 1.0f,
                          p + begin,
                          g + begin,
                          first_moment_.data() + begin,
                          second_moment_.data() + begin,
                          end - begin};
      adam_update_(step);
      return;
    }
  }
}

double clip_by_global_norm(std::span<float> gradients, double max_norm, WorkerPool* pool) {
  const std::size_t chunks = (gradients.size() + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks, 0.0);
  for_chunks(gradients.size(), pool, [&](int chunk, std::size_t begin, std::size_t end) {
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += double{gradients[i]} * gradients[i];
    partial[chunk] = sum;
  });
  double squares = 0;
  for (double sum : partial) squares += sum;
  const double norm = std::sqrt(squares);
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1.0) {
    const float scale = static_cast<float>(coefficient);
    for_chunks(gradients.size(), pool, [&](int, std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) gradients[i] *= scale;
    });
  }
  return norm;
}

}  // namespace tpujobs::executor
