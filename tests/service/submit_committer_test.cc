#include "service/submit_committer.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tpujobs::service {
namespace {

using Kind = api::SubmitOutcome::Kind;

// Inserts into memory, one "transaction" per call; idempotency keys as the
// jobs table's unique (tenant, key) index, and an array with a key used
// before inserted not at all, as JobRepository::insert_jobs does.
class FakeStore final : public SubmitStore {
 public:
  std::vector<std::size_t> transactions;  // rows per insert_jobs call
  std::optional<base::ErrorCode> fail;
  bool sent = false;  // with fail: the insert reached the server, its answer was lost
  // A statement with a row of this tenant fails whole, as one with a value
  // PostgreSQL refuses does.
  std::optional<std::string> refused_tenant;
  std::map<std::pair<std::string, std::string>, db::JobRow> by_key;
  std::map<std::int64_t, std::int64_t> array_sizes;  // children stored, by array
  std::int64_t next_id = 1;

  base::Result<std::vector<db::InsertedJob>> insert_jobs(
      const std::vector<db::NewJob>& rows) override {
    if (fail) {
      base::Error error = base::make_error(
          *fail, sent ? "the database did not answer within 2 s" : "connection refused");
      error.maybe_applied = sent;
      return error;
    }
    for (const db::NewJob& r : rows) {
      if (r.tenant == refused_tenant) return base::make_error(base::ErrorCode::kInvalid, "refused");
    }
    transactions.push_back(rows.size());
    std::set<std::int64_t> retried_arrays;
    for (const db::NewJob& r : rows) {
      if (r.array_group != 0 && r.idempotency_key && by_key.count({r.tenant, *r.idempotency_key}))
        retried_arrays.insert(r.array_group);
    }
    std::vector<db::InsertedJob> out;
    for (const db::NewJob& r : rows) {
      if (r.idempotency_key) {
        auto it = by_key.find({r.tenant, *r.idempotency_key});
        if (it != by_key.end()) {
          out.push_back({.existing = true, .row = it->second});
          if (it->second.array_id) out.back().array_size = array_sizes[*it->second.array_id];
          continue;
        }
      }
      if (retried_arrays.count(r.array_group)) {
        out.push_back({.existing = false, .row = {}, .not_stored = true});
        continue;
      }
      db::JobRow row;
      row.id = next_id++;
      row.tenant = r.tenant;
      row.spec_hash = r.spec_hash;
      if (r.array_group != 0) {
        row.array_id = r.array_group;
        ++array_sizes[r.array_group];
      }
      if (r.idempotency_key) by_key[{r.tenant, *r.idempotency_key}] = row;
      out.push_back({false, row});
    }
    return out;
  }
};

api::SubmitRequest request(std::string tenant = "team-a",
                           std::optional<std::string> key = std::nullopt, std::string hash = "h1") {
  api::SubmitRequest r;
  r.tenant = std::move(tenant);
  r.spec.name = "job";
  r.idempotency_key = std::move(key);
  r.spec_hash = std::move(hash);
  return r;
}

struct Fixture {
  FakeStore store;
  std::vector<std::size_t> committed_sizes;
  SubmitCommitter committer{
      store, {/*batch=*/4, /*committers=*/1}, [this](std::vector<CommittedSubmit>& c) {
        committed_sizes.push_back(c.size());
        for (CommittedSubmit& s : c) s.outcome.job = "view of " + std::to_string(s.row.id);
      }};
};

// Queues `n` submits before the committer starts, so they meet in batches.
std::vector<std::future<api::SubmitOutcome>> queue(Fixture& f, int n) {
  std::vector<std::future<api::SubmitOutcome>> out;
  for (int i = 0; i < n; ++i) {
    auto promise = std::make_shared<std::promise<api::SubmitOutcome>>();
    out.push_back(promise->get_future());
    f.committer.submit(request(),
                       [promise](api::SubmitOutcome o) { promise->set_value(std::move(o)); });
  }
  return out;
}

TEST(SubmitCommitter, CommitsQueuedSubmitsInBatchesOfAtMostTheLimit) {
  Fixture f;
  auto answers = queue(f, 10);
  f.committer.start();
  std::set<std::int64_t> ids;
  for (auto& a : answers) {
    api::SubmitOutcome o = a.get();
    EXPECT_EQ(o.kind, Kind::kCreated);
    EXPECT_EQ(o.job, "view of " + std::to_string(o.id)) << "answered after on_committed";
    ids.insert(o.id);
  }
  EXPECT_EQ(ids.size(), 10u);
  EXPECT_EQ(f.store.transactions, (std::vector<std::size_t>{4, 4, 2}));
}

// jobs.resolved is written as text from its two members' texts: it must be
// what serialising the object gives, which the view is made of.
TEST(SubmitCommitter, TheStoredResolutionIsTheObjectOfItsTwoMembers) {
  api::SubmitRequest r = request();
  r.resolution.world_size = 8;
  r.resolution.accelerator = "tpu";
  r.estimate = {{"total_steps", 440}, {"note", "an \"estimate\""}};
  for (const nlohmann::json& estimate : {r.estimate, nlohmann::json(nullptr)}) {
    r.estimate = estimate;
    const PendingSubmit pending = make_pending_submit(r, [](api::SubmitOutcome) {});
    const nlohmann::json resolved = {{"request", api::resolution_json(r.resolution)},
                                     {"estimate", estimate}};
    EXPECT_EQ(pending.row.resolved_json, resolved.dump());
    const views::SubmittedText text = submitted_text(pending);
    EXPECT_EQ(text.resolved_request, api::resolution_json(r.resolution).dump());
    EXPECT_EQ(text.estimate, estimate.dump());
  }
}

// The answers' views are made of the rows' texts: on_committed finds each
// submit's row as it was given to the insert.
TEST(SubmitCommitter, OnCommittedFindsEachSubmitsRowAsInserted) {
  FakeStore store;
  std::vector<std::string> specs_seen;
  SubmitCommitter committer(store, {/*batch=*/4, /*committers=*/1},
                            [&specs_seen](std::vector<CommittedSubmit>& committed) {
                              for (CommittedSubmit& c : committed) {
                                specs_seen.emplace_back(submitted_text(c.pending).spec);
                              }
                            });
  std::vector<std::future<api::SubmitOutcome>> answers;
  for (int i = 0; i < 3; ++i) {
    api::SubmitRequest r = request();
    r.spec_text = R"({"name":"job-)" + std::to_string(i) + R"("})";
    auto promise = std::make_shared<std::promise<api::SubmitOutcome>>();
    answers.push_back(promise->get_future());
    committer.submit(std::move(r),
                     [promise](api::SubmitOutcome o) { promise->set_value(std::move(o)); });
  }
  committer.start();
  for (auto& a : answers) EXPECT_EQ(a.get().kind, Kind::kCreated);
  EXPECT_EQ(specs_seen, (std::vector<std::string>{R"({"name":"job-0"})", R"({"name":"job-1"})",
                                                  R"({"name":"job-2"})"}));
}

TEST(SubmitCommitter, AJobArrayIsNeverSplitAcrossTransactions) {
  Fixture f;
  auto before = queue(f, 3);
  std::promise<std::vector<api::SubmitOutcome>> array;
  f.committer.submit_array(
      {request(), request(), request()},
      [&](std::vector<api::SubmitOutcome> o) { array.set_value(std::move(o)); });
  auto after = queue(f, 1);
  f.committer.start();
  std::vector<api::SubmitOutcome> children = array.get_future().get();
  ASSERT_EQ(children.size(), 3u);
  for (const api::SubmitOutcome& c : children) {
    EXPECT_EQ(c.kind, Kind::kCreated);
    EXPECT_EQ(c.array_id, children[0].array_id) << "one array";
  }
  for (auto& a : before) a.get();
  for (auto& a : after) a.get();
  // 3 singles fill a batch of 4 only with one more single: the array of 3 goes whole next.
  EXPECT_EQ(f.store.transactions, (std::vector<std::size_t>{3, 4}));
}

TEST(SubmitCommitter, AnArrayLargerThanABatchGoesAloneInOneTransaction) {
  Fixture f;
  std::vector<api::SubmitRequest> children(6, request());
  std::promise<std::vector<api::SubmitOutcome>> array;
  f.committer.submit_array(std::move(children), [&](std::vector<api::SubmitOutcome> o) {
    array.set_value(std::move(o));
  });
  f.committer.start();
  EXPECT_EQ(array.get_future().get().size(), 6u);
  EXPECT_EQ(f.store.transactions, (std::vector<std::size_t>{6}));
}

TEST(SubmitCommitter, AnIdempotencyKeyAnswersTheEarlierJobOrAConflict) {
  Fixture f;
  f.committer.start();
  auto submit = [&](api::SubmitRequest r) {
    std::promise<api::SubmitOutcome> p;
    f.committer.submit(std::move(r), [&](api::SubmitOutcome o) { p.set_value(std::move(o)); });
    return p.get_future().get();
  };
  api::SubmitOutcome first = submit(request("team-a", "k", "h1"));
  api::SubmitOutcome again = submit(request("team-a", "k", "h1"));
  api::SubmitOutcome other = submit(request("team-a", "k", "h2"));
  api::SubmitOutcome other_tenant = submit(request("team-b", "k", "h2"));
  EXPECT_EQ(first.kind, Kind::kCreated);
  EXPECT_EQ(again.kind, Kind::kExisting);
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(again.job, "view of " + std::to_string(first.id));
  EXPECT_EQ(other.kind, Kind::kConflict);
  EXPECT_NE(other.message.find("Idempotency-Key 'k' was already used for job " +
                               std::to_string(first.id)),
            std::string::npos)
      << other.message;
  EXPECT_EQ(other_tenant.kind, Kind::kCreated);
}

// A sweep's children have keys of their own (its key, '#', their index). A
// sweep submitted again whole finds every child; one whose key was used for
// a sweep of other children (here one child more, then one fewer), or for
// lone jobs, stores none of its children and answers each 409, with the
// earlier sweep's (or job's) job.
TEST(SubmitCommitter, ASweepsKeyUsedForOtherChildrenStoresNoneAndAnswersEach409) {
  Fixture f;
  f.committer.start();
  auto sweep = [&](int children, const std::string& key = "s") {
    std::vector<api::SubmitRequest> requests;
    for (int i = 0; i < children; ++i) {
      api::SubmitRequest r =
          request("team-a", key + "#" + std::to_string(i), "h" + std::to_string(i));
      r.array_index = i;
      requests.push_back(std::move(r));
    }
    std::promise<std::vector<api::SubmitOutcome>> p;
    f.committer.submit_array(std::move(requests),
                             [&](std::vector<api::SubmitOutcome> o) { p.set_value(std::move(o)); });
    return p.get_future().get();
  };
  const std::vector<api::SubmitOutcome> first = sweep(2);
  ASSERT_EQ(2u, first.size());
  for (const api::SubmitOutcome& o : first) EXPECT_EQ(Kind::kCreated, o.kind);
  for (const api::SubmitOutcome& o : sweep(2)) EXPECT_EQ(Kind::kExisting, o.kind);
  const std::size_t stored = f.store.by_key.size();
  const std::vector<api::SubmitOutcome> more = sweep(3);
  ASSERT_EQ(3u, more.size());
  for (const api::SubmitOutcome& o : more) {
    EXPECT_EQ(Kind::kConflict, o.kind);
    EXPECT_EQ(first[0].id, o.id);
    EXPECT_EQ("Idempotency-Key 's' was already used for a sweep with other children (job " +
                  std::to_string(first[0].id) + "): no child of this sweep was stored",
              o.message);
  }
  EXPECT_EQ(stored, f.store.by_key.size()) << "a child of the refused sweep was stored";
  // Fewer children: each is found, but the sweep stored is another.
  const std::vector<api::SubmitOutcome> fewer = sweep(1);
  ASSERT_EQ(1u, fewer.size());
  EXPECT_EQ(Kind::kConflict, fewer[0].kind);
  EXPECT_EQ(first[0].id, fewer[0].id);
  EXPECT_NE(std::string::npos, fewer[0].message.find("was already used for a sweep with other "
                                                     "children"))
      << fewer[0].message;
  EXPECT_EQ(stored, f.store.by_key.size());
  // Lone jobs whose keys look like its children's, with their specs: each
  // is found, but none is a child of a sweep of two.
  std::vector<std::int64_t> lone;
  for (int i = 0; i < 2; ++i) {
    std::promise<api::SubmitOutcome> p;
    f.committer.submit(request("team-a", "u#" + std::to_string(i), "h" + std::to_string(i)),
                       [&](api::SubmitOutcome o) { p.set_value(std::move(o)); });
    const api::SubmitOutcome created = p.get_future().get();
    ASSERT_EQ(Kind::kCreated, created.kind);
    lone.push_back(created.id);
  }
  for (const api::SubmitOutcome& o : sweep(2, "u")) {
    EXPECT_EQ(Kind::kConflict, o.kind) << "answered as the sweep stored";
    EXPECT_EQ(lone[0], o.id);
  }
}

TEST(SubmitCommitter, AnUnreachableDatabaseAnswers503AndNothingIsCommitted) {
  Fixture f;
  f.store.fail = base::ErrorCode::kUnavailable;
  auto answers = queue(f, 2);
  f.committer.start();
  for (auto& a : answers) {
    api::SubmitOutcome o = a.get();
    EXPECT_EQ(o.kind, Kind::kUnavailable);
    // Never sent: it was certainly not stored.
    EXPECT_NE(o.message.find("the job was not stored: the database could not be reached "
                             "(connection refused); submit it again later"),
              std::string::npos)
        << o.message;
  }
  EXPECT_TRUE(f.committed_sizes.empty()) << "on_committed only for committed rows";
  // Sent, its answer lost: the insert may have been carried out, so the
  // answer says so and how to find out, never that the job was not stored.
  f.store.sent = true;
  auto unanswered = queue(f, 1);
  const api::SubmitOutcome unanswered_outcome = unanswered[0].get();
  EXPECT_EQ(unanswered_outcome.kind, Kind::kUnavailable);
  EXPECT_NE(unanswered_outcome.message.find("may or may not have been stored (the database did "
                                            "not answer within 2 s)"),
            std::string::npos)
      << unanswered_outcome.message;
  EXPECT_NE(unanswered_outcome.message.find("the same Idempotency-Key"), std::string::npos)
      << unanswered_outcome.message;
  f.store.sent = false;
  f.store.fail = base::ErrorCode::kInvalid;
  auto refused = queue(f, 1);
  const api::SubmitOutcome refused_outcome = refused[0].get();
  EXPECT_EQ(refused_outcome.kind, Kind::kError);
  EXPECT_NE(refused_outcome.message.find("the job was not stored"), std::string::npos)
      << refused_outcome.message;
}

TEST(SubmitCommitter, ARowTheDatabaseRefusesFailsOnlyItsOwnSubmit) {
  Fixture f;
  f.store.refused_tenant = "bad";
  std::vector<std::future<api::SubmitOutcome>> answers;
  for (const char* tenant : {"team-a", "bad", "team-b"}) {
    auto promise = std::make_shared<std::promise<api::SubmitOutcome>>();
    answers.push_back(promise->get_future());
    f.committer.submit(request(tenant),
                       [promise](api::SubmitOutcome o) { promise->set_value(std::move(o)); });
  }
  std::promise<std::vector<api::SubmitOutcome>> array;
  f.committer.submit_array(
      {request("team-c"), request("team-c")},
      [&](std::vector<api::SubmitOutcome> o) { array.set_value(std::move(o)); });
  f.committer.start();  // one batch of 4 is too small for the array: {3 singles}, then the array
  EXPECT_EQ(answers[0].get().kind, Kind::kCreated);
  EXPECT_EQ(answers[1].get().kind, Kind::kError);
  EXPECT_EQ(answers[2].get().kind, Kind::kCreated);
  for (const api::SubmitOutcome& child : array.get_future().get())
    EXPECT_EQ(child.kind, Kind::kCreated);
  EXPECT_EQ(f.store.transactions, (std::vector<std::size_t>{1, 1, 2}))
      << "the failed batch's submits committed one by one";
}

TEST(SubmitCommitter, ClosingAnswersWhatItTookAndRefusesWhatComesAfter) {
  Fixture f;
  auto taken = queue(f, 5);
  f.committer.close();  // never started: the queued ones are answered, not lost
  for (auto& a : taken) EXPECT_EQ(a.get().kind, Kind::kUnavailable);
  auto late = queue(f, 1);
  api::SubmitOutcome o = late[0].get();
  EXPECT_EQ(o.kind, Kind::kUnavailable);
  EXPECT_EQ(o.message, "the service is shutting down");
  EXPECT_TRUE(f.store.transactions.empty());
}

TEST(SubmitCommitter, SubmitOrderFollowsArrivalAndRequeuesGoBehind) {
  Fixture f;
  std::vector<std::int64_t> orders;
  SubmitCommitter committer{f.store, {4, 1}, [&](std::vector<CommittedSubmit>& c) {
                              for (CommittedSubmit& s : c) orders.push_back(s.pending.order);
                            }};
  for (int i = 0; i < 3; ++i) committer.submit(request(), [](api::SubmitOutcome) {});
  EXPECT_EQ(committer.next_order(), 4);  // a requeue now goes behind the three
  committer.start();
  committer.close();
  EXPECT_EQ(orders, (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace tpujobs::service
