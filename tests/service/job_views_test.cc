#include "service/job_views.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpujobs::service {
namespace {

using nlohmann::json;

db::JobRow stored_row() {
  db::JobRow row;
  row.id = 12;
  row.tenant = "team-a";
  row.name = "mnist";
  row.labels_json = R"({"team":"vision"})";
  row.priority = 5;
  row.spec_json = R"({"name":"mnist","max_retries":2,"trainer":{"devices":8}})";
  row.resolved_json = R"({"request":{"kind":"host"},"estimate":{"hbm_bytes":1024}})";
  row.warnings_json = R"(["a warning"])";
  row.created_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  return row;
}

TEST(JobViews, AStoredRowShowsWhatGetJobPromises) {
  const json view = views::render_row(stored_row());
  EXPECT_EQ(view["id"], 12);
  EXPECT_EQ(view["state"], "QUEUED");
  EXPECT_EQ(view["labels"], json({{"team", "vision"}}));
  EXPECT_EQ(view["resolved"], json({{"kind", "host"}}));
  EXPECT_EQ(view["estimate"], json({{"hbm_bytes", 1024}}));
  EXPECT_EQ(view["max_retries"], 2);
  EXPECT_EQ(view["created_at"], "2023-11-14T22:13:20.000Z");
  for (const char* member : {"allocation", "queue_position", "pending_reason", "progress",
                             "started_at", "finished_at", "error", "result"}) {
    EXPECT_TRUE(view.contains(member) && view[member].is_null()) << member;
  }
  EXPECT_FALSE(view.contains("array"));
}

TEST(JobViews, AQueuedRowShowsWhyTheLeaderSaysItWaits) {
  db::JobRow row = stored_row();
  row.pending_json = R"({"reason":"HostUnhealthy","queue_position":3,"detail":"agent a lost",)"
                     R"("estimated_start":"2026-11-24T02:00:00.000Z"})";
  json view = views::render_row(row);
  EXPECT_EQ(view["estimated_start"], "2026-11-24T02:00:00.000Z");
  EXPECT_EQ(view["pending_reason"], "HostUnhealthy");
  EXPECT_EQ(view["queue_position"], 3);
  EXPECT_EQ(view["pending_detail"], "agent a lost");
  row.state = db::JobState::kRunning;  // placed since: the old reason no longer holds
  view = views::render_row(row);
  EXPECT_TRUE(view["pending_reason"].is_null());
}

TEST(JobViews, TheResultLeavesTheXlaReportToItsRouteAndLendsItsMetrics) {
  db::JobRow row = stored_row();
  row.state = db::JobState::kSucceeded;
  row.latest_metrics_json = R"({"loss":0.9})";
  row.result_json = R"({"metrics":{"loss":0.1},"steps":40,"xla_report":"long text"})";
  const json view = views::render_row(row);
  EXPECT_FALSE(view["result"].contains("xla_report"));
  EXPECT_EQ(view["result"]["steps"], 40);
  EXPECT_EQ(view["metrics"], json({{"loss", 0.1}}));
}

TEST(JobViews, ASweepChildNamesItsArray) {
  db::JobRow row = stored_row();
  row.array_id = 10;
  row.array_index = 2;
  row.array_values_json = R"({"optimizer.lr":0.003})";
  EXPECT_EQ(views::render_row(row)["array"],
            json({{"id", 10}, {"index", 2}, {"values", {{"optimizer.lr", 0.003}}}}));
}

TEST(JobViews, SplicingTheSplitViewGivesBackTheWholeView) {
  db::JobRow row = stored_row();
  row.progress_json = R"({"step":7})";  // a resumed job's: kept as a live base value
  const json whole = views::render_row(row);
  const views::SplitView split = views::split_view(whole);
  EXPECT_EQ(split.live_base,
            json({{"state", "QUEUED"}, {"attempt", 0}, {"progress", {{"step", 7}}}}));
  const json live = views::live_members(split);
  EXPECT_EQ(json::parse(views::splice_view(split, live, /*with_spec=*/true)), whole);
  json without_spec = whole;
  without_spec.erase("spec");
  EXPECT_EQ(json::parse(views::splice_view(split, live, /*with_spec=*/false)), without_spec);
}

TEST(JobViews, TheSpecTextGivenIsSplicedAsItCame) {
  const std::string spec_text = R"({"name": "mnist",   "max_retries": 2})";
  const views::SplitView split = views::split_view(views::render_row(stored_row()), spec_text);
  const std::string text = views::splice_view(split, views::live_members(split), true);
  EXPECT_NE(text.find(spec_text), std::string::npos) << text;
}

// A submit's answer is made of the texts it stored; it must be the view
// render_row gives, byte for byte, whatever the row and the texts hold.
TEST(JobViews, ASubmittedViewIsTheRenderedViewByteForByte) {
  const json spec = {{"name", "mnist"},
                     {"max_retries", 3},
                     {"trainer", {{"devices", 8}, {"precision", "bf16-true"}}},
                     {"note", "quotes \" and \\ and a tab\t, \u00e9t\u00e9, \U0001F600"}};
  const json request = {{"kind", "host"}, {"cores", 8}};
  const json estimate = {{"estimated_step_seconds", 0.00139799057502439}, {"fits", true}};
  const json labels = {{"team", "vision"}, {"z", "\u00fc"}};
  const json warnings = {"SMALL_BATCH: the per-core batch_size 8 is small", "a \"quoted\" one"};
  std::vector<db::JobRow> rows;
  rows.push_back(stored_row());
  rows.push_back(stored_row());
  rows.back().pending_json =
      R"({"reason":"HostUnhealthy","queue_position":3,"detail":"agent a lost","fair_share":-1.5})";
  rows.push_back(stored_row());
  rows.back().array_id = 10;
  rows.back().array_index = 2;
  rows.back().array_values_json = R"({"optimizer.lr":0.003})";
  for (const db::JobRow& row : rows) {
    for (const json& given_estimate : {estimate, json(nullptr)}) {
      const std::string spec_text = spec.dump(), labels_text = labels.dump(),
                        warnings_text = warnings.dump(), request_text = request.dump(),
                        estimate_text = given_estimate.dump();
      const std::string body = views::submitted_body(
          row, spec, {spec_text, labels_text, warnings_text, request_text, estimate_text});
      const json resolved = {{"request", request}, {"estimate", given_estimate}};
      EXPECT_EQ(body,
                views::response_body(views::render_row(row, spec, resolved, labels, warnings)));
      EXPECT_EQ(json::parse(body)["max_retries"], 3);
    }
  }
}

TEST(JobViews, ProgressShowsPercentAndEtaOnceARunIsUnderWay) {
  executor::Progress p;
  p.step = 25;
  p.total_steps = 100;
  p.epoch = 1;
  p.max_epochs = 4;
  EXPECT_FALSE(views::progress_view(p).contains("percent"));
  const json progress = views::progress_view(p, std::chrono::duration<double>(10.0));
  EXPECT_DOUBLE_EQ(progress["percent"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(progress["eta_seconds"].get<double>(), 30.0);  // 10 s a quarter
  p.total_steps = -1;                                             // unbounded: no ETA to give
  EXPECT_FALSE(
      views::progress_view(p, std::chrono::duration<double>(10.0)).contains("eta_seconds"));
}

}  // namespace
}  // namespace tpujobs::service
