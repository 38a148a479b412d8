#include "executor/sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "executor/random.h"

namespace tpujobs::executor {

std::int64_t samples_per_replica(const SamplerOptions& options) {
  const std::int64_t n = options.dataset_size;
  const std::int64_t world = std::max(1, options.world_size);
  if (options.drop_last) return n / world;
  return (n + world - 1) / world;
}

namespace {

// The epoch's order of the whole dataset: a permutation seeded by seed + epoch
// (the same on every replica), or the identity without shuffle.
std::vector<std::int64_t> epoch_order(const SamplerOptions& options, int epoch) {
  const std::int64_t n = options.dataset_size;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (options.shuffle && n > 1) {
    // Fisher-Yates; DistributedSampler seeds its generator with seed + epoch.
    Rng rng(derive_seed(options.seed + static_cast<std::uint64_t>(epoch), {0x5a3d1e}));
    for (std::int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
      std::swap(order[i], order[j]);
    }
  }
  return order;
}

// Every world_size-th index of the padded or truncated `order`, from `rank`.
std::vector<std::int64_t> shard(const SamplerOptions& options,
                                const std::vector<std::int64_t>& order, int rank) {
  const std::int64_t n = options.dataset_size;
  const std::int64_t world = std::max(1, options.world_size);
  const std::int64_t per_replica = samples_per_replica(options);
  std::vector<std::int64_t> indices;
  indices.reserve(static_cast<std::size_t>(per_replica));
  for (std::int64_t k = 0; k < per_replica; ++k) {
    const std::int64_t position = rank + k * world;  // < per_replica * world
    indices.push_back(n == 0 ? 0 : order[static_cast<std::size_t>(position % n)]);
  }
  return indices;
}

}  // namespace

std::vector<std::int64_t> replica_indices(const SamplerOptions& options, int rank, int epoch) {
  return shard(options, epoch_order(options, epoch), rank);
}

std::vector<std::vector<std::int64_t>> all_replica_indices(const SamplerOptions& options,
                                                           int epoch) {
  const std::vector<std::int64_t> order = epoch_order(options, epoch);
  std::vector<std::vector<std::int64_t>> shards;
  for (int rank = 0; rank < std::max(1, options.world_size); ++rank) {
    shards.push_back(shard(options, order, rank));
  }
  return shards;
}

std::int64_t batches_per_replica(const SamplerOptions& options, int batch_size) {
  const std::int64_t samples = samples_per_replica(options);
  if (batch_size <= 0) return 0;
  return options.drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
}

int batch_rows(const SamplerOptions& options, int batch_size, std::int64_t batch) {
  const std::int64_t samples = samples_per_replica(options);
  const std::int64_t start = batch * batch_size;
  return static_cast<int>(std::clamp<std::int64_t>(samples - start, 0, batch_size));
}

}  // namespace tpujobs::executor
