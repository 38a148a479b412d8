// End to end: the real binary, its embedded PostgreSQL, a real socket.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "jobs_api.h"
#include "service_process.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

// One service for the whole file: starting PostgreSQL once keeps it quick.
class Service : public ::testing::Environment {
 public:
  static ServiceProcess* instance;
  void SetUp() override {
    instance = new ServiceProcess();
    const std::string error = instance->start();
    ASSERT_EQ(error, "");
  }
  void TearDown() override {
    EXPECT_EQ(instance->stop(), 0) << instance->log();
    delete instance;
  }
};
ServiceProcess* Service::instance = nullptr;

ServiceProcess& service() { return *Service::instance; }

json quick_spec(const std::string& name, int epochs = 3) {
  return {{"name", name},
          {"trainer", {{"devices", 1}, {"max_epochs", epochs}, {"log_every_n_steps", 2}}},
          {"model",
           {{"layers", json::array({{{"type", "linear"}, {"out", 16}},
                                    {{"type", "relu"}},
                                    {{"type", "linear"}, {"out", 3}}})}}},
          {"data", {{"dataset", "iris"}, {"batch_size", 16}}},
          {"optimizer", {{"type", "adam"}, {"lr", 0.01}}}};
}

// A job on one whole host (8 cores) that trains until cancelled.
json endless_host_spec(const std::string& name) {
  json spec = quick_spec(name, -1);
  spec["trainer"]["devices"] = 8;
  spec["data"] = {
      {"dataset", {{"synthetic", "blobs"}, {"n", 20000}, {"features", 64}, {"classes", 4}}},
      {"batch_size", 32}};
  spec["model"]["layers"][2]["out"] = 4;
  return spec;
}

TEST(Service, DigitsExampleRunsFromQueuedToSucceeded) {
  HttpResponse created = service().post("/v1/jobs", read_source_file("examples/digits-mlp.json"));
  ASSERT_EQ(created.status, 201) << created.body;
  const json job = created.json();
  const std::int64_t id = job["id"];
  EXPECT_EQ(created.header("location"), "/v1/jobs/" + std::to_string(id));
  // On an idle pool the job is placed before the 201 leaves.
  EXPECT_TRUE(job["state"] == "QUEUED" || job["state"] == "STARTING") << job.dump();
  EXPECT_EQ(job["resolved"]["cores"], 8);
  EXPECT_EQ(job["resolved"]["precision"], "bf16-true");

  const json done = service().wait_terminal(id);
  ASSERT_EQ(done["state"], "SUCCEEDED") << done.dump(2);
  EXPECT_GE(done["metrics"]["val_accuracy"].get<double>(), 0.9);
  EXPECT_EQ(done["allocation"]["cores"].size(), 8u);
  EXPECT_FALSE(done["started_at"].is_null());
  EXPECT_FALSE(done["finished_at"].is_null());

  const json events = job_events(service(), id);
  std::vector<std::string> states;
  for (const json& e : events) states.push_back(e["to"]);
  EXPECT_EQ(states, (std::vector<std::string>{"QUEUED", "STARTING", "RUNNING", "SUCCEEDED"}));

  const json logs = service().get("/v1/jobs/" + std::to_string(id) + "/logs").json();
  std::string text;
  std::int64_t expected_seq = 1;
  for (const json& l : logs["lines"]) {
    EXPECT_EQ(l["seq"], expected_seq++);
    text += l["line"].get<std::string>() + "\n";
  }
  EXPECT_NE(text.find("TPU available: True, using: 8 TPU cores"), std::string::npos) << text;

  const json metrics = service().get("/v1/jobs/" + std::to_string(id) + "/metrics").json();
  EXPECT_GT(metrics["points"].size(), 1u);
  HttpResponse report = service().get("/v1/jobs/" + std::to_string(id) + "/xla-report");
  EXPECT_EQ(report.status, 200);
  EXPECT_NE(report.body.find("Metric: CompileTime"), std::string::npos);
  EXPECT_NE(report.body.find("Counter: UncachedCompile"), std::string::npos);
}

