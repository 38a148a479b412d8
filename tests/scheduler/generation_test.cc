#include "scheduler/generation.h"

#include <gtest/gtest.h>

#include <string>

namespace tpujobs::scheduler {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// "name=devices x hosts (topology)" of a type, or the reason it is refused.
std::string describe(std::string_view type) {
  const std::optional<SliceType> slice = parse_slice_type(type);
  if (!slice) return sub_host_type_reason(type).value_or("invalid");
  const std::optional<Topology> topology = slice->topology();
  return slice->name() + "=" + std::to_string(slice->devices()) + "x" +
         std::to_string(slice->hosts()) + (topology ? " " + topology->text() : "");
}

TEST(Generation, V5eFacts) {
  const GenerationFacts& f = facts(Generation::kV5e);
  EXPECT_EQ("v5e", f.name);
  EXPECT_EQ("v5litepod", f.type_prefix);
  EXPECT_EQ(1, f.tensorcores_per_chip);
  EXPECT_EQ(8, f.devices_per_host);
  EXPECT_EQ(4, f.gke_devices_per_host);
  EXPECT_EQ(16 * kGiB, f.hbm_bytes_per_device);
  EXPECT_EQ(16 * kGiB - (256 << 20), f.hbm_reported_bytes);  // "of 15.75G hbm"
  EXPECT_EQ(128, f.mxu_dim);
  EXPECT_DOUBLE_EQ(197e12, f.peak_bf16_flops_per_device);
  EXPECT_EQ(2, f.topology_rank);
}

TEST(Generation, V5pFacts) {
  const GenerationFacts& f = facts(Generation::kV5p);
  EXPECT_EQ("v5p", f.type_prefix);
  EXPECT_EQ(2, f.tensorcores_per_chip);
  EXPECT_EQ(2, f.name_units_per_device);
  EXPECT_EQ(4, f.devices_per_host);
  EXPECT_EQ(4, f.gke_devices_per_host);
  EXPECT_DOUBLE_EQ(459e12, f.peak_bf16_flops_per_device);
  EXPECT_EQ(3, f.topology_rank);
  // XLA reports 95.74G usable.
  EXPECT_NEAR(95.74, static_cast<double>(f.hbm_reported_bytes) / kGiB, 0.005);
}

TEST(Generation, V6eFacts) {
  const GenerationFacts& f = facts(Generation::kV6e);
  EXPECT_EQ("v6e", f.type_prefix);
  EXPECT_EQ(1, f.tensorcores_per_chip);
  EXPECT_EQ(8, f.devices_per_host);
  EXPECT_EQ(32 * kGiB, f.hbm_bytes_per_device);
  EXPECT_NEAR(31.25, static_cast<double>(f.hbm_reported_bytes) / kGiB, 0.005);
  EXPECT_EQ(256, f.mxu_dim);
  EXPECT_DOUBLE_EQ(918e12, f.peak_bf16_flops_per_device);
}

TEST(Generation, OlderGenerationsKeepTheirFacts) {
  EXPECT_EQ(8, facts(Generation::kV3).devices_per_host);
  EXPECT_EQ(16 * kGiB, facts(Generation::kV3).hbm_bytes_per_device);
  EXPECT_EQ(4, facts(Generation::kV4).devices_per_host);
  EXPECT_EQ(128, facts(Generation::kV4).mxu_dim);
  EXPECT_EQ("v4-16=8x2 2x2x2", describe("v4-16"));
  EXPECT_EQ("v3-32=32x4", describe("v3-32"));
  EXPECT_EQ(6u, all_generations().size());
  for (Generation g : all_generations()) EXPECT_EQ(g, parse_generation(facts(g).name));
}

TEST(Generation, V5eNamesCountChips) {
  EXPECT_EQ("v5litepod-8=8x1 2x4", describe("v5litepod-8"));
  EXPECT_EQ("v5litepod-16=16x2 4x4", describe("v5litepod-16"));
  EXPECT_EQ("v5litepod-32=32x4 4x8", describe("v5litepod-32"));
  EXPECT_EQ("v5litepod-256=256x32 16x16", describe("v5litepod-256"));
  EXPECT_EQ("invalid", describe("v5litepod-512"));
  EXPECT_EQ("invalid", describe("v5e-8"));  // the type is spelt v5litepod
  EXPECT_EQ(
      "'v5litepod-4' is 4 of a v5e host's 8 chips (one VM, a sub-host type); tpujobs "
      "emulates whole hosts: use v5litepod-8 (2x4)",
      describe("v5litepod-4"));
  EXPECT_NE(std::string::npos, describe("v5litepod-1").find("is 1 of a v5e host's 8 chips"));
}

TEST(Generation, V6eNamesCountChips) {
  EXPECT_EQ("v6e-8=8x1 2x4", describe("v6e-8"));
  EXPECT_EQ("v6e-16=16x2 4x4", describe("v6e-16"));
  EXPECT_EQ("v6e-128=128x16 8x16", describe("v6e-128"));
  EXPECT_NE(std::string::npos, describe("v6e-4").find("use v6e-8 (2x4)"));
  EXPECT_EQ("invalid", describe("v6e-12"));
}

TEST(Generation, V5pNamesCountTensorCores) {
  EXPECT_EQ("v5p-8=4x1 2x2x1", describe("v5p-8"));
  EXPECT_EQ("v5p-16=8x2 2x2x2", describe("v5p-16"));
  EXPECT_EQ("v5p-32=16x4 2x2x4", describe("v5p-32"));
  EXPECT_EQ("v5p-128=64x16 4x4x4", describe("v5p-128"));
  EXPECT_EQ("v5p-1024=512x128 8x8x8", describe("v5p-1024"));
  EXPECT_EQ("v5p-12288=6144x1536 16x16x24", describe("v5p-12288"));
  EXPECT_EQ("invalid", describe("v5p-24"));
  EXPECT_EQ("invalid", describe("v5p-4"));
}

TEST(Generation, TopologiesNameSlices) {
  auto slice = [](Generation g, std::string_view text) {
    const std::optional<Topology> t = parse_topology(text);
    if (!t) return std::string("unparsed");
    const std::optional<SliceType> s = slice_of_topology(g, *t);
    return s ? s->name() : std::string("none");
  };
  EXPECT_EQ("v5litepod-16", slice(Generation::kV5e, "4x4"));
  EXPECT_EQ("v5litepod-8", slice(Generation::kV5e, "2x4"));
  EXPECT_EQ("v5litepod-8", slice(Generation::kV5e, "4x2"));
  EXPECT_EQ("none", slice(Generation::kV5e, "2x2"));  // sub-host
  EXPECT_EQ("none", slice(Generation::kV5e, "4x4x4"));
  EXPECT_EQ("v6e-64", slice(Generation::kV6e, "8x8"));
  EXPECT_EQ("v5p-32", slice(Generation::kV5p, "2x2x4"));
  EXPECT_EQ("v5p-32", slice(Generation::kV5p, "4x2x2"));
  EXPECT_EQ("v5p-128", slice(Generation::kV5p, "4x4x4"));
  EXPECT_EQ("v5p-256", slice(Generation::kV5p, "4x8x4"));
  EXPECT_EQ("none", slice(Generation::kV5p, "3x3x3"));
  EXPECT_EQ("none", slice(Generation::kV5p, "2x4"));
  EXPECT_EQ("v4-128", slice(Generation::kV4, "4x4x4"));
  EXPECT_EQ("none", slice(Generation::kV4, "16x16x24"));  // v5p only
  EXPECT_EQ("none", slice(Generation::kV3, "4x4"));
  EXPECT_EQ("unparsed", slice(Generation::kV5e, "4"));
  EXPECT_EQ("unparsed", slice(Generation::kV5e, "4x0"));
  EXPECT_EQ("unparsed", slice(Generation::kV5e, "2x2x2x2"));
  EXPECT_EQ("unparsed", slice(Generation::kV5e, "4xx4"));
}

TEST(Generation, EveryWholeHostSizeHasATopologyFromV4On) {
  for (Generation g : {Generation::kV4, Generation::kV5e, Generation::kV5p, Generation::kV6e}) {
    for (int size : facts(g).slice_sizes) {
      const SliceType slice{g, size};
      const std::optional<Topology> topology = slice.topology();
      ASSERT_TRUE(topology) << slice.name();
      EXPECT_EQ(slice.devices(), topology->chips()) << slice.name();
      EXPECT_EQ(slice.name(), slice_of_topology(g, *topology)->name());
      EXPECT_GE(slice.hosts(), 1) << slice.name();
    }
  }
}

}  // namespace
}  // namespace tpujobs::scheduler
