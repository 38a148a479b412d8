#include "service/view_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "service/job_views.h"
#include "service/wake_bus.h"

namespace tpujobs::service {
namespace {

TEST(ViewCache, ReturnsWhatWasPutWithItsTenant) {
  ViewCache cache(1 << 20);
  EXPECT_FALSE(cache.find(7));
  cache.put(7, "team-a", R"({"id":7,"state":"SUCCEEDED"})");
  auto hit = cache.find(7);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->tenant, "team-a");
  EXPECT_EQ(hit->body, R"({"id":7,"state":"SUCCEEDED"})");
  EXPECT_FALSE(cache.find(8));
}

TEST(ViewCache, ReplacingAViewKeepsOneEntry) {
  ViewCache cache(1 << 20);
  cache.put(1, "t", "old");
  const std::size_t before = cache.bytes();
  cache.put(1, "t", "new!");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), before + 1);
  EXPECT_EQ(cache.find(1)->body, "new!");
}

// A view of 1,000 bytes, and what one such view costs a cache.
struct Sized {
  std::string body = std::string(1000, 'x');
  std::size_t one = 0;
};
Sized sized_view() {
  Sized view;
  ViewCache probe(1 << 20);
  probe.put(1, "t", view.body);
  view.one = probe.bytes();
  return view;
}

TEST(ViewCache, EvictsTheOldestUnreadViewPastTheBudget) {
  const Sized view = sized_view();
  ViewCache cache(3 * view.one);
  for (std::int64_t id : {1, 2, 3}) cache.put(id, "t", view.body);
  ASSERT_TRUE(cache.find(1));  // read: passed over once; 2 is the oldest unread
  cache.put(4, "t", view.body);
  EXPECT_TRUE(cache.find(1));
  EXPECT_FALSE(cache.find(2));
  EXPECT_TRUE(cache.find(3));
  EXPECT_TRUE(cache.find(4));
  EXPECT_LE(cache.bytes(), 3 * view.one);
}

// A read marks its view; eviction passes a marked view over once, as the
// newest, and takes it when it comes round unread.
TEST(ViewCache, AReadViewGetsASecondChanceAndOnlyOne) {
  const Sized view = sized_view();
  ViewCache cache(3 * view.one);
  for (std::int64_t id : {1, 2, 3}) cache.put(id, "t", view.body);
  ASSERT_TRUE(cache.find(1));
  cache.put(4, "t", view.body);  // 1 is passed over, 2 goes
  cache.put(5, "t", view.body);  // 3 goes
  cache.put(6, "t", view.body);  // 4 goes
  EXPECT_FALSE(cache.find(2));
  EXPECT_FALSE(cache.find(3));
  EXPECT_FALSE(cache.find(4));
  EXPECT_EQ(3u, cache.size()) << "1, 5 and 6";
  cache.put(7, "t", view.body);  // 1 comes round unread
  EXPECT_FALSE(cache.find(1));
  EXPECT_TRUE(cache.find(5));
  EXPECT_TRUE(cache.find(6));
  EXPECT_TRUE(cache.find(7));
}

