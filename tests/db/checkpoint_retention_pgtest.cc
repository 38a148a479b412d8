// Retention of replaced checkpoints (issue 34): one long job that
// checkpoints often grew the checkpoint table to 419 MB around 425 kB of
// live checkpoints, autovacuum falling a thousand checkpoints behind. The
// pages of replaced checkpoints are freed and reused as the job goes, so the
// tables stay within a few checkpoints of the live ones.
#include <gtest/gtest.h>

#include <string>

#include "db/job_output_repository.h"
#include "db/repositories.h"
#include "db/test_cluster.h"

namespace tpujobs::db {
namespace {

class CheckpointRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = testing::fresh_migrated_pool(2);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    repositories_ = std::make_unique<Repositories>(*pool_);
    NewJob job;
    job.tenant = "team-a";
    job.spec_json = "{}";
    auto inserted = repositories_->jobs.insert_jobs({job});
    ASSERT_TRUE(inserted.ok()) << inserted.error().message;
    job_ = (*inserted)[0].row.id;
  }

  // The checkpoint tables on disk (heap, TOAST, indexes, free space and
  // visibility maps) and the bytes of the checkpoints they hold.
  std::pair<std::int64_t, std::int64_t> sizes() {
    auto connection = pool_->acquire(std::chrono::seconds(5));
    EXPECT_TRUE(connection.ok());
    if (!connection.ok()) return {0, 0};
    auto sizes =
        (*connection)
            ->execute(
                "SELECT pg_total_relation_size('job_checkpoint_chunks')"
                " + pg_total_relation_size('job_checkpoints'),"
                " (SELECT coalesce(sum(octet_length(bytes)), 0) FROM job_checkpoint_chunks)");
    EXPECT_TRUE(sizes.ok()) << sizes.error().message;
    if (!sizes.ok()) return {0, 0};
    return {sizes->int64(0, 0), sizes->int64(0, 1)};
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Repositories> repositories_;
  std::int64_t job_ = 0;
};

TEST_F(CheckpointRetentionTest, ALongJobsCheckpointTablesStayWithinAFewCheckpointsOfTheLiveOnes) {
  constexpr std::size_t kSize = 256 << 10;
  constexpr int kSaves = 120;  // 30 MiB written, 512 KiB live at the end
  std::string bytes(kSize, '\0');
  std::int64_t largest = 0;
  for (int step = 1; step <= kSaves; ++step) {
    for (std::size_t i = 0; i < kSize; i += 64) bytes[i] = static_cast<char>(step + i);
    const Status saved = repositories_->outputs.save_checkpoint(job_, step * 10, 0, bytes);
    ASSERT_TRUE(saved.ok()) << saved.error().message;
    if (step % 10 == 0) largest = std::max(largest, sizes().first);
  }
  const auto [on_disk, live] = sizes();
  EXPECT_EQ(std::int64_t{2} * kSize, live) << "the two latest checkpoints are kept";
  // Live, the checkpoints replaced since the last VACUUM (at most 1 MiB or
  // two checkpoints), one being written, and the maps and index: under
  // 8 times the live bytes. Without retention the table held every
  // checkpoint written: 30 MiB, 60 times.
  EXPECT_LE(on_disk, 8 * live) << on_disk << " bytes on disk for " << live << " live";
  EXPECT_LE(largest, 8 * live) << "at its largest during the job";
  EXPECT_GT(repositories_->outputs.vacuums(), kSaves / 10);

  auto latest = repositories_->outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(kSaves * 10, (*latest)->step);
  EXPECT_TRUE((*latest)->bytes == bytes) << "the bytes read back differ";
}

TEST_F(CheckpointRetentionTest, ACheckpointReplacedAtTheSameStepCountsTowardsTheVacuum) {
  // An epoch-end checkpoint at the step of a periodic one replaces its rows.
  const std::string bytes(std::size_t{600} << 10, 'x');
  ASSERT_TRUE(repositories_->outputs.save_checkpoint(job_, 100, 0, bytes).ok());
  EXPECT_EQ(0, repositories_->outputs.vacuums());
  ASSERT_TRUE(repositories_->outputs.save_checkpoint(job_, 100, 1, bytes).ok());
  EXPECT_EQ(0, repositories_->outputs.vacuums()) << "600 KiB replaced: under the 1.2 MiB due";
  ASSERT_TRUE(repositories_->outputs.save_checkpoint(job_, 100, 1, bytes).ok());
  EXPECT_EQ(1, repositories_->outputs.vacuums()) << "1.2 MiB replaced";
  EXPECT_EQ(std::int64_t{1200} << 10, JobOutputRepository::vacuum_after_replaced(bytes.size()));
  EXPECT_EQ(std::int64_t{1} << 20, JobOutputRepository::vacuum_after_replaced(1000));
}

}  // namespace
}  // namespace tpujobs::db
