// A JobService that records what it is asked and answers from canned
// values, so the API's routing and parsing can be tested without a
// database.
#pragma once

#include "api/job_service.h"
#include "api/url.h"

namespace tpujobs::api::testing {

// A request for `target` ("/v1/jobs?limit=5") as the server hands it over:
// its path and query split.
inline Request request_for(std::string method, std::string target) {
  Request request;
  request.method = std::move(method);
  request.target = target;
  RequestTarget split = split_target(target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  return request;
}

class FakeJobService : public JobService {
 public:
  scheduler::PoolCapacity pool{{{scheduler::Generation::kV3, 4}}};
  std::vector<SubmitRequest> submitted;
  std::vector<std::string> host_actions;

  void submit(SubmitRequest request, std::function<void(SubmitOutcome)> done) override {
    submitted.push_back(request);
    SubmitOutcome outcome;
    outcome.kind = SubmitOutcome::Kind::kCreated;
    outcome.id = static_cast<std::int64_t>(submitted.size());
    outcome.job = nlohmann::json{{"id", outcome.id}, {"state", "QUEUED"}}.dump();
    done(outcome);
  }
  void submit_array(std::vector<SubmitRequest> children,
                    std::function<void(std::vector<SubmitOutcome>)> done) override {
    std::vector<SubmitOutcome> outcomes;
    for (SubmitRequest& child : children) {
      submit(std::move(child), [&](SubmitOutcome o) { outcomes.push_back(std::move(o)); });
    }
    for (SubmitOutcome& o : outcomes) o.array_id = outcomes.front().id;
    done(std::move(outcomes));
  }
  base::Result<nlohmann::json> get_job(std::int64_t id, const std::string&) override {
    if (id == 1) return nlohmann::json{{"id", 1}, {"state", "RUNNING"}};
    return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
  }
  base::Result<std::string> get_job_text(std::int64_t id, const std::string& tenant) override {
    base::Result<nlohmann::json> job = get_job(id, tenant);
    if (!job.ok()) return job.error();
    return job->dump();
  }
  // Jobs 1..known_jobs exist and are RUNNING.
  std::int64_t known_jobs = 3;
  base::Result<std::map<std::int64_t, base::JobState>> job_states(
      const std::string&, const std::vector<std::int64_t>& ids) override {
    std::map<std::int64_t, base::JobState> states;
    for (std::int64_t id : ids) {
      if (id >= 1 && id <= known_jobs) states[id] = base::JobState::kRunning;
    }
    return states;
  }
  base::Result<JobListPage> list_jobs(const JobQuery& query) override {
    last_query = query;
    return JobListPage{};
  }
  void wait_job(std::int64_t id, const std::string& tenant, std::chrono::milliseconds,
                std::function<void(base::Result<nlohmann::json>)> done) override {
    done(get_job(id, tenant));
  }
  base::Result<nlohmann::json> cancel_job(std::int64_t id, const std::string&) override {
    if (id == 1) return base::make_error(base::ErrorCode::kConflict, "job 1 is already SUCCEEDED");
    return base::make_error(base::ErrorCode::kNotFound, "no job");
  }
  base::Result<nlohmann::json> job_logs(std::int64_t, const std::string&, std::int64_t after,
                                        int) override {
    return nlohmann::json{{"lines", nlohmann::json::array()}, {"next_after", after}};
  }
  void follow_logs(std::int64_t, const std::string&, std::int64_t,
                   ResponseWriterPtr writer) override {
    writer->respond(json_response(200, {{"follow", true}}));
  }
  base::Result<nlohmann::json> job_metrics(std::int64_t, const std::string&,
                                           std::int64_t) override {
    return nlohmann::json{{"points", nlohmann::json::array()}};
  }
  base::Result<nlohmann::json> job_events(std::int64_t, const std::string&) override {
    return nlohmann::json{{"events", nlohmann::json::array()}};
  }
  base::Result<std::string> xla_report(std::int64_t, const std::string&) override {
    return std::string("Metric: CompileTime\n");
  }
  std::optional<UsageQuery> last_usage;
  base::Result<std::vector<UsageRow>> usage(const UsageQuery& query) override {
    last_usage = query;
    return std::vector<UsageRow>{
        {"team-a", "v3", 2, 80.0}, {"team-a", "v4", 1, 20.0}, {"team-b", "v3", 1, 150.5}};
  }
  nlohmann::json pool_view() override { return {{"hosts", nlohmann::json::array()}}; }
  base::Result<nlohmann::json> set_host_health(const std::string& host,
                                               scheduler::HostHealth health) override {
    host_actions.push_back(std::string(scheduler::host_health_name(health)) + " " + host);
    return nlohmann::json{{"host", host}};
  }
  base::Result<nlohmann::json> force_release(std::int64_t id) override {
    return nlohmann::json{{"job", id}};
  }
  // Keeps what each upload asked for; a key seen before answers its dataset
  // (or kConflict for another file), as the service does.
  base::Result<UploadedDataset> upload_dataset(const DatasetUpload& upload) override {
    uploads.push_back(upload);
    for (std::size_t i = 0; i + 1 < uploads.size(); ++i) {
      if (!upload.idempotency_key || uploads[i].idempotency_key != upload.idempotency_key) continue;
      if (uploads[i].content_hash != upload.content_hash || uploads[i].name != upload.name)
        return base::make_error(base::ErrorCode::kConflict, "used for another file");
      return UploadedDataset{{{"id", "ds_" + std::to_string(i + 1)}, {"name", upload.name}}, true};
    }
    return UploadedDataset{{{"id", "ds_" + std::to_string(uploads.size())}, {"name", upload.name}},
                           false};
  }
  std::vector<DatasetUpload> uploads;
  scheduler::PoolCapacity capacity(Freshness freshness) override {
    if (freshness == Freshness::kNow) {
      ++capacity_reads_now;
      if (pool_now) return *pool_now;
    }
    return pool;
  }
  std::optional<scheduler::PoolCapacity> pool_now;  // what kNow reads, when not `pool`
  int capacity_reads_now = 0;
  Estimate estimate(const JobSpec&, const Resolution&) override {
    Estimate e;
    e.estimate = {{"hbm_per_core", {{"total", 1}}}};
    return e;
  }
  bool ready() override { return true; }
  base::Result<std::optional<Principal>> authenticate(std::string_view token) override {
    if (token == "user-token") return std::optional<Principal>(Principal{"team-a", false});
    if (token == "admin-token") return std::optional<Principal>(Principal{"ops", true});
    return std::optional<Principal>();
  }
  bool auth_required() override { return require_auth; }
  base::Result<nlohmann::json> set_quota(const std::string& tenant,
                                         std::optional<int> max_cores) override {
    quotas[tenant] = max_cores;
    return nlohmann::json{{"tenant", tenant}};
  }
  std::optional<int> quota(const std::string& tenant) override {
    auto it = quotas.find(tenant);
    return it == quotas.end() ? std::nullopt : it->second;
  }
  bool require_auth = false;
  std::map<std::string, std::optional<int>> quotas;
  std::string prometheus_metrics() override { return "tpujobs_jobs{state=\"QUEUED\"} 0\n"; }

  JobQuery last_query;
};

// Captures the one response a handler sends.
class CapturingWriter : public ResponseWriter {
 public:
  void respond(Response r) override { response = std::move(r); }
  void start_stream(Response head) override { response = std::move(head); }
  bool write(std::string data) override {
    streamed += data;
    return true;
  }
  void end() override {}
  bool closed() const override { return false; }
  Response response;
  std::string streamed;
};

}  // namespace tpujobs::api::testing
