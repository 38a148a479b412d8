// Jobs and events against a real server: idempotent batch insert, conditional
// transitions, listing with filters and cursor pagination.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "db/job_output_repository.h"
#include "db/job_repository.h"
#include "db/listener.h"
#include "db/scheduling_read.h"
#include "tests/support/kept_plans.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

class JobRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = testing::fresh_migrated_pool(4);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    jobs_ = std::make_unique<JobRepository>(*pool_);
  }

  void expect_kept_plans_by_key(testing::Statistics statistics, int finished);

  static NewJob job(std::string name, std::string tenant = "team-a") {
    NewJob job;
    job.tenant = std::move(tenant);
    job.name = std::move(name);
    job.spec_json = R"({"trainer": {"devices": 8}})";
    job.spec_hash = "hash-" + job.name;
    return job;
  }

  std::vector<InsertedJob> insert(const std::vector<NewJob>& batch) {
    auto inserted = jobs_->insert_jobs(batch);
    EXPECT_TRUE(inserted.ok()) << inserted.error().message;
    return inserted.ok() ? *inserted : std::vector<InsertedJob>{};
  }

  // Everything the writes so far sent to `listener`: notifications come in
  // the order of their commits, so all of them come before a marker sent now.
  std::vector<std::string> heard(Listener& listener) {
    auto marker = pool_->acquire(std::chrono::seconds(5));
    EXPECT_TRUE(marker.ok());
    if (!marker.ok()) return std::vector<std::string>{};
    EXPECT_TRUE((*marker)->execute("SELECT pg_notify('tpujobs_jobs_changed', 'marker')").ok());
    std::vector<std::string> notes;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      auto some = listener.wait(std::chrono::milliseconds(100));
      EXPECT_TRUE(some.ok());
      if (!some.ok()) break;
      for (const Notification& n : *some) {
        if (n.payload == "marker") return notes;
        notes.push_back(n.channel + " " + n.payload);
      }
    }
    ADD_FAILURE() << "the marker never came";
    return notes;
  }

  // The rows of the page `filter` lists, in its order.
  std::vector<JobRow> listed(const JobFilter& filter) {
    auto page = jobs_->list_jobs(filter);
    EXPECT_TRUE(page.ok()) << page.error().message;
    if (!page.ok()) return {};
    std::vector<std::int64_t> ids;
    for (const ListedJob& job : page->jobs) ids.push_back(job.id);
    auto rows = jobs_->listed_rows(ids);
    EXPECT_TRUE(rows.ok()) << rows.error().message;
    if (!rows.ok()) return {};
    std::vector<JobRow> ordered;
    for (std::int64_t id : ids) {
      for (const JobRow& row : *rows) {
        if (row.id == id) ordered.push_back(row);
      }
    }
    return ordered;
  }

  JobRow get(std::int64_t id) {
    auto row = jobs_->get_job(id);
    EXPECT_TRUE(row.ok() && row->has_value());
    return row.ok() && row->has_value() ? **row : JobRow{};
  }

  std::string states_of(std::int64_t id) {
    auto events = jobs_->list_events(id);
    EXPECT_TRUE(events.ok());
    std::string out;
    for (const JobEventRow& event : *events) {
      out += std::string(event.from_state ? to_string(*event.from_state) : "-") + ">" +
             std::string(to_string(event.to_state)) + "(" + event.reason + ") ";
    }
    return out;
  }

  // The leader's read of the queue, as it makes it (with its other reads).
  // `specs_above`: the highest id whose spec the reader knows.
  base::Result<JobRepository::ScheduleRead> read_queue(
      const std::optional<std::string>& since, std::int64_t specs_above = 0,
      std::optional<JobRepository::Sweep> sweep = std::nullopt) {
    std::optional<JobRepository::ScheduleSince> from;
    if (since) from = JobRepository::ScheduleSince{*since, specs_above, sweep};
    auto read = read_for_scheduling(*pool_, from);
    if (!read.ok()) return read.error();
    return std::move(read->queue);
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<JobRepository> jobs_;
};

TEST_F(JobRepositoryTest, BatchInsertReturnsRowsInInputOrderWithFirstEvent) {
  NewJob labelled = job("b");
  labelled.labels_json = R"({"pipeline": "ci-1234"})";
  labelled.priority = 5;
  auto inserted = insert({job("a"), labelled, job("c")});
  ASSERT_EQ(3u, inserted.size());
  EXPECT_EQ("a", inserted[0].row.name);
  EXPECT_EQ("b", inserted[1].row.name);
  EXPECT_EQ("c", inserted[2].row.name);
  EXPECT_LT(inserted[0].row.id, inserted[1].row.id);
  EXPECT_LT(inserted[1].row.id, inserted[2].row.id);
  for (const InsertedJob& job : inserted) {
    EXPECT_FALSE(job.existing);
    EXPECT_EQ(JobState::kQueued, job.row.state);
    EXPECT_EQ(0, job.row.attempt);
    EXPECT_FALSE(job.row.allocation_json.has_value());
  }
  const JobRow stored = get(inserted[1].row.id);
  EXPECT_EQ(R"({"pipeline": "ci-1234"})", stored.labels_json);
  EXPECT_EQ(5, stored.priority);
  EXPECT_EQ(R"({"trainer": {"devices": 8}})", stored.spec_json);
  EXPECT_EQ("hash-b", stored.spec_hash);
  EXPECT_EQ(stored.created_at, inserted[1].row.created_at);
  EXPECT_EQ("->QUEUED(Submitted) ", states_of(stored.id));
  // The view's read: the same row, and no checkpoint yet.
  auto with = jobs_->get_job_with_checkpoint(stored.id);
  ASSERT_TRUE(with.ok() && with->has_value());
  EXPECT_EQ("hash-b", (*with)->row.spec_hash);
  EXPECT_EQ(R"({"pipeline": "ci-1234"})", (*with)->row.labels_json);
  EXPECT_FALSE((*with)->last_checkpoint.has_value());
}

TEST_F(JobRepositoryTest, IdempotencyKeyReturnsExistingJob) {
  NewJob first = job("first");
  first.idempotency_key = "key-1";
  const auto original = insert({first});
  ASSERT_EQ(1u, original.size());

  NewJob again = job("again");  // same key, other body: the caller compares hashes
  again.idempotency_key = "key-1";
  NewJob other_tenant = job("other", "team-b");
  other_tenant.idempotency_key = "key-1";  // keys are per tenant
  NewJob twin_a = job("twin");
  twin_a.idempotency_key = "key-2";
  NewJob twin_b = job("twin");
  twin_b.idempotency_key = "key-2";  // twice in one batch
  const auto second = insert({again, other_tenant, twin_a, twin_b});
  ASSERT_EQ(4u, second.size());
  EXPECT_TRUE(second[0].existing);
  EXPECT_EQ(original[0].row.id, second[0].row.id);
  EXPECT_EQ("hash-first", second[0].row.spec_hash);
  EXPECT_FALSE(second[1].existing);
  EXPECT_NE(original[0].row.id, second[1].row.id);
  EXPECT_FALSE(second[2].existing);
  EXPECT_TRUE(second[3].existing);
  EXPECT_EQ(second[2].row.id, second[3].row.id);

  auto counts = jobs_->count_jobs_by_state();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(3, (*counts)["QUEUED"]);
  EXPECT_EQ(0, (*counts)["RUNNING"]);
}

// A sweep's children are stored whole or not at all: one whose key was used
// before (by the same sweep, submitted again, or by a sweep of other
// children) inserts none of its children, in the same batch as another
// submit that is stored.
TEST_F(JobRepositoryTest, AnArrayWithAKeyUsedBeforeStoresNoneOfItsChildren) {
  auto sweep = [](int children, std::int64_t group) {
    std::vector<NewJob> out;
    for (int i = 0; i < children; ++i) {
      NewJob child = job("child-" + std::to_string(i));
      child.idempotency_key = "sweep#" + std::to_string(i);
      child.array_group = group;
      child.array_index = i;
      out.push_back(std::move(child));
    }
    return out;
  };
  const auto first = insert(sweep(2, 1));
  ASSERT_EQ(2u, first.size());
  EXPECT_FALSE(first[0].existing || first[1].existing);
  EXPECT_EQ(first[0].row.array_id, first[1].row.array_id);

  std::vector<NewJob> batch = sweep(3, 7);
  batch.push_back(job("beside"));
  const auto second = insert(batch);
  ASSERT_EQ(4u, second.size());
  EXPECT_TRUE(second[0].existing);
  EXPECT_EQ(first[0].row.id, second[0].row.id);
  EXPECT_TRUE(second[1].existing);
  EXPECT_TRUE(second[2].not_stored) << "a child of a sweep answered 409 was stored";
  EXPECT_EQ(0, second[2].row.id);
  EXPECT_FALSE(second[3].existing || second[3].not_stored) << "the other submit is stored";
  auto counts = jobs_->count_jobs_by_state();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(3, (*counts)["QUEUED"]);

  // The same in one batch: a sweep, and its retry with a child more.
  std::vector<NewJob> together = sweep(2, 1);
  for (NewJob& child : together) child.idempotency_key = "other-" + *child.idempotency_key;
  for (NewJob child : sweep(3, 2)) {
    child.idempotency_key = "other-" + *child.idempotency_key;
    together.push_back(std::move(child));
  }
  const auto third = insert(together);
  ASSERT_EQ(5u, third.size());
  EXPECT_FALSE(third[0].existing || third[0].not_stored);
  EXPECT_FALSE(third[1].existing || third[1].not_stored);
  EXPECT_TRUE(third[2].existing);
  EXPECT_EQ(third[0].row.id, third[2].row.id);
  EXPECT_TRUE(third[3].existing);
  EXPECT_TRUE(third[4].not_stored) << "a child of a sweep answered 409 was stored";
  counts = jobs_->count_jobs_by_state();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(5, (*counts)["QUEUED"]);
}

