// End to end on today's Cloud TPUs (issue 30): a `tpujobs serve --pool
// v5litepod-16,v6e-8,v5p-8` runs a job on each generation, named by its
// accelerator type or its topology, and a model that fits a v6e chip's HBM
// but not a v5e chip's is refused on v5e only.
#include <gtest/gtest.h>

#include <string>

#include "jobs_api.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

class Service : public ::testing::Environment {
 public:
  static ServiceProcess* instance;
  void SetUp() override {
    ServiceProcess::Options options;
    options.pool = "v5litepod-16,v6e-8,v5p-8";
    instance = new ServiceProcess(options);
    ASSERT_EQ(instance->start(), "");
  }
  void TearDown() override {
    EXPECT_EQ(instance->stop(), 0) << instance->log();
    delete instance;
  }
};
ServiceProcess* Service::instance = nullptr;

ServiceProcess& service() { return *Service::instance; }

// A short blobs job on every device of one host, named by `resources`.
json job_on(const std::string& name, const json& resources) {
  json spec = blobs_job_spec({.name = name, .epochs = 2, .log_every_n_steps = 5, .samples = 640});
  spec["trainer"].erase("devices");
  spec["trainer"]["accelerator"] = "tpu";
  spec["resources"] = resources;
  return spec;
}

TEST(Generations, AJobRunsOnEachGeneration) {
  struct Case {
    json resources;
    std::string generation, host_prefix;
    int devices;
  };
  const Case cases[] = {
      {{{"accelerator_type", "v5litepod-8"}}, "v5e", "v5litepod-16-h", 8},
      {{{"topology", "2x4"}, {"accelerator_type", "v6e-8"}}, "v6e", "v6e-8-h", 8},
      {{{"topology", "2x2x1"}}, "v5p", "v5p-8-h", 4},
  };
  std::vector<std::int64_t> ids;
  for (const Case& c : cases)
    ids.push_back(submit(service(), job_on("on-" + c.generation, c.resources)));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Case& c = cases[i];
    const json done = service().wait_terminal(ids[i]);
    ASSERT_EQ(done["state"], "SUCCEEDED") << c.generation << ": " << done.dump(2);
    EXPECT_EQ(done["resolved"]["generation"], c.generation);
    EXPECT_EQ(done["resolved"]["devices_per_host"], c.devices);
    EXPECT_EQ(done["resolved"]["world_size"], c.devices);
    EXPECT_EQ(done["allocation"]["cores"].size(), static_cast<std::size_t>(c.devices))
        << done.dump();
    const std::string host = done["allocation"]["hosts"][0];
    EXPECT_EQ(host.rfind(c.host_prefix, 0), 0u) << host;
  }
}

TEST(Generations, ASliceThatCannotFitOrAnotherTypeIs422) {
  HttpResponse too_big =
      service().post("/v1/jobs", job_on("big", {{"accelerator_type", "v5p-16"}}).dump());
  EXPECT_EQ(too_big.status, 422) << too_big.body;
  EXPECT_NE(too_big.body.find("resources.accelerator_type"), std::string::npos) << too_big.body;
  HttpResponse ambiguous =
      service().post("/v1/jobs", job_on("shape", {{"topology", "2x4"}}).dump());
  EXPECT_EQ(ambiguous.status, 422) << ambiguous.body;
  EXPECT_NE(ambiguous.body.find("is a slice of more than one generation in the pool: "
                                "v5litepod-8, v6e-8."),
            std::string::npos)
      << ambiguous.body;
}

TEST(Generations, AModelThatFitsV6eButNotV5eIsRefusedOnV5eOnly) {
  // About 20 GiB per core (fp32, Adam): 8,192 features -> 32,768 -> 32,768 -> 4,
  // 1.34 billion parameters.
  auto spec = [](const std::string& type) {
    json s = job_on("wide-" + type, {{"accelerator_type", type}});
    s["model"]["layers"] = json::array({{{"type", "linear"}, {"out", 32768}},
                                        {{"type", "relu"}},
                                        {{"type", "linear"}, {"out", 32768}},
                                        {{"type", "relu"}},
                                        {{"type", "linear"}, {"out", 4}}});
    s["data"]["dataset"]["features"] = 8192;
    return s;
  };
  HttpResponse v5e = service().post("/v1/jobs", spec("v5litepod-8").dump());
  ASSERT_EQ(v5e.status, 422) << v5e.body;
  EXPECT_NE(v5e.body.find("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
                          "in memory space hbm. Used "),
            std::string::npos)
      << v5e.body;
  EXPECT_NE(v5e.body.find("G of 15.75G hbm"), std::string::npos) << v5e.body;
  // The same model on a v6e host: valid (validated, not run: a 20 GiB model
  // is not trained on this CPU).
  HttpResponse v6e = service().post("/v1/jobs:validate", spec("v6e-8").dump());
  ASSERT_EQ(v6e.status, 200) << v6e.body;
  const json answer = v6e.json();
  EXPECT_EQ(answer["valid"], true) << v6e.body;
  EXPECT_EQ(answer["estimate"]["hbm_per_core"]["fits"], true) << v6e.body;
  EXPECT_EQ(answer["estimate"]["hbm_per_core"]["capacity"],
            31LL * (1LL << 30) + 256LL * (1LL << 20));
}

}  // namespace
}  // namespace tpujobs::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tpujobs::testing::Service);
  return RUN_ALL_TESTS();
}
