// POST /v1/jobs and POST /v1/jobs:validate: a spec (or a sweep of them)
// parsed, its dependencies and notify URL checked, resolved against the pool
// and dry-run, then submitted (api/job_spec.h, api/sweep.h).
#include <algorithm>

#include "api/job_spec.h"
#include "api/jobs_api.h"
#include "api/notify.h"
#include "api/problem.h"
#include "api/public_error.h"
#include "api/request_reading.h"
#include "api/sweep.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

struct CheckedSpec {
  json body;
  std::optional<JobSpec> spec;
  Resolution resolution;  // when the trainer settings resolved
  // The Lightning release whose rules the spec was checked by, resolved or
  // not; empty when the spec did not parse (or a check before it failed).
  std::string lightning_version;
  json estimate;
  std::vector<base::FieldError> errors;
  std::vector<std::string> warnings;
  // The check could not be made (the database is away): answered as such.
  std::optional<base::Error> failure;
};

// Each job named in depends_on must exist, be the tenant's, and so (ids
// grow) have been submitted before this one.
void check_dependencies_exist(const std::string& tenant, JobService& service,
                              CheckedSpec* checked) {
  const std::vector<scheduler::Dependency>& dependencies = checked->spec->depends_on;
  if (dependencies.empty()) return;
  std::vector<std::int64_t> ids;
  for (const scheduler::Dependency& d : dependencies) ids.push_back(d.job);
  base::Result<std::map<std::int64_t, base::JobState>> states = service.job_states(tenant, ids);
  if (!states.ok()) {
    checked->failure = states.error();
    return;
  }
  for (std::size_t i = 0; i < dependencies.size(); ++i) {
    if (states->contains(dependencies[i].job)) continue;
    checked->errors.push_back(
        {"depends_on[" + std::to_string(i) + "].job",
         "job " + std::to_string(dependencies[i].job) + " does not exist",
         "a job may depend only on jobs of its tenant submitted before it (GET /v1/jobs "
         "lists them); submit the job it needs first"});
  }
}

// A notify URL must be on the admin's allow-list, and the tenant needs a
// secret to sign the deliveries with.
void check_notify(const std::string& tenant, NotificationService* notifications,
                  CheckedSpec* checked) {
  if (!checked->spec->notify) return;
  if (!notifications) {
    checked->errors.push_back({"notify", "this service does not send notifications", ""});
    return;
  }
  base::Result<std::vector<std::string>> allowlist = notifications->allowlist();
  if (!allowlist.ok()) {
    checked->failure = allowlist.error();
    return;
  }
  const HttpUrl url = *parse_notify_url(checked->spec->notify->url);
  const std::string authority = url.host + ":" + std::to_string(url.port);
  if (!notify_url_allowed(url, *allowlist)) {
    checked->errors.push_back(
        {"notify.url", "http://" + authority + " is not on the notification allow-list",
         "an admin allows it with `tpujobs notify-allow " + authority +
             "` (PUT /v1/notifications/allowlist) or `tpujobs serve --notify-allow " + authority +
             "`; GET /v1/notifications/allowlist shows the list"});
  }
  base::Result<bool> has_secret = notifications->has_secret(tenant);
  if (!has_secret.ok()) {
    checked->failure = has_secret.error();
    return;
  }
  if (!*has_secret) {
    checked->errors.push_back(
        {"notify", "tenant '" + tenant + "' has no secret to sign notifications with",
         "create one (it is shown once) with `tpujobs notify-secret --rotate` (POST "
         "/v1/notifications/secret), then submit again"});
  }
}

// The quota check a submit adds to the spec's own.
void check_quota(const std::string& tenant, JobService& service, CheckedSpec* checked) {
  if (!checked->errors.empty()) return;
  const int cores = checked->resolution.request.cores();
  if (std::optional<int> limit = service.quota(tenant); limit && cores > *limit) {
    checked->errors.push_back(
        {"trainer.devices",
         "the job needs " + std::to_string(cores) + " TPU cores but tenant '" + tenant +
             "' may use at most " + std::to_string(*limit),
         "ask for fewer devices or hosts, or ask an admin to raise the quota"});
  }
}