TEST(ViewCache, DoesNotKeepAViewLargerThanTheBudget) {
  ViewCache cache(100);
  cache.put(1, "t", std::string(1000, 'x'));
  EXPECT_FALSE(cache.find(1));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(ViewCache, AViewReadBeforeAForgetIsNotKept) {
  ViewCache cache(1 << 20);
  const std::uint64_t seen = cache.generation();
  cache.forget({5});  // job 5 was placed while its QUEUED row was being read
  EXPECT_FALSE(cache.put_if_current(seen, 5, "t", R"({"id":5,"state":"QUEUED"})", 0, {}));
  EXPECT_FALSE(cache.find(5));
  const std::uint64_t now = cache.generation();
  EXPECT_TRUE(cache.put_if_current(now, 5, "t", R"({"id":5,"state":"QUEUED"})", 0, {}));
  EXPECT_TRUE(cache.find(5));
}

// A STARTING job's view is served from memory until whoever moves the job
// on says so; a read that raced that is not kept.
TEST(ViewCache, AStartingViewIsKeptUntilItsJobChanges) {
  ViewCache cache(1 << 20);
  const std::string starting = R"({"id":5,"state":"STARTING"})";
  const std::uint64_t before = cache.generation();
  cache.forget({5});  // it started while its STARTING row was being read
  EXPECT_FALSE(cache.put_read_if_current(before, 5, "t", starting));
  EXPECT_FALSE(cache.find(5));
  EXPECT_TRUE(cache.put_read_if_current(cache.generation(), 5, "t", starting));
  ASSERT_TRUE(cache.find(5));
  EXPECT_EQ(starting, cache.find(5)->body);
  EXPECT_EQ("t", cache.find(5)->tenant);
  cache.forget({5});  // its agent moved it to RUNNING
  EXPECT_FALSE(cache.find(5));
}

// The agent of a standalone serve hands over the view its RUNNING
// transition answered (JobManager::started).
TEST(ViewCache, AWrittenViewReplacesTheOneReadBeforeTheWriteAndOutlivesNoChange) {
  ViewCache cache(1 << 20);
  const std::string starting = R"({"id":5,"state":"STARTING"})";
  const std::string running = R"({"id":5,"state":"RUNNING"})";
  ASSERT_TRUE(cache.put_read_if_current(cache.generation(), 5, "t", starting));
  // A poll reads the STARTING row while the agent writes RUNNING.
  const std::uint64_t poll_read = cache.generation();
  const std::uint64_t before_write = cache.generation();
  EXPECT_TRUE(cache.put_written(before_write, 5, "t", running));
  ASSERT_TRUE(cache.find(5));
  EXPECT_EQ(running, cache.find(5)->body);
  // The poll's older read is not kept over it.
  EXPECT_FALSE(cache.put_read_if_current(poll_read, 5, "t", starting));
  EXPECT_EQ(running, cache.find(5)->body);
  // Its first progress write (the agent's telemetry forgets it).
  cache.forget({5});
  EXPECT_FALSE(cache.find(5));

  // A cancel request landed between the agent's generation read and its
  // write's answer: the answered view may predate it, so it is not kept, and
  // neither is the view from before.
  ASSERT_TRUE(cache.put_read_if_current(cache.generation(), 6, "t", starting));
  const std::uint64_t seen = cache.generation();
  cache.forget({6});
  ASSERT_TRUE(cache.put_read_if_current(cache.generation(), 6, "t", starting));
  EXPECT_FALSE(cache.put_written(seen, 6, "t", running));
  EXPECT_FALSE(cache.find(6));
}

TEST(ViewCache, ForgetDropsOnlyTheNamedViews) {
  ViewCache cache(1 << 20);
  cache.put_if_current(cache.generation(), 1, "t", R"({"id":1})", 0, {});
  cache.put_if_current(cache.generation(), 2, "t", R"({"id":2})", 0, {});
  const std::size_t before = cache.bytes();
  cache.forget({2, 99});
  EXPECT_TRUE(cache.find(1));
  EXPECT_FALSE(cache.find(2));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_LT(cache.bytes(), before);
}

// A queued job as the bench's sweeps submit it, `i` apart.
db::JobRow queued_row(std::int64_t i) {
  db::JobRow row;
  row.id = 1000 + i;
  row.tenant = "team-a";
  row.name = "queued";
  row.labels_json = R"({"team":"vision"})";
  row.priority = 5;
  row.spec_json = R"({"name":"queued","data":{"batch_size":16,"dataset":"iris"},)"
                  R"("trainer":{"devices":1,"max_epochs":1,"seed":)" +
                  std::to_string(i) + "}}";
  row.resolved_json = R"({"request":{"kind":"single_core","cores":1},"estimate":{"hbm":1024}})";
  row.warnings_json = R"(["MXU_PADDING: Matrix dimensions that are not multiples of 128"])";
  row.array_id = 1000;
  row.array_index = i;
  row.array_values_json = R"({"trainer.seed":)" + std::to_string(i) + "}";
  row.created_at =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'000 + 37 * i));
  return row;
}

std::string rendered(const db::JobRow& row) { return views::response_body(views::render_row(row)); }

bool put_row(ViewCache& cache, std::uint64_t seen, const db::JobRow& row) {
  return cache.put_if_current(seen, row.id, row.tenant, rendered(row), row.priority,
                              row.pending_json);
}

TEST(ViewCache, AQueuedViewIsTheTextRenderRowWritesBeforeAndAfterANewReason) {
  ViewCache cache(1 << 20);
  db::JobRow row = queued_row(4);
  ASSERT_TRUE(put_row(cache, cache.generation(), row));
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));
  EXPECT_EQ(cache.find(row.id)->tenant, "team-a");

  row.pending_json =
      R"({"reason":"HostUnhealthy","queue_position":3,"fair_share":1.0,)"
      R"("detail":"its hosts are drained","estimated_start":"2026-11-24T02:00:00.000Z",)"
      R"("preempted_by":77})";
  cache.set_pending({{row.id, row.pending_json}});
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));  // rendered once, kept

  row.pending_json = R"({"reason":"Priority","queue_position":1,"fair_share":0.5})";
  cache.set_pending({{row.id, row.pending_json}});
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));
  row.pending_json.reset();
  cache.set_pending({{row.id, std::nullopt}});
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));
}