// A child found again says how many children its sweep has: a sweep
// submitted again with fewer children is told from the one stored.
TEST_F(JobRepositoryTest, AChildFoundAgainSaysHowManyChildrenItsSweepHas) {
  std::vector<NewJob> sweep;
  for (int i = 0; i < 3; ++i) {
    NewJob child = job("child-" + std::to_string(i));
    child.idempotency_key = "three#" + std::to_string(i);
    child.array_group = 1;
    child.array_index = i;
    sweep.push_back(std::move(child));
  }
  NewJob lone = job("lone");
  lone.idempotency_key = "lone";
  const auto first = insert({sweep[0], sweep[1], sweep[2], lone});
  ASSERT_EQ(4u, first.size());
  const auto again = insert({sweep[0], sweep[1], lone});  // fewer children, and the lone job
  ASSERT_EQ(3u, again.size());
  EXPECT_TRUE(again[0].existing && again[1].existing && again[2].existing);
  EXPECT_EQ(3, again[0].array_size);
  EXPECT_EQ(3, again[1].array_size);
  EXPECT_EQ(0, again[2].array_size) << "a lone job is no sweep";
}

// Two transactions storing sweeps with one key at once (two replicas'
// committers) never store a mix: every child stored under a key belongs to
// one of the two sweeps, whole. The same for a sweep and a lone job whose
// key is one of its children's ("K#1").
TEST_F(JobRepositoryTest, SweepsWithOneKeyStoredAtOnceAreNeverMixed) {
  auto sweep = [](const std::string& key, int children, const std::string& tag) {
    std::vector<NewJob> out;
    for (int i = 0; i < children; ++i) {
      NewJob child = job(tag + "-" + std::to_string(i));
      child.idempotency_key = key + "#" + std::to_string(i);
      child.array_group = 1;
      child.array_index = i;
      out.push_back(std::move(child));
    }
    return out;
  };
  constexpr int kRounds = 60;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = "race-" + std::to_string(round);
    std::atomic<int> ready{0};
    auto racer = [&](std::vector<NewJob> batch) {
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();
      auto inserted = jobs_->insert_jobs(batch);
      EXPECT_TRUE(inserted.ok()) << inserted.error().message;
    };
    std::vector<NewJob> first = sweep(key, 2, "small");
    if (round % 2 == 1) {  // a lone job with the second child's key
      first = {job("lone-0")};
      first[0].idempotency_key = key + "#1";
    }
    std::thread small([&] { racer(first); });
    std::thread large([&] { racer(sweep(key, 4, "large")); });
    small.join();
    large.join();
    auto connection = pool_->acquire(std::chrono::seconds(10));
    ASSERT_TRUE(connection.ok());
    auto rows = (*connection)
                    ->execute(
                        "SELECT name, COALESCE(array_id, 0) FROM jobs"
                        " WHERE idempotency_key LIKE $1::text",
                        {key + "#%"});
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    std::map<std::string, int> stored;  // children stored under this key, by sweep
    std::set<std::int64_t> arrays;
    for (int row = 0; row < rows->rows(); ++row) {
      const std::string name = rows->string(row, 0);
      ++stored[name.substr(0, name.find('-'))];
      arrays.insert(rows->int64(row, 1));
    }
    ASSERT_EQ(1u, stored.size()) << "round " << round << ": children of both sweeps stored";
    const std::map<std::string, int> children{{"small", 2}, {"lone", 1}, {"large", 4}};
    EXPECT_EQ(children.at(stored.begin()->first), stored.begin()->second);
    EXPECT_EQ(1u, arrays.size());
  }
}

TEST_F(JobRepositoryTest, ConcurrentSubmitsWithOneKeyMakeOneJob) {
  std::vector<std::int64_t> ids(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      NewJob submit = job("racer");
      submit.idempotency_key = "same";
      auto inserted = jobs_->insert_jobs({submit});
      ids[i] = inserted.ok() ? (*inserted)[0].row.id : -1;
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::int64_t id : ids) EXPECT_EQ(ids[0], id);
  EXPECT_GT(ids[0], 0);
}

TEST_F(JobRepositoryTest, BadJsonFailsTheWholeBatch) {
  NewJob broken = job("broken");
  broken.labels_json = "{not json";
  auto inserted = jobs_->insert_jobs({job("fine"), broken});
  ASSERT_FALSE(inserted.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, inserted.code());
  auto page = jobs_->list_jobs({});
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->jobs.empty());
}

TEST_F(JobRepositoryTest, TransitionsAreConditionalAndRecorded) {
  const std::int64_t id = insert({job("run")})[0].row.id;
  Transition start{
      .job_id = id, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "Scheduled"};
  start.allocation_json = R"({"hosts": ["h0"], "cores": [0, 1]})";
  start.agent = "agent-1";
  start.placement_epoch = 4;
  start.clear_preempted_by = true;
  ASSERT_TRUE(jobs_->set_pending({{id, R"({"reason": "Resources"})"}}).ok());
  EXPECT_EQ(R"({"reason": "Resources"})", get(id).pending_json.value_or(""));
  auto started = jobs_->transition(start);
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_TRUE(*started);
  // The same transition again finds the job no longer QUEUED.
  EXPECT_FALSE(*jobs_->transition(start));

  JobRow row = get(id);
  EXPECT_EQ(JobState::kStarting, row.state);
  EXPECT_EQ(R"({"cores": [0, 1], "hosts": ["h0"]})", row.allocation_json.value_or(""));
  EXPECT_EQ("agent-1", row.agent.value_or(""));
  EXPECT_EQ(4, row.placement_epoch.value_or(0));
  EXPECT_FALSE(row.pending_json.has_value());
  EXPECT_FALSE(row.started_at.has_value());

  EXPECT_TRUE(*jobs_->transition({.job_id = id,
                                  .from = {JobState::kStarting},
                                  .to = JobState::kRunning,
                                  .reason = "Started",
                                  .set_started_at = true,
                                  .increment_attempt = true}));
  Transition fail{
      .job_id = id, .from = {JobState::kRunning}, .to = JobState::kFailed, .reason = "HostFailed"};
  fail.error_json = R"({"type": "UNAVAILABLE", "message": "failed to connect to all addresses"})";
  fail.detail_json = R"({"host": "h0"})";
  fail.set_finished_at = true;
  fail.clear_placement = true;
  EXPECT_TRUE(*jobs_->transition(fail));

  row = get(id);
  EXPECT_EQ(JobState::kFailed, row.state);
  EXPECT_EQ(1, row.attempt);
  EXPECT_TRUE(row.started_at.has_value());
  EXPECT_TRUE(row.finished_at.has_value());
  EXPECT_FALSE(row.agent.has_value());
  EXPECT_FALSE(row.placement_epoch.has_value());
  EXPECT_NE(std::string::npos, row.error_json.value_or("").find("UNAVAILABLE"));

  // Terminal states never change, even when the caller lists them as allowed.
  EXPECT_FALSE(*jobs_->transition({.job_id = id,
                                   .from = {JobState::kFailed, JobState::kRunning},
                                   .to = JobState::kQueued,
                                   .reason = "Retry"}));
  EXPECT_EQ(JobState::kFailed, get(id).state);
  EXPECT_EQ(
      "->QUEUED(Submitted) QUEUED>STARTING(Scheduled) STARTING>RUNNING(Started) "
      "RUNNING>FAILED(HostFailed) ",
      states_of(id));
  auto events = jobs_->list_events(id);
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(R"({"host": "h0"})", events->back().detail_json.value_or(""));
  // A job that does not exist cannot move either.
  EXPECT_FALSE(*jobs_->transition({.job_id = id + 1000,
                                   .from = {JobState::kQueued},
                                   .to = JobState::kStarting,
                                   .reason = "x"}));
}