// Everything submit and :validate share: parse, check the jobs it depends
// on, resolve the trainer settings against the pool, dry-run the executor,
// and the tenant's quota.
CheckedSpec check_spec(json body, const std::string& tenant, JobService& service,
                       NotificationService* notifications) {
  CheckedSpec checked;
  checked.body = std::move(body);
  base::Result<JobSpec> parsed = parse_job_spec(checked.body);
  if (!parsed.ok()) {
    checked.errors = parsed.error().fields;
    return checked;
  }
  checked.spec = std::move(*parsed);
  check_dependencies_exist(tenant, service, &checked);
  if (checked.failure) return checked;
  check_notify(tenant, notifications, &checked);
  if (checked.failure) return checked;
  base::Result<Resolution> resolved =
      resolve(checked.spec->trainer, service.capacity(JobService::Freshness::kRecent));
  if (!resolved.ok() || !resolved->tpu_available) {
    // A recent read may predate an agent that registered since: what it
    // refuses, or leaves on the CPU, is resolved again on the pool as it is.
    resolved = resolve(checked.spec->trainer, service.capacity(JobService::Freshness::kNow));
  }
  if (!resolved.ok()) {
    const base::Error& refused = resolved.error();
    checked.lightning_version = lightning::rules_release(checked.spec->trainer);
    checked.warnings = refused.warnings;
    for (const base::FieldError& e : refused.fields) checked.errors.push_back(e);
    return checked;
  }
  checked.resolution = std::move(*resolved);
  checked.lightning_version = checked.resolution.lightning_version;
  checked.warnings = checked.resolution.warnings;
  if (!checked.errors.empty()) return checked;
  checked.spec = apply_resolution(checked.resolution, std::move(*checked.spec));
  JobService::Estimate estimate = service.estimate(*checked.spec, checked.resolution);
  checked.estimate = std::move(estimate.estimate);
  for (std::string& advice : estimate.advice) checked.warnings.push_back(std::move(advice));
  if (estimate.error) checked.errors.push_back(*estimate.error);
  check_quota(tenant, service, &checked);
  return checked;
}

// check_spec, with a check that could not be made (the database is away)
// answered on `writer`: nullopt then. Field errors are the caller's to answer.
std::optional<CheckedSpec> check_spec_or_answer(json body, const std::string& tenant,
                                                JobService& service,
                                                NotificationService* notifications,
                                                const ResponseWriterPtr& writer) {
  CheckedSpec checked = check_spec(std::move(body), tenant, service, notifications);
  if (checked.failure) {
    writer->respond(answer(base::Result<nlohmann::json>(*checked.failure)));
    return std::nullopt;
  }
  return checked;
}

SubmitRequest submit_request(const std::string& tenant, CheckedSpec checked,
                             std::optional<std::string> key) {
  SubmitRequest submit;
  submit.tenant = tenant;
  submit.spec = std::move(*checked.spec);
  submit.spec_text = checked.body.dump();
  submit.spec_hash = content_hash(submit.spec_text);
  submit.spec_json = std::move(checked.body);
  submit.resolution = checked.resolution;
  submit.estimate = std::move(checked.estimate);
  submit.warnings = std::move(checked.warnings);
  submit.idempotency_key = std::move(key);
  return submit;
}

// The answer to a submit that did not create or find its job(s); nullopt
// when it did.
std::optional<Response> submit_failure(const SubmitOutcome& outcome) {
  switch (outcome.kind) {
    case SubmitOutcome::Kind::kCreated:
    case SubmitOutcome::Kind::kExisting:
      return std::nullopt;
    case SubmitOutcome::Kind::kConflict:
      return problem(
          409, outcome.message,
          {{"hint", "an Idempotency-Key names one job spec; use a new key for a different spec"},
           {"job_id", outcome.id}});
    case SubmitOutcome::Kind::kUnavailable:
      return problem(503, public_database_detail(outcome.message),
                     {{"hint", "retry after the database is back"}})
          .header("Retry-After", "1");
    case SubmitOutcome::Kind::kError:
      break;
  }
  return problem(500, public_internal_detail(outcome.message));
}

}  // namespace

void JobsApi::submit(Request& request, ResponseWriterPtr writer) {
  std::optional<json> body = parse_body(request, writer);
  if (!body) return;
  std::optional<std::optional<std::string>> read_key = read_idempotency_key(request, writer);
  if (!read_key) return;
  std::optional<std::string> key = std::move(*read_key);
  if (body->is_object() && body->contains("sweep")) {
    submit_sweep(request, std::move(*body), std::move(key), writer);
    return;
  }
  std::optional<CheckedSpec> checked = check_spec_or_answer(
      std::move(*body), request.tenant, service_, options_.notifications, writer);
  if (!checked) return;
  if (!checked->errors.empty()) {
    writer->respond(spec_problems(checked->errors, checked->warnings));
    return;
  }
  if (options_.limits) {
    if (auto refused = options_.limits->admit_submit(request.tenant, 1, false)) {
      writer->respond(std::move(*refused));
      return;
    }
  }
  service_.submit(submit_request(request.tenant, std::move(*checked), std::move(key)),
                  [writer](SubmitOutcome outcome) {
                    if (std::optional<Response> failure = submit_failure(outcome)) {
                      writer->respond(std::move(*failure));
                      return;
                    }
                    Response response;
                    response.status = outcome.kind == SubmitOutcome::Kind::kCreated ? 201 : 200;
                    response.body = std::move(outcome.job);
                    writer->respond(std::move(
                        response.header("Location", "/v1/jobs/" + std::to_string(outcome.id))));
                  });
}