TEST(Service, MisconfiguredExampleIs422WithEveryLightningMessage) {
  HttpResponse r = service().post("/v1/jobs", read_source_file("examples/misconfigured.json"));
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/problem+json");
  std::map<std::string, std::string> by_field;
  const json body = r.json();
  for (const json& e : body["errors"])
    by_field[e["field"].get<std::string>()] = e["message"].get<std::string>();
  EXPECT_EQ(by_field["trainer.devices"],
            "`devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3");
  EXPECT_NE(by_field["trainer.strategy"].find("XLAAccelerator"), std::string::npos);
  // Lightning 2.5 builds the strategy before the precision plugin, and checks
  // the XLA precisions only for an XLA strategy: '16-mixed' beside 'ddp'
  // draws no error of its own.
  EXPECT_EQ(by_field.count("trainer.precision"), 0u) << r.body;
  // Nothing was stored.
  EXPECT_EQ(service().get("/v1/jobs?name=runs-on-my-gpu-box").json()["jobs"].size(), 0u);
}

TEST(Service, ValidateReturnsResolvedRequestAndEstimateWithoutStoring) {
  HttpResponse r =
      service().post("/v1/jobs:validate", read_source_file("examples/v3-32-slice.json"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = r.json();
  EXPECT_TRUE(body["valid"]);
  EXPECT_EQ(body["resolved"]["accelerator_type"], "v3-32");
  EXPECT_EQ(body["resolved"]["hosts"], 4);
  EXPECT_GT(body["estimate"]["hbm_per_core"]["total"].get<double>(), 0);
  EXPECT_EQ(service().get("/v1/jobs?name=blobs-v3-32").json()["jobs"].size(), 0u);
}

TEST(Service, IdempotencyKeyReturnsTheSameJobAndRefusesAnotherSpec) {
  const json spec = quick_spec("idempotent");
  HttpResponse first =
      service().post("/v1/jobs", spec.dump(), {{"Idempotency-Key", "pipeline-7-step-3"}});
  ASSERT_EQ(first.status, 201) << first.body;
  HttpResponse again =
      service().post("/v1/jobs", spec.dump(), {{"Idempotency-Key", "pipeline-7-step-3"}});
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["id"], first.json()["id"]);
  json other = spec;
  other["priority"] = 3;
  HttpResponse conflict =
      service().post("/v1/jobs", other.dump(), {{"Idempotency-Key", "pipeline-7-step-3"}});
  EXPECT_EQ(conflict.status, 409) << conflict.body;
  EXPECT_EQ(conflict.json()["job_id"], first.json()["id"]);
  service().wait_terminal(first.json()["id"]);
}

// The top-level members of a JSON text, in order, duplicates included (a
// parsed json object would hide a duplicate).
std::vector<std::string> top_level_members(const std::string& text) {
  std::vector<std::string> names;
  const json parsed = json::parse(text, [&](int depth, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::key && depth == 1) names.push_back(value.get<std::string>());
    return true;
  });
  EXPECT_TRUE(parsed.is_object()) << text;
  return names;
}

