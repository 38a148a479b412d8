#include "executor/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace tpujobs::executor {
namespace {

TEST(Sampler, ShardsPartitionTheDatasetWhenItDivides) {
  const SamplerOptions options{16, 4, 42, true, false};
  std::vector<std::int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    const auto shard = replica_indices(options, rank, 0);
    EXPECT_EQ(shard.size(), 4u);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  for (std::int64_t i = 0; i < 16; ++i) EXPECT_EQ(all[i], i);
}

TEST(Sampler, PadsByRepeatingTheFirstIndices) {
  // 10 samples on 4 replicas: 3 each, the permutation's first 2 repeated.
  const SamplerOptions options{10, 4, 0, false, false};
  EXPECT_EQ(samples_per_replica(options), 3);
  EXPECT_EQ(replica_indices(options, 0, 0), (std::vector<std::int64_t>{0, 4, 8}));
  EXPECT_EQ(replica_indices(options, 1, 0), (std::vector<std::int64_t>{1, 5, 9}));
  EXPECT_EQ(replica_indices(options, 2, 0), (std::vector<std::int64_t>{2, 6, 0}));
  EXPECT_EQ(replica_indices(options, 3, 0), (std::vector<std::int64_t>{3, 7, 1}));
}

TEST(Sampler, DropLastDropsTheUnevenTail) {
  const SamplerOptions options{10, 4, 0, false, true};
  EXPECT_EQ(samples_per_replica(options), 2);
  EXPECT_EQ(replica_indices(options, 3, 0), (std::vector<std::int64_t>{3, 7}));
}

TEST(Sampler, PadsMoreThanOnceWhenTheDatasetIsSmallerThanTheWorld) {
  const SamplerOptions options{3, 8, 0, false, false};
  EXPECT_EQ(samples_per_replica(options), 1);
  EXPECT_EQ(replica_indices(options, 7, 0), (std::vector<std::int64_t>{1}));  // 7 % 3
}

TEST(Sampler, ShuffleDependsOnSeedAndEpochOnly) {
  const SamplerOptions options{100, 2, 7, true, false};
  EXPECT_EQ(replica_indices(options, 0, 3), replica_indices(options, 0, 3));
  EXPECT_NE(replica_indices(options, 0, 3), replica_indices(options, 0, 4));
  SamplerOptions other = options;
  other.seed = 8;
  EXPECT_NE(replica_indices(options, 0, 3), replica_indices(other, 0, 3));
  // Every replica sees a different part of the same permutation.
  auto a = replica_indices(options, 0, 3), b = replica_indices(options, 1, 3);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<std::int64_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  EXPECT_TRUE(common.empty());
}

TEST(Sampler, AllReplicasAtOnceMatchEachReplica) {
  for (const SamplerOptions& options :
       {SamplerOptions{101, 8, 7, true, false}, SamplerOptions{101, 8, 7, true, true},
        SamplerOptions{10, 3, 1, false, false}}) {
    const auto shards = all_replica_indices(options, 5);
    ASSERT_EQ(shards.size(), static_cast<std::size_t>(options.world_size));
    for (int rank = 0; rank < options.world_size; ++rank) {
      EXPECT_EQ(shards[rank], replica_indices(options, rank, 5)) << "rank " << rank;
    }
  }
}

TEST(Sampler, DataLoaderBatchesPerReplica) {
  // 1438 samples on 8 cores: 180 per replica (padded), batches of 64: 64, 64, 52.
  SamplerOptions options{1438, 8, 0, true, false};
  EXPECT_EQ(batches_per_replica(options, 64), 3);
  EXPECT_EQ(batch_rows(options, 64, 2), 52);
  options.drop_last = true;  // 179 per replica, the partial batch dropped too
  EXPECT_EQ(samples_per_replica(options), 179);
  EXPECT_EQ(batches_per_replica(options, 64), 2);
  EXPECT_EQ(batch_rows(options, 64, 1), 64);
}

}  // namespace
}  // namespace tpujobs::executor
