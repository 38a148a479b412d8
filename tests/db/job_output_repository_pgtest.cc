// Logs, metrics and checkpoints, plus the small catalog tables (datasets,
// tokens, pool state), against a real server.
#include <gtest/gtest.h>

#include "db/job_output_repository.h"
#include "db/repositories.h"
#include "tests/support/test_cluster.h"

namespace tpujobs::db {
namespace {

class OutputRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = testing::fresh_migrated_pool(2);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    pool_ = std::move(*pool);
    repositories_ = std::make_unique<Repositories>(*pool_);
    NewJob job;
    job.tenant = "team-a";
    job.spec_json = "{}";
    auto inserted = repositories_->jobs.insert_jobs({job, job});
    ASSERT_TRUE(inserted.ok()) << inserted.error().message;
    job_ = (*inserted)[0].row.id;
    other_job_ = (*inserted)[1].row.id;
  }

  std::string log_text(std::int64_t after, int limit) {
    auto lines = repositories_->outputs.list_logs(job_, after, limit);
    EXPECT_TRUE(lines.ok());
    std::string out;
    for (const LogLine& line : *lines) out += std::to_string(line.seq) + ":" + line.line + " ";
    return out;
  }

  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Repositories> repositories_;
  std::int64_t job_ = 0;
  std::int64_t other_job_ = 0;
};

TEST_F(OutputRepositoryTest, LogAppendIsIdempotentAndPagesAfterSeq) {
  JobOutputRepository& outputs = repositories_->outputs;
  auto max_empty = outputs.max_log_seq(job_);
  ASSERT_TRUE(max_empty.ok());
  EXPECT_EQ(0, *max_empty);
  const TimePoint at = *parse_timestamp("2026-11-21 10:00:00.5+00");
  ASSERT_TRUE(outputs
                  .append_logs({{job_, 1, at, "GPU available: False, used: False"},
                                {job_, 2, {}, "TPU available: True, using: 8 TPU cores"},
                                {other_job_, 1, {}, "other job"}})
                  .ok());
  // A resumed writer resends line 2 (with other text) and continues.
  ASSERT_TRUE(
      outputs.append_logs({{job_, 2, {}, "resent"}, {job_, 3, {}, "Epoch 0: loss=2.30"}}).ok());
  EXPECT_EQ(
      "1:GPU available: False, used: False 2:TPU available: True, using: 8 TPU cores "
      "3:Epoch 0: loss=2.30 ",
      log_text(0, 100));
  EXPECT_EQ("2:TPU available: True, using: 8 TPU cores ", log_text(1, 1));
  EXPECT_EQ("", log_text(3, 100));
  EXPECT_EQ(3, *outputs.max_log_seq(job_));
  EXPECT_EQ(1, *outputs.max_log_seq(other_job_));
  auto lines = outputs.list_logs(job_, 0, 1);
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(at, (*lines)[0].at);

  base::Status orphan = outputs.append_logs({{other_job_ + 1000, 1, {}, "no such job"}});
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, orphan.code());
}

TEST_F(OutputRepositoryTest, MetricsShareStepsAndAppendIdempotently) {
  JobOutputRepository& outputs = repositories_->outputs;
  ASSERT_TRUE(
      outputs
          .append_metrics({{job_, 1, 10, 0, {}, R"({"loss": 2.1})"},
                           {job_, 2, 10, 0, {}, R"({"val_loss": 2.0, "val_accuracy": 0.4})"},
                           {job_, 3, 20, 1, {}, R"({"loss": 1.5})"}})
          .ok());
  ASSERT_TRUE(outputs.append_metrics({{job_, 3, 20, 1, {}, R"({"loss": 99})"}}).ok());
  auto points = outputs.list_metrics(job_, 1, 10);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(2u, points->size());
  EXPECT_EQ(10, (*points)[0].step);
  EXPECT_EQ(R"({"val_loss": 2.0, "val_accuracy": 0.4})", (*points)[0].metrics_json);
  EXPECT_EQ(1, (*points)[1].epoch);
  EXPECT_EQ(R"({"loss": 1.5})", (*points)[1].metrics_json);
  EXPECT_EQ(3, *outputs.max_metric_seq(job_));
  EXPECT_EQ(0, *outputs.max_metric_seq(other_job_));
  // What a resume from a checkpoint skips: the points past its step.
  EXPECT_EQ(3, *outputs.count_metrics_after_step(job_, 0));
  EXPECT_EQ(1, *outputs.count_metrics_after_step(job_, 10));
  EXPECT_EQ(0, *outputs.count_metrics_after_step(job_, 20));
  EXPECT_EQ(0, *outputs.count_metrics_after_step(other_job_, 0));
  base::Status bad = outputs.append_metrics({{job_, 4, 30, 1, {}, "loss=1"}});
  EXPECT_EQ(base::ErrorCode::kInvalid, bad.code());
}