// A batch of transitions (the scheduler leader's placements of a pass) is
// one transaction: its rows change in one commit, each transition applies or
// not as it would alone, a later one sees an earlier one, those with_work
// answer the job as its agent starts it, and a statement that fails takes
// the whole batch back.
TEST_F(JobRepositoryTest, ABatchOfTransitionsCommitsAsOneAndFailsAsOne) {
  const std::vector<InsertedJob> inserted =
      insert({job("a"), job("b"), job("c"), job("d"), job("e")});
  ASSERT_EQ(5u, inserted.size());
  const std::int64_t a = inserted[0].row.id, b = inserted[1].row.id, c = inserted[2].row.id;
  const std::int64_t d = inserted[3].row.id, e = inserted[4].row.id;
  auto place = [](std::int64_t id) {
    Transition t{
        .job_id = id, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "Placed"};
    t.agent = "agent-1";
    t.placement_epoch = 1;
    return t;
  };
  ASSERT_TRUE(*jobs_->transition({.job_id = c,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancelled",
                                  .set_finished_at = true}));
  const BatchedTransition batch[] = {{place(a)},
                                     {place(b), /*with_work=*/true},
                                     {place(c)},
                                     {Transition{.job_id = a,
                                                 .from = {JobState::kStarting},
                                                 .to = JobState::kRunning,
                                                 .reason = "Started"}}};
  auto outcomes = jobs_->transitions(batch);
  ASSERT_TRUE(outcomes.ok()) << outcomes.error().message;
  ASSERT_EQ(4u, outcomes->size());
  EXPECT_TRUE((*outcomes)[0].applied);
  EXPECT_FALSE((*outcomes)[0].work.has_value()) << "asked only whether it applied";
  EXPECT_TRUE((*outcomes)[1].applied);
  ASSERT_TRUE((*outcomes)[1].work.has_value());
  EXPECT_EQ(JobState::kStarting, (*outcomes)[1].work->row.state);
  EXPECT_EQ("agent-1", (*outcomes)[1].work->row.agent.value_or(""));
  EXPECT_FALSE((*outcomes)[2].applied) << "job c was cancelled before";
  EXPECT_TRUE((*outcomes)[3].applied) << "a later transition sees an earlier one";
  EXPECT_EQ(JobState::kRunning, get(a).state);
  EXPECT_EQ(JobState::kStarting, get(b).state);
  EXPECT_EQ(JobState::kCancelled, get(c).state);
  auto connection = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(connection.ok());
  auto commits = (*connection)
                     ->execute("SELECT count(DISTINCT xmin::text) FROM jobs WHERE id IN (" +
                               std::to_string(a) + ", " + std::to_string(b) + ")");
  ASSERT_TRUE(commits.ok()) << commits.error().message;
  EXPECT_EQ(1, commits->int64(0, 0)) << "one transaction wrote both rows";

  Transition broken = place(e);
  broken.allocation_json = "{not json";
  const BatchedTransition failing[] = {{place(d)}, {broken}};
  EXPECT_FALSE(jobs_->transitions(failing).ok());
  EXPECT_EQ(JobState::kQueued, get(d).state) << "nothing of a failed batch commits";
  EXPECT_EQ("->QUEUED(Submitted) ", states_of(d));
}

// What a replica's cache of queued views hears (db/migrations/038, 040): a
// reason written, as it was written; a job that leaves the queue; nothing
// for a reason written again, or for a running job's writes.
TEST_F(JobRepositoryTest, TheChangesOfQueuedJobsAreSentToTheReplicasThatListen) {
  Listener listener(pool_->conninfo(),
                    std::vector<std::string>{"tpujobs_jobs_changed", "tpujobs_pending_written"});
  ASSERT_TRUE(listener.wait(std::chrono::milliseconds(10)).ok());  // listening from here
  const std::vector<InsertedJob> inserted = insert({job("a"), job("b"), job("c")});
  ASSERT_EQ(inserted.size(), 3u);
  const std::int64_t a = inserted[0].row.id, b = inserted[1].row.id, c = inserted[2].row.id;
  const std::string reason = R"({"reason": "Resources", "queue_position": 1})";
  ASSERT_TRUE(jobs_->set_pending({{a, reason}, {b, R"({"reason": "Priority"})"}}).ok());
  // One statement's reasons in one payload, a line each (db/migrations/040).
  EXPECT_EQ(heard(listener), std::vector<std::string>{
                                 "tpujobs_pending_written " + std::to_string(a) + "\t" + reason +
                                 "\n" + std::to_string(b) + "\t{\"reason\": \"Priority\"}"});

  // The same reason again, and a running job's progress: nothing.
  ASSERT_TRUE(jobs_->set_pending({{a, reason}}).ok());
  Transition start{
      .job_id = b, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "Scheduled"};
  start.clear_preempted_by = true;
  ASSERT_TRUE(*jobs_->transition(start));
  EXPECT_EQ(heard(listener), std::vector<std::string>{"tpujobs_jobs_changed " + std::to_string(b)});
  ASSERT_TRUE(jobs_->update_progress(b, R"({"step": 3})", std::nullopt).ok());
  EXPECT_EQ(heard(listener), std::vector<std::string>{});

  // A reason too long for a payload is sent as a change; a cancel too.
  const std::string long_reason =
      R"({"reason": "Resources", "detail": ")" + std::string(8000, 'x') + R"("})";
  ASSERT_TRUE(jobs_->set_pending({{c, long_reason}}).ok());
  EXPECT_EQ(heard(listener), std::vector<std::string>{"tpujobs_jobs_changed " + std::to_string(c)});
  ASSERT_TRUE(*jobs_->transition({.job_id = a,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancelled",
                                  .set_finished_at = true}));
  EXPECT_EQ(heard(listener), std::vector<std::string>{"tpujobs_jobs_changed " + std::to_string(a)});
}

// A statement's reasons reach a listening replica in few payloads, each under
// PostgreSQL's 8000 bytes, every job's once, as stored (db/migrations/040);
// a reason is read only while its job is QUEUED, and goes when it leaves.
TEST_F(JobRepositoryTest, ManyReasonsAreSentInFewPayloadsAndShowOnlyWhileTheJobIsQueued) {
  Listener listener(pool_->conninfo(),
                    std::vector<std::string>{"tpujobs_jobs_changed", "tpujobs_pending_written"});
  ASSERT_TRUE(listener.wait(std::chrono::milliseconds(10)).ok());  // listening from here
  std::vector<NewJob> batch;
  for (int i = 0; i < 300; ++i) batch.push_back(job("j" + std::to_string(i)));
  const std::vector<InsertedJob> inserted = insert(batch);
  ASSERT_EQ(inserted.size(), 300u);
  std::map<std::int64_t, std::string> sent;
  std::vector<std::pair<std::int64_t, std::optional<std::string>>> reasons;
  for (const InsertedJob& j : inserted) {
    // One of 1,500 bytes among reasons of some 120.
    const std::size_t size = j.row.id == inserted[150].row.id ? 1500 : 100;
    sent[j.row.id] = R"({"detail": ")" + std::string(size, 'a' + j.row.id % 26) + R"("})";
    reasons.emplace_back(j.row.id, sent[j.row.id]);
  }
  ASSERT_TRUE(jobs_->set_pending(reasons).ok());
  std::map<std::int64_t, std::string> told;
  const std::vector<std::string> notes = heard(listener);
  for (const std::string& note : notes) {
    const std::string payload = note.substr(note.find(' ') + 1);
    EXPECT_LT(payload.size(), 8000u);
    std::istringstream lines(payload);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t tab = line.find('\t');
      ASSERT_NE(tab, std::string::npos) << line;
      EXPECT_TRUE(told.emplace(std::stoll(line.substr(0, tab)), line.substr(tab + 1)).second)
          << "told twice: " << line;
    }
  }
  EXPECT_EQ(told, sent);
  EXPECT_GE(notes.size(), 6u);  // 300 lines of some 120 bytes, and the long one alone
  EXPECT_LE(notes.size(), 12u);

  // Placed, then requeued: its old reason is not read.
  const std::int64_t moved = inserted[0].row.id;
  ASSERT_EQ(*jobs_->get_job(moved)->value().pending_json, sent[moved]);
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = moved, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "x"}));
  EXPECT_FALSE(jobs_->get_job(moved)->value().pending_json.has_value());
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = moved, .from = {JobState::kStarting}, .to = JobState::kQueued, .reason = "y"}));
  EXPECT_FALSE(jobs_->get_job(moved)->value().pending_json.has_value());
  // A reason written for a job no longer queued is not stored.
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[1].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancelled",
                                  .set_finished_at = true}));
  ASSERT_EQ(heard(listener).size(), 2u);  // the placement and the cancel
  ASSERT_TRUE(jobs_->set_pending({{inserted[1].row.id, R"({"reason": "Priority"})"}}).ok());
  EXPECT_FALSE(jobs_->get_job(inserted[1].row.id)->value().pending_json.has_value());
  EXPECT_EQ(heard(listener), std::vector<std::string>{});
}

