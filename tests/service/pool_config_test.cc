#include "service/pool_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tpujobs::service {
namespace {

class PoolFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }

  // load_pool("@file") on a file holding `json`: the hosts as
  // "name:generation" or the error message.
  std::string load(const std::string& json) {
    std::ofstream(path_) << json;
    const base::Result<scheduler::PoolLayout> layout = load_pool("@" + path_.string());
    if (!layout.ok()) return layout.error().message;
    std::string out;
    for (const scheduler::HostLayout& h : layout->hosts) {
      out += (out.empty() ? "" : " ") + h.name + ":" +
             std::string(scheduler::facts(h.generation).name);
    }
    return out;
  }

  std::string where() const { return "pool file '" + path_.string() + "': "; }

  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("pool_config_test_" + std::to_string(::getpid()) + ".json");
};

TEST(LoadPool, NamesOfTodaysGenerations) {
  const base::Result<scheduler::PoolLayout> layout = load_pool("v5litepod-16,v6e-8,v5p-32");
  ASSERT_TRUE(layout.ok()) << layout.error().message;
  EXPECT_EQ(7u, layout->hosts.size());
}

TEST_F(PoolFile, SlicesByNameAndByExplicitTopology) {
  EXPECT_EQ(
      "v5litepod-16-h0:v5e v5litepod-16-h1:v5e v5p-32-h0:v5p v5p-32-h1:v5p v5p-32-h2:v5p "
      "v5p-32-h3:v5p v6e-8-h0:v6e",
      load(R"({"slices": ["v5litepod-16", {"generation": "v5p", "topology": "2x2x4"},
                          {"type": "v6e-8", "topology": "2x4"}]})"));
  EXPECT_EQ("v5p-16-h0:v5p v5p-16-h1:v5p",
            load(R"({"slices": [{"generation": "v5p", "topology": "2x2x2"}]})"));
}

TEST_F(PoolFile, TopologyErrors) {
  EXPECT_EQ(where() + "slice 1: topology '4x4' is v5litepod-16, but \"type\" is v5litepod-8 (2x4)",
            load(R"({"slices": [{"type": "v5litepod-8", "topology": "4x4"}]})"));
  EXPECT_EQ(where() +
                "slice 1: topology '3x3' is not a whole-host v5e slice (valid: 2x4, 4x4, 4x8, "
                "8x8, 8x16, 16x16)",
            load(R"({"slices": [{"generation": "v5e", "topology": "3x3"}]})"));
  EXPECT_EQ(
      where() + "slice 1: topology '4x4' is not a whole-host v3 slice (it has no topology names)",
      load(R"({"slices": [{"generation": "v3", "topology": "4x4"}]})"));
  EXPECT_EQ(where() + "slice 2: a topology needs a \"generation\" or a \"type\"",
            load(R"({"slices": ["v3-8", {"topology": "4x4"}]})"));
  EXPECT_EQ(where() + "slice 1: unknown field \"shape\" (type, generation, topology)",
            load(R"({"slices": [{"generation": "v5p", "shape": "2x2x4"}]})"));
  EXPECT_EQ(where() + "slice 1: topology 'big' is not like \"4x4\" or \"2x2x4\"",
            load(R"({"slices": [{"generation": "v5p", "topology": "big"}]})"));
}

TEST_F(PoolFile, HostsOfNewGenerations) {
  EXPECT_EQ(
      "a:v5e b:v6e",
      load(
          R"({"hosts": [{"name": "a", "generation": "v5e"}, {"name": "b", "generation": "v6e"}]})"));
  EXPECT_EQ(where() + "unknown generation 'v7' (v2, v3, v4, v5e, v5p, v6e)",
            load(R"({"hosts": [{"name": "a", "generation": "v7"}]})"));
}

}  // namespace
}  // namespace tpujobs::service
