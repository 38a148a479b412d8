// Multi-host v5p slices end to end (issue 30): `resources.workers` names the
// workers a job is launched on, as `gcloud compute tpus tpu-vm ssh
// --worker=all|0,1` does. A v5p-32 (4 hosts of 4 chips) launched on worker
// 0 only fails at launch with its rendezvous text (tpujobs' own: torch_xla
// and Lightning print none, lightning/workers.cc), an index past the slice's
// hosts is 422 on the field, and a v5p-32 spans two `tpujobs agent`s of two
// hosts each, its gradients all-reduced across them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

// A short blobs job on the whole v5p-32 (16 devices), launched on `workers`.
json v5p_32_job(const std::string& name, const json& workers) {
  json spec = blobs_job_spec({.name = name, .epochs = 2, .log_every_n_steps = 1, .samples = 2000});
  spec["trainer"].erase("devices");
  spec["trainer"]["accelerator"] = "tpu";
  spec["resources"] = {{"accelerator_type", "v5p-32"}};
  if (!workers.is_null()) spec["resources"]["workers"] = workers;
  return spec;
}

std::string log_text(const ServiceProcess& service, std::int64_t id) {
  const json logs = service.get("/v1/jobs/" + std::to_string(id) + "/logs").json();
  std::string text;
  for (const json& l : logs["lines"]) text += l["line"].get<std::string>() + "\n";
  return text;
}

const char kRendezvousFailed[] =
    "tpujobs: the v5p-32 slice's rendezvous failed: workers 1, 2, 3 of its 4 hosts were not "
    "launched. torch_xla and Lightning print no message for this (the launched processes wait "
    "in the TPU runtime, libtpu); this text is tpujobs' own.";
const char kLaunchEveryWorker[] =
    "Launch on every worker (`--worker=all`): set resources.workers to \"all\" or leave it out.";

void expect_failed_on_worker_zero(const ServiceProcess& service, std::int64_t id,
                                  const json& done) {
  ASSERT_EQ(done["state"], "FAILED") << done.dump(2);
  EXPECT_EQ(done["error"]["type"], "UNAVAILABLE") << done.dump(2);
  EXPECT_EQ(done["error"]["message"], kRendezvousFailed) << done.dump(2);
  EXPECT_EQ(done["error"]["hint"], kLaunchEveryWorker) << done.dump(2);
  const std::string text = log_text(service, id);
  EXPECT_NE(text.find("tpujobs: launched on worker 0 of the v5p-32 slice's 4 hosts "
                      "(resources.workers); workers 1, 2, 3 run nothing\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("UNAVAILABLE: ") + kRendezvousFailed), std::string::npos) << text;
  EXPECT_EQ(text.find("Epoch 0"), std::string::npos) << text;  // no step was taken
}

TEST(MultiHost, AV5p32LaunchedOnWorkerZeroFailsWithItsRendezvousText) {
  ServiceProcess::Options options;
  options.pool = "v5p-32";
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");

  // :validate says so before it runs.
  HttpResponse validated =
      service.post("/v1/jobs:validate", v5p_32_job("one-worker", json::array({0})).dump());
  ASSERT_EQ(validated.status, 200) << validated.body;
  EXPECT_NE(validated.body.find("tpujobs: resources.workers launches the job on worker 0 of the "
                                "v5p-32 slice's 4 hosts"),
            std::string::npos)
      << validated.body;

  const std::int64_t id = submit(service, v5p_32_job("one-worker", json::array({0})));
  expect_failed_on_worker_zero(service, id, service.wait_terminal(id));

  // Every worker, listed or "all": the same job trains.
  const std::int64_t every = submit(service, v5p_32_job("every", json::array({3, 2, 1, 0})));
  const std::int64_t all = submit(service, v5p_32_job("all", "all"));
  for (std::int64_t ok : {every, all}) {
    const json done = service.wait_terminal(ok);
    EXPECT_EQ(done["state"], "SUCCEEDED") << done.dump(2) << log_text(service, ok);
    EXPECT_EQ(done["resolved"]["world_size"], 16) << done.dump(2);
  }
  EXPECT_EQ(service.stop(), 0) << service.log();
}

TEST(MultiHost, AWorkerPastTheSlicesHostsOrABadValueIs422OnTheField) {
  ServiceProcess::Options options;
  options.pool = "v5p-32";
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  struct Case {
    json workers;
    std::string field, message;
  };
  const Case cases[] = {
      {json::array({0, 4}), "resources.workers",
       "tpujobs: worker 4 is not a host of this job's v5p-32 slice: it has 4 hosts, workers 0-3"},
      {"0,1", "resources.workers", "must be \"all\" or a list of worker indexes, got \"0,1\""},
      {json::array(), "resources.workers", "names no worker"},
      {json::array({0, -1}), "resources.workers[1]",
       "must be a worker index (an integer from 0 to 4095), got -1"},
      {json::array({1, 1}), "resources.workers[1]", "names worker 1 twice"},
  };
  for (const Case& c : cases) {
    HttpResponse answer = service.post("/v1/jobs", v5p_32_job("bad", c.workers).dump());
    ASSERT_EQ(answer.status, 422) << c.workers.dump() << ": " << answer.body;
    EXPECT_EQ(answer.header("content-type").rfind("application/problem+json", 0), 0u)
        << answer.body;
    const json problem = answer.json();
    ASSERT_FALSE(problem["errors"].empty()) << answer.body;
    EXPECT_EQ(problem["errors"][0]["field"], c.field) << answer.body;
    EXPECT_EQ(problem["errors"][0]["message"], c.message) << answer.body;
    EXPECT_FALSE(problem["errors"][0].value("hint", "").empty()) << answer.body;
  }
  EXPECT_EQ(service.stop(), 0) << service.log();
}

// Two agents of two v5p hosts each (v5p-8,v5p-8) and a `serve --pool none`
// on one PostgreSQL: a v5p-32 takes all four hosts, so it spans both agents.
// The parts of a slice join their collective before training (service/agent.cc
// join_slice), the one-worker job's too. A collective deadline of 30 s, not
// the scale-out tests' 5: this test checks outcomes, not deadlines.
class SpanningAgents : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(database_.error(), "");
    ServiceProcess::Options options;
    options.pool = "none";
    options.extra_args = {"--database-url", database_.url(), "--name", "replica"};
    replica_ = std::make_unique<ServiceProcess>(options);
    ASSERT_EQ(replica_->start(), "");
    for (const char* name : {"agent-a", "agent-b"}) {
      ServiceProcess::Options agent;
      agent.command = "agent";
      agent.extra_args = {"--database-url",
                          database_.url(),
                          "--pool",
                          "v5p-8,v5p-8",
                          "--name",
                          name,
                          "--workers",
                          "1",
                          "--collective-address",
                          "127.0.0.1",
                          "--collective-timeout",
                          "30"};
      agents_.push_back(std::make_unique<ServiceProcess>(agent));
      ASSERT_EQ(agents_.back()->start(), "");
    }
  }

  OwnPostgres database_{"tpujobs-multihost-"};
  std::unique_ptr<ServiceProcess> replica_;
  std::vector<std::unique_ptr<ServiceProcess>> agents_;
};

