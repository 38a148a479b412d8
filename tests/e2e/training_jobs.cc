#include "training_jobs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "jobs_api.h"

namespace tpujobs::testing {

using nlohmann::json;

json blobs_job_spec(const BlobsJob& job) {
  return {
      {"name", job.name},
      {"trainer",
       {{"devices", job.devices},
        {"max_epochs", job.epochs},
        {"log_every_n_steps", job.log_every_n_steps},
        {"checkpoint_every_n_steps", job.checkpoint_every_n_steps},
        {"seed", job.seed}}},
      {"model",
       {{"layers", json::array({{{"type", "linear"}, {"out", job.hidden}},
                                {{"type", "relu"}},
                                {{"type", "linear"}, {"out", 4}}})}}},
      {"data",
       {{"dataset",
         {{"synthetic", "blobs"}, {"n", job.samples}, {"features", job.features}, {"classes", 4}}},
        {"batch_size", 32}}},
      {"optimizer", {{"type", "adam"}, {"lr", 0.001}}}};
}

json restartable_job_spec(const std::string& name) {
  return blobs_job_spec({.name = name,
                         .devices = 8,
                         .epochs = -1,
                         .log_every_n_steps = 5,
                         .checkpoint_every_n_steps = 10,
                         .samples = 20000,
                         .features = 64});
}

json short_job_spec(const std::string& name) {
  return blobs_job_spec({.name = name, .samples = 320});
}

json long_job_spec(const std::string& name, int seed, int steps_per_epoch) {
  json j = blobs_job_spec({.name = name,
                           .seed = seed,
                           .epochs = -1,
                           .log_every_n_steps = steps_per_epoch,
                           .checkpoint_every_n_steps = steps_per_epoch,
                           .samples = steps_per_epoch * 32 * 5 / 4,  // 80% train
                           .hidden = 1024});
  j["max_retries"] = 2;
  return j;
}

namespace {

bool running_at(const json& job, std::int64_t step) {
  return job["state"] == "RUNNING" && job["progress"].is_object() &&
         job["progress"].value("step", std::int64_t{0}) >= step;
}

}  // namespace

json wait_for_step(const ServiceProcess& service, std::int64_t id, std::int64_t step,
                   std::chrono::seconds timeout) {
  return wait_until(
      service, id,
      [step](const json& job) {
        return running_at(job, step) && job["last_checkpoint"].is_object();
      },
      timeout);
}

json wait_for_running_step(const ServiceProcess& service, std::int64_t id, std::int64_t step,
                           std::chrono::seconds timeout) {
  return wait_until(
      service, id, [step](const json& job) { return running_at(job, step); }, timeout);
}

std::int64_t resumed_from_step(const ServiceProcess& service, std::int64_t id) {
  const json events = job_events(service, id);
  const std::string prefix = "Resumed from the checkpoint at step ";
  std::int64_t step = -1;
  if (!events.is_array()) return step;
  for (const json& e : events) {
    const std::string reason = e["reason"];
    if (reason.starts_with(prefix)) step = std::stoll(reason.substr(prefix.size()));
  }
  return step;
}

std::int64_t expect_contiguous_logs(const ServiceProcess& service, std::int64_t id) {
  const HttpResponse response = service.get("/v1/jobs/" + std::to_string(id) + "/logs?limit=10000");
  EXPECT_EQ(response.status, 200) << response.body;
  const json logs = response.json();
  std::int64_t expected = 1;
  if (!logs.is_object() || !logs["lines"].is_array()) return 0;
  for (const json& line : logs["lines"]) {
    EXPECT_EQ(line["seq"], expected)
        << "job " << id << ": log sequence has a gap or a duplicate before " << line.dump();
    if (line["seq"] != expected) return 0;
    ++expected;
  }
  return expected - 1;
}

std::int64_t last_metric_step(const ServiceProcess& service, std::int64_t id) {
  std::int64_t last = 0;
  for (std::int64_t after = 0;;) {
    const HttpResponse response =
        service.get("/v1/jobs/" + std::to_string(id) + "/metrics?after=" + std::to_string(after));
    if (response.status != 200) return last;
    const json page = response.json();
    if (!page["points"].is_array() || page["points"].empty()) return last;
    for (const json& point : page["points"])
      last = std::max(last, point.value("step", std::int64_t{0}));
    after = page["next_after"].get<std::int64_t>();
  }
}

EndedJob cancel_and_wait(const ServiceProcess& service, std::int64_t id,
                         std::chrono::seconds timeout) {
  const HttpResponse cancelled = service.post("/v1/jobs/" + std::to_string(id) + "/cancel");
  EXPECT_EQ(cancelled.status, 202) << cancelled.body;
  json done = service.wait_terminal(id, timeout);
  EndedJob ended;
  ended.state = done.value("state", "");
  if (done["result"].is_object()) {
    ended.steps = done["result"].value("steps", std::int64_t{-1});
    ended.parameters_digest = done["result"].value("parameters_digest", "");
  }
  EXPECT_EQ(ended.state, "CANCELLED") << done.dump(2);
  EXPECT_GT(ended.steps, 0) << "job " << id << ": no result after its cancel: " << done.dump(2);
  return ended;
}

json bounded_to_steps(json spec, std::int64_t steps) {
  spec["trainer"]["max_epochs"] = -1;
  spec["trainer"]["max_steps"] = steps;
  spec["name"] = spec.value("name", "job") + "-reference";
  return spec;
}

void expect_same_as_reference(const ServiceProcess& service, std::int64_t id, const EndedJob& ended,
                              std::int64_t reference, std::int64_t log_every,
                              std::int64_t steps_per_epoch, std::chrono::seconds timeout) {
  json uninterrupted = service.wait_terminal(reference, timeout);
  ASSERT_EQ(uninterrupted["state"], "SUCCEEDED") << uninterrupted.dump(2);
  EXPECT_EQ(uninterrupted["result"]["steps"], ended.steps);
  EXPECT_EQ(ended.parameters_digest, uninterrupted["result"]["parameters_digest"])
      << "job " << id << " ended with other parameters than an uninterrupted run of " << ended.steps
      << " steps";
  const std::vector<std::string> series =
      expect_gapless_metric_steps(service, id, log_every, steps_per_epoch, ended.steps, false);
  std::vector<std::string> reference_series = expect_gapless_metric_steps(
      service, reference, log_every, steps_per_epoch, ended.steps, true);
  if (ended.steps % steps_per_epoch != 0 && !reference_series.empty())
    reference_series.pop_back();  // the validation the cancel did not run
  EXPECT_EQ(first_difference(series, reference_series), "")
      << "job " << id << ": its metric series differs from the uninterrupted run's";
}

std::vector<std::string> expect_gapless_metrics(const ServiceProcess& service, std::int64_t id,
                                                std::int64_t log_every_n_steps, std::int64_t epochs,
                                                std::int64_t total_steps) {
  EXPECT_EQ(total_steps % epochs, 0) << "the check assumes equal epochs";
  return expect_gapless_metric_steps(service, id, log_every_n_steps, total_steps / epochs,
                                     total_steps, false);
}

std::vector<std::string> expect_gapless_metric_steps(const ServiceProcess& service, std::int64_t id,
                                                     std::int64_t log_every_n_steps,
                                                     std::int64_t steps_per_epoch,
                                                     std::int64_t total_steps,
                                                     bool final_validation) {
  std::vector<std::string> expected;
  for (std::int64_t step = 1; step <= total_steps; ++step) {
    if (step % log_every_n_steps == 0)
      expected.push_back("step " + std::to_string(step) + " train");
    if (step % steps_per_epoch == 0 || (final_validation && step == total_steps))
      expected.push_back("step " + std::to_string(step) + " validation");
  }

  // Page after page (the service answers up to 10,000 points a request).
  json points = json::array();
  for (std::int64_t after = 0;;) {
    const HttpResponse response =
        service.get("/v1/jobs/" + std::to_string(id) + "/metrics?after=" + std::to_string(after));
    EXPECT_EQ(response.status, 200) << response.body;
    if (response.status != 200) break;
    const json page = response.json();
    if (page["points"].empty()) break;
    for (const json& point : page["points"]) points.push_back(point);
    after = page["next_after"].get<std::int64_t>();
  }
  std::vector<std::string> kinds;
  std::vector<std::string> series;
  std::int64_t seq = 1;
  for (const json& point : points) {
    EXPECT_EQ(point["seq"], seq++)
        << "job " << id << ": metric seq has a gap or a duplicate at " << point.dump();
    const json& values = point["values"];
    const std::string step = std::to_string(point["step"].get<std::int64_t>());
    const std::string prefix =
        "step " + step + " epoch " + std::to_string(point["epoch"].get<int>());
    if (values.contains("loss")) {
      kinds.push_back("step " + step + " train");
      series.push_back(prefix + " train loss=" + values["loss"].dump());
    } else if (values.contains("val_loss")) {
      kinds.push_back("step " + step + " validation");
      series.push_back(prefix + " validation val_loss=" + values["val_loss"].dump() +
                       " val_accuracy=" + values.value("val_accuracy", json()).dump());
    } else {
      kinds.push_back("step " + step + " unknown " + values.dump());
      series.push_back(kinds.back());
    }
  }
  EXPECT_EQ(first_difference(kinds, expected), "")
      << "job " << id << ": the metric series is not one point per " << log_every_n_steps
      << " steps plus one per epoch (" << kinds.size() << " points, " << expected.size()
      << " expected)";
  return series;
}

std::string join(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::int64_t v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

std::string first_difference(const std::vector<std::string>& actual,
                             const std::vector<std::string>& expected) {
  if (actual == expected) return "";
  std::size_t line = 0;
  while (line < actual.size() && line < expected.size() && actual[line] == expected[line]) ++line;
  auto at = [line](const std::vector<std::string>& lines) {
    return line < lines.size() ? lines[line] : "(none)";
  };
  return "line " + std::to_string(line + 1) + ": '" + at(actual) + "' vs '" + at(expected) + "'";
}

}  // namespace tpujobs::testing