TEST(ViewCache, ASweepsQueuedViewsTakeLessThanHalfTheirTextEach) {
  ViewCache cache(64u << 20);
  std::vector<ViewCache::PendingChange> reasons;
  for (std::int64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(put_row(cache, cache.generation(), queued_row(i)));
    reasons.emplace_back(1000 + i, R"({"reason":"Resources","fair_share":1.0,"queue_position":)" +
                                       std::to_string(i + 1) + "}");
  }
  cache.set_pending(reasons);
  for (std::int64_t i = 0; i < 1000; i += 7) {
    db::JobRow row = queued_row(i);
    row.pending_json = reasons[i].second;
    ASSERT_EQ(cache.find(row.id)->body, rendered(row)) << i;
  }
  const std::size_t whole = rendered(queued_row(500)).size();
  // The bytes counted: the node, the deltas and the reasons not rendered yet.
  EXPECT_LT(cache.bytes() / 1000, whole / 2) << whole;
}

// The first read of a queued view whose reason changed renders it (6.5 µs
// against 1 µs, bench/RESULTS.md); a thread of low priority renders them
// ahead (ViewRenderer), each once per reason.
TEST(ViewCache, QueuedViewsAreRenderedAheadOfTheirFirstReadOncePerReason) {
  ViewCache cache(64u << 20);
  std::vector<db::JobRow> rows;
  for (std::int64_t i = 0; i < 3; ++i) {
    rows.push_back(queued_row(i));
    ASSERT_TRUE(put_row(cache, cache.generation(), rows.back()));
  }
  EXPECT_EQ(3u, cache.render_ahead(0)) << "listed when kept";
  std::vector<ViewCache::PendingChange> reasons;
  for (db::JobRow& row : rows) {
    row.pending_json = R"({"reason":"Resources","fair_share":1.0,"queue_position":)" +
                       std::to_string(row.id) + "}";
    reasons.emplace_back(row.id, row.pending_json);
  }
  cache.set_pending(reasons);
  EXPECT_EQ(3u, cache.render_ahead(0)) << "not listed twice";
  EXPECT_EQ(1u, cache.render_ahead(2));
  EXPECT_EQ(0u, cache.render_ahead(5));
  for (const db::JobRow& row : rows) EXPECT_EQ(rendered(row), cache.find(row.id)->body);

  rows[1].pending_json = R"({"reason":"Priority","fair_share":0.5,"queue_position":1})";
  cache.set_pending({{rows[1].id, rows[1].pending_json}});
  EXPECT_EQ(1u, cache.render_ahead(0)) << "a rendered view is listed again by a new reason";
  cache.forget({rows[2].id});
  EXPECT_EQ(0u, cache.render_ahead(1));
  EXPECT_EQ(rendered(rows[1]), cache.find(rows[1].id)->body);
  EXPECT_FALSE(cache.find(rows[2].id));
}