TEST_F(SpanningAgents, AV5p32SpansTwoAgentsAndLaunchedOnOneWorkerFails) {
  // Both agents' hosts in the pool before the job is placed.
  poll_until([&] { return replica_->get("/v1/pool").json(); },
             [](const json& pool) { return pool["hosts"].size() == 4u; }, std::chrono::seconds(60));
  const std::int64_t id = submit(*replica_, v5p_32_job("spanning", "all"));
  const json done = wait_until(*replica_, id, [](const json& j) {
    return j["state"] == "SUCCEEDED" || j["state"] == "FAILED" || j["state"] == "CANCELLED";
  });
  ASSERT_EQ(done["state"], "SUCCEEDED") << done.dump(2) << agents_[0]->log() << agents_[1]->log();
  EXPECT_EQ(done["resolved"]["generation"], "v5p") << done.dump(2);
  EXPECT_EQ(done["resolved"]["world_size"], 16) << done.dump(2);
  std::set<std::string> agents;
  for (const json& part : done["allocation"]["slice"]["parts"]) agents.insert(part["agent"]);
  EXPECT_EQ(agents, (std::set<std::string>{"agent-a", "agent-b"})) << done.dump(2);

  // With retries left: a launch on some workers fails alike on every attempt,
  // so the agents do not requeue it as a part whose peer was unreachable.
  json one_worker = v5p_32_job("spanning-one-worker", json::array({0}));
  one_worker["max_retries"] = 2;
  const std::int64_t one = submit(*replica_, one_worker);
  const json failed = wait_until(*replica_, one, [](const json& j) {
    return j["state"] == "SUCCEEDED" || j["state"] == "FAILED" || j["state"] == "CANCELLED";
  });
  expect_failed_on_worker_zero(*replica_, one, failed);
  EXPECT_EQ(failed.value("attempt", -1), 0)
      << "no retry spent on a launch that cannot succeed" << failed.dump(2);
}

}  // namespace
}  // namespace tpujobs::testing
