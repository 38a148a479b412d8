// GET /v1/jobs' pages over real tables (issue 34): the views lists show of
// finished jobs come from memory, the others' rows are read and rendered as
// far as the answer's cap, and every view is the text the job's row renders.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/repositories.h"
#include "service/job_lists.h"
#include "service/job_views.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::service {
namespace {

using base::JobState;
using nlohmann::json;

class JobListsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = db::testing::fresh_migrated_pool(2);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    repo_ = std::make_unique<db::Repositories>(*pool_);
  }

  // `count` jobs of tenant "t", oldest first, each with a name of `padding` bytes.
  std::vector<std::int64_t> submit(int count, std::size_t padding = 10) {
    std::vector<db::NewJob> batch;
    for (int i = 0; i < count; ++i) {
      db::NewJob job;
      job.tenant = "t";
      job.name = std::string(padding, static_cast<char>('a' + i % 26));
      job.spec_json = R"({"trainer": {"devices": 1}, "max_retries": 1})";
      batch.push_back(job);
    }
    auto inserted = repo_->jobs.insert_jobs(batch);
    EXPECT_TRUE(inserted.ok()) << inserted.error().message;
    std::vector<std::int64_t> ids;
    for (const db::InsertedJob& job : *inserted) ids.push_back(job.row.id);
    return ids;
  }

  void finish(std::int64_t id) {
    ASSERT_TRUE(*repo_->jobs.transition(
        {.job_id = id,
         .from = {JobState::kQueued},
         .to = JobState::kSucceeded,
         .reason = "Completed",
         .result_json = R"({"metrics": {"loss": 0.5}, "steps": 4, "xla_report": {"graphs": 1}})"}));
  }

  // What a list showed of job `id` before lists kept views: its whole row
  // rendered, without the spec.
  std::string rendered(std::int64_t id) {
    auto row = repo_->jobs.get_job(id);
    EXPECT_TRUE(row.ok() && row->has_value());
    json view = views::render_row(**row);
    view.erase("spec");
    return views::response_body(view);
  }

  std::vector<std::int64_t> ids_of(const api::JobListPage& page) {
    std::vector<std::int64_t> ids;
    for (const api::ListedView& job : page.jobs) ids.push_back(json::parse(job.view)["id"]);
    return ids;
  }

  std::unique_ptr<db::ConnectionPool> pool_;
  std::unique_ptr<db::Repositories> repo_;
};

TEST_F(JobListsTest, EachViewIsTheTextItsRowRendersAndAFinishedOnesComesFromMemoryAfter) {
  const std::vector<std::int64_t> ids = submit(3);
  finish(ids[0]);
  finish(ids[1]);
  JobLists lists(repo_->jobs, 1 << 20);
  auto first = lists.list({.tenant = "t"});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(3u, first->jobs.size());
  EXPECT_EQ((std::vector<std::int64_t>{ids[2], ids[1], ids[0]}), ids_of(*first));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rendered(ids[2 - i]), first->jobs[i].view);
  }
  EXPECT_EQ(std::string::npos, first->jobs[2].view.find("xla_report"));
  EXPECT_NE(std::string::npos, first->jobs[2].view.find(R"("metrics":{"loss":0.5})"));
  EXPECT_TRUE(first->next_cursor.empty());
  EXPECT_EQ(2u, lists.kept()) << "the two finished jobs' views";

  // A finished job's row never changes through the service; changed behind
  // its back, it shows that the list did not read it again. The queued
  // job's row is read again.
  ASSERT_TRUE(pool_->acquire(std::chrono::seconds(5))
                  .value()
                  ->execute("UPDATE jobs SET name = 'renamed' WHERE tenant = 't'")
                  .ok());
  auto second = lists.list({.tenant = "t"});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->jobs[1].view, second->jobs[1].view);
  EXPECT_EQ(first->jobs[2].view, second->jobs[2].view);
  EXPECT_EQ("renamed", json::parse(second->jobs[0].view)["name"]);
  // Another tenant's list shows none of them, kept or not.
  auto other = lists.list({.tenant = "u"});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->jobs.empty());
}

TEST_F(JobListsTest, APagePastTheCapStopsAfterTheFirstViewThatPassesItAndGoesOnThere) {
  const std::vector<std::int64_t> ids = submit(30, 1000);  // views of about 1.4 KB
  for (std::int64_t id : ids) finish(id);
  JobLists lists(repo_->jobs, 1 << 20);
  auto page = lists.list({.tenant = "t", .limit = 30, .max_bytes = 5000});
  ASSERT_TRUE(page.ok()) << page.error().message;
  // Four views pass 5,000 bytes; none after the fourth is rendered (a
  // finished job's view is kept once rendered).
  ASSERT_EQ(4u, page->jobs.size());
  EXPECT_EQ(4u, lists.kept());
  EXPECT_EQ(page->jobs.back().cursor, page->next_cursor);
  auto rest = lists.list({.tenant = "t", .limit = 30, .cursor = page->next_cursor});
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(26u, rest->jobs.size());
  EXPECT_EQ(ids[25], ids_of(*rest).front());
  EXPECT_EQ(ids[0], ids_of(*rest).back());
  EXPECT_TRUE(rest->next_cursor.empty());
  EXPECT_EQ(30u, lists.kept());
}

TEST_F(JobListsTest, ALimitBelowTheJobsEndsWithTheCursorOfItsLastJob) {
  const std::vector<std::int64_t> ids = submit(5);
  finish(ids[3]);
  JobLists lists(repo_->jobs, 1 << 20);
  std::vector<std::int64_t> seen;
  api::JobQuery query{.tenant = "t", .limit = 2};
  for (int pages = 0; pages < 10; ++pages) {
    auto page = lists.list(query);
    ASSERT_TRUE(page.ok());
    for (std::int64_t id : ids_of(*page)) seen.push_back(id);
    if (page->next_cursor.empty()) break;
    query.cursor = page->next_cursor;
  }
  EXPECT_EQ((std::vector<std::int64_t>{ids[4], ids[3], ids[2], ids[1], ids[0]}), seen);
  auto succeeded = lists.list({.tenant = "t", .states = {"SUCCEEDED"}});
  ASSERT_TRUE(succeeded.ok());
  EXPECT_EQ((std::vector<std::int64_t>{ids[3]}), ids_of(*succeeded));
}

}  // namespace
}  // namespace tpujobs::service
