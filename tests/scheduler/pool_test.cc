#include "scheduler/pool.h"

#include <gtest/gtest.h>

#include <string>

namespace tpujobs::scheduler {
namespace {

// "name:generation" for every host, space separated.
std::string describe(const PoolLayout& layout) {
  std::string out;
  for (const HostLayout& host : layout.hosts) {
    if (!out.empty()) out += ' ';
    out += host.name + ":" + std::string(facts(host.generation).name);
  }
  return out;
}

std::string parse_error(std::string_view text) {
  const base::Result<PoolLayout> layout = parse_pool(text);
  EXPECT_FALSE(layout.ok()) << text;
  return layout.ok() ? "" : layout.error().message;
}

TEST(ParsePool, SingleSliceIsHostsOfEightCores) {
  const base::Result<PoolLayout> layout = parse_pool("v3-32");
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ("v3-32-h0:v3 v3-32-h1:v3 v3-32-h2:v3 v3-32-h3:v3", describe(*layout));
}

TEST(ParsePool, DefaultPoolIsFourV3Hosts) {
  const base::Result<PoolLayout> layout = parse_pool(kDefaultPool);
  ASSERT_TRUE(layout);
  EXPECT_EQ(4u, layout->hosts.size());
}

TEST(ParsePool, CommaListKeepsOrderAndNumbersRepeatedTypes) {
  const base::Result<PoolLayout> layout = parse_pool("v3-8, v3-8 ,v4-16");
  ASSERT_TRUE(layout);
  // v4-16 is 8 chips of 4 per host: two hosts.
  EXPECT_EQ("v3-8.1-h0:v3 v3-8.2-h0:v3 v4-16-h0:v4 v4-16-h1:v4", describe(*layout));
}

TEST(ParsePool, LargePodHasOneHostPerEightCores) {
  const base::Result<PoolLayout> layout = parse_pool("v3-2048");
  ASSERT_TRUE(layout);
  EXPECT_EQ(256u, layout->hosts.size());
  EXPECT_EQ("v3-2048-h255", layout->hosts.back().name);
}

TEST(ParsePool, V2AndV4Generations) {
  const base::Result<PoolLayout> layout = parse_pool("v2-8,v4-8");
  ASSERT_TRUE(layout);
  EXPECT_EQ("v2-8-h0:v2 v4-8-h0:v4", describe(*layout));
}

TEST(ParsePool, ErrorsNameTheBadPart) {
  EXPECT_EQ(
      "--pool part 2 'v3-16' is not an accelerator type (expected <generation>-<size> with a "
      "slice size the generation has, e.g. v3-8, v3-32, v4-16)",
      parse_error("v3-8,v3-16"));
  EXPECT_NE(std::string::npos, parse_error("v5-8").find("part 1 'v5-8'"));
  EXPECT_NE(std::string::npos, parse_error("v3").find("'v3'"));
  EXPECT_NE(std::string::npos, parse_error("v3-8x").find("'v3-8x'"));
  EXPECT_EQ("--pool part 2 is empty", parse_error("v3-8,,v3-8"));
  EXPECT_EQ("--pool part 2 is empty", parse_error("v3-8,"));
  EXPECT_EQ("--pool is empty; expected an accelerator type such as v3-32", parse_error("  "));
}

TEST(ParsePool, TodaysCloudTpuNames) {
  const base::Result<PoolLayout> layout = parse_pool("v5litepod-16,v6e-8,v5p-32");
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  // v5litepod-16: 16 chips on 2 hosts of 8; v6e-8: one 8-chip host; v5p-32:
  // 32 TensorCores = 16 chips on 4 hosts of 4.
  EXPECT_EQ(
      "v5litepod-16-h0:v5e v5litepod-16-h1:v5e v6e-8-h0:v6e v5p-32-h0:v5p v5p-32-h1:v5p "
      "v5p-32-h2:v5p v5p-32-h3:v5p",
      describe(*layout));
  const Pool pool(*layout);
  EXPECT_EQ(8, pool.devices(0));
  EXPECT_EQ(8, pool.devices(2));
  EXPECT_EQ(4, pool.devices(3));
  EXPECT_EQ(16 + 8 + 16, pool.total_cores());
  EXPECT_EQ(3u, pool.runs().size());
}

TEST(ParsePool, SubHostTypesNameTheWholeHostType) {
  EXPECT_EQ(
      "--pool part 2 'v5litepod-4' is 4 of a v5e host's 8 chips (one VM, a sub-host type); "
      "tpujobs emulates whole hosts: use v5litepod-8 (2x4)",
      parse_error("v6e-8,v5litepod-4"));
  EXPECT_NE(std::string::npos, parse_error("v6e-1").find("use v6e-8 (2x4)"));
  EXPECT_NE(std::string::npos, parse_error("v5p-4").find("is not an accelerator type"));
}

TEST(ParsePool, NullErrorPointerIsAllowed) { EXPECT_FALSE(parse_pool("nonsense").ok()); }

TEST(ValidatePool, RejectsEmptyAndDuplicateNames) {
  auto problem = [](const PoolLayout& layout) {
    const base::Status valid = validate_pool(layout);
    return valid.ok() ? "" : valid.error().message;
  };
  EXPECT_EQ("the pool has no hosts", problem(PoolLayout{}));
  PoolLayout layout{{{"a", Generation::kV3}, {"", Generation::kV3}}};
  EXPECT_EQ("host 1 has an empty name", problem(layout));
  layout.hosts[1].name = "a";
  EXPECT_EQ("host name 'a' is used twice", problem(layout));
  layout.hosts[1].name = "b";
  EXPECT_TRUE(validate_pool(layout).ok());
}

TEST(HostRuns, ConsecutiveHostsOfOneGenerationFormARun) {
  const PoolLayout layout = *parse_pool("v3-32,v3-8,v4-16,v3-64");
  std::string out;
  for (const HostRun& run : host_runs(layout)) {
    out += std::string(facts(run.generation).name) + "@" + std::to_string(run.first_host) + "x" +
           std::to_string(run.host_count) + " ";
  }
  EXPECT_EQ("v3@0x5 v4@5x2 v3@7x8 ", out);
}

TEST(Pool, TracksHoldersFreeCoresAndHealth) {
  Pool pool(*parse_pool("v3-8,v4-8"));
  EXPECT_EQ(12, pool.total_cores());
  EXPECT_EQ(12, pool.healthy_cores());
  EXPECT_EQ(4, pool.devices(1));
  EXPECT_EQ(std::optional<int>(1), pool.find_host("v4-8-h0"));
  EXPECT_FALSE(pool.find_host("nope").has_value());

  pool.assign(0, 3, 42);
  EXPECT_EQ(std::optional<JobId>(42), pool.holder(0, 3));
  EXPECT_FALSE(pool.holder(0, 2).has_value());
  EXPECT_EQ(7, pool.free_cores(0));
  EXPECT_FALSE(pool.fully_free(0));
  EXPECT_EQ(0xF7u, pool.free_mask(0));
  EXPECT_EQ(1, pool.used_cores());
  EXPECT_EQ(11, pool.schedulable_free_cores());

  pool.set_health(0, HostHealth::kDraining);
  EXPECT_FALSE(pool.schedulable(0));
  EXPECT_EQ(4, pool.healthy_cores());
  EXPECT_EQ(4, pool.schedulable_free_cores());
  pool.release(0, 3);
  pool.release(0, 3);  // releasing a free core changes nothing
  EXPECT_EQ(0, pool.used_cores());
  EXPECT_EQ(4, pool.schedulable_free_cores());
  pool.set_health(0, HostHealth::kHealthy);
  EXPECT_EQ(12, pool.schedulable_free_cores());
  EXPECT_EQ("failed", host_health_name(HostHealth::kFailed));
}

}  // namespace
}  // namespace tpujobs::scheduler