// The agent's start of a job (service/written_views.h): the transition
// answers the job as the view's read right after it finds it.
TEST_F(JobRepositoryTest, ATransitionWithItsViewAnswersWhatAReadRightAfterFinds) {
  const std::int64_t id = insert({job("resumed")})[0].row.id;
  Transition place{
      .job_id = id, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "Scheduled"};
  place.allocation_json = R"({"hosts": ["h0"]})";
  place.agent = "agent-1";
  place.placement_epoch = 4;
  place.placement = 4;
  place.set_started_at = true;
  ASSERT_TRUE(*jobs_->transition(place));
  JobOutputRepository outputs(*pool_);
  ASSERT_TRUE(outputs.save_checkpoint(id, 30, 2, "ckpt", 4).ok());
  ASSERT_TRUE(jobs_->update_progress(id, R"({"epoch": 2})", std::nullopt, 4).ok());

  Transition run{
      .job_id = id, .from = {JobState::kStarting}, .to = JobState::kRunning, .reason = "Started"};
  run.require_placement = 4;
  auto answered = jobs_->transition_with_view(run);
  ASSERT_TRUE(answered.ok()) << answered.error().message;
  ASSERT_TRUE(answered->has_value());
  auto read = jobs_->get_job_with_checkpoint(id);
  ASSERT_TRUE(read.ok() && read->has_value());
  const JobRow& a = (*answered)->row;
  const JobRow& r = (*read)->row;
  EXPECT_EQ(JobState::kRunning, a.state);
  EXPECT_EQ(r.state, a.state);
  EXPECT_EQ(r.tenant, a.tenant);
  EXPECT_EQ(r.name, a.name);
  EXPECT_EQ(r.spec_json, a.spec_json);
  EXPECT_EQ(r.spec_hash, a.spec_hash);
  EXPECT_EQ(r.allocation_json, a.allocation_json);
  EXPECT_EQ(r.progress_json, a.progress_json);
  EXPECT_EQ(r.attempt, a.attempt);
  EXPECT_EQ(r.agent, a.agent);
  EXPECT_EQ(r.placement_epoch, a.placement_epoch);
  EXPECT_EQ(r.created_at, a.created_at);
  EXPECT_EQ(r.started_at, a.started_at);
  EXPECT_EQ(r.updated_at, a.updated_at);
  EXPECT_EQ(r.finished_at, a.finished_at);
  EXPECT_EQ((std::optional<std::pair<std::int64_t, int>>{{30, 2}}), (*answered)->last_checkpoint);
  EXPECT_EQ((*read)->last_checkpoint, (*answered)->last_checkpoint);
  EXPECT_EQ("->QUEUED(Submitted) QUEUED>STARTING(Scheduled) STARTING>RUNNING(Started) ",
            states_of(id));

  // Not applied (the job is RUNNING now, not STARTING): nothing answered.
  auto again = jobs_->transition_with_view(run);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
  run.from = {JobState::kRunning};
  run.require_placement = 5;  // another placement's
  auto fenced = jobs_->transition_with_view(run);
  ASSERT_TRUE(fenced.ok());
  EXPECT_FALSE(fenced->has_value());
}

TEST_F(JobRepositoryTest, ConcurrentTransitionsFromOneStateLetExactlyOneWin) {
  const std::int64_t id = insert({job("contested")})[0].row.id;
  std::atomic<int> winners{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      Transition t{.job_id = id,
                   .from = {JobState::kQueued},
                   .to = JobState::kStarting,
                   .reason = "Scheduled"};
      t.agent = "agent-" + std::to_string(i);
      auto won = jobs_->transition(t);
      if (won.ok() && *won) ++winners;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(1, winners.load());
  EXPECT_EQ("->QUEUED(Submitted) QUEUED>STARTING(Scheduled) ", states_of(id));
}

// A cancel answered 202 is honoured (Transition::if_cancel_requested): an
// end decided from a read before the request was stored, committed after
// it, ends the job CANCELLED, in its row, its event and the view the
// statement answers; the same end of a job no one cancelled lands as asked.
// A batch's outcome tells the two apart (the leader's log line of a lost
// agent's job names the end that landed).
TEST_F(JobRepositoryTest, AnEndCommittedAfterAStoredCancelEndsTheJobCancelled) {
  const auto inserted = insert({job("cancelled"), job("not"), job("cancelled too")});
  auto end_of = [](std::int64_t id, JobState to) {
    Transition t{.job_id = id,
                 .from = {JobState::kRunning},
                 .to = to,
                 .reason = "Training finished",
                 .result_json = R"({"steps": 7})",
                 .set_finished_at = true};
    t.require_placement = 4;
    t.if_cancel_requested = Transition::CancelledInstead{"Cancelled by request as it ended",
                                                         R"({"type": "CANCELLED"})"};
    return t;
  };
  for (const InsertedJob& j : inserted) {
    Transition place{.job_id = j.row.id,
                     .from = {JobState::kQueued},
                     .to = JobState::kRunning,
                     .reason = "Placed"};
    place.placement_epoch = 4;
    place.placement = 4;
    ASSERT_TRUE(*jobs_->transition(place));
  }
  const std::int64_t cancelled = inserted[0].row.id, not_cancelled = inserted[1].row.id,
                     also_cancelled = inserted[2].row.id;
  ASSERT_TRUE(jobs_->request_cancel(cancelled).ok());
  ASSERT_TRUE(jobs_->request_cancel(also_cancelled).ok());

  // A batch's outcome tells which way an end went.
  auto outcome_of = [&](const Transition& end) {
    const BatchedTransition one[] = {{end}};
    auto outcomes = jobs_->transitions(one);
    EXPECT_TRUE(outcomes.ok()) << outcomes.error().message;
    return outcomes.ok() ? outcomes->front() : TransitionOutcome{};
  };
  const TransitionOutcome overtaken = outcome_of(end_of(also_cancelled, JobState::kFailed));
  EXPECT_TRUE(overtaken.applied && overtaken.cancelled_instead);
  EXPECT_EQ(JobState::kCancelled, get(also_cancelled).state);

  auto answered = jobs_->transition_with_view(end_of(cancelled, JobState::kSucceeded));
  ASSERT_TRUE(answered.ok()) << answered.error().message;
  ASSERT_TRUE(answered->has_value()) << "the end applies, as CANCELLED";
  EXPECT_EQ(JobState::kCancelled, (*answered)->row.state);
  const JobRow row = get(cancelled);
  EXPECT_EQ(JobState::kCancelled, row.state);
  EXPECT_EQ(R"({"type": "CANCELLED"})", row.error_json.value_or(""));
  EXPECT_EQ(R"({"steps": 7})", row.result_json.value_or("")) << "what the run did is kept";
  EXPECT_TRUE(row.finished_at.has_value());
  EXPECT_EQ(
      "->QUEUED(Submitted) QUEUED>RUNNING(Placed) RUNNING>CANCELLED(Cancelled by request as "
      "it ended) ",
      states_of(cancelled));

  const TransitionOutcome ended = outcome_of(end_of(not_cancelled, JobState::kFailed));
  EXPECT_TRUE(ended.applied && !ended.cancelled_instead);
  EXPECT_EQ(JobState::kFailed, get(not_cancelled).state);
  EXPECT_FALSE(get(not_cancelled).error_json.has_value());
  EXPECT_EQ("->QUEUED(Submitted) QUEUED>RUNNING(Placed) RUNNING>FAILED(Training finished) ",
            states_of(not_cancelled));
}

// A requeue of a job whose cancel is stored keeps it QUEUED with its
// request, for the leader to end (scheduler_leader_queue.cc: apply).
TEST_F(JobRepositoryTest, ARequeueKeepsAStoredCancelForTheLeader) {
  const std::int64_t id = insert({job("requeued")})[0].row.id;
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = id, .from = {JobState::kQueued}, .to = JobState::kRunning, .reason = "Placed"}));
  ASSERT_TRUE(jobs_->request_cancel(id).ok());
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = id, .from = {JobState::kRunning}, .to = JobState::kQueued, .reason = "Lost"}));
  EXPECT_EQ(JobState::kQueued, get(id).state);
  EXPECT_TRUE(get(id).cancel_requested);
}

