// Ten jobs running at once, each until the test ends it, and a kill -9 in
// the middle: of the service (then a restart on the same state directory),
// or of its embedded PostgreSQL's postmaster (which the service starts again
// by itself, without a restart). Either way every job trains on past where
// it was, with gapless logs and metrics; ended by a cancel, it has exactly
// the parameters of an uninterrupted run of its spec for as many steps (the
// executor is deterministic; the reference runs go on the same service),
// and no core stays held.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "jobs_api.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kJobs = 10;
constexpr int kLogEvery = 20;
constexpr int kCheckpointEvery = 100;
constexpr int kSamples = 40000;
constexpr std::int64_t kStepsPerEpoch = blobs_steps_per_epoch(kSamples);

// One core each, until cancelled. The small model keeps the checkpoints
// small (about 150 kB), so the telemetry writer, which stores them behind
// the training, does not fall far behind ten jobs. Each index has its own
// seed, so its own data, initialisation and final parameters.
json job_spec(int index, const std::string& name) {
  return blobs_job_spec({.name = name,
                         .seed = 100 + index,
                         .epochs = -1,
                         .log_every_n_steps = kLogEvery,
                         .checkpoint_every_n_steps = kCheckpointEvery,
                         .samples = kSamples,
                         .features = 32,
                         .hidden = 128});
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// POST /v1/pool/hosts/{host}:<action> for every host.
void on_every_host(const ServiceProcess& service, const std::string& action) {
  const json pool = service.get("/v1/pool").json();
  ASSERT_TRUE(pool.is_object() && pool["hosts"].size() == 4) << pool.dump();
  for (const json& host : pool["hosts"]) {
    HttpResponse r =
        service.post("/v1/pool/hosts/" + host["name"].get<std::string>() + ":" + action);
    EXPECT_EQ(r.status, 200) << r.body;
  }
}

// Submits spec 0..kJobs-1 named "<prefix>-<index>"; the ids in that order.
// They start together: the pool is drained while they are submitted.
std::vector<std::int64_t> submit_all(const ServiceProcess& service, const std::string& prefix) {
  on_every_host(service, "drain");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < kJobs; ++i) {
    const std::int64_t id = submit(service, job_spec(i, prefix + "-" + std::to_string(i)));
    if (id != 0) ids.push_back(id);
  }
  on_every_host(service, "recover");
  return ids;
}

// The ten jobs of one run, at the moment it is interrupted.
struct TenJobs {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> steps;        // where each was
  std::vector<std::int64_t> checkpoints;  // the step of its newest stored checkpoint
};

