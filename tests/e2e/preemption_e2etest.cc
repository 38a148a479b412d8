// Preemption end to end (issue 17), through HTTP: on a full pool a waiting
// job of higher priority stops a running one of lower priority at a
// checkpoint; the victim waits with pending_reason Preempted, resumes from
// its checkpoint and, ended by the test, has the parameters and metrics of
// an uninterrupted run of as many steps, without spending a retry; both jobs' events name the
// other; a job with "preemptible": false is never stopped. Then fair share: of two tenants'
// equal-priority jobs, the one of the tenant that used the pool less starts
// first. Every wait is on a state or a step, with a generous deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

// The reasons of the job's events, one per line.
// A job on the whole v3-8 host that runs until cancelled.
json host_long_job(const std::string& name) {
  return blobs_job_spec({.name = name,
                         .devices = 8,
                         .epochs = -1,
                         .log_every_n_steps = 5,
                         .checkpoint_every_n_steps = 10,
                         .samples = 4000});
}

// The victim: on the whole host, checkpointing every 10 steps, training
// until the test cancels it (64 wide steps an epoch: 16,384 training
// samples, 2,048 a core).
constexpr std::int64_t kVictimLogEvery = 5;
constexpr std::int64_t kVictimStepsPerEpoch = 64;
json victim_job(const std::string& name) {
  return blobs_job_spec({.name = name,
                         .devices = 8,
                         .epochs = -1,
                         .log_every_n_steps = kVictimLogEvery,
                         .checkpoint_every_n_steps = 10,
                         .samples = 20480,
                         .features = 64,
                         .hidden = 1024});
}

json host_short_job(const std::string& name, int priority) {
  json spec = blobs_job_spec({.name = name, .devices = 8, .samples = 2560});
  spec["priority"] = priority;
  return spec;
}

void non_preemptible_job_is_never_preempted(const ServiceProcess& service) {
  json fixed_spec = host_long_job("fixed");
  fixed_spec["preemptible"] = false;
  const std::int64_t fixed = submit(service, fixed_spec);
  const json running = wait_for_step(service, fixed, 10);
  ASSERT_EQ(running["state"], "RUNNING") << running.dump();
  const std::int64_t high = submit(service, host_short_job("high-waits", 5));
  const json waiting = wait_until(service, high, [](const json& j) {
    return j["pending_reason"] == "Resources" && j.contains("priority_parts");
  });
  EXPECT_EQ(waiting["state"], "QUEUED") << waiting.dump();
  EXPECT_EQ(waiting["pending_reason"], "Resources") << waiting.dump();
  EXPECT_EQ(waiting["priority_parts"]["base"], 5) << waiting.dump();
  EXPECT_GT(waiting["priority_parts"]["fair_share"].get<double>(), 0) << waiting.dump();
  // The pass that found it waiting would have asked the fixed job to stop at
  // its next step: 60 steps later it still runs, never requeued.
  const std::int64_t step = job_view(service, fixed)["progress"]["step"].get<std::int64_t>();
  const json later = wait_for_step(service, fixed, step + 60);
  // Seen once in a clean-clone run: the progress read back below the step
  // read before (1045, then 985 for a minute) while checkpoints went on;
  // the events and the service's log say what happened next time.
  const std::string story =
      "\nevents:\n" + event_reasons(service, fixed) + "\nservice:\n" + service.log();
  EXPECT_EQ(later["state"], "RUNNING") << later.dump() << story;
  EXPECT_GE(later["progress"]["step"].get<std::int64_t>(), step + 60) << later.dump() << story;
  EXPECT_EQ(event_reasons(service, fixed).find("Preempted"), std::string::npos)
      << event_reasons(service, fixed);
  EXPECT_EQ(job_view(service, high)["state"], "QUEUED");
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(fixed) + "/cancel").status, 202);
  EXPECT_EQ(service.wait_terminal(fixed)["state"], "CANCELLED");
  EXPECT_EQ(service.wait_terminal(high)["state"], "SUCCEEDED");
}

