#include "service/submitted_specs.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpujobs::service {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

PlacementSpec spec_with_retries(int max_retries) {
  PlacementSpec spec;
  spec.max_retries = max_retries;
  return spec;
}

db::JobRow row(std::int64_t id) {
  db::JobRow row;
  row.id = id;
  return row;
}

TEST(SubmittedSpecs, ASpecIsTakenOnceAndOnlyWhileTheLeaderLeads) {
  SubmittedSpecs specs;
  specs.put(row(1), spec_with_retries(1));
  EXPECT_EQ(0u, specs.size()) << "no leader here takes it";
  specs.set_leading(true);
  specs.put(row(1), spec_with_retries(2));
  std::optional<PlacementSpec> taken = specs.take(1);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(2, taken->max_retries);
  EXPECT_FALSE(specs.take(1).has_value()) << "taken once";
  specs.put(row(2), spec_with_retries(0));
  specs.set_leading(false);
  EXPECT_EQ(0u, specs.size()) << "a leader that lost its lock keeps none";
  EXPECT_FALSE(specs.take(2).has_value());
}

TEST(SubmittedSpecs, BeyondItsCapacityTheOldestJobsSpecsAreDropped) {
  SubmittedSpecs specs(3);
  specs.set_leading(true);
  for (std::int64_t id : {5, 2, 7, 9}) specs.put(row(id), spec_with_retries(static_cast<int>(id)));
  EXPECT_EQ(3u, specs.size());
  EXPECT_FALSE(specs.take(2).has_value()) << "the lowest id went";
  for (std::int64_t id : {5, 7, 9}) {
    std::optional<PlacementSpec> taken = specs.take(id);
    ASSERT_TRUE(taken.has_value()) << id;
    EXPECT_EQ(id, taken->max_retries);
  }
}

// What a pass may place a new job by without reading (scheduler_leader.h):
// the rows above the ids it read, with the columns its read would bring.
TEST(SubmittedSpecs, TheRowsAboveAnIdAreTheKeptJobsWithTheirSchedulingColumns) {
  SubmittedSpecs specs;
  specs.set_leading(true);
  for (std::int64_t id : {4, 9, 7}) {
    db::JobRow submitted = row(id);
    submitted.tenant = "team-" + std::to_string(id);
    submitted.priority = static_cast<int>(id) * 10;
    submitted.spec_json = R"({"name": "j"})";
    submitted.resolved_json = R"({"devices": 8})";
    submitted.labels_json = R"({"team": "x"})";
    specs.put(submitted, spec_with_retries(0));
  }
  ASSERT_TRUE(specs.take(9).has_value());
  const std::vector<db::JobRow> rows = specs.rows_above(4);
  ASSERT_EQ(1u, rows.size()) << "job 4 is not above 4, and job 9's spec was taken";
  EXPECT_EQ(7, rows[0].id);
  EXPECT_EQ("team-7", rows[0].tenant);
  EXPECT_EQ(70, rows[0].priority);
  EXPECT_EQ(db::JobState::kQueued, rows[0].state);
  EXPECT_TRUE(rows[0].spec_json.empty()) << "the leader learns the spec itself, once";
  EXPECT_TRUE(rows[0].resolved_json.empty());
  EXPECT_TRUE(rows[0].labels_json.empty());
  EXPECT_EQ(2u, specs.rows_above(0).size());
}

// What the leader places by is what it would parse from the stored text.
TEST(SubmittedSpecs, APlacementSpecHasTheSpecsPlacementFields) {
  const json body = {
      {"name", "j"},
      {"max_retries", 3},
      {"timeout", "90s"},
      {"start_by", "2m"},
      {"preemptible", false},
      {"depends_on",
       json::array({json{{"job", 12}}, json{{"job", 13}, {"condition", "finished"}}})},
      {"trainer", {{"accelerator", "tpu"}, {"devices", 8}, {"precision", "bf16-true"}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data", {{"dataset", "iris"}}}};
  base::Result<api::JobSpec> parsed = api::parse_job_spec(body);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const PlacementSpec spec = placement_spec(*parsed);
  EXPECT_EQ(3, spec.max_retries);
  EXPECT_EQ(milliseconds(90'000), spec.time_limit);
  EXPECT_EQ(milliseconds(120'000), spec.start_by);
  EXPECT_FALSE(spec.preemptible);
  ASSERT_EQ(2u, spec.depends_on.size());
  EXPECT_EQ(12, spec.depends_on[0].job);
  EXPECT_EQ(13, spec.depends_on[1].job);
  EXPECT_EQ(scheduler::DependencyCondition::kFinished, spec.depends_on[1].condition);
  EXPECT_EQ(std::optional<std::string>("tpu"), spec.trainer.accelerator);
  EXPECT_EQ(std::optional<std::string>("bf16-true"), spec.trainer.precision);
}

}  // namespace
}  // namespace tpujobs::service
