// Workload tables against a real PostgreSQL: job arrays (sweeps) inserted in
// one batch with other jobs, listed by array; the states dependencies read.
#include <gtest/gtest.h>

#include <cmath>
#include <ctime>

#include "db/job_repository.h"
#include "db/workload_repository.h"
#include "tests/support/test_cluster.h"

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
  auto inserted = jobs_->insert_jobs(
      {job("plain"), child("a0", 7, 0, R"({"optimizer.lr": 0.1})"), child("b0", 9, 0, "{}"),
       child("a1", 7, 1, R"({"optimizer.lr": 0.3})"), child("b1", 9, 1, "{}")});
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
  std::vector<std::int64_t> ids;
  for (const ListedJob& job : page->jobs) ids.push_back(job.id);
  EXPECT_EQ((std::vector<std::int64_t>{rows[3].row.id, a}), ids);  // newest first
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
  EXPECT_EQ(
      (std::map<std::int64_t, JobState>{{mine, JobState::kFailed}, {theirs, JobState::kQueued}}),
      *all);
  auto own = workload_->job_states({mine, theirs}, std::string("team-a"));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((std::map<std::int64_t, JobState>{{mine, JobState::kFailed}}), *own);
  EXPECT_TRUE(workload_->job_states({})->empty());
}

TEST_F(WorkloadRepositoryTest, UsageSumsTheHeldSpansTimesCoresClippedToTheWindow) {
  // Jobs asking for 8, 1 and 0 (cpu) cores, for two tenants and labels.
  NewJob host = job("host");
  host.resolved_json = R"({"request": {"cores": 8, "generation": "v3"}})";
  host.labels_json = R"({"pipeline": "ci"})";
  NewJob core = job("core", "team-b");
  core.resolved_json = R"({"request": {"cores": 1, "generation": null}})";
  NewJob cpu = job("cpu");
  cpu.resolved_json = R"({"request": {"cores": 0, "generation": null}})";
  auto inserted = jobs_->insert_jobs({host, core, cpu});
  ASSERT_TRUE(inserted.ok());
  auto move = [&](std::int64_t id, JobState from, JobState to,
                  std::optional<std::string> allocation = {}) {
    Transition t;
    t.job_id = id;
    t.from = {from};
    t.to = to;
    t.allocation_json = std::move(allocation);
    t.set_started_at = to == JobState::kStarting;
    t.set_finished_at = base::is_terminal(to);
    ASSERT_TRUE(*jobs_->transition(t));
  };
  for (const InsertedJob& j : *inserted) {
    move(j.row.id, JobState::kQueued, JobState::kStarting, R"({"generation": "v3"})");
    move(j.row.id, JobState::kStarting, JobState::kRunning);
  }
  const std::int64_t host_id = (*inserted)[0].row.id;
  const std::int64_t core_id = (*inserted)[1].row.id;
  // Known spans: the events' times set by hand (starting 10:00, running
  // 10:00:10, the host job ending at 11:00:10, the core job still running).
  auto set_times = [&](std::int64_t id, const char* starting, const char* running,
                       const char* ended) {
    auto c = pool_->acquire(std::chrono::seconds(5));
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(
        (*c)->execute(
                "UPDATE job_events SET at = CASE to_state WHEN 'STARTING' THEN $2::timestamptz"
                " WHEN 'RUNNING' THEN $3::timestamptz ELSE COALESCE($4::timestamptz, at) END"
                " WHERE job_id = $1::bigint AND to_state <> 'QUEUED'",
                {id, starting, running, ended ? std::optional<std::string>(ended) : std::nullopt})
            .ok());
  };
  move(host_id, JobState::kRunning, JobState::kSucceeded);
  set_times(host_id, "2026-01-01T10:00:00Z", "2026-01-01T10:00:10Z", "2026-01-01T11:00:10Z");
  set_times(core_id, "2026-01-01T10:00:00Z", "2026-01-01T10:00:10Z", nullptr);
  {
    auto c = pool_->acquire(std::chrono::seconds(5));
    ASSERT_TRUE((*c)->execute("UPDATE jobs SET created_at = '2026-01-01T09:00:00Z'").ok());
  }
  const auto at = [](const char* text) {
    std::tm utc{};
    strptime(text, "%Y-%m-%dT%H:%M:%S", &utc);
    return std::chrono::system_clock::from_time_t(timegm(&utc));
  };

  // 10:30 - 11:30: the host job 30 min 10 s x 8 cores, the core job 1 h x 1.
  auto by_tenant = workload_->usage(at("2026-01-01T10:30:00"), at("2026-01-01T11:30:00"), false,
                                    std::nullopt, std::nullopt);
  ASSERT_TRUE(by_tenant.ok()) << by_tenant.error().message;
  ASSERT_EQ(2u, by_tenant->size());
  EXPECT_EQ("team-a", (*by_tenant)[0].group);
  EXPECT_EQ("v3", (*by_tenant)[0].generation);
  EXPECT_EQ(1, (*by_tenant)[0].jobs);
  EXPECT_DOUBLE_EQ(8.0 * (30 * 60 + 10), (*by_tenant)[0].core_seconds);
  EXPECT_EQ("team-b", (*by_tenant)[1].group);
  EXPECT_DOUBLE_EQ(3600.0, (*by_tenant)[1].core_seconds);

  // By label: the host job under pipeline=ci, the core job under "".
  auto by_label = workload_->usage(at("2026-01-01T00:00:00"), at("2026-01-01T10:00:05"), true,
                                   std::string("pipeline"), std::nullopt);
  ASSERT_TRUE(by_label.ok()) << by_label.error().message;
  ASSERT_EQ(2u, by_label->size());
  EXPECT_EQ("", (*by_label)[0].group);
  EXPECT_DOUBLE_EQ(5.0, (*by_label)[0].core_seconds);
  EXPECT_EQ("pipeline=ci", (*by_label)[1].group);
  EXPECT_DOUBLE_EQ(40.0, (*by_label)[1].core_seconds);

  // One tenant; a window before anything ran.
  auto only_b = workload_->usage(at("2026-01-01T10:00:00"), at("2026-01-01T10:01:00"), false,
                                 std::nullopt, std::string("team-b"));
  ASSERT_EQ(1u, only_b->size());
  EXPECT_DOUBLE_EQ(60.0, (*only_b)[0].core_seconds);
  EXPECT_TRUE(workload_
                  ->usage(at("2025-01-01T00:00:00"), at("2025-01-02T00:00:00"), false, std::nullopt,
                          std::nullopt)
                  ->empty());

  // Decayed (fair share) at 11:00:10 with a one-hour half-life: both held
  // their cores from 10:00:00 (3610 s ago) until now.
  const double h = 3600;
  const double weight = h / std::log(2.0) * (1 - std::exp2(-3610 / h));
  auto decayed = workload_->decayed_usage(at("2026-01-01T11:00:10"), std::chrono::hours(1),
                                          std::chrono::hours(4));
  ASSERT_TRUE(decayed.ok()) << decayed.error().message;
  ASSERT_EQ(2u, decayed->size());
  EXPECT_NEAR(8 * weight, decayed->at("team-a"), 1e-6);
  EXPECT_NEAR(1 * weight, decayed->at("team-b"), 1e-6);
  // A horizon of 10 s counts only the last 10 s.
  auto recent = workload_->decayed_usage(at("2026-01-01T11:00:10"), std::chrono::hours(1),
                                         std::chrono::seconds(10));
  ASSERT_TRUE(recent.ok());
  EXPECT_NEAR(h / std::log(2.0) * (1 - std::exp2(-10 / h)), recent->at("team-b"), 1e-6);
}

