// Which samples each replica reads in an epoch: torch's DistributedSampler
// followed by a DataLoader, as Lightning inserts them on TPU.
#pragma once

#include <cstdint>
#include <vector>

namespace tpujobs::executor {

struct SamplerOptions {
  std::int64_t dataset_size = 0;
  int world_size = 1;
  std::uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
};

// Samples per replica per epoch. Without drop_last the dataset is padded (by
// repeating its first indices) to a multiple of world_size; with drop_last the
// tail that does not divide evenly is dropped.
std::int64_t samples_per_replica(const SamplerOptions& options);

// The indices replica `rank` reads in `epoch`, in order: the epoch's
// permutation (seeded by seed + epoch, the same on every replica; the identity
// without shuffle), padded or truncated as above, then every world_size-th
// index starting at rank.
std::vector<std::int64_t> replica_indices(const SamplerOptions& options, int rank, int epoch);
// replica_indices() of every rank in [0, world_size), shuffling once.
std::vector<std::vector<std::int64_t>> all_replica_indices(const SamplerOptions& options,
                                                           int epoch);
// The same, written over `shards`, with `order` as scratch: their capacity
// is reused, so a caller that keeps them allocates nothing per epoch.
void all_replica_indices(const SamplerOptions& options, int epoch, std::vector<std::int64_t>& order,
                         std::vector<std::vector<std::int64_t>>& shards);

// Batches per replica per epoch for a per-core batch size: a last partial
// batch counts unless drop_last.
std::int64_t batches_per_replica(const SamplerOptions& options, int batch_size);

// Rows in batch `batch` (0-based) of a replica.
int batch_rows(const SamplerOptions& options, int batch_size, std::int64_t batch);

}  // namespace tpujobs::executor
