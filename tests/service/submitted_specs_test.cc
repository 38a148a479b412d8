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

TEST(SubmittedSpecs, ASpecIsTakenOnceAndOnlyWhileTheLeaderLeads) {
  SubmittedSpecs specs;
  specs.put(1, spec_with_retries(1));
  EXPECT_EQ(0u, specs.size()) << "no leader here takes it";
  specs.set_leading(true);
  specs.put(1, spec_with_retries(2));
  std::optional<PlacementSpec> taken = specs.take(1);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(2, taken->max_retries);
  EXPECT_FALSE(specs.take(1).has_value()) << "taken once";
  specs.put(2, spec_with_retries(0));
  specs.set_leading(false);
  EXPECT_EQ(0u, specs.size()) << "a leader that lost its lock keeps none";
  EXPECT_FALSE(specs.take(2).has_value());
}

TEST(SubmittedSpecs, BeyondItsCapacityTheOldestJobsSpecsAreDropped) {
  SubmittedSpecs specs(3);
  specs.set_leading(true);
  for (std::int64_t id : {5, 2, 7, 9}) specs.put(id, spec_with_retries(static_cast<int>(id)));
  EXPECT_EQ(3u, specs.size());
  EXPECT_FALSE(specs.take(2).has_value()) << "the lowest id went";
  for (std::int64_t id : {5, 7, 9}) {
    std::optional<PlacementSpec> taken = specs.take(id);
    ASSERT_TRUE(taken.has_value()) << id;
    EXPECT_EQ(id, taken->max_retries);
  }
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