TEST_F(WorkloadRepositoryTest, RetentionPurgesOldFinishedJobsOutputsInBatchesAndKeepsTheRows) {
  std::vector<NewJob> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(job("j" + std::to_string(i)));
  auto inserted = jobs_->insert_jobs(batch);
  ASSERT_TRUE(inserted.ok());
  std::vector<std::int64_t> ids;
  for (const InsertedJob& j : *inserted) ids.push_back(j.row.id);
  auto c = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(c.ok());
  for (std::int64_t id : ids) {
    ASSERT_TRUE(
        (*c)->execute("INSERT INTO job_logs (job_id, seq, line) SELECT $1::bigint, s, 'line' "
                      "FROM generate_series(1, 3) s",
                      {id})
            .ok());
    ASSERT_TRUE((*c)->execute("INSERT INTO job_metrics (job_id, seq, step, epoch, metrics) "
                              "VALUES ($1::bigint, 1, 1, 0, '{}')",
                              {id})
                    .ok());
  }
  // Jobs 0-3 finished two days ago, job 4 an hour ago; job 3 is still running.
  ASSERT_TRUE(
      (*c)->execute("UPDATE jobs SET state = 'SUCCEEDED', finished_at = now() - interval '2 days' "
                    "WHERE id = ANY($1::bigint[])",
                    {Param::array(std::vector<std::optional<std::string>>{
                        std::to_string(ids[0]), std::to_string(ids[1]), std::to_string(ids[2])})})
          .ok());
  ASSERT_TRUE(
      (*c)->execute("UPDATE jobs SET state = 'FAILED', finished_at = now() - interval '1 hour' "
                    "WHERE id = $1::bigint",
                    {ids[4]})
          .ok());
  auto count = [&](const char* table, std::int64_t id) {
    auto rows = (*c)->execute(
        std::string("SELECT count(*) FROM ") + table + " WHERE job_id = $1::bigint", {id});
    return rows.ok() ? rows->int64(0, 0) : -1;
  };

  // A day's retention, two jobs a batch: jobs 0 and 1, then 2, then none.
  auto first = workload_->purge_finished_outputs(std::chrono::hours(24), 2);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(2, first->jobs);
  EXPECT_EQ(6, first->log_lines);
  EXPECT_EQ(2, first->metric_points);
  auto second = workload_->purge_finished_outputs(std::chrono::hours(24), 2);
  EXPECT_EQ(1, second->jobs);
  EXPECT_EQ(0, workload_->purge_finished_outputs(std::chrono::hours(24), 2)->jobs);
  for (int i : {0, 1, 2}) {
    EXPECT_EQ(0, count("job_logs", ids[i]));
    EXPECT_EQ(0, count("job_metrics", ids[i]));
    EXPECT_EQ(JobState::kSucceeded, jobs_->get_job(ids[i])->value().state);  // the row stays
  }
  EXPECT_EQ(3, count("job_logs", ids[3]));  // unfinished
  EXPECT_EQ(3, count("job_logs", ids[4]));  // finished too recently
  EXPECT_EQ(1, count("job_metrics", ids[4]));
}

}  // namespace
}  // namespace tpujobs::db