// The agent's one read before it starts a placed job: where its logs and
// metrics go on, and from which checkpoint (none for a job never run).
TEST_F(OutputRepositoryTest, AResumePointNamesTheNewestCheckpointAndTheSeqsInOneRead) {
  JobOutputRepository& outputs = repositories_->outputs;
  auto fresh = outputs.resume_point(job_);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_FALSE(fresh->checkpoint_step);
  EXPECT_EQ(0, fresh->max_log_seq);
  EXPECT_EQ(0, fresh->max_metric_seq);
  EXPECT_EQ(0, fresh->metrics_after_checkpoint);

  ASSERT_TRUE(outputs.append_logs({{job_, 1, {}, "a"}, {job_, 2, {}, "b"}}).ok());
  ASSERT_TRUE(outputs
                  .append_metrics({{job_, 1, 10, 0, {}, R"({"loss": 2})"},
                                   {job_, 2, 20, 0, {}, R"({"loss": 1})"},
                                   {job_, 3, 30, 1, {}, R"({"loss": 0.5})"}})
                  .ok());
  auto unsaved = outputs.resume_point(job_);
  ASSERT_TRUE(unsaved.ok());
  EXPECT_FALSE(unsaved->checkpoint_step);
  EXPECT_EQ(2, unsaved->max_log_seq);
  EXPECT_EQ(3, unsaved->max_metric_seq);
  EXPECT_EQ(3, unsaved->metrics_after_checkpoint);

  ASSERT_TRUE(outputs.save_checkpoint(job_, 10, 0, "first").ok());
  ASSERT_TRUE(outputs.save_checkpoint(job_, 20, 0, "second").ok());
  auto saved = outputs.resume_point(job_);
  ASSERT_TRUE(saved.ok());
  ASSERT_TRUE(saved->checkpoint_step);
  EXPECT_EQ(20, *saved->checkpoint_step);
  EXPECT_EQ(1, saved->metrics_after_checkpoint);  // step 30's point is past it
  // Points 4 and 5 (steps 40 and 50) were dropped past the job's output
  // rate: their seqs count as recorded, so a resume skips them too.
  ASSERT_TRUE(outputs.append_metrics({{job_, 6, 60, 2, {}, R"({"loss": 0.2})"}}).ok());
  auto thinned = outputs.resume_point(job_);
  ASSERT_TRUE(thinned.ok());
  EXPECT_EQ(4, thinned->metrics_after_checkpoint);
  EXPECT_EQ(4, *outputs.count_metrics_after_step(job_, 20));
  EXPECT_EQ(0, *outputs.count_metrics_after_step(job_, 60));
  auto other = outputs.resume_point(other_job_);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->checkpoint_step);
  EXPECT_EQ(0, other->max_log_seq);
}

