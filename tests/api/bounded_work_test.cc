// The work one request may cause, and the size of its answer, are bounded
// whatever it holds (issue 34: 40,000 unknown keys in a 256-child sweep
// took 34 s of CPU and answered 10.5 MB).
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>

#include "api/job_spec.h"
#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using testing::CapturingWriter;
using testing::FakeJobService;

Response post_job(JobsApi& api, const nlohmann::json& body) {
  Request request;
  request.method = "POST";
  request.target = "/v1/jobs";
  RequestTarget split = split_target(request.target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  request.body = body.dump();
  auto writer = std::make_shared<CapturingWriter>();
  api.handle(std::move(request), writer);
  return writer->response;
}

nlohmann::json valid_spec() {
  return {{"model", {{"layers", {{{"type", "linear"}, {"out", 10}}}}}},
          {"data", {{"dataset", "digits"}}}};
}

// Unknown keys as the issue sent them: long, and each close to nothing known.
nlohmann::json with_unknown_keys(nlohmann::json spec, int count) {
  for (int i = 0; i < count; ++i)
    spec["trainer"]["unknown_training_setting_number_" + std::to_string(i)] = i;
  return spec;
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

TEST(BoundedWork, ThousandsOfUnknownKeysListAFewAndCountTheRest) {
  auto parsed = parse_job_spec(with_unknown_keys(valid_spec(), 40000));
  ASSERT_FALSE(parsed);
  const std::vector<base::FieldError>& errors = parsed.error().fields;
  ASSERT_LE(errors.size(), 25u);
  EXPECT_EQ(errors.front().field, "trainer.unknown_training_setting_number_0");
  EXPECT_EQ(errors.back().field, "trainer");
  EXPECT_EQ(errors.back().message, "39980 more unknown fields (the first 20 are listed)");
}

TEST(BoundedWork, AShortMisspeltKeyStillGetsItsSuggestion) {
  nlohmann::json spec = valid_spec();
  spec["trainer"]["max_epoch"] = 3;
  auto parsed = parse_job_spec(spec);
  ASSERT_FALSE(parsed);
  const std::vector<base::FieldError>& errors = parsed.error().fields;
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].hint, "did you mean 'max_epochs'?");
}

TEST(BoundedWork, AnAnswerListsAtMostAHundredProblemsAndSaysHowManyThereWere) {
  std::vector<base::FieldError> errors;
  for (int i = 0; i < 150; ++i) errors.push_back({"f" + std::to_string(i), "wrong", ""});
  const Response r = spec_problems(errors);
  const auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["errors"].size(), 100u);
  EXPECT_EQ(body["errors_total"], 150);
  EXPECT_EQ(body["detail"], "150 problems with the job spec (the first 100 are listed)");
}

TEST(BoundedWork, ASweepWrongInEveryChildIsRefusedAfterCheckingOnlyTheFirst) {
  FakeJobService service;
  JobsApi api(service, {});
  nlohmann::json spec = valid_spec();
  spec["trainer"]["max_epochs"] = "three";  // wrong in every child
  nlohmann::json seeds = nlohmann::json::array();
  for (int i = 0; i < 256; ++i) seeds.push_back(i);
  spec["sweep"] = {{"trainer.seed", seeds}};
  const Response r = post_job(api, spec);
  ASSERT_EQ(r.status, 422) << r.body;
  const auto body = nlohmann::json::parse(r.body);
  ASSERT_EQ(body["errors"].size(), 1u) << r.body;
  EXPECT_EQ(body["errors"][0]["message"].get<std::string>().rfind(
                R"(sweep child 0 {"trainer.seed":0}: )", 0),
            0u);
  EXPECT_TRUE(service.submitted.empty());
}

TEST(BoundedWork, FortyThousandUnknownKeysInA256ChildSweepCostLittleAndAnswerSmall) {
  FakeJobService service;
  JobsApi api(service, {});
  nlohmann::json spec = with_unknown_keys(valid_spec(), 40000);
  nlohmann::json seeds = nlohmann::json::array();
  for (int i = 0; i < 256; ++i) seeds.push_back(i);
  spec["sweep"] = {{"trainer.seed", seeds}};
  const double cpu_before = process_cpu_seconds();
  const Response r = post_job(api, spec);
  const double cpu = process_cpu_seconds() - cpu_before;
  ASSERT_EQ(r.status, 422);
  EXPECT_LT(r.body.size(), 16u << 10) << "answer of " << r.body.size() << " bytes";
  // Parsing the 1.4 MB body is most of it; before, the children's checks
  // took tens of seconds. The bound is generous for slow, shared machines.
  EXPECT_LT(cpu, 5.0) << cpu << " s of CPU";
  std::printf("40,000 unknown keys, 256-child sweep: %.3f s CPU, answer %zu bytes\n", cpu,
              r.body.size());
}

}  // namespace
}  // namespace tpujobs::api
