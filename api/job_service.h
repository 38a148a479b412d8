// What the HTTP routes need from the running service. api/ parses and
// validates requests and renders answers; service/JobManager implements this
// interface (jobs, the pool, the database behind them). Methods are
// thread-safe and called from I/O threads: the ones that may wait answer
// through a callback instead of blocking.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/http.h"
#include "api/job_spec.h"
#include "api/resolution.h"
#include "api/usage.h"
#include "base/job_state.h"
#include "base/result.h"
#include "scheduler/capacity.h"
#include "scheduler/pool.h"

namespace tpujobs::api {

struct SubmitRequest {
  std::string tenant;
  JobSpec spec;
  nlohmann::json spec_json;  // as submitted
  std::string spec_text;     // spec_json.dump(): what is stored and hashed
  Resolution resolution;
  nlohmann::json estimate;  // the executor's estimate, rendered
  std::vector<std::string> warnings;
  std::optional<std::string> idempotency_key;
  std::string spec_hash;  // identifies the body for Idempotency-Key reuse
  // A sweep's child (submit_array): its place and the values it was given.
  std::optional<int> array_index;
  nlohmann::json array_values;
};

struct SubmitOutcome {
  enum class Kind { kCreated, kExisting, kConflict, kUnavailable, kError } kind = Kind::kError;
  std::int64_t id = 0;
  std::string job;            // the job as GET /v1/jobs/{id} shows it (JSON text)
  std::string message;        // for kConflict / kUnavailable / kError
  std::int64_t array_id = 0;  // submit_array: the array's id
};

struct JobQuery {
  std::string tenant{};
  std::vector<std::string> states{};
  std::vector<std::pair<std::string, std::string>> labels{};
  std::optional<std::string> name{};
  int limit = 50;
  std::optional<std::string> cursor{};
  std::optional<std::int64_t> array_id{};  // only the children of this job array
  // The service may leave out the jobs after the first whose views together
  // pass this many bytes (the answer's cap, api/list_cap.h): it need not
  // read or render views no answer will hold.
  std::size_t max_bytes = std::numeric_limits<std::size_t>::max();
};

// A page of GET /v1/jobs: each job's view as JSON text, newest first, with
// the next_cursor of a page that ends with it.
struct ListedView {
  std::string view;
  std::string cursor;
};
struct JobListPage {
  std::vector<ListedView> jobs;
  std::string next_cursor;  // where the next page starts; empty: none follows
};

// Who makes a request: the tenant it acts for, and whether it may operate
// the pool.
struct Principal {
  std::string tenant;
  bool admin = false;
};

class JobService {
 public:
  virtual ~JobService() = default;

  // The principal a bearer token stands for; nullopt for an unknown or
  // revoked token.
  virtual base::Result<std::optional<Principal>> authenticate(std::string_view token) = 0;
  // True once any token exists: requests without one are then refused.
  virtual bool auth_required() = 0;

  // Commits the job, then calls `done` (from any thread). kCreated means the
  // job is durable in PostgreSQL.
  virtual void submit(SubmitRequest request, std::function<void(SubmitOutcome)> done) = 0;
  // Commits the children of one job array (a sweep) in one transaction,
  // then calls `done` with their outcomes in order (from any thread).
  virtual void submit_array(std::vector<SubmitRequest> children,
                            std::function<void(std::vector<SubmitOutcome>)> done) = 0;