// The agent reads where each job placed on it and not started yet would
// resume with its work (one round trip for both): a job it then starts
// waits on no read of its own.
TEST_F(OutputRepositoryTest, AnAgentsWorkReadHasTheResumePointOfEachJobStartingOnIt) {
  JobOutputRepository& outputs = repositories_->outputs;
  ASSERT_TRUE(outputs.append_logs({{job_, 1, {}, "a"}, {job_, 2, {}, "b"}}).ok());
  ASSERT_TRUE(outputs
                  .append_metrics({{job_, 1, 10, 0, {}, R"({"loss": 2})"},
                                   {job_, 2, 30, 1, {}, R"({"loss": 1})"}})
                  .ok());
  ASSERT_TRUE(outputs.save_checkpoint(job_, 20, 0, "saved").ok());
  const auto place = [&](std::int64_t job, const std::string& agent, JobState to) {
    for (JobState state : {JobState::kStarting, JobState::kRunning}) {
      ASSERT_TRUE(*repositories_->jobs.transition({.job_id = job,
                                                   .from = {JobState::kQueued, JobState::kStarting},
                                                   .to = state,
                                                   .reason = "test",
                                                   .agent = agent,
                                                   .placement_epoch = 1}));
      if (state == to) return;
    }
  };
  place(job_, "a", JobState::kStarting);
  place(other_job_, "a", JobState::kRunning);  // started already: nothing to read for it

  auto work = repositories_->jobs.work_on_agent("a");
  ASSERT_TRUE(work.ok()) << work.error().message;
  EXPECT_EQ(2u, work->placed.size());
  ASSERT_EQ(1u, work->resume_points.size());
  ASSERT_EQ(1u, work->resume_points.count(job_));
  const JobOutputRepository::ResumePoint& point = work->resume_points.at(job_);
  auto alone = outputs.resume_point(job_);  // as the job's own read finds it
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(std::optional<std::int64_t>(20), point.checkpoint_step);
  EXPECT_EQ(alone->checkpoint_step, point.checkpoint_step);
  EXPECT_EQ(2, point.max_log_seq);
  EXPECT_EQ(2, point.max_metric_seq);
  EXPECT_EQ(1, point.metrics_after_checkpoint);  // step 30's
  auto elsewhere = repositories_->jobs.work_on_agent("b");
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_TRUE(elsewhere->resume_points.empty()) << "another agent's jobs are not read";
}

// Bytes of every value, over `size` bytes: a checkpoint's floats.
std::string patterned_bytes(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<char>((i * 131 + seed * 7 + i / 977) & 0xff);
  return bytes;
}

TEST_F(OutputRepositoryTest, ALargeCheckpointIsStoredAsChunksAndReadBackWhole) {
  JobOutputRepository& outputs = repositories_->outputs;
  // 20 MiB and a part: more than one statement reads it back (16 MiB each).
  // Then a smaller one at the next step.
  const std::string first = patterned_bytes((std::size_t{20} << 20) + 12345, 1);
  const std::string second = patterned_bytes(std::size_t{3} << 19, 2);
  ASSERT_TRUE(outputs.save_checkpoint(job_, 100, 1, first).ok());
  auto latest = outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value()) << (latest.ok() ? "" : latest.error().message);
  EXPECT_EQ(first.size(), (*latest)->bytes.size());
  EXPECT_TRUE((*latest)->bytes == first) << "the bytes read back differ";
  ASSERT_TRUE(outputs.save_checkpoint(job_, 200, 2, second).ok());
  latest = outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(200, (*latest)->step);
  EXPECT_TRUE((*latest)->bytes == second) << "the bytes read back differ";

  auto connection = pool_->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  // Rows of 8,096 bytes numbered from 0, the last one shorter.
  auto chunks = (*connection)
                    ->execute(
                        "SELECT string_agg(step || ':' || n || 'x' || size, ' ' ORDER BY step, size"
                        " DESC) FROM (SELECT step, octet_length(bytes) AS size, count(*) AS n"
                        " FROM job_checkpoint_chunks GROUP BY step, size) g");
  ASSERT_TRUE(chunks.ok());
  EXPECT_EQ("100:2591x8096 100:1x7129 200:194x8096 200:1x2240", chunks->string(0, 0));
  // Each row fills a page of the table: nothing went to its TOAST table,
  // whose tuples of 2 KB and index entries cost PostgreSQL a third more.
  auto toasted = (*connection)
                     ->execute(
                         "SELECT pg_relation_size(reltoastrelid), "
                         "pg_relation_size('job_checkpoint_chunks') / 8192"
                         " FROM pg_class WHERE relname = 'job_checkpoint_chunks'");
  ASSERT_TRUE(toasted.ok());
  EXPECT_EQ(0, toasted->int64(0, 0));
  EXPECT_EQ(2591 + 1 + 194 + 1, toasted->int64(0, 1));
  // The same step again (an epoch end after a periodic one) replaces its
  // chunks; a third step prunes the first checkpoint's with it.
  ASSERT_TRUE(outputs.save_checkpoint(job_, 200, 2, "small").ok());
  ASSERT_TRUE(outputs.save_checkpoint(job_, 300, 3, second).ok());
  chunks = (*connection)
               ->execute(
                   "SELECT string_agg(step || ':' || n, ' ' ORDER BY step) FROM"
                   " (SELECT step, count(*) AS n FROM job_checkpoint_chunks GROUP BY step) g");
  ASSERT_TRUE(chunks.ok());
  EXPECT_EQ("200:1 300:195", chunks->string(0, 0));
}

