// Issue 34's smaller findings: durations below the clock's resolution, ids
// that are not canonical decimal, and database internals in 503 answers.
#include <gtest/gtest.h>

#include "api/job_spec.h"
#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using testing::CapturingWriter;
using testing::FakeJobService;

Response call(JobsApi& api, std::string method, std::string target, std::string body = "") {
  Request request = testing::request_for(std::move(method), std::move(target));
  request.body = std::move(body);
  auto writer = std::make_shared<CapturingWriter>();
  api.handle(std::move(request), writer);
  return writer->response;
}

nlohmann::json spec_with(const std::string& key, nlohmann::json value) {
  nlohmann::json spec = {{"model", {{"layers", {{{"type", "linear"}, {"out", 10}}}}}},
                         {"data", {{"dataset", "digits"}}}};
  spec[key] = std::move(value);
  return spec;
}

TEST(SmallThings, ADurationBelowTheClocksResolutionIs422OnItsField) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"timeout", "0.1ms"}, {"start_by", "0.5ms"}, {"timeout", 0.0004}}) {
    auto parsed = parse_job_spec(spec_with(key, value));
    ASSERT_FALSE(parsed) << key << " " << value;
    const std::vector<base::FieldError>& errors = parsed.error().fields;
    ASSERT_EQ(errors.size(), 1u) << key << " " << value;
    EXPECT_EQ(errors[0].field, key);
    EXPECT_NE(errors[0].message.find("at least 1ms"), std::string::npos) << errors[0].message;
    EXPECT_FALSE(errors[0].hint.empty());
  }
  auto ok = parse_job_spec(spec_with("timeout", "1ms"));
  ASSERT_TRUE(ok) << ok.error().fields[0].message;
  EXPECT_EQ(ok->training.timeout, std::chrono::milliseconds(1));
}

TEST(SmallThings, AnIdIsCanonicalDecimalSoALeadingZeroIsNoJob) {
  FakeJobService service;
  JobsApi api(service, {});
  EXPECT_EQ(call(api, "GET", "/v1/jobs/1").status, 200);
  for (const char* target : {"/v1/jobs/01", "/v1/jobs/+1", "/v1/jobs/001/wait", "/v1/jobs/0x1"}) {
    const Response r = call(api, "GET", target);
    EXPECT_EQ(r.status, 404) << target << ": " << r.body;
  }
}

// A database whose errors carry PostgreSQL's text and socket path.
class FailingJobService final : public FakeJobService {
 public:
  static constexpr const char* kInternals =
      "could not extend file \"base/16384/2619\": No space left on device; connection to server "
      "on socket \"/var/lib/tpujobs/state/.s.PGSQL.5432\" failed";
  base::Result<nlohmann::json> get_job(std::int64_t, const std::string&) override {
    return base::make_error(base::ErrorCode::kUnavailable, std::string("SELECT: ") + kInternals);
  }
  void submit(SubmitRequest, std::function<void(SubmitOutcome)> done) override {
    SubmitOutcome outcome;
    outcome.kind = SubmitOutcome::Kind::kUnavailable;
    outcome.message = std::string("the job was not stored: the database could not be reached (") +
                      kInternals + "); submit it again later";
    done(outcome);
  }
  base::Result<nlohmann::json> cancel_job(std::int64_t, const std::string&) override {
    return base::make_error(base::ErrorCode::kUnavailable,
                            "UPDATE: the database did not answer within 2 s");
  }
};

TEST(SmallThings, A503NeverShowsTheDatabasesTextOrSocketPath) {
  FailingJobService service;
  JobsApi api(service, {});
  const Response read = call(api, "GET", "/v1/jobs/1");
  const Response submit = call(api, "POST", "/v1/jobs", spec_with("name", "x").dump());
  for (const Response* r : {&read, &submit}) {
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(r->body.find("could not extend"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find(".s.PGSQL"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find("/var/lib"), std::string::npos) << r->body;
  }
  EXPECT_EQ(nlohmann::json::parse(read.body)["detail"], "the database is unavailable");
  EXPECT_EQ(nlohmann::json::parse(submit.body)["detail"],
            "the job was not stored: the database could not be reached; submit it again later");
  // What the client can act on stays: how long the database was given.
  const Response cancel = call(api, "POST", "/v1/jobs/1/cancel");
  EXPECT_EQ(nlohmann::json::parse(cancel.body)["detail"], "the database did not answer within 2 s");
}

}  // namespace
}  // namespace tpujobs::api
