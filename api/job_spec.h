// The job spec (DESIGN §3): a strict parser from JSON that reports every
// problem at once, each with the JSON path of its field.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/notify.h"
#include "api/problem.h"
#include "api/resolution.h"
#include "base/result.h"
#include "executor/spec.h"
#include "lightning/resolve.h"
#include "scheduler/dependencies.h"

namespace tpujobs::api {

struct JobSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  int priority = 0;
  int max_retries = 0;
  // Workload fields (DESIGN §3). Jobs this one waits for: each names an
  // earlier job (the service checks that it exists and is the tenant's).
  std::vector<scheduler::Dependency> depends_on;
  // Not started this long after its submit: CANCELLED, StartDeadlineExceeded.
  std::optional<std::chrono::milliseconds> start_by;
  // POSTed the job's view on these events (api/notify.h); the service
  // checks the URL against the allow-list at submit.
  std::optional<NotifySpec> notify;
  // False: never preempted by a higher-priority job (scheduler/preemption.h).
  bool preemptible = true;
  // The trainer settings as written, for resolve() (api/resolution.h).
  lightning::TrainerSettings trainer;
  // Everything the executor needs. world_size, precision, on_tpu, xla_debug
  // and lightning_v1 are filled in from the resolution (apply_resolution).
  executor::TrainingSpec training;
  // The canonical JSON of everything that decides how the job trains (not
  // its name, labels or priority): equal keys train identically.
  std::string training_key;
};

// Parses `body` (already valid JSON) strictly: unknown fields, wrong types
// and out-of-range numbers are errors naming their path. Returns the spec,
// or kInvalid listing every error in its fields (base::invalid_fields).
base::Result<JobSpec> parse_job_spec(const nlohmann::json& body);

// The spec with the resolved settings (world size, precision, strategy,
// version) copied into its training.
JobSpec apply_resolution(const Resolution& resolution, JobSpec spec);

// resources.workers (api/job_spec_workers.cc): "all", or the indexes of the
// slice's workers to launch on ([0], [0, 1]), as `gcloud compute tpus
// tpu-vm ssh --worker=all|0,1` names them. Returns the indexes, nullopt for
// "all" (TrainerSettings::workers), or kInvalid naming the field
// (base::invalid_fields). Whether each is a host of the job's slice is
// lightning/'s rule (lightning/workers.cc).
base::Result<std::optional<std::vector<std::int64_t>>> parse_workers(const nlohmann::json& value);
// How a job launched on some of its slice's workers fails, for the executor.
executor::LaunchFailure launch_failure(const lightning::LaunchFailure& failure);

// The first C0 control character (U+0000-U+001F, tab and newline included)
// or DEL (U+007F) in `text`, or nullopt. Names and labels are one line of
// printable text: they are shown in lists, logs and terminals, where a
// control character breaks the line or moves the cursor.
std::optional<unsigned char> control_character(std::string_view text);
inline constexpr const char* kControlCharacterHint =
    "names and labels are one line of printable text: remove tabs, newlines and other control "
    "characters";

// "30m", "90s", "1h30m", "500ms", or a number of seconds. nullopt if malformed.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Every field name the parser accepts at `path` ("", "trainer", "model.layers[]", ...).
// Used for "did you mean" hints and by the OpenAPI test.
const std::vector<std::string>& known_fields(std::string_view path);

}  // namespace tpujobs::api