TEST_F(JobRepositoryTest, CancelRequestAndProgress) {
  const auto inserted = insert({job("a"), job("b")});
  const std::int64_t a = inserted[0].row.id, b = inserted[1].row.id;
  ASSERT_TRUE(jobs_->request_cancel(a).ok());
  EXPECT_TRUE(get(a).cancel_requested);
  EXPECT_FALSE(get(b).cancel_requested);
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = a, .from = {JobState::kQueued}, .to = JobState::kCancelled, .reason = "Cancel"}));
  base::Status again = jobs_->request_cancel(a);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(base::ErrorCode::kConflict, again.code());
  base::Status missing = jobs_->request_cancel(b + 1000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(base::ErrorCode::kNotFound, missing.code());

  ASSERT_TRUE(jobs_->update_progress(b, R"({"step": 10})", R"({"loss": 0.5})").ok());
  ASSERT_TRUE(jobs_->update_progress(b, R"({"step": 20})", std::nullopt).ok());
  const JobRow row = get(b);
  EXPECT_EQ(R"({"step": 20})", row.progress_json.value_or(""));
  EXPECT_EQ(R"({"loss": 0.5})", row.latest_metrics_json.value_or(""));
  EXPECT_EQ(base::ErrorCode::kNotFound, jobs_->update_progress(b + 1000, "{}", "{}").code());
  auto none = jobs_->get_job(b + 1000);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_F(JobRepositoryTest, TheSchedulersCompleteReadIsTheUnfinishedRowsWithoutTheirDocuments) {
  NewJob low = job("low"), high = job("high"), mid = job("mid"), done = job("done");
  high.priority = 10;
  mid.priority = 5;
  const auto inserted = insert({low, high, mid, done});
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[3].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancel"}));
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[0].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kStarting,
                                  .reason = "Scheduled"}));

  // The scheduler's read: every unfinished job, as get_job reads it, without
  // the documents but allocation; the specs on demand, by id.
  auto read = read_queue(std::nullopt);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->complete);
  std::map<std::int64_t, JobRow> brief;
  for (JobRow& row : read->rows) brief.emplace(row.id, std::move(row));
  ASSERT_EQ(3u, brief.size());
  EXPECT_EQ(0u, brief.count(inserted[3].row.id)) << "a finished job is not read";
  for (int i : {0, 1, 2}) {
    const JobRow full = get(inserted[i].row.id);
    ASSERT_EQ(1u, brief.count(full.id));
    const JobRow& b = brief.at(full.id);
    EXPECT_EQ(full.name, b.name);
    EXPECT_EQ(full.tenant, b.tenant);
    EXPECT_EQ(full.priority, b.priority);
    EXPECT_EQ(full.state, b.state);
    EXPECT_EQ(full.created_at, b.created_at);
    EXPECT_EQ(full.allocation_json, b.allocation_json);
    EXPECT_FALSE(full.spec_json.empty());
    EXPECT_TRUE(b.spec_json.empty());
    EXPECT_TRUE(b.resolved_json.empty());
    EXPECT_FALSE(b.pending_json.has_value());
  }
  auto specs = jobs_->job_specs({inserted[1].row.id, inserted[2].row.id, inserted[3].row.id + 99});
  ASSERT_TRUE(specs.ok());
  const std::map<std::int64_t, std::string> expected{
      {inserted[1].row.id, R"({"trainer": {"devices": 8}})"},
      {inserted[2].row.id, R"({"trainer": {"devices": 8}})"}};
  EXPECT_EQ(expected, *specs) << "no entry for an id that does not exist";
}

// The leader's read between passes: every unfinished job once, then only
// the rows written since, finished ones included (for the reader to drop),
// and never a change whose transaction was still open at the last read.
TEST_F(JobRepositoryTest, ThePlacedReadHasOnlyStartingAndRunningJobsAndTheQueuedAreCounted) {
  const auto inserted = insert({job("a"), job("b"), job("c"), job("d"), job("e")});
  const auto move = [&](int i, JobState from, JobState to) {
    Transition t{.job_id = inserted[i].row.id, .from = {from}, .to = to, .reason = "test"};
    if (to == JobState::kStarting && i == 1) t.allocation_json = R"({"hosts": ["h0"]})";
    ASSERT_TRUE(*jobs_->transition(t));
  };
  move(0, JobState::kQueued, JobState::kStarting);
  move(1, JobState::kQueued, JobState::kStarting);
  move(1, JobState::kStarting, JobState::kRunning);
  move(2, JobState::kQueued, JobState::kCancelled);
  auto placed = jobs_->load_placed();
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  ASSERT_EQ(placed->size(), 2u);
  EXPECT_EQ((*placed)[0].name, "a");
  EXPECT_EQ((*placed)[0].state, JobState::kStarting);
  EXPECT_EQ((*placed)[1].name, "b");
  EXPECT_EQ((*placed)[1].allocation_json.value_or(""), R"({"hosts": ["h0"]})");
  EXPECT_TRUE((*placed)[1].spec_json.empty()) << "the placed read leaves the spec out";
  auto queued = jobs_->count_queued();
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(*queued, 2) << "d and e";
}

TEST_F(JobRepositoryTest, AReadSinceALowWaterReturnsEveryRowWrittenAfterItAndNoOther) {
  const auto inserted = insert({job("a"), job("b"), job("c")});
  ASSERT_EQ(3u, inserted.size());
  auto first = read_queue(std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(first->complete);
  EXPECT_EQ(3u, first->rows.size());
  EXPECT_TRUE(first->rows[0].spec_json.empty()) << "the scheduling columns, without the spec";

  auto quiet = read_queue(first->low_water);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  EXPECT_FALSE(quiet->complete);
  EXPECT_TRUE(quiet->rows.empty()) << "nothing was written since";

  // A cancel and a submit commit; a placement's transaction is still open
  // while the next read runs.
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[0].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancel"}));
  const auto later = insert({job("d")});
  auto held = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(held.ok());
  auto open = Transaction::begin(**held);
  ASSERT_TRUE(open.ok());
  ASSERT_TRUE(open->execute("UPDATE jobs SET state = 'STARTING' WHERE id = $1::bigint",
                            {inserted[1].row.id})
                  .ok());
  auto second = read_queue(quiet->low_water, /*specs_above=*/inserted[2].row.id);
  ASSERT_TRUE(second.ok()) << second.error().message;
  std::map<std::int64_t, JobState> seen;
  std::map<std::int64_t, std::string> specs;
  for (const JobRow& row : second->rows) {
    seen[row.id] = row.state;
    specs[row.id] = row.spec_json;
  }
  EXPECT_EQ((std::map<std::int64_t, JobState>{{inserted[0].row.id, JobState::kCancelled},
                                              {later[0].row.id, JobState::kQueued}}),
            seen);
  // The job submitted since comes with its spec (the reader has not seen
  // its id); the one the reader knows does not.
  EXPECT_EQ((std::map<std::int64_t, std::string>{
                {inserted[0].row.id, ""}, {later[0].row.id, get(later[0].row.id).spec_json}}),
            specs);
  ASSERT_TRUE(open->commit().ok());

  // The placement committed after that read began: the next read has it.
  auto third = read_queue(second->low_water);
  ASSERT_TRUE(third.ok()) << third.error().message;
  bool placed = false;
  for (const JobRow& row : third->rows) {
    if (row.id == inserted[1].row.id) placed = row.state == JobState::kStarting;
  }
  EXPECT_TRUE(placed) << "a change committed after a read's low water is in the next read";

  // A running job's progress and a pending reason are not the scheduler's
  // business: they do not mark the row (and their updates stay HOT).
  auto before = read_queue(third->low_water);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(jobs_->update_progress(inserted[1].row.id, R"({"step": 10})", std::nullopt).ok());
  ASSERT_TRUE(jobs_->set_pending({{inserted[2].row.id, R"({"reason": "Resources"})"}}).ok());
  auto after = read_queue(before->low_water);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_TRUE(after->rows.empty()) << after->rows.size() << " rows marked by progress or pending";
}

// The sweep's slices: the unfinished jobs above an id, by id, at most a
// limit of them, without their specs; a slice short of the limit is the last.
TEST_F(JobRepositoryTest, TheSweepReadsTheUnfinishedJobsBackASliceAtATimeInIdOrder) {
  const auto inserted = insert({job("a"), job("b"), job("c"), job("d"), job("e")});
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[1].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancel"}));
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[3].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kStarting,
                                  .reason = "Scheduled"}));
  auto first = read_queue(std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->swept) << "a complete read has no slice";
  auto ids = [](const JobRepository::ScheduleRead::Swept& swept) {
    std::vector<std::int64_t> out;
    for (const JobRow& row : swept.rows) {
      EXPECT_TRUE(row.spec_json.empty());
      out.push_back(row.id);
    }
    return out;
  };
  auto slice = read_queue(first->low_water, 0, JobRepository::Sweep{0, 2});
  ASSERT_TRUE(slice.ok()) << slice.error().message;
  EXPECT_TRUE(slice->rows.empty()) << "nothing written since";
  ASSERT_TRUE(slice->swept);
  EXPECT_EQ(ids(*slice->swept), (std::vector<std::int64_t>{inserted[0].row.id, inserted[2].row.id}))
      << "the cancelled job is not read back";
  EXPECT_FALSE(slice->swept->to_end);
  slice = read_queue(slice->low_water, 0, JobRepository::Sweep{inserted[2].row.id, 2});
  ASSERT_TRUE(slice.ok() && slice->swept);
  EXPECT_EQ(ids(*slice->swept),
            (std::vector<std::int64_t>{inserted[3].row.id, inserted[4].row.id}));
  EXPECT_EQ(slice->swept->rows[0].state, JobState::kStarting);
  EXPECT_FALSE(slice->swept->to_end) << "a full slice: there may be more";
  slice = read_queue(slice->low_water, 0, JobRepository::Sweep{inserted[4].row.id, 2});
  ASSERT_TRUE(slice.ok() && slice->swept);
  EXPECT_TRUE(slice->swept->rows.empty());
  EXPECT_TRUE(slice->swept->to_end);
}

