#include "service/pool_views.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpujobs::service {
namespace {

using nlohmann::json;

db::ClusterHostRow host(std::string name, std::string agent, std::string agent_state,
                        std::string generation = "v4") {
  db::ClusterHostRow h;
  h.name = std::move(name);
  h.agent = std::move(agent);
  h.agent_state = std::move(agent_state);
  h.generation = std::move(generation);
  return h;
}

db::AgentRow agent(std::string name, std::string state) {
  db::AgentRow a;
  a.name = std::move(name);
  a.state = std::move(state);
  a.epoch = 3;
  a.last_heartbeat = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  return a;
}

// Two agents of two v4 hosts each (4 cores a host); agent b is lost. Job 41
// is a slice across both agents led by a; job 42 runs on a's first host;
// one job waits.
struct Cluster {
  std::vector<db::AgentRow> agents = {agent("a", "alive"), agent("b", "lost")};
  std::vector<db::ClusterHostRow> hosts = {host("a-h0", "a", "alive"), host("a-h1", "a", "alive"),
                                           host("b-h0", "b", "lost"), host("b-h1", "b", "lost")};
  std::vector<db::JobRow> placed;
  Cluster() {
    db::JobRow slice;
    slice.id = 41;
    slice.name = "across";
    slice.state = db::JobState::kRunning;
    slice.agent = "a";
    json cores = json::array();
    for (const char* h : {"a-h1", "b-h0"})
      for (int c = 0; c < 4; ++c) cores.push_back({{"host", h}, {"core", c}});
    slice.allocation_json =
        json{{"cores", cores},
             {"slice", {{"placement", 9}, {"parts", {{{"agent", "a"}}, {{"agent", "b"}}}}}}}
            .dump();
    db::JobRow single;
    single.id = 42;
    single.name = "one core";
    single.state = db::JobState::kRunning;
    single.agent = "a";
    single.allocation_json = json{{"cores", {{{"host", "a-h0"}, {"core", 2}}}}}.dump();
    placed = {slice, single};
  }
};

TEST(PoolViews, EachAgentListsEveryJobItRunsAPartOf) {
  Cluster c;
  const json view = views::cluster_pool(c.agents, c.hosts, c.placed, /*queued=*/1);
  ASSERT_EQ(view["agents"].size(), 2u);
  EXPECT_EQ(view["agents"][0]["name"], "a");
  EXPECT_EQ(view["agents"][0]["running_jobs"], json({41, 42}));
  EXPECT_EQ(view["agents"][1]["name"], "b");
  EXPECT_EQ(view["agents"][1]["state"], "lost");
  EXPECT_EQ(view["agents"][1]["running_jobs"], json({41})) << "b runs half of the slice";
  EXPECT_EQ(view["agents"][1]["hosts"], json({"b-h0", "b-h1"}));
  EXPECT_EQ(view["agents"][0]["last_heartbeat"], "2023-11-14T22:13:20.000Z");
}

TEST(PoolViews, HostsShowTheirAgentAndALostAgentsHostsAreUnreachable) {
  Cluster c;
  const json view = views::cluster_pool(c.agents, c.hosts, c.placed, /*queued=*/1);
  ASSERT_EQ(view["hosts"].size(), 4u);
  EXPECT_EQ(view["hosts"][0]["agent"], "a");
  EXPECT_EQ(view["hosts"][0]["health"], "healthy");
  EXPECT_EQ(view["hosts"][2]["agent_state"], "lost");
  EXPECT_EQ(view["hosts"][2]["health"], "unreachable");
  EXPECT_EQ(view["hosts"][0]["cores"][2],
            json({{"core", 2}, {"job", 42}, {"job_name", "one core"}}));
  EXPECT_EQ(view["hosts"][0]["cores_in_use"], 1);
  EXPECT_EQ(view["hosts"][2]["cores_in_use"], 4);
}

TEST(PoolViews, TotalsCountEveryRegisteredCoreAndOnlyAliveHealthyOnesAsHealthy) {
  Cluster c;
  const json view = views::cluster_pool(c.agents, c.hosts, c.placed, /*queued=*/1);
  EXPECT_EQ(view["total_cores"], 16);
  EXPECT_EQ(view["used_cores"], 9);
  EXPECT_EQ(view["healthy_cores"], 8);
  EXPECT_EQ(view["queued_jobs"], 1);
  EXPECT_EQ(view["running_jobs"], 2);
}

TEST(PoolViews, ADrainingAgentsHostsShowDrainingAndAreNotCountedHealthy) {
  Cluster c;
  c.agents[0].state = "draining";
  for (db::ClusterHostRow& h : c.hosts) {
    if (h.agent == "a") h.agent_state = "draining";
  }
  c.hosts[1].health = "failed";
  const json view = views::cluster_pool(c.agents, c.hosts, c.placed, /*queued=*/1);
  EXPECT_EQ(view["agents"][0]["state"], "draining");
  EXPECT_EQ(view["hosts"][0]["health"], "draining");
  EXPECT_EQ(view["hosts"][1]["health"], "failed") << "a failed host still reads failed";
  EXPECT_EQ(view["hosts"][0]["cores_in_use"], 1) << "its jobs still hold their cores";
  EXPECT_EQ(view["healthy_cores"], 0);
}

}  // namespace
}  // namespace tpujobs::service

namespace tpujobs::service::views {
namespace {

TEST(GenerationLayouts, EachGenerationWithItsShape) {
  const nlohmann::json layouts = generation_layouts({{scheduler::Generation::kV3, 1},
                                                     {scheduler::Generation::kV5e, 2},
                                                     {scheduler::Generation::kV5p, 4},
                                                     {scheduler::Generation::kV6e, 1},
                                                     {scheduler::Generation::kV4, 0}});
  ASSERT_EQ(4u, layouts.size());
  std::string shapes;
  for (const nlohmann::json& g : layouts) {
    shapes += g["generation"].get<std::string>() + ":" + g["slice"].get<std::string>() + "=" +
              (g["topology"].is_null() ? "-" : g["topology"].get<std::string>()) + "/" +
              (g["host_block"].is_null() ? "-" : g["host_block"].get<std::string>()) + "/" +
              std::to_string(g["devices_per_host"].get<int>()) + " ";
  }
  EXPECT_EQ(
      "v3:v3-8=-/-/8 v5e:v5litepod-16=4x4/2x4/8 v5p:v5p-32=2x2x4/2x2x1/4 v6e:v6e-8=2x4/2x4/8 ",
      shapes);
  EXPECT_EQ(256, layouts[3]["mxu_dim"].get<int>());
  EXPECT_EQ("chips", layouts[1]["type_counts"].get<std::string>());
  EXPECT_EQ("TensorCores", layouts[2]["type_counts"].get<std::string>());
  EXPECT_EQ(3, layouts[2]["topology_rank"].get<int>());
}

}  // namespace
}  // namespace tpujobs::service::views
