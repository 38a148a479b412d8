// Workload management end to end, through HTTP, in both set-ups: one
// `tpujobs serve` (JobManager holds the jobs), and a replica with an agent on
// one PostgreSQL (the scheduler leader holds them). Dependencies (Slurm's
// afterok / afternotok / afterany) and start deadlines. Every wait is on a
// state, with a generous deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "../client/client_process.h"
#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "tests/support/test_cluster.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

// A job that runs until cancelled (max_epochs -1), through a wide layer.
json long_job(const std::string& name) {
  BlobsJob spec;
  spec.name = name;
  spec.epochs = -1;
  spec.hidden = 1024;
  spec.log_every_n_steps = 25;
  spec.checkpoint_every_n_steps = 25;
  return blobs_job_spec(spec);
}

json depending(json spec, std::int64_t on, const std::string& condition) {
  spec["depends_on"] = json::array({{{"job", on}, {"condition", condition}}});
  return spec;
}

// The time of the job's first move to `state` (ISO text, comparable as text).
std::string first_event_at(const ServiceProcess& service, std::int64_t id,
                           const std::string& state) {
  for (const json& e : job_events(service, id)) {
    if (e["to"] == state) return e["at"].get<std::string>();
  }
  return "";
}

// The scenario both set-ups must pass.
void dependencies_hold_and_release(const ServiceProcess& service) {
  const std::int64_t upstream = submit(service, long_job("upstream"));
  wait_until(service, upstream, [](const json& j) { return j["state"] == "RUNNING"; });
  const std::int64_t on_success =
      submit(service, depending(short_job_spec("on-success"), upstream, "succeeded"));
  const std::int64_t on_failure =
      submit(service, depending(short_job_spec("on-failure"), upstream, "failed"));
  const std::int64_t on_end =
      submit(service, depending(short_job_spec("on-end"), upstream, "finished"));
  const std::int64_t chained =
      submit(service, depending(short_job_spec("chained"), on_end, "succeeded"));

  // All wait, saying for what.
  for (std::int64_t id : {on_success, on_failure, on_end, chained}) {
    json waiting =
        wait_until(service, id, [](const json& j) { return j["pending_reason"] == "Dependency"; });
    EXPECT_EQ(waiting["state"], "QUEUED") << waiting.dump();
    EXPECT_EQ(waiting["pending_reason"], "Dependency") << waiting.dump();
    // Not in the queue yet: no place in it, in one process as in a cluster.
    EXPECT_TRUE(waiting["queue_position"].is_null()) << waiting.dump();
  }
  json detail =
      wait_until(service, on_success, [](const json& j) { return j.contains("pending_detail"); });
  EXPECT_EQ(
      detail.value("pending_detail", ""),
      "job " + std::to_string(upstream) + " has not finished (RUNNING); waits for it to succeed")
      << detail.dump();

  // Cancelled upstream: "failed" and "finished" are met, "succeeded" never can be.
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(upstream) + "/cancel").status, 202);
  const json cancelled = service.wait_terminal(upstream);
  ASSERT_EQ(cancelled["state"], "CANCELLED");

  const json never = service.wait_terminal(on_success);
  EXPECT_EQ(never["state"], "CANCELLED") << never.dump();
  ASSERT_TRUE(never["error"].is_object()) << never.dump();
  EXPECT_EQ(never["error"].value("reason", ""), "DependencyNeverSatisfied") << never.dump();
  EXPECT_NE(
      never["error"].value("message", "").find("ended CANCELLED; the job needed it to succeed"),
      std::string::npos)
      << never.dump();
  EXPECT_TRUE(never["started_at"].is_null()) << never.dump();

  for (std::int64_t id : {on_failure, on_end, chained}) {
    const json done = service.wait_terminal(id);
    EXPECT_EQ(done["state"], "SUCCEEDED") << done.dump();
  }
  // None started before what it waited for had ended.
  EXPECT_GE(first_event_at(service, on_failure, "STARTING"),
            cancelled["finished_at"].get<std::string>());
  EXPECT_GE(first_event_at(service, on_end, "STARTING"),
            cancelled["finished_at"].get<std::string>());
  EXPECT_GE(first_event_at(service, chained, "STARTING"),
            job_view(service, on_end)["finished_at"].get<std::string>());
}