// The sweep's slice is read through jobs_unfinished in id order, not by
// reading and sorting every row above its start, even when the statistics
// are stale (here: never gathered, as in the minute after a burst of
// submits); and its setting ends with its read.
TEST_F(JobRepositoryTest, TheSweepsSliceIsReadThroughTheIndexWhateverTheStatistics) {
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<NewJob> jobs;
    for (int i = 0; i < 500; ++i) jobs.push_back(job("j" + std::to_string(batch * 500 + i)));
    ASSERT_EQ(insert(jobs).size(), 500u);
  }
  const JobRepository::ScheduleSince since{"1", 0, JobRepository::Sweep{1000, 2000}};
  std::vector<Statement> statements = JobRepository::schedule_statements(since);
  ASSERT_EQ(statements.size(), 4u);
  const std::string explained = "EXPLAIN " + std::string(statements.back().sql);
  statements.back().sql = explained;
  auto connection = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(connection.ok());
  auto answers = (*connection)->execute_pipeline(statements);
  ASSERT_TRUE(answers.ok()) << answers.error().message;
  std::string plan;
  for (int row = 0; row < answers->back().rows(); ++row)
    plan += answers->back().string(row, 0) + "\n";
  EXPECT_NE(plan.find("Index Scan using jobs_unfinished"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Sort"), std::string::npos) << plan;
  auto after = (*connection)->execute("SHOW enable_sort");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->string(0, 0), "on");
}

// The first column of each row `text` answers on a connection of `pool`, a
// line each (empty for NULL).
std::string first_column(ConnectionPool& pool, const std::string& text) {
  base::Result<std::vector<std::string>> values = testing::column(pool, text);
  EXPECT_TRUE(values.ok()) << text << ": " << values.error().message;
  std::string out;
  for (const std::string& value : values.ok() ? *values : std::vector<std::string>{})
    out += value + "\n";
  return out;
}

// A reader that holds rows as their insert wrote them (the hand-over of
// this process's submits) gets none of them back from a read since, until
// another transaction writes one.
TEST_F(JobRepositoryTest, AReadSinceLeavesOutTheRowsHeldAsTheirInsertWroteThem) {
  auto empty = read_queue(std::nullopt);
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  const auto inserted = insert({job("a"), job("b"), job("c")});
  ASSERT_EQ(3u, inserted.size());
  const std::int64_t xid = inserted[0].row.changed_xid;
  EXPECT_NE(0, xid);
  for (const InsertedJob& i : inserted) EXPECT_EQ(xid, i.row.changed_xid) << "one transaction";
  EXPECT_EQ(first_column(*pool_, "SELECT DISTINCT changed_xid FROM jobs"),
            std::to_string(xid) + "\n")
      << "the insert answers the changed_xid it stored";
  const std::int64_t a = inserted[0].row.id, b = inserted[1].row.id, c = inserted[2].row.id;
  auto ids_read = [&](std::vector<std::int64_t> held_ids, std::vector<std::int64_t> held_xids) {
    JobRepository::ScheduleSince since{empty->low_water, c};
    since.held_ids = std::move(held_ids);
    since.held_xids = std::move(held_xids);
    auto read = read_for_scheduling(*pool_, since);
    EXPECT_TRUE(read.ok()) << read.error().message;
    std::set<std::int64_t> ids;
    for (const JobRow& row : read.ok() ? read->queue.rows : std::vector<JobRow>{})
      ids.insert(row.id);
    return ids;
  };
  EXPECT_EQ((std::set<std::int64_t>{a, b, c}), ids_read({}, {}));
  EXPECT_EQ((std::set<std::int64_t>{c}), ids_read({a, b}, {xid, xid}));
  EXPECT_EQ((std::set<std::int64_t>{b, c}), ids_read({a, b, c}, {xid, xid - 1, xid + 1}))
      << "a row is left out only at the transaction held";
  ASSERT_TRUE(*jobs_->transition(
      {.job_id = a, .from = {JobState::kQueued}, .to = JobState::kCancelled, .reason = "Cancel"}));
  EXPECT_EQ((std::set<std::int64_t>{a}), ids_read({a, b, c}, {xid, xid, xid}))
      << "written since its insert: read";
}