// A live job's view is put together from kept text and the members that
// change; it must read exactly as the view of a finished job does.
TEST(Service, ALiveJobShowsEveryMemberOnceAsAFinishedOneDoes) {
  const json spec = quick_spec("members", -1);
  HttpResponse created = service().post("/v1/jobs", spec.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  const std::int64_t id = created.json()["id"];
  const std::string path = "/v1/jobs/" + std::to_string(id);
  HttpResponse live = service().get(path);
  ASSERT_EQ(live.status, 200);
  const json listed = service().get("/v1/jobs?name=members").json()["jobs"];
  ASSERT_EQ(listed.size(), 1u);
  ASSERT_EQ(service().post(path + "/cancel").status, 202);
  service().wait_terminal(id);
  HttpResponse finished = service().get(path);
  ASSERT_EQ(finished.json()["state"], "CANCELLED") << finished.body;

  std::vector<std::string> expected = top_level_members(finished.body);
  std::sort(expected.begin(), expected.end());
  ASSERT_TRUE(std::adjacent_find(expected.begin(), expected.end()) == expected.end());
  for (const HttpResponse* view : {&created, &live}) {
    std::vector<std::string> names = top_level_members(view->body);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(expected, names) << view->body;
    const json parsed = view->json();
    EXPECT_EQ(spec, parsed["spec"]);
    EXPECT_EQ(finished.json()["resolved"], parsed["resolved"]);
    EXPECT_EQ(finished.json()["estimate"], parsed["estimate"]);
    EXPECT_EQ(finished.json()["created_at"], parsed["created_at"]);
  }
  std::vector<std::string> without_spec = expected;
  without_spec.erase(std::find(without_spec.begin(), without_spec.end(), "spec"));
  std::vector<std::string> names;
  for (const auto& [name, value] : listed[0].items()) names.push_back(name);
  EXPECT_EQ(without_spec, names) << listed[0].dump();
}

// A job's timeout bounds its run: a job waiting behind it gets an estimated
// start at the end of that bound, as squeue --start shows from time limits.
TEST(Service, AWaitingJobIsToldWhenTheTimeLimitsAheadOfItEnd) {
  json blocker = json::parse(read_source_file("examples/v3-32-slice.json"));
  blocker["name"] = "whole-pool";
  blocker["trainer"]["max_epochs"] = -1;  // trains until the test cancels it
  blocker["timeout"] = "10m";
  blocker.erase("expect");
  const auto before = std::chrono::system_clock::now();
  const std::int64_t first = submit(service(), blocker);
  json waiting = quick_spec("behind-the-slice", 1);
  waiting["trainer"]["devices"] = 8;
  waiting["timeout"] = "5m";
  const std::int64_t second = submit(service(), waiting);
  // The scheduler leader's pass after the submit writes why it waits.
  const json view = wait_until(
      service(), second, [](const json& j) { return j["estimated_start"].is_string(); },
      std::chrono::seconds(30));
  const auto cancel_both = [&] {
    for (std::int64_t id : {second, first}) {
      service().post("/v1/jobs/" + std::to_string(id) + "/cancel");
      EXPECT_EQ(service().wait_terminal(id)["state"], "CANCELLED");
    }
  };
  EXPECT_EQ(view["state"], "QUEUED") << view.dump();
  EXPECT_EQ(view["pending_reason"], "Resources") << view.dump();
  if (!view["estimated_start"].is_string()) {
    ADD_FAILURE() << "no estimated_start: " << view.dump();
    return cancel_both();
  }
  // The slice's ten minutes from its start, read back at the second.
  std::tm parts{};
  std::istringstream(view["estimated_start"].get<std::string>()) >>
      std::get_time(&parts, "%Y-%m-%dT%H:%M:%S");
  const auto estimated = std::chrono::system_clock::from_time_t(timegm(&parts));
  EXPECT_GE(estimated, before + std::chrono::minutes(10) - std::chrono::seconds(2)) << view.dump();
  EXPECT_LE(estimated,
            std::chrono::system_clock::now() + std::chrono::minutes(10) + std::chrono::seconds(2))
      << view.dump();
  cancel_both();
}

TEST(Service, BodiesOverTheCapAre413) {
  std::string big = "{\"name\": \"" + std::string(2 << 20, 'x') + "\"}";
  HttpResponse r = service().post("/v1/jobs", big);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(service().get("/healthz").status, 200);
}

TEST(Service, MalformedHttpGets400AndTheServiceStaysUp) {
  const std::string answer =
      raw_exchange(service().port(), "GARBAGE\r\n\r\n", std::chrono::seconds(5));
  EXPECT_NE(answer.find("400"), std::string::npos) << answer;
  EXPECT_EQ(service().get("/healthz").status, 200);
}

TEST(Service, CancelStopsARunningJobAndASecondCancelIs409) {
  json spec = quick_spec("to-cancel", -1);  // trains until cancelled
  spec["data"] = {
      {"dataset", {{"synthetic", "blobs"}, {"n", 20000}, {"features", 64}, {"classes", 4}}},
      {"batch_size", 32}};
  spec["model"]["layers"][2]["out"] = 4;
  const std::int64_t id = submit(service(), spec);
  wait_until(
      service(), id, [](const json& j) { return j["state"] == "RUNNING"; },
      std::chrono::seconds(15));
  HttpResponse cancel = service().post("/v1/jobs/" + std::to_string(id) + "/cancel");
  EXPECT_EQ(cancel.status, 202) << cancel.body;
  const json done = service().wait_terminal(id, std::chrono::seconds(30));
  EXPECT_EQ(done["state"], "CANCELLED");
  EXPECT_EQ(service().post("/v1/jobs/" + std::to_string(id) + "/cancel").status, 409);
}

TEST(Service, ListPagesNewestFirstWithoutDuplicatesOrGaps) {
  std::set<std::int64_t> submitted;
  for (int i = 0; i < 5; ++i) submitted.insert(submit(service(), quick_spec("page-me", 1)));
  std::vector<std::int64_t> seen;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    std::string target = "/v1/jobs?name=page-me&limit=2";
    if (!cursor.empty()) target += "&cursor=" + cursor;
    const json body = service().get(target).json();
    for (const json& j : body["jobs"]) seen.push_back(j["id"]);
    if (body["next_cursor"].is_null()) break;
    cursor = body["next_cursor"];
  }
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
  EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()), submitted);
  for (std::int64_t id : submitted) service().wait_terminal(id);
}