TEST_F(OutputRepositoryTest, ACheckpointStoredAsMebibyteRowsBeforeMigration13StillReads) {
  // Until migration 013 a checkpoint's rows were 1 MiB each, out of line.
  auto connection = pool_->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  const std::string bytes = patterned_bytes((std::size_t{33} << 20) + 7, 3);
  auto begun = (*connection)->execute("BEGIN");
  ASSERT_TRUE(begun.ok());
  for (std::size_t at = 0, seq = 0; at < bytes.size(); at += std::size_t{1} << 20, ++seq) {
    auto chunk = (*connection)
                     ->execute(
                         "INSERT INTO job_checkpoint_chunks (job_id, step, seq, bytes)"
                         " VALUES ($1::bigint, 40, $2::integer, $3::bytea)",
                         {job_, static_cast<int>(seq),
                          Param::bytes(std::string_view(bytes).substr(at, std::size_t{1} << 20))});
    ASSERT_TRUE(chunk.ok()) << chunk.error().message;
  }
  auto row = (*connection)
                 ->execute(
                     "INSERT INTO job_checkpoints (job_id, step, epoch, bytes)"
                     " VALUES ($1::bigint, 40, 1, NULL)",
                     {job_});
  ASSERT_TRUE(row.ok()) << row.error().message;
  ASSERT_TRUE((*connection)->execute("COMMIT").ok());
  auto latest = repositories_->outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value()) << (latest.ok() ? "" : latest.error().message);
  EXPECT_EQ(40, (*latest)->step);
  EXPECT_EQ(bytes.size(), (*latest)->bytes.size());
  EXPECT_TRUE((*latest)->bytes == bytes) << "the bytes read back differ";
}

TEST_F(OutputRepositoryTest, ACheckpointStoredBeforeChunksStillReads) {
  // Migration 009 left older rows' bytes in job_checkpoints.bytes.
  auto connection = pool_->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  ASSERT_TRUE((*connection)
                  ->execute("INSERT INTO job_checkpoints (job_id, step, epoch, bytes)"
                            " VALUES ($1::bigint, 40, 0, $2::bytea)",
                            {job_, Param::bytes(std::string("\x00old\xff", 5))})
                  .ok());
  auto latest = repositories_->outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(std::string("\x00old\xff", 5), (*latest)->bytes);
  // A newer one goes in as chunks and the two coexist.
  ASSERT_TRUE(repositories_->outputs.save_checkpoint(job_, 80, 1, "new").ok());
  latest = repositories_->outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ("new", (*latest)->bytes);
}