std::optional<std::vector<SubmitRequest>> JobsApi::check_sweep(
    const std::string& tenant, const json& body, const std::optional<std::string>& key,
    const ResponseWriterPtr& writer) {
  // The first child alone first: a spec wrong in every child (unknown
  // fields, a bad type) costs one copy and one check, not 256.
  base::Result<std::vector<SweepChild>> first = expand_sweep(body, 1);
  if (!first.ok()) {
    writer->respond(spec_problems(first.error().fields, {}));
    return std::nullopt;
  }
  std::vector<SweepChild> children = std::move(*first);
  std::vector<base::FieldError> errors;
  // Each child validated on its own; its errors say which child.
  constexpr std::size_t kMaxErrors = 50;
  std::vector<SubmitRequest> requests;
  std::vector<std::string> warnings;
  for (std::size_t n = 0; n < children.size(); ++n) {
    SweepChild& child = children[n];
    std::optional<CheckedSpec> checked = check_spec_or_answer(
        std::move(child.spec), tenant, service_, options_.notifications, writer);
    if (!checked) return std::nullopt;
    for (base::FieldError& e : checked->errors) {
      if (errors.size() == kMaxErrors) break;
      e.message = "sweep child " + std::to_string(child.index) + " " + child.values.dump() + ": " +
                  e.message;
      errors.push_back(std::move(e));
    }
    if (!errors.empty()) break;  // the sweep is refused: the other children need no check
    if (warnings.empty()) warnings = checked->warnings;
    std::optional<std::string> child_key;
    if (key) child_key = *key + "#" + std::to_string(child.index);
    SubmitRequest request = submit_request(tenant, std::move(*checked), std::move(child_key));
    request.array_index = child.index;
    request.array_values = std::move(child.values);
    requests.push_back(std::move(request));
    if (n == 0) {  // the first is valid: now the rest
      base::Result<std::vector<SweepChild>> all = expand_sweep(body);
      if (!all.ok()) {
        errors = all.error().fields;
        break;
      }
      children = std::move(*all);
    }
  }
  if (!errors.empty()) {
    writer->respond(spec_problems(errors, warnings));
    return std::nullopt;
  }
  return requests;
}

void JobsApi::submit_sweep(Request& request, json body, std::optional<std::string> key,
                           ResponseWriterPtr writer) {
  std::optional<std::vector<SubmitRequest>> children =
      check_sweep(request.tenant, body, key, writer);
  if (!children) return;
  if (options_.limits) {  // the whole sweep, or none of it
    if (auto refused = options_.limits->admit_submit(
            request.tenant, static_cast<std::int64_t>(children->size()), true)) {
      writer->respond(std::move(*refused));
      return;
    }
  }
  service_.submit_array(std::move(*children), [writer](std::vector<SubmitOutcome> outcomes) {
    bool created = false;
    json jobs = json::array();
    for (SubmitOutcome& outcome : outcomes) {
      if (std::optional<Response> failure = submit_failure(outcome)) {
        writer->respond(std::move(*failure));
        return;
      }
      created = created || outcome.kind == SubmitOutcome::Kind::kCreated;
      jobs.push_back(json::parse(outcome.job, nullptr, false));
    }
    const std::int64_t array = outcomes.front().array_id;
    Response response = json_response(
        created ? 201 : 200,
        {{"array", {{"id", array}, {"size", outcomes.size()}}}, {"jobs", std::move(jobs)}});
    writer->respond(
        std::move(response.header("Location", "/v1/jobs?array=" + std::to_string(array))));
  });
}

void JobsApi::validate(Request& request, ResponseWriterPtr writer) {
  std::optional<json> body = parse_body(request, writer);
  if (!body) return;
  if (body->is_object() && body->contains("sweep")) {
    std::optional<std::vector<SubmitRequest>> children =
        check_sweep(request.tenant, *body, std::nullopt, writer);
    if (!children) return;
    json values = json::array();
    for (const SubmitRequest& child : *children) values.push_back(child.array_values);
    writer->respond(
        json_response(200, {{"valid", true},
                            {"lightning_version", children->front().resolution.lightning_version},
                            {"warnings", children->front().warnings},
                            {"resolved", resolution_json(children->front().resolution)},
                            {"estimate", children->front().estimate},
                            {"sweep", {{"size", children->size()}, {"children", values}}}}));
    return;
  }
  std::optional<CheckedSpec> checked = check_spec_or_answer(
      std::move(*body), request.tenant, service_, options_.notifications, writer);
  if (!checked) return;
  if (!checked->errors.empty()) {
    Response response = spec_problems(checked->errors, checked->warnings);
    json payload = json::parse(response.body);
    payload["valid"] = false;
    // The rules the errors come from (unset when the spec did not parse).
    if (!checked->lightning_version.empty()) {
      payload["lightning_version"] = checked->lightning_version;
    }
    if (!checked->estimate.is_null()) payload["estimate"] = checked->estimate;
    response.body = payload.dump();
    writer->respond(std::move(response));
    return;
  }
  writer->respond(json_response(200, {{"valid", true},
                                      {"lightning_version", checked->resolution.lightning_version},
                                      {"warnings", checked->warnings},
                                      {"resolved", resolution_json(checked->resolution)},
                                      {"estimate", checked->estimate}}));
}

}  // namespace tpujobs::api