// Reads share the cache's lock (two HTTP threads decode views at once) while
// the leader's reasons change, views are rendered ahead and dropped and put
// back: every view read is whole, the text render_row writes for one of the
// reasons its job was given.
TEST(ViewCache, ReadsBesideChangingReasonsEachAnswerOneWholeRenderedView) {
  ViewCache cache(64u << 20);
  constexpr std::int64_t kJobs = 40;
  auto reason = [](int round) {
    return R"({"reason":"Resources","fair_share":1.0,"queue_position":)" +
           std::to_string(round + 1) + "}";
  };
  auto row_at = [&](std::int64_t i, int round) {
    db::JobRow row = queued_row(i);
    row.pending_json = reason(round);
    return row;
  };
  for (std::int64_t i = 0; i < kJobs; ++i)
    ASSERT_TRUE(put_row(cache, cache.generation(), row_at(i, 0)));

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> wrong{0};
  auto reader = [&](std::int64_t stride) {
    for (std::int64_t n = 0; !done.load(); n += stride) {
      const std::int64_t i = n % kJobs;
      std::optional<ViewCache::Entry> view = cache.find(1000 + i);
      if (!view) continue;  // dropped, not put back yet
      const nlohmann::json parsed = nlohmann::json::parse(view->body, nullptr, false);
      const int position = parsed.is_object() && parsed.value("queue_position", 0) > 0
                               ? parsed.value("queue_position", 0) - 1
                               : 0;
      if (view->tenant != "team-a" || view->body != rendered(row_at(i, position))) ++wrong;
      ++reads;
    }
  };
  std::thread one(reader, 1);
  std::thread two(reader, 7);
  std::thread ahead([&] {
    while (!done.load()) cache.render_ahead(8);
  });
  // At least 300 rounds, and on until the readers have read 2,000 views,
  // within a generous deadline: a cache that answers nothing fails, not hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int round = 1;
  for (; round < 300 || (reads.load() < 2000 && std::chrono::steady_clock::now() < deadline);
       ++round) {
    std::vector<ViewCache::PendingChange> changes;
    for (std::int64_t i = 0; i < kJobs; ++i) changes.emplace_back(1000 + i, reason(round));
    cache.set_pending(std::move(changes));
    const std::int64_t moved = round % kJobs;
    cache.forget({1000 + moved});
    put_row(cache, cache.generation(), row_at(moved, round));
  }
  done = true;
  one.join();
  two.join();
  ahead.join();
  EXPECT_GE(reads.load(), 2000) << "in " << round << " rounds";
  EXPECT_EQ(0, wrong.load()) << "of " << reads.load() << " reads";
}

TEST(ViewRenderer, AWokenRendererRendersEveryListedViewAndStops) {
  ViewCache cache(64u << 20);
  std::vector<ViewCache::PendingChange> reasons;
  for (std::int64_t i = 0; i < 500; ++i) {
    ASSERT_TRUE(put_row(cache, cache.generation(), queued_row(i)));
    reasons.emplace_back(
        1000 + i, R"({"reason":"Resources","queue_position":)" + std::to_string(i + 1) + "}");
  }
  cache.set_pending(reasons);
  ViewRenderer renderer(cache);
  renderer.wake();
  // At nice 19 beside the suite's other tests: a generous deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (cache.render_ahead(0) > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(0u, cache.render_ahead(0));
  db::JobRow row = queued_row(7);
  row.pending_json = reasons[7].second;
  EXPECT_EQ(rendered(row), cache.find(row.id)->body);
  renderer.stop();
  renderer.wake();  // nothing after the stop
}