TEST_F(OutputRepositoryTest, CopyInSendsRowsAndABadCopyLeavesTheConnectionUsable) {
  auto connection = pool_->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  Connection& c = **connection;
  ASSERT_TRUE(c.execute_script("CREATE TEMP TABLE copied (a bigint, b integer, c bytea)").ok());
  const std::string big = patterned_bytes(3 << 20, 3);  // sent in several messages
  const std::vector<CopyRow> rows = {
      {CopyField::int64(-5), CopyField::int32(7), CopyField::bytes("x")},
      {CopyField::int64(std::int64_t{1} << 40), CopyField::int32(-1), CopyField::bytes(big)},
      {CopyField::int64(0), CopyField::int32(0), CopyField::bytes("")}};
  auto copied = c.copy_in("COPY copied (a, b, c) FROM STDIN (FORMAT binary)", rows);
  ASSERT_TRUE(copied.ok()) << copied.error().message;
  EXPECT_EQ(3, *copied);
  auto read = c.execute("SELECT a, b, c FROM copied ORDER BY a");
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(3, read->rows());
  EXPECT_EQ(-5, read->int64(0, 0));
  EXPECT_EQ(7, read->int64(0, 1));
  EXPECT_EQ("x", read->bytes(0, 2));
  EXPECT_EQ("", read->bytes(1, 2));
  EXPECT_EQ(std::int64_t{1} << 40, read->int64(2, 0));
  EXPECT_EQ(-1, read->int64(2, 1));
  EXPECT_TRUE(read->bytes(2, 2) == big);

  // A row of the wrong shape: the server refuses the copy, nothing lands,
  // and the connection goes on.
  const std::vector<CopyRow> short_row = {{CopyField::int64(1)}};
  auto refused = c.copy_in("COPY copied (a, b, c) FROM STDIN (FORMAT binary)", short_row);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("COPY failed"), std::string::npos)
      << refused.error().message;
  auto count = c.execute("SELECT count(*) FROM copied");
  ASSERT_TRUE(count.ok()) << count.error().message;
  EXPECT_EQ(3, count->int64(0, 0));
  auto not_copy = c.copy_in("SELECT 1", rows);
  EXPECT_FALSE(not_copy.ok());
  EXPECT_TRUE(c.execute("SELECT 1").ok());
}

TEST_F(OutputRepositoryTest, CheckpointsKeepTheLastTwo) {
  JobOutputRepository& outputs = repositories_->outputs;
  auto none = outputs.latest_checkpoint(job_);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const std::string weights("\x00\x01\x02\xff weights", 12);
  for (std::int64_t step : {100, 200, 300}) {
    ASSERT_TRUE(outputs
                    .save_checkpoint(job_, step, static_cast<int>(step / 100),
                                     weights + std::to_string(step))
                    .ok());
  }
  ASSERT_TRUE(outputs.save_checkpoint(other_job_, 50, 0, "other").ok());
  auto latest = outputs.latest_checkpoint(job_);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ(300, (*latest)->step);
  EXPECT_EQ(3, (*latest)->epoch);
  EXPECT_EQ(weights + "300", (*latest)->bytes);

  auto connection = pool_->acquire(std::chrono::seconds(1));
  ASSERT_TRUE(connection.ok());
  auto steps = (*connection)
                   ->execute(
                       "SELECT string_agg(job_id::text || '@' || step, ' ' ORDER BY job_id,"
                       " step) FROM job_checkpoints");
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(std::to_string(job_) + "@200 " + std::to_string(job_) + "@300 " +
                std::to_string(other_job_) + "@50",
            steps->string(0, 0));

  // The epoch-end checkpoint at the same step replaces the periodic one.
  ASSERT_TRUE(outputs.save_checkpoint(job_, 300, 4, "epoch end").ok());
  latest = outputs.latest_checkpoint(job_);
  EXPECT_EQ("epoch end", (*latest)->bytes);
  EXPECT_EQ(4, (*latest)->epoch);

  // A job's view reads its row and its newest checkpoint's position at once.
  JobRepository& jobs = repositories_->jobs;
  auto with = jobs.get_job_with_checkpoint(job_);
  ASSERT_TRUE(with.ok() && with->has_value()) << (with.ok() ? "none" : with.error().message);
  EXPECT_EQ(job_, (*with)->row.id);
  EXPECT_EQ((std::pair<std::int64_t, int>{300, 4}), (*with)->last_checkpoint);
  with = jobs.get_job_with_checkpoint(other_job_);
  ASSERT_TRUE(with.ok() && with->has_value());
  EXPECT_EQ((std::pair<std::int64_t, int>{50, 0}), (*with)->last_checkpoint);
  with = jobs.get_job_with_checkpoint(other_job_ + 1000);
  ASSERT_TRUE(with.ok());
  EXPECT_FALSE(with->has_value()) << "no such job";
}