TEST(Service, LogsFollowAsServerSentEventsUntilTheEnd) {
  const std::int64_t id = submit(service(), quick_spec("follow-me", 5));
  std::vector<std::int64_t> seqs;
  std::string end_state;
  const int status = read_event_stream(
      service().port(), "/v1/jobs/" + std::to_string(id) + "/logs",
      [&](const std::string& event, const std::string& data) {
        const json payload = json::parse(data);
        if (event == "log") seqs.push_back(payload["seq"]);
        if (event == "end") {
          end_state = payload["state"];
          return false;
        }
        return true;
      },
      std::chrono::seconds(60));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(end_state, "SUCCEEDED");
  ASSERT_FALSE(seqs.empty());
  for (std::size_t i = 0; i < seqs.size(); ++i)
    EXPECT_EQ(seqs[i], static_cast<std::int64_t>(i + 1));
}

TEST(Service, HealthReadinessMetricsAndOpenApi) {
  EXPECT_EQ(service().get("/healthz").status, 200);
  HttpResponse ready = service().get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.json()["database"], "ok");
  HttpResponse metrics = service().get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("tpujobs_jobs{state=\"SUCCEEDED\"}"), std::string::npos);
  EXPECT_NE(metrics.body.find("tpujobs_queue_depth"), std::string::npos);
  EXPECT_NE(metrics.body.find("tpujobs_cores_in_use"), std::string::npos);
  EXPECT_NE(metrics.body.find("tpujobs_http_request_duration_seconds_bucket"), std::string::npos);
#if defined(__SANITIZE_ADDRESS__)
  const std::string allocator = "system";  // the sanitizers bring their own
#else
  const std::string allocator = "jemalloc";  // service/CMakeLists.txt
#endif
  EXPECT_NE(metrics.body.find("tpujobs_allocator_info{allocator=\"" + allocator + "\"} 1"),
            std::string::npos);
