// A restart in the middle of a job that trains until the test ends it:
// graceful (SIGTERM) and a crash (SIGKILL). Either way the job resumes from
// its last checkpoint and trains on until the test cancels it, its log
// sequence has no gap or duplicate, and no core stays held. (That the
// Timer's training time is kept in a checkpoint and counted across a resume
// is TrainerTest.MaxTimeStopsAfterAStepWithAFinalCheckpoint's, on a
// FakeClock: here a max_time would race the first service's stop.)
#include <gtest/gtest.h>

#include <cstdio>

#include "jobs_api.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

void restart_in_the_middle(bool crash) {
  ServiceProcess first;
  ASSERT_EQ(first.start(), "");
  const json spec = restartable_job_spec(crash ? "crash" : "graceful");
  HttpResponse created = first.post("/v1/jobs", spec.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  const std::int64_t id = created.json()["id"];
  // A crash resumes from a checkpoint stored before it: wait until the view
  // shows one. A graceful stop stores one as it stops: stop as soon as the
  // job has trained a few steps (the checkpoint's row reaches the view a
  // telemetry flush later, and on a loaded machine the job can end first).
  const json running = crash ? wait_for_step(first, id, 25) : wait_for_running_step(first, id, 25);
  ASSERT_EQ(running["state"], "RUNNING") << running.dump(2) << first.log();
  std::int64_t resume_at_least = 0;
  if (crash) {
    // Seen once in a clean-clone run: RUNNING at step 203,926 with no
    // checkpoint stored after a minute; the service's log says why next time.
    ASSERT_TRUE(running["last_checkpoint"].is_object())
        << "no checkpoint stored in time: " << running.dump(2) << "\nservice:\n"
        << first.log();
    resume_at_least = running["last_checkpoint"]["step"].get<std::int64_t>();
    first.kill9();
  } else {
    resume_at_least = running["progress"]["step"].get<std::int64_t>();
    ASSERT_EQ(first.stop(), 0) << first.log();
  }

  ServiceProcess::Options options;
  options.state_dir = first.state_dir();
  ServiceProcess second(options);
  ASSERT_EQ(second.start(), "") << second.log();
  // Resumed (its event is written as it starts again), trains on 10 steps
  // past where the first run got to, then is cancelled.
  const json resumed =
      poll_until([&] { return job_view(second, id); },
                 [&](const json& job) {
                   return job["state"] == "RUNNING" && resumed_from_step(second, id) >= 0 &&
                          job["progress"].is_object() &&
                          job["progress"].value("step", std::int64_t{0}) >= resume_at_least + 10;
                 },
                 std::chrono::seconds(300));
  ASSERT_EQ(resumed["state"], "RUNNING") << resumed.dump(2) << second.log();
  ASSERT_EQ(second.post("/v1/jobs/" + std::to_string(id) + "/cancel").status, 202);
  EXPECT_EQ(second.wait_terminal(id, std::chrono::seconds(300))["state"], "CANCELLED");

  // It resumes from the checkpoint the first run reported as stored (a
  // crash) or from the one stored as it stopped (graceful), or a later one.
  EXPECT_GE(resumed_from_step(second, id), resume_at_least)
      << second.get("/v1/jobs/" + std::to_string(id) + "/events").body << "\nfirst run:\n"
      << first.log() << "\nsecond run:\n"
      << second.log();
  EXPECT_GT(expect_contiguous_logs(second, id), 10);
  const json pool = second.get("/v1/pool").json();
  EXPECT_EQ(pool["used_cores"], 0);
  ASSERT_EQ(second.stop(), 0) << second.log();
}

// A cancel answered 202 is stored before the answer: a crash right after it
// does not lose it (the restart ends the job CANCELLED, it never resumes).
TEST(Restart, ACancelAnsweredBeforeACrashIsHonouredByTheRestart) {
  ServiceProcess first;
  ASSERT_EQ(first.start(), "");
  json spec = restartable_job_spec("cancel-then-crash");  // runs until cancelled
  HttpResponse created = first.post("/v1/jobs", spec.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  const std::int64_t id = created.json()["id"];
  const json running = wait_for_running_step(first, id, 25);
  ASSERT_EQ(running["state"], "RUNNING") << running.dump(2) << first.log();
  // A 503 says "try again", and the tpujobs CLI does: the 202 is what must
  // survive the crash. (Each 503 is printed: a busy machine's clean-clone run
  // once answered one here, cause not established.)
  HttpResponse cancel;
  (void)poll_until(
      [&] {
        cancel = first.post("/v1/jobs/" + std::to_string(id) + "/cancel");
        if (cancel.status == 503)
          std::fprintf(stderr, "cancel answered 503: %s\n", cancel.body.c_str());
        return json{{"status", cancel.status}};
      },
      [](const json& r) { return r["status"] != 503; }, std::chrono::seconds(120));
  ASSERT_EQ(cancel.status, 202) << cancel.body << first.log();
  first.kill9();  // before, or while, the run stops and stores its end

  ServiceProcess::Options options;
  options.state_dir = first.state_dir();
  ServiceProcess second(options);
  ASSERT_EQ(second.start(), "") << second.log();
  const json done = second.wait_terminal(id, std::chrono::seconds(300));
  EXPECT_EQ(done["state"], "CANCELLED") << done.dump(2) << second.log();
  const std::string events = second.get("/v1/jobs/" + std::to_string(id) + "/events").body;
  EXPECT_EQ(resumed_from_step(second, id), -1) << "it never ran again: " << events;
  ASSERT_EQ(second.stop(), 0) << second.log();
}

TEST(Restart, GracefulStopResumesFromCheckpoint) { restart_in_the_middle(false); }

TEST(Restart, CrashResumesFromCheckpoint) { restart_in_the_middle(true); }

}  // namespace
}  // namespace tpujobs::testing