// Submits the ten jobs and waits until all are RUNNING at once, each past
// its first checkpoint with a checkpoint stored: the moment to pull the
// plug. Returns "" or what went wrong.
std::string start_ten_jobs(const ServiceProcess& service, const std::string& prefix,
                           TenJobs* jobs) {
  jobs->ids = submit_all(service, prefix);
  if (jobs->ids.size() != static_cast<std::size_t>(kJobs)) return "not all jobs were accepted";
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  json last;
  while (Clock::now() < deadline) {
    jobs->steps.clear();
    jobs->checkpoints.clear();
    bool all = true;
    for (std::int64_t id : jobs->ids) {
      last = job_view(service, id);
      if (!last.is_object()) return "no view of job " + std::to_string(id);
      const std::string state = last.value("state", "");
      if (state == "SUCCEEDED" || state == "FAILED" || state == "CANCELLED") {
        return "job " + std::to_string(id) + " ended (" + state +
               ") before all ran at once, at steps " + join(jobs->steps);
      }
      const json& progress = last["progress"];
      const json& checkpoint = last["last_checkpoint"];
      jobs->steps.push_back(progress.is_object() ? progress["step"].get<std::int64_t>() : 0);
      jobs->checkpoints.push_back(checkpoint.is_object() ? checkpoint["step"].get<std::int64_t>()
                                                         : -1);
      all &= state == "RUNNING" && jobs->steps.back() >= kCheckpointEvery &&
             jobs->checkpoints.back() >= 0;
    }
    if (all) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "the jobs were not all running with a checkpoint in time; last: " + last.dump();
}

// Each job trains on past where it was when interrupted (past its next
// checkpoint); then each is cancelled and its spec trained again,
// uninterrupted, for as many steps: the same parameters and metric series,
// gapless logs.
void expect_same_as_uninterrupted(const ServiceProcess& service, const TenJobs& jobs) {
  for (std::size_t i = 0; i < jobs.ids.size(); ++i) {
    // Past where the run before got to, too: a resumed run rewrites the
    // points recorded past its checkpoint as it trains past them.
    const std::int64_t got_to = std::max(jobs.steps[i], last_metric_step(service, jobs.ids[i]));
    const json past = wait_for_running_step(service, jobs.ids[i], got_to + kCheckpointEvery,
                                            std::chrono::seconds(300));
    ASSERT_EQ(past["state"], "RUNNING") << past.dump(2) << service.log();
  }
  std::vector<EndedJob> ended;
  for (std::int64_t id : jobs.ids) ended.push_back(cancel_and_wait(service, id));
  std::vector<std::int64_t> reference;
  for (std::size_t i = 0; i < jobs.ids.size(); ++i) {
    const json spec = job_spec(static_cast<int>(i), "reference-" + std::to_string(i));
    reference.push_back(submit(service, bounded_to_steps(spec, ended[i].steps)));
  }
  for (std::size_t i = 0; i < jobs.ids.size(); ++i) {
    SCOPED_TRACE("spec " + std::to_string(i) + ": job " + std::to_string(jobs.ids[i]) +
                 ", reference job " + std::to_string(reference[i]));
    expect_same_as_reference(service, jobs.ids[i], ended[i], reference[i], kLogEvery,
                             kStepsPerEpoch, std::chrono::seconds(400));
    EXPECT_GT(expect_contiguous_logs(service, jobs.ids[i]), 10);
    EXPECT_GT(expect_contiguous_logs(service, reference[i]), 10);
  }
}

TEST(KillMany, ServiceKilledWithTenJobsRunning) {
  ServiceProcess first;
  ASSERT_EQ(first.start(), "");
  TenJobs jobs;
  ASSERT_EQ(start_ten_jobs(first, "crashed", &jobs), "") << first.log();
  first.kill9();

  ServiceProcess::Options options;
  options.state_dir = first.state_dir();
  ServiceProcess second(options);
  const auto restarted = Clock::now();
  ASSERT_EQ(second.start(), "") << second.log();
  expect_same_as_uninterrupted(second, jobs);
  for (std::size_t i = 0; i < jobs.ids.size(); ++i) {
    // Not from scratch: from the checkpoint stored before the crash, or a
    // later one that made it to disk before the kill.
    EXPECT_GE(resumed_from_step(second, jobs.ids[i]), jobs.checkpoints[i]) << "job " << jobs.ids[i];
  }
  const double finished_after = seconds_since(restarted);
  EXPECT_EQ(second.get("/v1/pool").json()["used_cores"], 0);
  std::printf(
      "service killed with %d jobs at steps %s (checkpoints stored at %s); after the restart all "
      "%d trained on and matched their %d reference runs within %.1f s\n",
      kJobs, join(jobs.steps).c_str(), join(jobs.checkpoints).c_str(), kJobs, kJobs,
      finished_after);
  EXPECT_EQ(second.stop(), 0) << second.log();
}

TEST(KillMany, EmbeddedPostgresKilledWithTenJobsRunning) {
  ServiceProcess service;
  ASSERT_EQ(service.start(), "");
  TenJobs jobs;
  ASSERT_EQ(start_ten_jobs(service, "survivor", &jobs), "") << service.log();

  const pid_t postmaster = service.embedded_postmaster_pid();
  ASSERT_GT(postmaster, 0);
  const auto killed = Clock::now();
  ASSERT_EQ(kill(postmaster, SIGKILL), 0);

  // The service notices by itself: a new postmaster, and ready again.
  double unready_after = -1;
  double ready_after = -1;
  pid_t restarted = -1;
  while (seconds_since(killed) < 120) {
    const int readyz = service.get("/readyz").status;
    if (readyz == 503 && unready_after < 0) unready_after = seconds_since(killed);
    restarted = service.embedded_postmaster_pid();
    if (readyz == 200 && restarted > 0 && restarted != postmaster) {
      ready_after = seconds_since(killed);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(ready_after, 0) << "the service did not get its database back\n" << service.log();
  EXPECT_TRUE(service.alive()) << "the service itself must not have died";
  // The supervisor reports the comeback once the server took its first
  // connection, which may be a moment after /readyz saw it.
  const std::string back = "is back (pid " + std::to_string(restarted) + ")";
  for (int i = 0; i < 100 && service.log().find(back) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string log = service.log();
  EXPECT_NE(log.find("(pid " + std::to_string(postmaster) + ") was killed by SIGKILL"),
            std::string::npos)
      << log;
  const std::size_t back_at = log.find(back);
  EXPECT_NE(back_at, std::string::npos) << log;
  const std::string back_line =
      back_at == std::string::npos ? "" : log.substr(back_at, log.find('\n', back_at) - back_at);

  expect_same_as_uninterrupted(service, jobs);
  for (std::int64_t id : jobs.ids) {
    // They trained through it: never stopped, requeued and resumed.
    EXPECT_EQ(resumed_from_step(service, id), -1) << "job " << id;
  }
  EXPECT_EQ(service.get("/v1/pool").json()["used_cores"], 0);
  std::printf(
      "postmaster killed with %d jobs at steps %s: /readyz 503 after %.2f s, ready again with a "
      "new postmaster after %.2f s (supervisor: \"%s\"); all jobs trained on and matched\n",
      kJobs, join(jobs.steps).c_str(), unready_after, ready_after, back_line.c_str());

  // The normal shutdown is unchanged: the restarted server stops with it.
  EXPECT_EQ(service.stop(), 0) << service.log();
  EXPECT_NE(kill(restarted, 0), 0) << "the restarted postmaster outlived the service";
}

}  // namespace
}  // namespace tpujobs::testing