#if !defined(__SANITIZE_ADDRESS__)
  // Its background threads give freed pages back (base::purge_in_background).
  int purging = 0;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(service().pid()) + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    purging += name == "jemalloc_bg_thd";
  }
  EXPECT_GT(purging, 0);
#endif
  HttpResponse doc = service().get("/openapi.json");
  EXPECT_EQ(doc.status, 200);
  EXPECT_TRUE(doc.json()["paths"].contains("/v1/jobs/{id}/wait"));
}

// A process's nice (/proc/PID/stat, field 19) and the line of its
// /proc/PID/autogroup ("" without autogroup); nullopt when it is gone.
std::optional<std::pair<int, std::string>> priority_of(pid_t pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  if (fields.size() < 17) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/autogroup");
  std::string group;
  std::getline(in, group);
  return std::make_pair(std::stoi(fields[16]), group);
}

// The backends that answer the scheduler leader run at its nice (-10 by
// default), and so do their autogroups (docs/deploy.md, "The scheduler
// leader's priority"); the others are left at the database's, the
// postmaster's. Where the system refuses it, serve says so.
TEST(Service, TheSchedulerLeadersBackendsRunAtItsNice) {
  const pid_t postmaster = service().embedded_postmaster_pid();
  ASSERT_GT(postmaster, 0);
  const auto database = priority_of(postmaster);
  ASSERT_TRUE(database.has_value());
  int backends = 0, raised = 0;
  for (pid_t pid : process_tree(postmaster)) {
    const auto priority = priority_of(pid);
    if (pid == postmaster || !priority) continue;
    ++backends;
    if (priority->first == database->first) continue;
    EXPECT_EQ(-10, priority->first) << "process " << pid;
    if (!priority->second.empty()) {
      EXPECT_NE(std::string::npos, priority->second.find(" nice -10")) << priority->second;
    }
    ++raised;
  }
  if (service().log().find("the scheduler leader's PostgreSQL backends run at the database's "
                           "priority") != std::string::npos) {
    EXPECT_EQ(0, raised);
  } else {
    // The leader's pool opens its first connection before the API listens,
    // the second on demand.
    EXPECT_GE(raised, 1);
    EXPECT_LE(raised, 2);
    EXPECT_LT(raised, backends);
  }
}

TEST(Service, PoolShowsHostsAndAdminActionsChangeHealth) {
  json pool = service().get("/v1/pool").json();
  ASSERT_EQ(pool["hosts"].size(), 4u);
  EXPECT_EQ(pool["total_cores"], 32);
  const std::string host = pool["hosts"][3]["name"];
  EXPECT_EQ(service().post("/v1/pool/hosts/" + host + ":drain").status, 200);
  pool = service().get("/v1/pool").json();
  EXPECT_EQ(pool["hosts"][3]["health"], "draining");
  EXPECT_EQ(service().post("/v1/pool/hosts/" + host + ":recover").status, 200);
  EXPECT_EQ(service().get("/v1/pool").json()["hosts"][3]["health"], "healthy");
  EXPECT_EQ(service().post("/v1/pool/hosts/no-such-host:fail").status, 404);
}

TEST(Service, AFailedHostEndsItsJobWithUnavailable) {
  const std::int64_t id = submit(service(), endless_host_spec("on-a-dying-host"));
  const json job = wait_until(
      service(), id, [](const json& j) { return j["state"] == "RUNNING"; },
      std::chrono::seconds(15));
  ASSERT_EQ(job["state"], "RUNNING");
  const std::string host = job["allocation"]["hosts"][0];
  EXPECT_EQ(service().post("/v1/pool/hosts/" + host + ":fail").status, 200);
  const json done = service().wait_terminal(id, std::chrono::seconds(30));
  EXPECT_EQ(done["state"], "FAILED");
  EXPECT_EQ(done["error"]["type"], "UNAVAILABLE");
  EXPECT_EQ(done["error"]["message"], "failed to connect to all addresses");
  EXPECT_EQ(service().post("/v1/pool/hosts/" + host + ":recover").status, 200);
}