  // kNotFound when the job does not exist or belongs to another tenant.
  virtual base::Result<nlohmann::json> get_job(std::int64_t id, const std::string& tenant) = 0;
  // The same, already serialised (what GET /v1/jobs/{id} sends): lets the
  // service answer pollers from a cache.
  virtual base::Result<std::string> get_job_text(std::int64_t id, const std::string& tenant) = 0;
  virtual base::Result<JobListPage> list_jobs(const JobQuery& query) = 0;
  // The state of each of the tenant's jobs among `ids` (depends_on checks);
  // ids with no job of the tenant are absent.
  virtual base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::string& tenant, const std::vector<std::int64_t>& ids) = 0;
  // Calls `done` with the job once it is terminal, or when `timeout` passes.
  virtual void wait_job(std::int64_t id, const std::string& tenant,
                        std::chrono::milliseconds timeout,
                        std::function<void(base::Result<nlohmann::json>)> done) = 0;
  // kConflict when the job is already terminal.
  virtual base::Result<nlohmann::json> cancel_job(std::int64_t id, const std::string& tenant) = 0;
  virtual base::Result<nlohmann::json> job_logs(std::int64_t id, const std::string& tenant,
                                                std::int64_t after, int limit) = 0;
  // Streams log lines after `after` as Server-Sent Events until the job ends
  // or the client leaves. Answers 404 through `writer` itself.
  virtual void follow_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                           ResponseWriterPtr writer) = 0;
  virtual base::Result<nlohmann::json> job_metrics(std::int64_t id, const std::string& tenant,
                                                   std::int64_t after) = 0;
  virtual base::Result<nlohmann::json> job_events(std::int64_t id, const std::string& tenant) = 0;
  // The torch_xla-style metrics report as text.
  virtual base::Result<std::string> xla_report(std::int64_t id, const std::string& tenant) = 0;

  virtual nlohmann::json pool_view() = 0;
  // Accounting: TPU core-seconds per group and generation (api/usage.h).
  virtual base::Result<std::vector<UsageRow>> usage(const UsageQuery& query) = 0;
  // Admin: at most `max_cores` TPU cores running at once for the tenant
  // (nullopt: no limit). Jobs over it wait with pending_reason Quota.
  virtual base::Result<nlohmann::json> set_quota(const std::string& tenant,
                                                 std::optional<int> max_cores) = 0;
  virtual std::optional<int> quota(const std::string& tenant) = 0;
  // Admin: drains, fails or recovers a host (POST /v1/pool/hosts/{host}:drain,
  // :fail, :recover). kNotFound for an unknown host.
  virtual base::Result<nlohmann::json> set_host_health(const std::string& host,
                                                       scheduler::HostHealth health) = 0;
  // Admin: frees the cores a job holds and fails it (a stale holder).
  virtual base::Result<nlohmann::json> force_release(std::int64_t id) = 0;

  // Uploads: validates the CSV (kInvalid with a message naming the line)
  // and stores it. With an Idempotency-Key the tenant already used for the
  // same name and file, the dataset stored then (existing); for another
  // file or name, kConflict.
  struct DatasetUpload {
    std::string tenant;
    std::string name;
    std::string csv;
    std::optional<std::string> idempotency_key;
    std::string content_hash;  // of csv
  };
  struct UploadedDataset {
    nlohmann::json dataset;  // id, name, rows, features, classes, columns
    bool existing = false;
  };
  virtual base::Result<UploadedDataset> upload_dataset(const DatasetUpload& upload) = 0;

  // What validation needs: the pool's shape, and the executor's dry run
  // (dataset shape, HBM per core, the performance advisor) on the device
  // the resolution points at.
  // kRecent may be a read of the last second (a submit need not read the
  // hosts again); kNow reads them.
  enum class Freshness { kRecent, kNow };
  virtual scheduler::PoolCapacity capacity(Freshness freshness) = 0;
  struct Estimate {
    nlohmann::json estimate;                // rendered for :validate and the job
    std::vector<std::string> advice;        // the advisor's warnings
    std::optional<base::FieldError> error;  // the job cannot run (dataset, model, HBM)
  };
  virtual Estimate estimate(const JobSpec& spec, const Resolution& resolution) = 0;

  virtual bool ready() = 0;
  // Prometheus text lines about jobs and the pool (the API adds its own).
  virtual std::string prometheus_metrics() = 0;
};

}  // namespace tpujobs::api
