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

// The epoch's order of the whole dataset, written over `order`: a
// permutation seeded by seed + epoch (the same on every replica), or the
// identity without shuffle.
void epoch_order(const SamplerOptions& options, int epoch, std::vector<std::int64_t>& order) {
  const std::int64_t n = options.dataset_size;
  order.resize(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (options.shuffle && n > 1) {
    // Fisher-Yates; DistributedSampler seeds its generator with seed + epoch.
    Rng rng(derive_seed(options.seed + static_cast<std::uint64_t>(epoch), {0x5a3d1e}));
    for (std::int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
      std::swap(order[i], order[j]);
    }
  }
}

// Every world_size-th index of the padded or truncated `order`, from `rank`,
// written over `indices`.
void shard(const SamplerOptions& options, const std::vector<std::int64_t>& order, int rank,
           std::vector<std::int64_t>& indices) {
  const std::int64_t n = options.dataset_size;
  const std::int64_t world = std::max(1, options.world_size);
  const std::int64_t per_replica = samples_per_replica(options);
  indices.resize(static_cast<std::size_t>(per_replica));
  for (std::int64_t k = 0; k < per_replica; ++k) {
    const std::int64_t position = rank + k * world;  // < per_replica * world
    indices[static_cast<std::size_t>(k)] =
        n == 0 ? 0 : order[static_cast<std::size_t>(position % n)];
  }
}

}  // namespace

std::vector<std::int64_t> replica_indices(const SamplerOptions& options, int rank, int epoch) {
  std::vector<std::int64_t> order, indices;
  epoch_order(options, epoch, order);
  shard(options, order, rank, indices);
  return indices;
}

std::vector<std::vector<std::int64_t>> all_replica_indices(const SamplerOptions& options,
                                                           int epoch) {
  std::vector<std::int64_t> order;
  std::vector<std::vector<std::int64_t>> shards;
  all_replica_indices(options, epoch, order, shards);
  return shards;
}

void all_replica_indices(const SamplerOptions& options, int epoch, std::vector<std::int64_t>& order,
                         std::vector<std::vector<std::int64_t>>& shards) {
  epoch_order(options, epoch, order);
  shards.resize(static_cast<std::size_t>(std::max(1, options.world_size)));
  for (std::size_t rank = 0; rank < shards.size(); ++rank) {
    shard(options, order, static_cast<int>(rank), shards[rank]);
  }
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