TEST_F(OutputRepositoryTest, DatasetsRoundTrip) {
  DatasetRepository& datasets = repositories_->datasets;
  auto id = datasets.create_dataset({.tenant = "team-a",
                                     .name = "blobs",
                                     .rows = 2,
                                     .columns = 3,
                                     .classes = 2,
                                     .csv = "x1,x2,label\n0.5,1.5,0\n2.5,3.5,1\n"});
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(19u, id->id.size());
  EXPECT_EQ("ds_", id->id.substr(0, 3));
  EXPECT_FALSE(id->existing);
  auto other = datasets.create_dataset({.tenant = "team-a", .csv = "a\n1\n"});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(id->id, other->id);
  auto row = datasets.get_dataset(id->id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ("blobs", (*row)->name);
  EXPECT_EQ(2, (*row)->rows);
  EXPECT_EQ(3, (*row)->columns);
  EXPECT_EQ(2, (*row)->classes);
  EXPECT_EQ("x1,x2,label\n0.5,1.5,0\n2.5,3.5,1\n", (*row)->csv);
  auto missing = datasets.get_dataset("ds_0000000000000000");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

// An upload retried with its Idempotency-Key finds the dataset its first
// attempt stored; the key is the tenant's own, and names one file and name.
TEST_F(OutputRepositoryTest, ADatasetStoredUnderAnIdempotencyKeyIsFoundByARetry) {
  DatasetRepository& datasets = repositories_->datasets;
  const NewDataset upload{.tenant = "team-a",
                          .name = "blobs",
                          .rows = 1,
                          .columns = 2,
                          .classes = 1,
                          .csv = "x,label\n1,0\n",
                          .idempotency_key = "ci-7-upload",
                          .content_hash = "h1"};
  auto first = datasets.create_dataset(upload);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->existing);
  auto retry = datasets.create_dataset(upload);
  ASSERT_TRUE(retry.ok()) << retry.error().message;
  EXPECT_TRUE(retry->existing);
  EXPECT_EQ(first->id, retry->id);

  NewDataset other_file = upload;
  other_file.csv = "x,label\n2,1\n";
  other_file.content_hash = "h2";
  auto conflict = datasets.create_dataset(other_file);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(base::ErrorCode::kConflict, conflict.code());
  EXPECT_NE(conflict.error().message.find(first->id), std::string::npos)
      << conflict.error().message;
  NewDataset other_name = upload;
  other_name.name = "blobs-2";
  EXPECT_EQ(base::ErrorCode::kConflict, datasets.create_dataset(other_name).code());

  // Another tenant's key is its own.
  NewDataset other_tenant = upload;
  other_tenant.tenant = "team-b";
  auto theirs = datasets.create_dataset(other_tenant);
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;
  EXPECT_FALSE(theirs->existing);
  EXPECT_NE(first->id, theirs->id);

  // Stored once: the retry and the refused uploads added no row.
  auto connection = pool_->acquire(std::chrono::seconds(5));
  ASSERT_TRUE(connection.ok()) << connection.error().message;
  auto count = (*connection)
                   ->execute(
                       "SELECT count(*) FROM datasets WHERE tenant = 'team-a' AND idempotency_key "
                       "= 'ci-7-upload'");
  ASSERT_TRUE(count.ok()) << count.error().message;
  EXPECT_EQ(1, count->int64(0, 0));
}

TEST_F(OutputRepositoryTest, TokensAreFoundByHashUntilRevoked) {
  TokenRepository& tokens = repositories_->tokens;
  auto created = tokens.create_token("sha256:abc", "team-a", "admin");
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(base::ErrorCode::kConflict, tokens.create_token("sha256:abc", "team-b", "user").code());
  EXPECT_EQ(base::ErrorCode::kInvalid, tokens.create_token("sha256:def", "team-b", "root").code());
  auto found = tokens.find_token("sha256:abc");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ("team-a", (*found)->tenant);
  EXPECT_EQ("admin", (*found)->role);
  EXPECT_FALSE((*tokens.find_token("sha256:zzz")).has_value());
  ASSERT_TRUE(tokens.revoke_token(created->id).ok());
  EXPECT_FALSE((*tokens.find_token("sha256:abc")).has_value());
  EXPECT_EQ(base::ErrorCode::kNotFound, tokens.revoke_token(created->id + 100).code());
}

TEST_F(OutputRepositoryTest, HostHealthAndQuotasPersist) {
  PoolStateRepository& state = repositories_->pool_state;
  ASSERT_TRUE(state.upsert_host_health("v3-host-1", "v3", "draining").ok());
  ASSERT_TRUE(state.upsert_host_health("v3-host-0", "v3", "failed").ok());
  ASSERT_TRUE(state.upsert_host_health("v3-host-0", "v3", "healthy").ok());
  auto hosts = state.load_host_health();
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(2u, hosts->size());
  EXPECT_EQ("v3-host-0", (*hosts)[0].name);
  EXPECT_EQ("healthy", (*hosts)[0].health);
  EXPECT_EQ("draining", (*hosts)[1].health);

  ASSERT_TRUE(state.set_quota("team-a", 16).ok());
  ASSERT_TRUE(state.set_quota("team-b", 8).ok());
  ASSERT_TRUE(state.set_quota("team-a", 32).ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, state.set_quota("team-c", -1).code());
  ASSERT_TRUE(state.clear_quota("team-b").ok());
  auto quotas = state.load_quotas();
  ASSERT_TRUE(quotas.ok());
  EXPECT_EQ((std::map<std::string, int>{{"team-a", 32}}), *quotas);
}

// Retention of replaced checkpoints (issue 34): one long job that
// checkpoints often grew the checkpoint table to 419 MB around 425 kB of
// live checkpoints, autovacuum falling a thousand checkpoints behind. The
// pages of replaced checkpoints are freed and reused as the job goes, so the
// tables stay within a few checkpoints of the live ones.

// The checkpoint tables on disk (heap, TOAST, indexes, free space and
// visibility maps) and the bytes of the checkpoints they hold.
std::pair<std::int64_t, std::int64_t> checkpoint_table_sizes(ConnectionPool& pool) {
  auto connection = pool.acquire(std::chrono::seconds(5));
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

TEST_F(OutputRepositoryTest, ALongJobsCheckpointTablesStayWithinAFewCheckpointsOfTheLiveOnes) {
  constexpr std::size_t kSize = 256 << 10;
  constexpr int kSaves = 120;  // 30 MiB written, 512 KiB live at the end
  std::string bytes(kSize, '\0');
  std::int64_t largest = 0;
  for (int step = 1; step <= kSaves; ++step) {
    for (std::size_t i = 0; i < kSize; i += 64) bytes[i] = static_cast<char>(step + i);
    const base::Status saved = repositories_->outputs.save_checkpoint(job_, step * 10, 0, bytes);
    ASSERT_TRUE(saved.ok()) << saved.error().message;
    if (step % 10 == 0) largest = std::max(largest, checkpoint_table_sizes(*pool_).first);
  }
  const auto [on_disk, live] = checkpoint_table_sizes(*pool_);
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

TEST_F(OutputRepositoryTest, ACheckpointReplacedAtTheSameStepCountsTowardsTheVacuum) {
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