// The leader's reads are planned for the table as it is at each read: a
// generic plan, made once while few jobs were queued, scanned the whole
// table at 100,000 until autovacuum had it made again.
TEST_F(JobRepositoryTest, TheLeadersReadsAreNeverPlannedOnceForAll) {
  auto one = ConnectionPool::create(pool_->conninfo(), 1);  // every statement on one session
  ASSERT_TRUE(one.ok()) << one.error().message;
  const std::vector<InsertedJob> inserted = insert({job("a"), job("b")});
  auto first = read_for_scheduling(**one, std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(2u, first->queue.rows.size());
  for (int pass = 0; pass < 8; ++pass) {  // past the plan cache's five custom plans
    const JobRepository::ScheduleSince since{first->queue.low_water, inserted[1].row.id,
                                             JobRepository::Sweep{0, 2000}};
    ASSERT_TRUE(read_for_scheduling(**one, since).ok());
  }
  // None is kept as a prepared statement: a kept one may be planned
  // generically, and one without parameters (the complete read) always is.
  EXPECT_EQ(first_column(**one,
                         "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE "
                         "'%FROM jobs j WHERE%' AND statement NOT LIKE '%pg_prepared_statements%'"),
            "0\n")
      << first_column(**one, "SELECT left(statement, 80) FROM pg_prepared_statements");
}

// A transition's plan is made once per session (execute_generic), here
// while job_pending was empty; once 20,000 reasons are stored, it still
// finds a job's reason by its key.
TEST_F(JobRepositoryTest, ATransitionPlannedWhileTheReasonsWereFewFindsAReasonByItsKey) {
  auto one = ConnectionPool::create(pool_->conninfo(), 1);  // every statement on one session
  ASSERT_TRUE(one.ok()) << one.error().message;
  JobRepository jobs(**one);
  auto lines = [&](const std::string& text) { return first_column(**one, text); };
  lines("VACUUM job_pending");  // empty, and known to be
  const std::vector<InsertedJob> inserted = insert({job("first"), job("second")});
  auto place = [&](std::int64_t id) {
    return jobs.transition(
        {.job_id = id, .from = {JobState::kQueued}, .to = JobState::kStarting, .reason = "x"});
  };
  ASSERT_TRUE(*place(inserted[0].row.id));  // planned now
  lines("INSERT INTO job_pending SELECT g, '{}' FROM generate_series(1000000, 1019999) g");
  ASSERT_TRUE(jobs.set_pending({{inserted[1].row.id, R"({"reason": "Resources"})"}}).ok());
  ASSERT_TRUE(*place(inserted[1].row.id));
  EXPECT_EQ(lines("SELECT count(*) FROM job_pending WHERE job_id = " +
                  std::to_string(inserted[1].row.id)),
            "0\n");
  // The plan the session keeps for the transition (NULL for each value).
  const std::string call = lines(
      "SELECT name || '(' || array_to_string(array_fill('NULL'::text,"
      " ARRAY[cardinality(parameter_types)]), ',') || ')' FROM pg_prepared_statements"
      " WHERE statement LIKE '%DELETE FROM job_pending%'"
      "   AND statement NOT LIKE '%pg_prepared_statements%'");  // not this one
  ASSERT_FALSE(call.empty());
  lines("SET plan_cache_mode = force_generic_plan");
  const std::string plan = lines("EXPLAIN EXECUTE " + call.substr(0, call.find('\n')));
  lines("RESET plan_cache_mode");
  EXPECT_NE(plan.find("Scan using job_pending_pkey on job_pending"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Index Cond: (job_id = $1)"), std::string::npos)
      << "a walk of the index is no better than a scan: " << plan;
  EXPECT_EQ(plan.find("Seq Scan on job_pending"), std::string::npos) << plan;
}

// The leader's read of the orphans is planned once per session, often while
// the jobs were few: the plan it keeps finds the placed jobs by their
// partial index, not by a walk over every job (a scan of the table, or the
// unfinished jobs' index by id), which grows with the queue.
TEST_F(JobRepositoryTest, TheOrphansReadPlannedWhileTheJobsWereFewUsesThePartialIndex) {
  auto one = ConnectionPool::create(pool_->conninfo(), 1);  // every statement on one session
  ASSERT_TRUE(one.ok()) << one.error().message;
  JobRepository jobs(**one);
  first_column(**one, "VACUUM ANALYZE jobs");  // empty, and known to be
  ASSERT_TRUE(jobs.orphaned_jobs().ok());      // planned now
  const std::string name = first_column(
      **one,
      "SELECT name FROM pg_prepared_statements WHERE statement LIKE '%NOT EXISTS (SELECT 1 FROM "
      "agents a%' AND statement NOT LIKE '%pg_prepared_statements%'");
  ASSERT_FALSE(name.empty());
  const std::string plan =
      first_column(**one, "EXPLAIN EXECUTE " + name.substr(0, name.find('\n')));
  EXPECT_NE(plan.find("jobs_placed on jobs"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("Seq Scan on jobs"), std::string::npos) << plan;
}

// An agent and a replica's API service make their plans on sessions that
// may start while the jobs are few, and keep them as the queue grows
// (tests/support/kept_plans.h). Each statement of a job's way through them
// (its submit, list, reason, placement, the agent's read of its work, its
// start, progress, logs and metrics, its events, its cancel) is planned on
// tables with `statistics` holding `finished` jobs first; once 20,000
// queued jobs are added, no plan the session keeps walks a table that
// grows with the queue. Not here: the reads of
// one job's view by key (get_job, get_job_with_checkpoint, listed_rows),
// which keep PostgreSQL's own plan: planning them without scans costs 5-10
// us a read (bench/RESULTS.md, session 62), against plans that last until
// autovacuum first analyzes the grown table (docs/deploy.md).
void JobRepositoryTest::expect_kept_plans_by_key(testing::Statistics statistics, int finished) {
  auto one = ConnectionPool::create(pool_->conninfo(), 1);  // every statement on one session
  ASSERT_TRUE(one.ok()) << one.error().message;
  JobRepository jobs(**one);
  JobOutputRepository outputs(**one);
  base::Status quiet = testing::without_autovacuum(*pool_, testing::kQueueTables, statistics);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  ASSERT_TRUE(testing::add_finished_jobs(*pool_, finished).ok());
  for (int round = 0; round < 8; ++round) {  // past five custom plans of each
    auto inserted = jobs.insert_jobs({job("round-" + std::to_string(round))});
    ASSERT_TRUE(inserted.ok()) << inserted.error().message;
    const std::int64_t id = (*inserted)[0].row.id;
    ASSERT_TRUE(jobs.set_pending({{id, R"({"reason": "Resources"})"}}).ok());
    auto page = jobs.list_jobs({.states = {JobState::kQueued}});
    ASSERT_TRUE(page.ok()) << page.error().message;
    auto placed = jobs.transition({.job_id = id,
                                   .from = {JobState::kQueued},
                                   .to = JobState::kStarting,
                                   .reason = "Scheduled",
                                   .agent = "a",
                                   .placement_epoch = 1,
                                   .placement = id});
    ASSERT_TRUE(placed.ok() && *placed) << "round " << round;
    auto work = jobs.work_on_agent("a");
    ASSERT_TRUE(work.ok()) << work.error().message;
    ASSERT_TRUE(jobs.transition({.job_id = id,
                                 .from = {JobState::kStarting},
                                 .to = JobState::kRunning,
                                 .reason = "Training started",
                                 .require_placement = id})
                    .ok());
    ASSERT_TRUE(jobs.update_progress(id, R"({"step": 1})", std::nullopt, id).ok());
    ASSERT_TRUE(
        outputs.append_logs({{.job_id = id, .seq = 1, .line = "epoch 0", .fence = id}}).ok());
    ASSERT_TRUE(outputs
                    .append_metrics({{.job_id = id,
                                      .seq = 1,
                                      .step = 1,
                                      .metrics_json = R"({"loss": 1})",
                                      .fence = id}})
                    .ok());
    ASSERT_TRUE(outputs.list_logs(id, 0, 100).ok());
    ASSERT_TRUE(jobs.list_events(id).ok());
    ASSERT_TRUE(jobs.request_cancel(id).ok());
    auto ended = jobs.transition({.job_id = id,
                                  .from = {JobState::kRunning},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancelled",
                                  .clear_placement = true});
    ASSERT_TRUE(ended.ok() && *ended) << "round " << round;
  }
  ASSERT_TRUE(testing::add_queued_jobs(*pool_, 20000).ok());
  EXPECT_EQ(std::vector<std::string>{}, testing::kept_walks(**one, testing::kQueueTables));
}

TEST_F(JobRepositoryTest, AJobsStatementsPlannedWhileTheJobsWereFewFindItByKey) {
  expect_kept_plans_by_key(testing::Statistics::kAnalyzedEmpty, 0);
}

// As a new deployment's sessions plan them, on tables not yet analyzed
// (tests/support/kept_plans.h), over a history of 20,000 jobs.
TEST_F(JobRepositoryTest, AJobsStatementsPlannedOnUnanalyzedTablesFindItByKey) {
  expect_kept_plans_by_key(testing::Statistics::kNeverAnalyzed, 20000);
}

TEST_F(JobRepositoryTest, ListFiltersByTenantStateLabelsAndName) {
  NewJob a = job("train", "team-a"), b = job("train", "team-b"), c = job("eval", "team-a");
  a.labels_json = R"({"pipeline": "ci-1", "stage": "nightly"})";
  b.labels_json = R"({"pipeline": "ci-1"})";
  c.labels_json = R"({"pipeline": "ci-2"})";
  const auto inserted = insert({a, b, c});
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[2].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kStarting,
                                  .reason = "Scheduled"}));

  auto names = [&](JobFilter filter) {
    std::string out;
    for (const JobRow& row : listed(filter)) out += row.tenant + "/" + row.name + " ";
    return out;
  };
  EXPECT_EQ("team-a/eval team-b/train team-a/train ", names({}));
  EXPECT_EQ("team-a/eval team-a/train ", names({.tenant = "team-a"}));
  EXPECT_EQ("team-a/eval ", names({.states = {JobState::kStarting, JobState::kRunning}}));
  EXPECT_EQ("team-b/train team-a/train ", names({.labels = {{"pipeline", "ci-1"}}}));
  EXPECT_EQ("team-a/train ", names({.labels = {{"pipeline", "ci-1"}, {"stage", "nightly"}}}));
  EXPECT_EQ("", names({.labels = {{"pipeline", "ci-1\"}, \"x\": {\""}}}));
  EXPECT_EQ("team-b/train team-a/train ", names({.name = "train"}));
  EXPECT_EQ("team-a/train ", names({.tenant = "team-a", .name = "train"}));
}

TEST_F(JobRepositoryTest, AListedRowCarriesOfItsSpecOnlyMaxRetriesAndNoXlaReport) {
  NewJob retried = job("retried");
  retried.spec_json = R"({"trainer": {"devices": 8}, "max_retries": 2})";
  const auto inserted = insert({job("plain"), retried});
  const std::string result = R"({"steps": 3, "xla_report": {"compiles": 1}})";
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[0].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kSucceeded,
                                  .reason = "Completed",
                                  .result_json = result}));
  const std::vector<JobRow> rows = listed({});
  ASSERT_EQ(2u, rows.size());
  EXPECT_EQ("retried", rows[0].name);
  EXPECT_EQ(R"({"max_retries": 2})", rows[0].spec_json);
  EXPECT_EQ("{}", rows[1].spec_json);
  EXPECT_EQ(R"({"steps": 3})", rows[1].result_json.value_or(""));
  EXPECT_EQ(R"({"trainer": {"devices": 8}, "max_retries": 2})", get(inserted[1].row.id).spec_json)
      << "the job's own read keeps the whole spec";
  EXPECT_EQ(R"({"steps": 3, "xla_report": {"compiles": 1}})",
            get(inserted[0].row.id).result_json.value_or(""))
      << "and the whole result";
}

TEST_F(JobRepositoryTest, AListsKeysCarryEachJobsStateAndTheCursorAfterItAndItsRowsAreReadApart) {
  const auto inserted = insert({job("a"), job("b"), job("c")});
  ASSERT_TRUE(*jobs_->transition({.job_id = inserted[1].row.id,
                                  .from = {JobState::kQueued},
                                  .to = JobState::kCancelled,
                                  .reason = "Cancelled"}));
  auto page = jobs_->list_jobs({.limit = 2});
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(2u, page->jobs.size());
  EXPECT_EQ(inserted[2].row.id, page->jobs[0].id);
  EXPECT_EQ(JobState::kQueued, page->jobs[0].state);
  EXPECT_EQ(inserted[1].row.id, page->jobs[1].id);
  EXPECT_EQ(JobState::kCancelled, page->jobs[1].state);
  EXPECT_EQ(page->next_cursor, page->jobs[1].cursor) << "the page ends with its second job";
  // A page that starts after the first job's cursor starts with the second.
  auto after_first = jobs_->list_jobs({.limit = 2, .cursor = page->jobs[0].cursor});
  ASSERT_TRUE(after_first.ok());
  ASSERT_EQ(2u, after_first->jobs.size());
  EXPECT_EQ(inserted[1].row.id, after_first->jobs[0].id);
  EXPECT_EQ(inserted[0].row.id, after_first->jobs[1].id);
  EXPECT_TRUE(after_first->next_cursor.empty());
  // Rows of jobs that are gone are left out; none asked, none read.
  auto rows = jobs_->listed_rows({inserted[0].row.id, 987654321});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(1u, rows->size());
  EXPECT_EQ("a", (*rows)[0].name);
  EXPECT_TRUE(jobs_->listed_rows({})->empty());
}

