// What the client makes of a finished (or still running) job: the exit
// code, the `expect` gates checked against its final metrics, and the JUnit
// XML report that CI systems display. Pure functions over the job JSON of
// `GET /v1/jobs/{id}`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tpujobs::client {

bool is_terminal_state(const std::string& state);

// The exit code for a job in `job["state"]`: 0 SUCCEEDED, 1 FAILED,
// 3 CANCELLED; nullopt while it has not ended.
std::optional<int> exit_code_for_job(const nlohmann::json& job);

// One `expect` gate of the spec, checked against the job's final metrics
// with the service's rule (value >= min, value <= max).
struct GateOutcome {
  std::string metric;
  std::optional<double> min;
  std::optional<double> max;
  std::optional<double> value;  // nullopt: the job did not report the metric
  bool passed = false;
  bool skipped = false;  // the job ended (or not yet) before training finished
  std::string message;   // why it failed or was skipped; "" when passed
};

// The gates of job["spec"]["expect"] in metric-name order. A gate is skipped
// (not failed) when the job did not succeed and has no value for it, e.g. a
// job that ran out of HBM never trained, so its accuracy gate did not run.
std::vector<GateOutcome> evaluate_gates(const nlohmann::json& job);

// A JUnit XML document: a <testsuite> named after the job with one
// <testcase> for the job's outcome (a <failure> with the error, its hint and
// `log_tail` when it failed, was cancelled or `timed_out`) and one per gate.
// `elapsed_seconds` is the time the client waited.
std::string junit_report(const nlohmann::json& job, const std::vector<std::string>& log_tail,
                         bool timed_out, double elapsed_seconds);

// A job array's report (a sweep, `tpujobs submit --wait`): one <testcase>
// per child, named by its index and the values the sweep gave it, with its
// final metrics as properties; a <failure> when it did not succeed, a gate
// of its `expect` failed, or `timed_out[i]`. `children` are the children's
// GET /v1/jobs/{id} views in array order.
std::string junit_array_report(std::int64_t array_id, const std::vector<nlohmann::json>& children,
                               const std::vector<bool>& timed_out, double elapsed_seconds);

// Escapes text for XML attribute values and character data.
std::string xml_escape(const std::string& text);

}  // namespace tpujobs::client
