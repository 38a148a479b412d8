#include "executor/all_reduce.h"

// The pool parallelizes; Eigen itself must never start threads of its own.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>

#include "executor/worker_pool.h"

namespace tpujobs::executor {

void ring_all_reduce(const std::vector<float*>& buffers, std::size_t count, float scale,
                     WorkerPool* pool) {
  const int world = static_cast<int>(buffers.size());
  if (world == 0) return;
  if (world == 1) {
    if (scale != 1.0f) std::for_each(buffers[0], buffers[0] + count, [&](float& v) { v *= scale; });
    return;
  }
  const std::size_t chunk_size = (count + world - 1) / world;
  // Each element's sum takes the ring's order, b[c] + b[c+1] + ... + b[c-1],
  // but in one pass over memory: blocks of the chunk are summed in a small
  // buffer, reading every replica once, instead of hop by hop.
  // Elementwise array expressions: vectorized, each element's sum in ring order.
  using Block = Eigen::Map<const Eigen::ArrayXf>;
  auto reduce_chunk = [&](int chunk) {
    constexpr std::size_t kBlock = 1024;
    Eigen::Array<float, kBlock, 1> sum;
    const std::size_t chunk_begin = std::min(count, std::size_t(chunk) * chunk_size);
    const std::size_t chunk_end = std::min(count, chunk_begin + chunk_size);
    for (std::size_t begin = chunk_begin; begin < chunk_end; begin += kBlock) {
      const auto size = static_cast<Eigen::Index>(std::min(kBlock, chunk_end - begin));
      auto partial = sum.head(size);
      partial = Block(buffers[chunk] + begin, size);
      for (int hop = 1; hop < world; ++hop) {
        partial += Block(buffers[(chunk + hop) % world] + begin, size);
      }
      Eigen::Map<Eigen::ArrayXf>(buffers[0] + begin, size) = partial * scale;
    }
  };
  // Small reductions are not worth waking threads for.
  if (pool != nullptr && count * buffers.size() >= (std::size_t{1} << 18)) {
    pool->parallel_for(world, reduce_chunk);
  } else {
    for (int chunk = 0; chunk < world; ++chunk) reduce_chunk(chunk);
  }
}

void ordered_sum(const std::vector<const float*>& terms, std::size_t count, float scale,
                 float* out) {
  if (terms.empty()) return;
  constexpr std::size_t kBlock = 1024;
  Eigen::Array<float, kBlock, 1> sum;
  using Block = Eigen::Map<const Eigen::ArrayXf>;
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const auto size = static_cast<Eigen::Index>(std::min(kBlock, count - begin));
    auto partial = sum.head(size);
    partial = Block(terms[0] + begin, size);
    for (std::size_t t = 1; t < terms.size(); ++t) partial += Block(terms[t] + begin, size);
    Eigen::Map<Eigen::ArrayXf>(out + begin, size) = partial * scale;
  }
}

}  // namespace tpujobs::executor