TEST_F(JobRepositoryTest, AListsKeysStatementHoldsOnlyTheConditionsItsFilterSets) {
  insert({job("a"), job("b", "team-b")});
  // The pool lends its most recently returned connection: one after the
  // other, these lists and the read below share a session.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(jobs_->list_jobs({.tenant = i % 2 ? "team-a" : "team-b", .limit = 20}).ok());
  }
  ASSERT_TRUE(jobs_->list_jobs({.tenant = "team-a", .name = "a"}).ok());
  auto connection = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(connection.ok());
  auto statements =
      (*connection)
          ->execute(
              "SELECT statement FROM pg_prepared_statements"
              " WHERE statement LIKE 'SELECT j.id, j.state, j.created_at FROM jobs j%'"
              " ORDER BY length(statement)");
  ASSERT_TRUE(statements.ok()) << statements.error().message;
  // One statement for every list of one tenant, another with a name too,
  // and no condition guarded by "$n IS NULL OR" (what the statement of
  // every filter had been).
  ASSERT_EQ(2, statements->rows());
  EXPECT_EQ(
      "SELECT j.id, j.state, j.created_at FROM jobs j WHERE true AND j.tenant = $1::text"
      " ORDER BY j.created_at DESC, j.id DESC LIMIT $2::integer",
      statements->string(0, 0));
  EXPECT_EQ(
      "SELECT j.id, j.state, j.created_at FROM jobs j WHERE true AND j.tenant = $1::text"
      " AND j.name = $2::text ORDER BY j.created_at DESC, j.id DESC LIMIT $3::integer",
      statements->string(1, 0));
}

TEST_F(JobRepositoryTest, CursorPagesHaveNoDuplicatesAndNoGaps) {
  // Several batches: rows of one batch share created_at, so the id breaks ties.
  std::set<std::int64_t> all;
  for (int batch = 0; batch < 5; ++batch) {
    std::vector<NewJob> jobs;
    for (int i = 0; i < 7; ++i) jobs.push_back(job("j" + std::to_string(batch * 7 + i)));
    for (const InsertedJob& inserted : insert(jobs)) all.insert(inserted.row.id);
  }
  std::vector<std::int64_t> seen;
  JobFilter filter{.limit = 4};
  int pages = 0;
  for (;;) {
    auto page = jobs_->list_jobs(filter);
    ASSERT_TRUE(page.ok()) << page.error().message;
    ++pages;
    EXPECT_LE(page->jobs.size(), 4u);
    for (const ListedJob& listed_job : page->jobs) seen.push_back(listed_job.id);
    if (page->next_cursor.empty()) break;
    filter.cursor = page->next_cursor;
    // A job submitted while paging appears on no later page: it is newer.
    if (pages == 2) insert({job("late")});
  }
  EXPECT_EQ(9, pages);  // 35 rows in pages of 4
  ASSERT_EQ(35u, seen.size());
  EXPECT_EQ(all, std::set<std::int64_t>(seen.begin(), seen.end()));
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i - 1], seen[i]);

  auto bad = jobs_->list_jobs({.cursor = "not-a-cursor"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, bad.code());
  auto clamped = jobs_->list_jobs({.limit = 100000});
  ASSERT_TRUE(clamped.ok());
  EXPECT_EQ(36u, clamped->jobs.size());
  EXPECT_TRUE(clamped->next_cursor.empty());
}

// An insert whose answer does not come in time (here: a session holds the
// jobs table) is left with its server process, and lands whenever the lock
// goes. The caller that gave up on it gets kUnavailable, maybe applied, with
// that process; end_server_process ends it, and from then on what is stored
// is final. The first test shows the late landing the second one prevents.
class AbandonedInsertTest : public JobRepositoryTest {
 protected:
  void SetUp() override {
    JobRepositoryTest::SetUp();
    if (HasFatalFailure()) return;
    // One connection, so that the insert below runs on the one the first
    // insert prepared it on (a PREPARE would wait on the lock itself).
    auto one = ConnectionPool::create(pool_->conninfo(), 1);
    ASSERT_TRUE(one.ok()) << one.error().message;
    committer_pool_ = std::move(*one);
    committer_ = std::make_unique<JobRepository>(*committer_pool_);
    auto first = committer_->insert_jobs({job("first")});
    ASSERT_TRUE(first.ok()) << first.error().message;
    first_ = (*first)[0].row.id;
    auto holder = Connection::open(pool_->conninfo());
    ASSERT_TRUE(holder.ok()) << holder.error().message;
    holder_ = std::move(*holder);
    ASSERT_TRUE(holder_->execute_script("BEGIN; LOCK TABLE jobs IN EXCLUSIVE MODE").ok());
    committer_pool_->set_answer_timeout(std::chrono::milliseconds(300));
    auto lost = committer_->insert_jobs({job("lost")});
    ASSERT_FALSE(lost.ok());
    ASSERT_EQ(lost.code(), base::ErrorCode::kUnavailable) << lost.error().message;
    ASSERT_TRUE(lost.error().maybe_applied);
    std::vector<ServerProcess> unanswered = committer_->take_unanswered_inserts();
    ASSERT_EQ(unanswered.size(), 1u);
    server_process_ = unanswered[0];
    EXPECT_TRUE(committer_->take_unanswered_inserts().empty()) << "taken once";
    ASSERT_GT(server_process_.pid, 0);
    ASSERT_FALSE(server_process_.started.empty());
    committer_pool_->set_answer_timeout(std::chrono::milliseconds(0));
  }

  // True once no server process has the insert's pid (30 s at most): then
  // it has committed, or never will.
  bool insert_process_gone() {
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
      auto rows = holder_->execute("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer",
                                   {server_process_.pid});
      if (rows.ok() && rows->int64(0, 0) == 0) return true;
    }
    return false;
  }

  std::vector<std::string> queued_besides_the_first() {
    auto queued = jobs_->load_queued_except({first_});
    EXPECT_TRUE(queued.ok()) << queued.error().message;
    std::vector<std::string> names;
    if (queued.ok()) {
      for (const JobRow& row : *queued) names.push_back(row.name);
    }
    return names;
  }

  std::unique_ptr<ConnectionPool> committer_pool_;
  std::unique_ptr<JobRepository> committer_;
  std::unique_ptr<Connection> holder_;
  std::int64_t first_ = 0;
  ServerProcess server_process_;
};

TEST_F(AbandonedInsertTest, LandsWhenTheLockGoesIfItsServerProcessIsLeftAlone) {
  ASSERT_TRUE(holder_->execute_script("COMMIT").ok());
  ASSERT_TRUE(insert_process_gone());
  EXPECT_EQ(queued_besides_the_first(), std::vector<std::string>{"lost"});
}

TEST_F(AbandonedInsertTest, NeverLandsOnceItsServerProcessIsEnded) {
  // Another process's pid with the insert's: not the insert's process, so
  // it is left alone (a pid the server gave again after a restart).
  auto other = jobs_->end_server_process({server_process_.pid, "2000-01-01 00:00:00+00"},
                                         std::chrono::milliseconds(1000));
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_TRUE(*other) << "no such process: gone";
  auto still = holder_->execute("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer",
                                {server_process_.pid});
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->int64(0, 0), 1) << "the insert's process must be left alone";

  auto gone = jobs_->end_server_process(server_process_, std::chrono::milliseconds(1000));
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_TRUE(*gone);
  ASSERT_TRUE(holder_->execute_script("COMMIT").ok());
  ASSERT_TRUE(insert_process_gone());
  auto ended = jobs_->end_server_process(server_process_, std::chrono::milliseconds(1000));
  ASSERT_TRUE(ended.ok()) << ended.error().message;
  EXPECT_TRUE(*ended) << "gone already: nothing to do";
  EXPECT_EQ(queued_besides_the_first(), std::vector<std::string>{});
  // The pool replaces the connection the deadline closed.
  auto next = committer_->insert_jobs({job("next")});
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(queued_besides_the_first(), std::vector<std::string>{"next"});
}

}  // namespace
}  // namespace tpujobs::db