void bad_dependencies_are_422(const ServiceProcess& service) {
  HttpResponse r =
      service.post("/v1/jobs", depending(short_job_spec("nowhere"), 999999, "succeeded").dump());
  ASSERT_EQ(r.status, 422) << r.body;
  const json body = r.json();
  ASSERT_EQ(body["errors"].size(), 1u) << r.body;
  EXPECT_EQ(body["errors"][0]["field"], "depends_on[0].job");
  EXPECT_EQ(body["errors"][0]["message"], "job 999999 does not exist");
  json bad_condition = short_job_spec("bad");
  bad_condition["depends_on"] = json::array({{{"job", 1}, {"condition", "afterok"}}});
  HttpResponse c = service.post("/v1/jobs", bad_condition.dump());
  ASSERT_EQ(c.status, 422) << c.body;
  EXPECT_EQ(c.json()["errors"][0]["field"], "depends_on[0].condition") << c.body;
}

void start_deadline_cancels(const ServiceProcess& service) {
  // Every core taken; a job that needs a whole host cannot start in time.
  json blocker = long_job("blocker");
  blocker["trainer"]["devices"] = 8;
  const std::int64_t held = submit(service, blocker);
  wait_until(service, held, [](const json& j) { return j["state"] == "RUNNING"; });
  json late = short_job_spec("late");
  late["trainer"]["devices"] = 8;
  late["start_by"] = "2s";
  const std::int64_t id = submit(service, late);
  const json done = service.wait_terminal(id);
  EXPECT_EQ(done["state"], "CANCELLED") << done.dump();
  ASSERT_TRUE(done["error"].is_object()) << done.dump();
  EXPECT_EQ(done["error"].value("reason", ""), "StartDeadlineExceeded") << done.dump();
  EXPECT_TRUE(done["started_at"].is_null()) << done.dump();
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(held) + "/cancel").status, 202);
  service.wait_terminal(held);
}

// "2026-11-23T21:29:01.537Z" -> seconds since the epoch.
double epoch_seconds(const std::string& text) {
  std::tm utc{};
  strptime(text.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &utc);
  return static_cast<double>(timegm(&utc)) + std::stod("0" + text.substr(19, 4));
}

// Every job so far ran once and has ended: GET /v1/usage must equal the sum
// of cores x (finished_at - started_at) over the jobs, and say so in CSV and
// through `tpujobs usage`.
void usage_matches_the_jobs(const ServiceProcess& service) {
  const json listed = service.get("/v1/jobs?limit=500").json();
  double expected = 0;
  for (const json& job : listed["jobs"]) {
    ASSERT_NE(job["state"], "RUNNING") << job.dump();
    if (job["started_at"].is_null() || job["finished_at"].is_null()) continue;
    expected += job["resolved"]["cores"].get<double>() *
                (epoch_seconds(job["finished_at"]) - epoch_seconds(job["started_at"]));
  }
  ASSERT_GT(expected, 0);
  const json usage = service.get("/v1/usage?from=2h").json();
  ASSERT_EQ(usage["groups"].size(), 1u) << usage.dump();
  EXPECT_EQ(usage["groups"][0]["group"], "default");
  const double measured = usage["total_core_seconds"].get<double>();
  // The views' times are in milliseconds; the events' in microseconds.
  EXPECT_NEAR(measured, expected, 0.01 * expected + 1.0) << usage.dump();
  EXPECT_NEAR(usage["groups"][0]["by_generation"]["v3"].get<double>(), measured, 1e-6)
      << usage.dump();

  HttpResponse csv = service.get("/v1/usage?from=2h&format=csv");
  ASSERT_EQ(csv.status, 200);
  EXPECT_EQ(csv.body.rfind("group,generation,jobs,core_seconds\r\ndefault,v3,", 0), 0u) << csv.body;
  EXPECT_EQ(service.get("/v1/usage?from=tomorrow").status, 400);

  const std::filesystem::path directory = db::testing::make_temp_dir("tpujobs-usage-");
  const ClientRun run = run_client_process(
      {"usage", "--from", "2h"},
      {{"TPUJOBS_URL", "http://127.0.0.1:" + std::to_string(service.port())}}, directory);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("TENANT"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("default"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("TPU core-seconds"), std::string::npos) << run.out;
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
}

// A 2 x 2 sweep through `tpujobs submit --wait --junit`: one job array, a
// test case per child, the children listed by GET /v1/jobs?array=ID.
void sweep_runs_as_an_array(const ServiceProcess& service) {
  json spec = short_job_spec("grid");
  spec["sweep"] = {{"optimizer.lr", {0.001, 0.01}}, {"trainer.seed", {1, 2}}};
  spec["expect"] = {{"val_accuracy", {{"min", 0.0}}}};
  const std::filesystem::path directory = db::testing::make_temp_dir("tpujobs-sweep-");
  {
    std::ofstream file(directory / "grid.json");
    file << spec.dump(2);
  }
  const ClientRun run = run_client_process(
      {"submit", "grid.json", "--wait", "--junit", "report.xml", "--timeout", "5m"},
      {{"TPUJOBS_URL", "http://127.0.0.1:" + std::to_string(service.port())}}, directory);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string report = file_text(directory / "report.xml");
  EXPECT_NE(report.find(R"(tests="4" failures="0")"), std::string::npos) << report;
  for (const char* child : {"child 0 ", "child 1 ", "child 2 ", "child 3 "}) {
    EXPECT_NE(report.find(child), std::string::npos) << child << "\n" << report;
  }
  const std::size_t at = run.err.find("submitted job array ");
  ASSERT_NE(at, std::string::npos) << run.err;
  const std::int64_t array = std::stoll(run.err.substr(at + 20));

  const json listed = service.get("/v1/jobs?array=" + std::to_string(array)).json();
  ASSERT_EQ(listed["jobs"].size(), 4u) << listed.dump();
  std::set<std::string> combinations;
  for (const json& child : listed["jobs"]) {
    EXPECT_EQ(child["state"], "SUCCEEDED") << child.dump();
    EXPECT_EQ(child["array"]["id"], array) << child.dump();
    EXPECT_TRUE(child["metrics"].contains("val_accuracy")) << child.dump();
    combinations.insert(child["array"]["values"].dump());
  }
  EXPECT_EQ(combinations.size(), 4u);
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);

  // One bad child refuses the whole sweep, naming it.
  json bad = short_job_spec("grid-bad");
  bad["sweep"] = {{"trainer.devices", {1, 3}}};
  HttpResponse refused = service.post("/v1/jobs", bad.dump());
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(refused.json()["errors"][0]["field"], "trainer.devices") << refused.body;
  EXPECT_NE(refused.json()["errors"][0]["message"].get<std::string>().find("sweep child 1"),
            std::string::npos);
}