// A standalone leader may place a job submitted just after its last read
// without reading again (docs/deploy.md): every admin change wakes it to
// read. So a job submitted right after hosts are drained, or right after
// a quota is set, is placed by the change.
TEST(Service, JobsSubmittedRightAfterAnAdminsChangeArePlacedByIt) {
  const json pool = service().get("/v1/pool").json();
  ASSERT_EQ(pool["hosts"].size(), 4u);
  std::vector<std::string> hosts;
  for (const json& h : pool["hosts"]) hosts.push_back(h["name"]);
  for (int h = 0; h < 3; ++h)
    ASSERT_EQ(service().post("/v1/pool/hosts/" + hosts[h] + ":drain").status, 200);
  const json spec = endless_host_spec("after-an-admin");
  const std::int64_t first = submit(service(), spec);
  const std::int64_t second = submit(service(), spec);
  auto running = [](const json& j) { return j["state"] == "RUNNING"; };
  const json placed = wait_until(service(), first, running, std::chrono::seconds(30));
  ASSERT_EQ(placed["state"], "RUNNING") << placed.dump();
  EXPECT_EQ(placed["allocation"]["hosts"], json::array({hosts[3]})) << "the one host not drained";
  auto waits_for = [](const std::string& reason) {
    return [reason](const json& j) { return j["pending_reason"] == reason; };
  };
  const json held =
      wait_until(service(), second, waits_for("HostUnhealthy"), std::chrono::seconds(30));
  EXPECT_EQ(held["state"], "QUEUED") << held.dump();
  for (int h = 0; h < 3; ++h)
    ASSERT_EQ(service().post("/v1/pool/hosts/" + hosts[h] + ":recover").status, 200);
  EXPECT_EQ(wait_until(service(), second, running, std::chrono::seconds(30))["state"], "RUNNING");
  // One more pass (the poll's): the leader's last read then follows its
  // last write, and a pass that only a submit wakes may skip the read.
  auto passes = [] {
    const std::string metrics = service().get("/metrics").body;
    const std::string name = "\ntpujobs_scheduler_pass_seconds_count ";
    const std::size_t at = metrics.find(name);
    return json(at == std::string::npos ? -1 : std::stoll(metrics.substr(at + name.size())));
  };
  const std::int64_t passed = passes();
  poll_until(
      passes, [&](const json& n) { return n.get<std::int64_t>() > passed; },
      std::chrono::seconds(30));
  // A quota the two running jobs fill, and a job submitted at once: it waits.
  const std::string quota = "/v1/tenants/" + placed["tenant"].get<std::string>() + "/quota";
  ASSERT_EQ(service().post(quota, R"({"max_cores": 16})").status, 200);
  const std::int64_t third = submit(service(), spec);
  const json waiting = wait_until(service(), third, waits_for("Quota"), std::chrono::seconds(30));
  EXPECT_EQ(waiting["state"], "QUEUED") << waiting.dump();
  EXPECT_EQ(waiting["pending_reason"], "Quota") << waiting.dump();
  ASSERT_EQ(service().post(quota, R"({"max_cores": null})").status, 200);
  EXPECT_EQ(wait_until(service(), third, running, std::chrono::seconds(30))["state"], "RUNNING");
  for (std::int64_t id : {first, second, third}) {
    EXPECT_EQ(service().post("/v1/jobs/" + std::to_string(id) + "/cancel").status, 202);
    EXPECT_EQ(service().wait_terminal(id)["state"], "CANCELLED");
  }
}

TEST(Service, UnknownJobsAre404ProblemJson) {
  HttpResponse r = service().get("/v1/jobs/999999");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.header("content-type"), "application/problem+json");
}

}  // namespace
}  // namespace tpujobs::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tpujobs::testing::Service);
  return RUN_ALL_TESTS();
}