TEST(ViewCache, OnlyAChangeOfThatJobKeepsAReadFromBeingKept) {
  ViewCache cache(1 << 20);
  const std::uint64_t seen = cache.generation();
  cache.forget({9});
  cache.set_pending({{8, R"({"reason":"Resources"})"}});
  EXPECT_TRUE(put_row(cache, seen, queued_row(1)));  // job 1001: not changed since
  db::JobRow eight = queued_row(0);
  eight.id = 8;
  EXPECT_FALSE(put_row(cache, seen, eight));
  EXPECT_FALSE(cache.find(8));
}

// The submit path: the leader read the new row and stored its reason
// before the view was put. The view is kept with that reason, the latest
// of several, and serves what render_row gives the row that has it.
TEST(ViewCache, ASubmittedViewTakesTheReasonsStoredBeforeItWasPut) {
  ViewCache cache(1 << 20);
  db::JobRow row = queued_row(1);
  const std::uint64_t before_insert = cache.generation();
  const std::string inserted = rendered(row);  // no reason yet
  cache.set_pending({{row.id, R"({"reason":"Resources","queue_position":9,"fair_share":1.0})"}});
  row.pending_json = R"({"reason":"Priority","queue_position":4,"fair_share":0.5})";
  cache.set_pending({{row.id, row.pending_json}});
  cache.set_pending({{2, R"({"reason":"Resources"})"}});  // another job's

  EXPECT_FALSE(cache.put_if_current(before_insert, row.id, row.tenant, inserted, row.priority,
                                    std::nullopt));  // a read: it may be newer than the reasons
  ASSERT_TRUE(
      cache.put_submitted(before_insert, row.id, row.tenant, inserted, row.priority, std::nullopt));
  ASSERT_TRUE(cache.find(row.id));
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));

  row.pending_json = R"({"reason":"QuotaExceeded","queue_position":1,"fair_share":0.5})";
  cache.set_pending({{row.id, row.pending_json}});  // the kept view takes the next
  EXPECT_EQ(cache.find(row.id)->body, rendered(row));
}

// A job placed, cancelled or moved after the insert: its view as inserted is
// stale, whatever reasons came before or after the change.
TEST(ViewCache, ASubmittedViewIsNotKeptWhenItsJobChangedOtherwise) {
  for (const bool reason_after : {false, true}) {
    ViewCache cache(1 << 20);
    const db::JobRow row = queued_row(1);
    const std::uint64_t before_insert = cache.generation();
    cache.set_pending({{row.id, R"({"reason":"Resources"})"}});
    cache.forget({row.id});
    if (reason_after) cache.set_pending({{row.id, R"({"reason":"Priority"})"}});
    EXPECT_FALSE(cache.put_submitted(before_insert, row.id, row.tenant, rendered(row), row.priority,
                                     std::nullopt))
        << reason_after;
    EXPECT_FALSE(cache.find(row.id)) << reason_after;
  }
  ViewCache cache(1 << 20);
  const db::JobRow row = queued_row(1);
  const std::uint64_t before_insert = cache.generation();
  cache.set_pending({{row.id, R"({"reason":"Resources"})"}});
  std::vector<std::int64_t> others;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(ViewCache::kChangesKept); ++i)
    others.push_back(-1 - i);
  cache.forget(others);  // the reason is remembered, but not that nothing else changed
  EXPECT_FALSE(cache.put_submitted(before_insert, row.id, row.tenant, rendered(row), row.priority,
                                   std::nullopt));
}