// The preemptor runs until cancelled, so that the service (the replica that
// leads, in a cluster) restarts while the victim waits preempted.
void higher_priority_preempts_and_the_victim_resumes(ServiceProcess& service) {
  const std::int64_t low = submit(service, victim_job("low"));
  // The victim stops at a checkpoint of its own: no need to wait for one.
  const json low_running = wait_for_running_step(service, low, 20);
  ASSERT_EQ(low_running["state"], "RUNNING") << low_running.dump() << "\n"
                                             << event_reasons(service, low);
  json high_spec = host_long_job("high");
  high_spec["priority"] = 5;
  const std::int64_t high = submit(service, high_spec);

  const json preempted =
      wait_until(service, low, [](const json& j) { return j["pending_reason"] == "Preempted"; });
  EXPECT_EQ(preempted["state"], "QUEUED") << preempted.dump();
  EXPECT_EQ(preempted["pending_reason"], "Preempted") << preempted.dump();
  EXPECT_EQ(preempted.value("preempted_by", 0), high) << preempted.dump();
  EXPECT_EQ(preempted.value("pending_detail", ""),
            "preempted by job " + std::to_string(high) + "; resumes from its last checkpoint")
      << preempted.dump();

  // Stored: after a restart it still waits, preempted, behind the preemptor.
  ASSERT_EQ(wait_for_step(service, high, 10)["state"], "RUNNING");
  ASSERT_EQ(service.stop(), 0);
  ASSERT_EQ(service.start(), "");
  // Read at once, the stored reason was once HostUnhealthy (a clean-clone
  // run under load; not reproduced since, its cause not established: a
  // pass that found the agent's heartbeat late before the stop is one): the
  // new leader's first pass writes its own reason, and that is what counts.
  const json again = wait_until(service, low, [](const json& j) {
    return j["state"] != "QUEUED" || j["pending_reason"] == "Preempted";
  });
  EXPECT_EQ(again["state"], "QUEUED") << again.dump();
  EXPECT_EQ(again["pending_reason"], "Preempted") << again.dump();
  EXPECT_EQ(again.value("preempted_by", 0), high) << again.dump();
  ASSERT_EQ(wait_for_step(service, high, 20)["state"], "RUNNING");
  EXPECT_EQ(job_view(service, low)["state"], "QUEUED");
  ASSERT_EQ(service.post("/v1/jobs/" + std::to_string(high) + "/cancel").status, 202);

  EXPECT_EQ(service.wait_terminal(high)["state"], "CANCELLED");
  // The victim resumes from its checkpoint and trains on past it; then the
  // test ends it and trains its spec again, uninterrupted, for as many steps.
  const json resumed = poll_until(
      [&] { return job_view(service, low); },
      [&](const json& j) { return j["state"] == "RUNNING" && resumed_from_step(service, low) > 0; },
      std::chrono::seconds(300));
  ASSERT_EQ(resumed["state"], "RUNNING") << resumed.dump() << event_reasons(service, low);
  const std::int64_t resumed_at = resumed_from_step(service, low);
  EXPECT_GT(resumed_at, 0) << "it should resume from its checkpoint";
  ASSERT_EQ(wait_for_running_step(service, low, resumed_at + 10)["state"], "RUNNING");
  const EndedJob ended = cancel_and_wait(service, low);
  EXPECT_EQ(job_view(service, low)["attempt"], 0) << "a preemption is not a failed attempt";
  const std::int64_t reference = submit(service, bounded_to_steps(victim_job("low"), ended.steps));
  expect_same_as_reference(service, low, ended, reference, kVictimLogEvery, kVictimStepsPerEpoch);

  const std::string low_events = event_reasons(service, low);
  EXPECT_NE(low_events.find("Preempted by job " + std::to_string(high) +
                            "; requeued to resume from its last checkpoint"),
            std::string::npos)
      << low_events;
  const std::string high_events = event_reasons(service, high);
  EXPECT_NE(high_events.find("Preempted job " + std::to_string(low) + " to start"),
            std::string::npos)
      << high_events;
}

// A standalone serve is a one-member cluster (its leader marks the victim,
// its agent stops and requeues it): the behaviour has this one test.
TEST(Preemption, HigherPriorityPreemptsNonPreemptibleNever) {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");
  non_preemptible_job_is_never_preempted(service);
  higher_priority_preempts_and_the_victim_resumes(service);
}

// Fair share in one process: tenant a has used the host, tenant b not; a
// queues a job, then b: b's starts first, and the views show the factors.
TEST(FairShare, TheTenantThatUsedLessGoesFirst) {
  ServiceProcess::Options options;
  options.pool = "v3-8";
  ServiceProcess service(options);
  const Headers a = {{"Authorization", "Bearer " + create_token(service, "team-a", "user")}};
  const Headers b = {{"Authorization", "Bearer " + create_token(service, "team-b", "user")}};
  ASSERT_EQ(service.start(), "");
  auto wait_for = [&](const Headers& who, std::int64_t id, auto done) {
    return wait_until(service, id, done, std::chrono::seconds(120), who);
  };
  auto ended = [](const json& j) {
    return j["state"] == "SUCCEEDED" || j["state"] == "FAILED" || j["state"] == "CANCELLED";
  };

  // a uses the host.
  const std::int64_t used = submit(service, host_short_job("a-used", 0), a);
  ASSERT_EQ(wait_for(a, used, ended)["state"], "SUCCEEDED");
  // A blocker holds the host while both queue, a first.
  const std::int64_t blocker = submit(service, host_long_job("a-blocker"), a);
  ASSERT_EQ(wait_for(a, blocker, [](const json& j) { return j["state"] == "RUNNING"; })["state"],
            "RUNNING");
  const std::int64_t first = submit(service, host_short_job("a-queued", 0), a);
  const std::int64_t second = submit(service, host_short_job("b-queued", 0), b);
  // The factors are re-read from the stored usage within seconds.
  const json b_view = wait_for(b, second, [](const json& j) {
    return j["queue_position"] == 1 && j["priority_parts"]["fair_share"] == 1.0;
  });
  EXPECT_EQ(b_view["queue_position"], 1) << b_view.dump();
  const json a_view = job_view(service, first, a);
  EXPECT_EQ(a_view["queue_position"], 2) << a_view.dump();
  EXPECT_LT(a_view["priority_parts"]["fair_share"].get<double>(), 1.0) << a_view.dump();
  EXPECT_LT(a_view["priority_parts"]["effective"].get<double>(),
            b_view["priority_parts"]["effective"].get<double>());

  ASSERT_EQ(
      http(service.port(), "POST", "/v1/jobs/" + std::to_string(blocker) + "/cancel", "", a).status,
      202);
  const json b_done = wait_for(b, second, ended);
  const json a_done = wait_for(a, first, ended);
  ASSERT_EQ(b_done["state"], "SUCCEEDED") << b_done.dump();
  ASSERT_EQ(a_done["state"], "SUCCEEDED") << a_done.dump();
  EXPECT_GE(a_done["started_at"].get<std::string>(), b_done["finished_at"].get<std::string>())
      << "b's job should have gone first";
}

}  // namespace
}  // namespace tpujobs::testing