TEST(Workload, SweepsDependenciesStartDeadlinesAndBadInput) {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  bad_dependencies_are_422(service);
  sweep_runs_as_an_array(service);
  dependencies_hold_and_release(service);
  start_deadline_cancels(service);
  usage_matches_the_jobs(service);
  // A held job survives a restart, still held.
  const std::int64_t upstream = submit(service, long_job("upstream-2"));
  const std::int64_t held =
      submit(service, depending(short_job_spec("held"), upstream, "finished"));
  wait_until(service, held, [](const json& j) { return j["pending_reason"] == "Dependency"; });
  ASSERT_EQ(service.stop(), 0);
  ASSERT_EQ(service.start(), "");
  json again =
      wait_until(service, held, [](const json& j) { return j["pending_reason"] == "Dependency"; });
  EXPECT_EQ(again["pending_reason"], "Dependency") << again.dump();
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(upstream) + "/cancel").status, 202);
  EXPECT_EQ(service.wait_terminal(held)["state"], "SUCCEEDED");
}

TEST(WorkloadRetention, FinishedJobsLoseTheirLogsAndMetricsButKeepTheirRows) {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  options.extra_args = {"--retention", "2s"};
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  const std::int64_t running = submit(service, long_job("running"));
  const std::int64_t finished = submit(service, short_job_spec("finished"));
  ASSERT_EQ(service.wait_terminal(finished)["state"], "SUCCEEDED");
  const std::string logs = "/v1/jobs/" + std::to_string(finished) + "/logs";
  const std::string metrics = "/v1/jobs/" + std::to_string(finished) + "/metrics";
  const json purged =
      poll_until([&] { return service.get(logs).json(); },
                 [](const json& l) { return l.contains("lines") && l["lines"].empty(); });
  EXPECT_TRUE(purged.contains("lines") && purged["lines"].empty()) << purged.dump();
  EXPECT_TRUE(service.get(metrics).json()["points"].empty());
  const json row = job_view(service, finished);
  EXPECT_EQ(row["state"], "SUCCEEDED") << row.dump();
  EXPECT_TRUE(row["result"].is_object()) << row.dump();
  // A running job keeps everything.
  wait_for_step(service, running, 25);
  EXPECT_FALSE(
      service.get("/v1/jobs/" + std::to_string(running) + "/logs").json()["lines"].empty());
  EXPECT_NE(service.log().find("retention: purged the outputs of"), std::string::npos)
      << service.log();
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(running) + "/cancel").status, 202);
  service.wait_terminal(running);
}

}  // namespace
}  // namespace tpujobs::testing
