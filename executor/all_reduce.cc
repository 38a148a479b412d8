#include "executor/all_reduce.h"

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
  auto reduce_chunk = [&](int chunk) {
    const std::size_t begin = std::min(count, std::size_t(chunk) * chunk_size);
    const std::size_t end = std::min(count, begin + chunk_size);
    // Reduce-scatter: at hop s, replica (chunk + s) passes its partial sum to the next.
    for (int hop = 0; hop + 1 < world; ++hop) {
      const float* from = buffers[(chunk + hop) % world];
      float* to = buffers[(chunk + hop + 1) % world];
      for (std::size_t i = begin; i < end; ++i) to[i] += from[i];
    }
    // All-gather (into the one copy that the step reads).
    const float* total = buffers[(chunk + world - 1) % world];
    float* out = buffers[0];
    for (std::size_t i = begin; i < end; ++i) out[i] = total[i] * scale;
  };
  if (pool != nullptr) {
    pool->parallel_for(world, reduce_chunk);
  } else {
    for (int chunk = 0; chunk < world; ++chunk) reduce_chunk(chunk);
  }
}

}  // namespace tpujobs::executor
