// Workload tables against a real PostgreSQL: job arrays (sweeps) inserted in
// one batch with other jobs, listed by array; the states dependencies read.
#include <gtest/gtest.h>

#include "db/job_repository.h"
#include "db/test_cluster.h"
#include "db/workload_repository.h"

namespace tpujobs::db {
namespace {

class WorkloadRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = testing::fresh_migrated_pool(4);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    jobs_ = std::make_unique<JobRepository>(*pool_);
    workload_ = std::make_unique<WorkloadRepository>(*pool_);
  }

  static NewJob job(std::string name, std::string tenant = "team-a") {
    NewJob job;
    job.tenant = std::move(tenant);
    job.name = std::move(name);
    job.spec_json = R"({"trainer": {"devices": 1}})";
    job.spec_hash = "hash-" + job.name;
    return job;
  }

  static NewJob child(std::string name, std::int64_t group, int index, std::string values) {
    NewJob c = job(std::move(name));
    c.array_group = group;
    c.array_index = index;
    c.array_values_json = std::move(values);
    return c;
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<JobRepository> jobs_;
  std::unique_ptr<WorkloadRepository> workload_;
};

TEST_F(WorkloadRepositoryTest, AnArrayIsItsFirstChildsIdAndListsAlone) {
  // Two arrays and a plain job interleaved in one batch.
  auto inserted = jobs_->insert_jobs({job("plain"), child("a0", 7, 0, R"({"optimizer.lr": 0.1})"),
                                      child("b0", 9, 0, "{}"), child("a1", 7, 1, R"({"optimizer.lr": 0.3})"),
                                      child("b1", 9, 1, "{}")});
  ASSERT_TRUE(inserted.ok()) << inserted.error().message;
  const std::vector<InsertedJob>& rows = *inserted;
  EXPECT_FALSE(rows[0].row.array_id);
  const std::int64_t a = rows[1].row.id;
  const std::int64_t b = rows[2].row.id;
  EXPECT_EQ(a, rows[1].row.array_id);
  EXPECT_EQ(a, rows[3].row.array_id);
  EXPECT_EQ(b, rows[2].row.array_id);
  EXPECT_EQ(b, rows[4].row.array_id);
  EXPECT_EQ(1, rows[3].row.array_index);
  EXPECT_EQ(R"({"optimizer.lr": 0.3})", rows[3].row.array_values_json.value_or(""));
  EXPECT_FALSE(rows[0].row.array_values_json);

  JobFilter filter;
  filter.tenant = "team-a";
  filter.array_id = a;
  auto page = jobs_->list_jobs(filter);
  ASSERT_TRUE(page.ok()) << page.error().message;
  std::vector<std::string> names;
  for (const JobRow& row : page->jobs) names.push_back(row.name);
  EXPECT_EQ((std::vector<std::string>{"a1", "a0"}), names);  // newest first
  filter.tenant = "team-b";
  EXPECT_TRUE(jobs_->list_jobs(filter)->jobs.empty());
}

TEST_F(WorkloadRepositoryTest, JobStatesSeeOnlyTheTenantsJobs) {
  auto inserted = jobs_->insert_jobs({job("mine"), job("theirs", "team-b")});
  ASSERT_TRUE(inserted.ok());
  const std::int64_t mine = (*inserted)[0].row.id;
  const std::int64_t theirs = (*inserted)[1].row.id;
  Transition t;
  t.job_id = mine;
  t.from = {JobState::kQueued};
  t.to = JobState::kFailed;
  t.set_finished_at = true;
  ASSERT_TRUE(*jobs_->transition(t));

  auto all = workload_->job_states({mine, theirs, 424242});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((std::map<std::int64_t, JobState>{{mine, JobState::kFailed}, {theirs, JobState::kQueued}}), *all);
  auto own = workload_->job_states({mine, theirs}, std::string("team-a"));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((std::map<std::int64_t, JobState>{{mine, JobState::kFailed}}), *own);
  EXPECT_TRUE(workload_->job_states({})->empty());
}

}  // namespace
}  // namespace tpujobs::db