// Only the last kEarlyReasonsKept jobs' reasons wait for their views.
TEST(ViewCache, OnlyTheNewestReasonsOfViewsNotKeptAreRemembered) {
  ViewCache cache(1 << 20);
  const std::uint64_t before_insert = cache.generation();
  std::vector<ViewCache::PendingChange> changes;
  const auto kept = static_cast<std::int64_t>(ViewCache::kEarlyReasonsKept);
  for (std::int64_t i = 0; i <= kept; ++i)
    changes.emplace_back(queued_row(i).id, R"({"reason":"Resources"})");
  cache.set_pending(std::move(changes));
  for (const std::int64_t i : {std::int64_t{0}, kept}) {
    db::JobRow row = queued_row(i);
    const std::string inserted = rendered(row);
    row.pending_json = R"({"reason":"Resources"})";
    EXPECT_EQ(cache.put_submitted(before_insert, row.id, row.tenant, inserted, row.priority,
                                  std::nullopt),
              i == kept)
        << i;
    if (i == kept) {
      ASSERT_TRUE(cache.find(row.id));
      EXPECT_EQ(cache.find(row.id)->body, rendered(row));
    }
  }
}

// A replica that lost its LISTEN connection: the queued views go, a read
// from before cannot put one back, a finished view stays.
TEST(ViewCache, ForgettingTheQueuedViewsKeepsTheFinishedAndNoReadFromBefore) {
  ViewCache cache(1 << 20);
  cache.put(7, "team-a", R"({"id":7,"state":"SUCCEEDED"})");
  ASSERT_TRUE(put_row(cache, cache.generation(), queued_row(1)));
  ASSERT_TRUE(put_row(cache, cache.generation(), queued_row(2)));
  const std::uint64_t read_before = cache.generation();
  const std::size_t finished_bytes = [&] {
    ViewCache alone(1 << 20);
    alone.put(7, "team-a", R"({"id":7,"state":"SUCCEEDED"})");
    return alone.bytes();
  }();

  cache.forget_queued();

  EXPECT_FALSE(cache.find(1001));
  EXPECT_FALSE(cache.find(1002));
  ASSERT_TRUE(cache.find(7));
  EXPECT_EQ(cache.find(7)->body, R"({"id":7,"state":"SUCCEEDED"})");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), finished_bytes);
  EXPECT_FALSE(put_row(cache, read_before, queued_row(3)));  // read before: may be stale
  EXPECT_FALSE(cache.find(1003));
  EXPECT_TRUE(put_row(cache, cache.generation(), queued_row(3)));  // read after
  EXPECT_EQ(cache.find(1003)->body, rendered(queued_row(3)));
}

TEST(ViewCache, AReadOlderThanTheChangesRememberedIsNotKept) {
  ViewCache cache(1 << 20);
  const std::uint64_t seen = cache.generation();
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(ViewCache::kChangesKept) + 1; ++i)
    ids.push_back(-1 - i);
  cache.forget(ids);  // more than are remembered: job 1001's may be among those let go
  EXPECT_FALSE(put_row(cache, seen, queued_row(1)));
  EXPECT_TRUE(put_row(cache, cache.generation(), queued_row(1)));
}

TEST(ViewCache, ANewReasonDropsAFinishedViewAndATextThatIsNotAnObjectIsNotKept) {
  ViewCache cache(1 << 20);
  cache.put(3, "t", R"({"id":3,"state":"CANCELLED"})");
  cache.set_pending({{3, R"({"reason":"Resources"})"}});
  EXPECT_FALSE(cache.find(3));
  for (const char* text : {"", "[1,2]", R"({"id":3)", R"({"id":"3})", "{1}"})
    EXPECT_FALSE(cache.put_if_current(cache.generation(), 3, "t", text, 0, {})) << text;
  EXPECT_EQ(cache.size(), 0u);
}

TEST(ViewCache, PendingChangesCrossTheWakeBusAsTheyWere) {
  const PendingChanges changes = {
      {7, R"({"reason":"Resources","detail":"a\tb"})"}, {8, std::nullopt}, {9, "{}"}};
  EXPECT_EQ(parse_pending_changes(format_pending_changes(changes)), changes);
  EXPECT_TRUE(parse_pending_changes("").empty());
}

}  // namespace
}  // namespace tpujobs::service
