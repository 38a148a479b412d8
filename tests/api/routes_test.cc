#include <gtest/gtest.h>

#include <set>

#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using testing::CapturingWriter;
using testing::FakeJobService;

Response call(JobsApi& api, std::string method, std::string target, std::string body = "",
              std::map<std::string, std::string> headers = {}) {
  Request request = testing::request_for(std::move(method), std::move(target));
  request.body = std::move(body);
  request.headers = std::move(headers);
  auto writer = std::make_shared<CapturingWriter>();
  api.handle(std::move(request), writer);
  return writer->response;
}

nlohmann::json body_of(const Response& r) { return nlohmann::json::parse(r.body); }

std::string header_of(const Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(OpenApi, DocumentsExactlyTheRoutesTheRouterServes) {
  FakeJobService service;
  JobsApi api(service, {});
  std::set<std::string> served;
  for (const Route& route : api.router().routes()) {
    std::string method = route.method;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    served.insert(method + " " + route.pattern);
  }
  const nlohmann::json doc = nlohmann::json::parse(openapi_document());
  std::set<std::string> documented;
  for (const auto& [path, methods] : doc["paths"].items()) {
    for (const auto& [method, operation] : methods.items()) documented.insert(method + " " + path);
  }
  EXPECT_EQ(served, documented);
  EXPECT_EQ(doc["openapi"], "3.1.0");
}

TEST(OpenApi, EveryDocumentedPathIsRoutedNotStatic) {
  FakeJobService service;
  JobsApi api(service, {});
  const nlohmann::json doc = nlohmann::json::parse(openapi_document());
  for (const auto& [path, methods] : doc["paths"].items()) {
    std::string concrete = path;
    for (const auto& [from, to] : {std::pair{"{id}", "1"}, std::pair{"{host}", "v3-32-h0"},
                                   std::pair{"{tenant}", "team-a"}}) {
      if (auto at = concrete.find(from); at != std::string::npos)
        concrete.replace(at, std::string(from).size(), to);
    }
    for (const auto& [method, _] : methods.items()) {
      std::string upper = method;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      Response r = call(api, upper, concrete);
      EXPECT_NE(r.status, 405) << upper << " " << concrete;
      if (r.status == 404) {
        EXPECT_EQ(body_of(r)["detail"].get<std::string>().find("no route"), std::string::npos)
            << upper << " " << concrete;
      }
    }
  }
}

TEST(Routes, UnknownPathIsProblemJson404AndWrongMethodIs405WithAllow) {
  FakeJobService service;
  JobsApi api(service, {});
  Response missing = call(api, "POST", "/v1/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.content_type, "application/problem+json");
  Response wrong = call(api, "DELETE", "/v1/jobs");
  EXPECT_EQ(wrong.status, 405);
  bool has_allow = false;
  for (const auto& [name, value] : wrong.headers) {
    if (name == "Allow") {
      has_allow = true;
      EXPECT_NE(value.find("POST"), std::string::npos);
      EXPECT_NE(value.find("GET"), std::string::npos);
    }
  }
  EXPECT_TRUE(has_allow);
}

// RFC 9110 §9.3.2: HEAD is answered as GET (the server leaves the body out),
// and every Allow that names GET names HEAD.
TEST(Routes, HeadIsAnsweredAsGetAndAllowedWhereGetIs) {
  FakeJobService service;
  JobsApi api(service, {});
  for (const char* target : {"/healthz", "/v1/jobs", "/v1/jobs/1", "/v1/pool", "/openapi.json"}) {
    const Response get = call(api, "GET", target);
    const Response head = call(api, "HEAD", target);
    EXPECT_EQ(head.status, get.status) << target;
    EXPECT_EQ(head.content_type, get.content_type) << target;
    EXPECT_EQ(head.body.size(), get.body.size()) << target;
  }
  EXPECT_EQ(call(api, "HEAD", "/v1/jobs/987").status, 404);
  EXPECT_EQ(header_of(call(api, "DELETE", "/v1/jobs"), "Allow"), "POST, GET, HEAD");
  EXPECT_EQ(header_of(call(api, "PUT", "/v1/jobs/1"), "Allow"), "GET, HEAD");
  // A POST-only route does not answer HEAD.
  const Response cancel = call(api, "HEAD", "/v1/jobs/1/cancel");
  EXPECT_EQ(cancel.status, 405);
  EXPECT_EQ(header_of(cancel, "Allow"), "POST");
}

// A JSON route reads a body declared JSON (or not declared at all); a form or
// text body is 415 naming Content-Type, with a hint.
TEST(Routes, ABodyNotDeclaredJsonIs415OnContentType) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string spec = R"({"model": {"layers": [{"type": "linear", "out": 10}]},
      "data": {"dataset": "digits"}})";
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "text/csv",
                           "application/jsonp", "application/+json", "; charset=utf-8"}) {
    Response r = call(api, "POST", "/v1/jobs:validate", spec, {{"content-type", type}});
    EXPECT_EQ(r.status, 415) << type << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/problem+json");
    const nlohmann::json problem = body_of(r);
    EXPECT_EQ(problem["field"], "Content-Type") << type;
    EXPECT_NE(problem["hint"].get<std::string>().find("application/json"), std::string::npos);
  }
  EXPECT_EQ(call(api, "POST", "/v1/jobs", spec, {{"content-type", "text/plain"}}).status, 415);
  EXPECT_TRUE(service.submitted.empty());
  for (const char* type : {"", "application/json", "Application/JSON",
                           "application/json; charset=utf-8", " application/json ;charset=UTF-8",
                           "application/problem+json", "application/vnd.tpujobs.spec+json"}) {
    Response r = call(api, "POST", "/v1/jobs:validate", spec, {{"content-type", type}});
    EXPECT_EQ(r.status, 200) << "'" << type << "': " << r.body;
  }
  // Bytes that are not text are not echoed as they are.
  Response binary =
      call(api, "POST", "/v1/jobs:validate", spec, {{"content-type", "text/\xff\x01"}});
  EXPECT_EQ(binary.status, 415);
  EXPECT_TRUE(nlohmann::json::accept(binary.body)) << binary.body;
}

// A CSV upload is read as the file it is: text/csv or its aliases, or no
// Content-Type. A form (curl -d strips the newlines, curl -F wraps the file)
// or JSON is 415 on Content-Type, with the curl that works.
TEST(Routes, ACsvUploadSentAsAFormOrJsonIs415OnContentType) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string csv = "a,label\n1,0\n";
  for (const char* type : {"application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                           "application/json", "text/html", "; charset=utf-8"}) {
    Response r = call(api, "POST", "/v1/datasets?name=d", csv, {{"content-type", type}});
    EXPECT_EQ(r.status, 415) << type << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/problem+json");
    const nlohmann::json problem = body_of(r);
    EXPECT_EQ(problem["field"], "Content-Type") << type;
    EXPECT_NE(problem["hint"].get<std::string>().find("--data-binary @data.csv"), std::string::npos)
        << problem.dump();
  }
  for (const char* type : {"", "text/csv", "Text/CSV; charset=utf-8", "application/csv",
                           "text/plain", "application/octet-stream"}) {
    Response r = call(api, "POST", "/v1/datasets?name=d", csv, {{"content-type", type}});
    EXPECT_EQ(r.status, 201) << "'" << type << "': " << r.body;
  }
}

// An upload retried with its Idempotency-Key (its answer lost) is answered
// 200 with the dataset the first attempt stored; the key with another file
// is 409 on the header. A key that is not one is 400 before anything is
// stored.
TEST(Routes, AnUploadRetriedWithItsIdempotencyKeyAnswersTheStoredDataset) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string csv = "a,label\n1,0\n";
  const std::map<std::string, std::string> keyed = {{"content-type", "text/csv"},
                                                    {"idempotency-key", "ci-42-upload"}};
  Response first = call(api, "POST", "/v1/datasets?name=d", csv, keyed);
  ASSERT_EQ(first.status, 201) << first.body;
  Response retry = call(api, "POST", "/v1/datasets?name=d", csv, keyed);
  ASSERT_EQ(retry.status, 200) << retry.body;
  EXPECT_EQ(body_of(retry)["id"], body_of(first)["id"]);
  ASSERT_EQ(service.uploads.size(), 2u);
  EXPECT_EQ(service.uploads[1].idempotency_key, "ci-42-upload");
  EXPECT_EQ(service.uploads[0].content_hash, service.uploads[1].content_hash);
  EXPECT_FALSE(service.uploads[0].content_hash.empty());

  Response other = call(api, "POST", "/v1/datasets?name=d", "a,label\n2,1\n", keyed);
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(other.content_type, "application/problem+json");
  EXPECT_EQ(body_of(other)["field"], "Idempotency-Key");
  EXPECT_NE(service.uploads[2].content_hash, service.uploads[0].content_hash);

  // Without a key, every upload is a new dataset.
  Response plain = call(api, "POST", "/v1/datasets?name=d", csv, {{"content-type", "text/csv"}});
  EXPECT_EQ(plain.status, 201);
  EXPECT_FALSE(service.uploads.back().idempotency_key.has_value());

  const std::size_t before = service.uploads.size();
  for (const std::string& bad : {std::string(256, 'k'), std::string("tab\there")}) {
    Response r = call(api, "POST", "/v1/datasets?name=d", csv,
                      {{"content-type", "text/csv"}, {"idempotency-key", bad}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(body_of(r)["field"], "Idempotency-Key");
  }
  EXPECT_EQ(service.uploads.size(), before);
}

// Names and labels are one line of printable text.
TEST(Routes, AnEmptyNameOrAControlCharacterInANameOrLabelIs422OnItsField) {
  FakeJobService service;
  JobsApi api(service, {});
  const auto spec_with = [](const std::string& fields) {
    return "{" + fields +
           R"(, "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("name": "")", "name"},
      {R"("name": "a\tb")", "name"},
      {R"("name": "line\nbreak")", "name"},
      {R"("name": "bell\u0007")", "name"},
      {R"("name": "\u001b[2J")", "name"},
      {R"("name": "del\u007f")", "name"},
      {R"("name": "\u0001")", "name"},
      {R"("labels": {"team": "a\nb"})", "labels.team"},
      {R"("labels": {"te\tam": "a"})", "labels"},
  };
  for (const auto& [fields, field] : cases) {
    Response r = call(api, "POST", "/v1/jobs", spec_with(fields));
    ASSERT_EQ(r.status, 422) << fields << ": " << r.body;
    const nlohmann::json problem = body_of(r);
    ASSERT_EQ(problem["errors"].size(), 1u) << r.body;
    EXPECT_EQ(problem["errors"][0]["field"], field) << fields;
    EXPECT_FALSE(problem["errors"][0]["hint"].get<std::string>().empty()) << fields;
  }
  EXPECT_TRUE(service.submitted.empty());
  // Printable text of any script is a name; no name at all is fine too.
  EXPECT_EQ(call(api, "POST", "/v1/jobs", spec_with(R"("name": "Läufe — 学習 #1")")).status, 201);
  EXPECT_EQ(call(api, "POST", "/v1/jobs", spec_with(R"("priority": 0)")).status, 201);
}

TEST(Routes, ADatasetNameThatIsEmptyOrHoldsAControlCharacterIs400OnName) {
  FakeJobService service;
  JobsApi api(service, {});
  for (const char* target : {"/v1/datasets?name=", "/v1/datasets?name=a%0Ab",
                             "/v1/datasets?name=%09tab", "/v1/datasets?name=x%7F"}) {
    Response r = call(api, "POST", target, "a,label\n1,0\n", {{"content-type", "text/csv"}});
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_EQ(body_of(r)["field"], "name") << target;
    EXPECT_FALSE(body_of(r)["hint"].get<std::string>().empty());
  }
}

TEST(Routes, MalformedJsonIs400WithPosition) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = call(api, "POST", "/v1/jobs", "{\"name\": ");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/problem+json");
  EXPECT_NE(body_of(r)["detail"].get<std::string>().find("malformed JSON"), std::string::npos);
  EXPECT_TRUE(service.submitted.empty());
}

TEST(Routes, DeepNestingIsRefusedBeforeParsing) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = call(api, "POST", "/v1/jobs", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(body_of(r)["detail"].get<std::string>().find("nested deeper"), std::string::npos);
}

TEST(Routes, ATextWithUPlus0000Is422OnItsFieldBeforeItReachesTheDatabase) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string spec = R"({"name": "n", "labels": {"k": "v\u0000"},
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})";
  Response r = call(api, "POST", "/v1/jobs", spec);
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.content_type, "application/problem+json");
  const nlohmann::json problem = body_of(r);
  ASSERT_EQ(problem["errors"].size(), 1u) << r.body;
  EXPECT_EQ(problem["errors"][0]["field"], "labels.k");
  EXPECT_FALSE(problem["errors"][0]["hint"].get<std::string>().empty());
  EXPECT_TRUE(service.submitted.empty());
  // In a key, and in an array, of any body.
  r = call(api, "POST", "/v1/jobs:validate", R"({"env": {"A\u0000": "1"}, "x": ["a", "\u0000"]})");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["errors"][0]["field"], std::string("env.A\0", 6));
}

TEST(Routes, DevicesThreeIs422WithLightningsMessageOnItsField) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = call(api, "POST", "/v1/jobs", R"({"trainer": {"devices": 3},
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(r.status, 422);
  const nlohmann::json body = body_of(r);
  ASSERT_EQ(body["errors"].size(), 1u);
  EXPECT_EQ(body["errors"][0]["field"], "trainer.devices");
  EXPECT_EQ(body["errors"][0]["message"],
            "`devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3");
  EXPECT_FALSE(body["errors"][0]["hint"].get<std::string>().empty());
  EXPECT_TRUE(service.submitted.empty());
}

TEST(Routes, DependingOnAJobThatDoesNotExistIs422OnItsField) {
  FakeJobService service;  // jobs 1-3 exist
  JobsApi api(service, {});
  Response r = call(api, "POST", "/v1/jobs",
                    R"({"depends_on": [{"job": 2}, {"job": 99, "condition": "failed"}],
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.content_type, "application/problem+json");
  const nlohmann::json body = body_of(r);
  ASSERT_EQ(body["errors"].size(), 1u) << r.body;
  EXPECT_EQ(body["errors"][0]["field"], "depends_on[1].job");
  EXPECT_EQ(body["errors"][0]["message"], "job 99 does not exist");
  EXPECT_NE(body["errors"][0]["hint"].get<std::string>().find("submitted before it"),
            std::string::npos);
  EXPECT_TRUE(service.submitted.empty());

  Response ok = call(api, "POST", "/v1/jobs", R"({"depends_on": [{"job": 2}], "start_by": "10m",
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(ok.status, 201) << ok.body;
  ASSERT_EQ(service.submitted.size(), 1u);
  EXPECT_EQ(service.submitted[0].spec.depends_on.size(), 1u);
}

TEST(Routes, ASweepSubmitsOneArrayOrNamesTheChildThatIsWrong) {
  FakeJobService service;
  JobsApi api(service, {});
  Response bad = call(api, "POST", "/v1/jobs", R"({"sweep": {"trainer.devices": [1, 3]},
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(bad.status, 422) << bad.body;
  const nlohmann::json problems = body_of(bad);
  ASSERT_EQ(problems["errors"].size(), 1u) << bad.body;
  EXPECT_EQ(problems["errors"][0]["field"], "trainer.devices");
  EXPECT_EQ(problems["errors"][0]["message"].get<std::string>().rfind(
                R"(sweep child 1 {"trainer.devices":3}: )", 0),
            0u)
      << bad.body;
  EXPECT_TRUE(service.submitted.empty());

  Response ok = call(api, "POST", "/v1/jobs",
                     R"({"sweep": {"optimizer.lr": [0.1, 0.2], "trainer.seed": [1, 2, 3]},
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})",
                     {{"idempotency-key", "grid-1"}});
  ASSERT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(body_of(ok)["array"]["size"], 6);
  EXPECT_EQ(body_of(ok)["jobs"].size(), 6u);
  ASSERT_EQ(service.submitted.size(), 6u);
  EXPECT_EQ(service.submitted[5].array_index, 5);
  EXPECT_EQ(service.submitted[5].idempotency_key, "grid-1#5");
  EXPECT_EQ(service.submitted[5].array_values["trainer.seed"], 3);

  Response listed = call(api, "GET", "/v1/jobs?array=1");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(service.last_query.array_id, 1);
  EXPECT_EQ(call(api, "GET", "/v1/jobs?array=x").status, 400);
}

TEST(Routes, UsageIsJsonOrCsvAndATenantSeesOnlyItsOwn) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = call(api, "GET",
                    "/v1/usage?from=2026-11-23T00:00:00Z&to=2026-11-24T00:00:00.5Z&group_by=tenant",
                    "", {{"authorization", "Bearer user-token"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json body = body_of(r);
  EXPECT_EQ(body["from"], "2026-11-23T00:00:00.000Z");
  EXPECT_EQ(body["to"], "2026-11-24T00:00:00.500Z");
  EXPECT_DOUBLE_EQ(body["total_core_seconds"].get<double>(), 250.5);
  ASSERT_EQ(body["groups"].size(), 2u);
  EXPECT_EQ(body["groups"][0]["group"], "team-b");  // most used first
  EXPECT_DOUBLE_EQ(body["groups"][1]["core_seconds"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(body["groups"][1]["by_generation"]["v4"].get<double>(), 20.0);
  EXPECT_EQ(service.last_usage->tenant, "team-a");  // the token's tenant, whatever it asks

  Response all = call(api, "GET", "/v1/usage?group_by=label&label=pipeline&format=csv", "",
                      {{"authorization", "Bearer admin-token"}});
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(all.body.substr(0, all.body.find("\r\n")), "group,generation,jobs,core_seconds");
  EXPECT_NE(all.body.find("team-b,v3,1,150.500\r\n"), std::string::npos) << all.body;
  EXPECT_FALSE(service.last_usage->tenant);  // an admin sees every tenant
  EXPECT_TRUE(service.last_usage->by_label);
  EXPECT_EQ(service.last_usage->label_key, "pipeline");

  for (const char* bad :
       {"/v1/usage?from=yesterday", "/v1/usage?group_by=host", "/v1/usage?from=1h&to=2h"}) {
    Response refused = call(api, "GET", bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_EQ(refused.content_type, "application/problem+json") << bad;
  }
}

// POST /v1/jobs:validate of `fields` (JSON members, each followed by a
// comma) plus a small model and dataset.
Response validate(JobsApi& api, const std::string& fields) {
  return call(
      api, "POST", "/v1/jobs:validate",
      "{" + fields +
          R"("model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
}

TEST(Routes, ValidateNamesTheLightningVersionWhoseRulesApplied) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string model =
      R"("model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"})";
  // The default: the last 2.x release.
  Response r =
      call(api, "POST", "/v1/jobs:validate", R"({"trainer": {"devices": 8}, )" + model + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["lightning_version"], "2.5");
  EXPECT_EQ(body_of(r)["resolved"]["lightning_source"], "Lightning-AI/pytorch-lightning@2.5.6");
  // environment.lightning selects the rules: 2.0 still counts devices from 1.
  r = call(api, "POST", "/v1/jobs:validate",
           R"({"trainer": {"devices": [1]}, "environment": {"python": "3.10", "torch": "2.0.1",
               "torch_xla": "2.0", "lightning": "2.0.9"}, )" +
               model + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["lightning_version"], "2.0");
  EXPECT_EQ(body_of(r)["resolved"]["pinned_core"], 0);
  // A refusal says which rules refused it.
  r = call(api, "POST", "/v1/jobs:validate",
           R"({"trainer": {"accelerator": "tpu", "devices": 3}, "lightning_version": "1.7", )" +
               model + "}");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["lightning_version"], "1.7");
  EXPECT_EQ(body_of(r)["errors"][0]["message"], "`tpu_cores` can only be 1, 8 or [<1-8>]");
}

// A refusal shows the warnings Lightning gave before it refused beside its
// errors, and the rules it comes from: environment.lightning's when given.
TEST(Routes, ARefusalShowsItsWarningsAndRules) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = validate(
      api, R"("trainer": {"tpu_cores": 8, "strategy": "ddp"}, "lightning_version": "1.9",)");
  ASSERT_EQ(r.status, 422) << r.body;
  nlohmann::json body = body_of(r);
  EXPECT_EQ(body["valid"], false);
  EXPECT_EQ(body["lightning_version"], "1.9");
  EXPECT_EQ(body["errors"][0]["field"], "trainer.strategy") << body;
  ASSERT_EQ(body["warnings"].size(), 1u) << body;
  EXPECT_TRUE(body["warnings"][0].get<std::string>().starts_with(
      "Setting `Trainer(tpu_cores=8)` is deprecated"))
      << body["warnings"];
  EXPECT_FALSE(body["errors"][0].contains("source")) << "a citation is not part of the answer";
  r = validate(api,
               R"("trainer": {"devices": 3}, "environment": {"python": "3.10", "torch": "2.0.1",
                         "torch_xla": "2.0", "lightning": "2.0.9"},)");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["lightning_version"], "2.0");
  // A submit's 422 shows them too.
  r = call(api, "POST", "/v1/jobs",
           R"({"trainer": {"tpu_cores": 8, "strategy": "ddp"}, "lightning_version": "1.9",
               "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(body_of(r)["warnings"].size(), 1u) << r.body;
}

// The torch_xla whose metric names and report layout the job prints:
// environment.torch_xla, else the newest one the release's torch allows.
TEST(Routes, ValidateNamesTheTorchXlaWhoseMetricNamesApply) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = validate(api, R"("trainer": {"devices": 8},)");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["resolved"]["torch_xla_version"], "2.5");
  r = validate(api,
               R"("trainer": {"devices": 8}, "environment": {"python": "3.10", "torch": "2.1.0",
                       "torch_xla": "2.1.0", "lightning": "2.1.3"},)");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["resolved"]["torch_xla_version"], "2.1");
  // Lightning 1.6 without an environment: torch_xla 1.13, the last for its torch.
  r = validate(api,
               R"("trainer": {"accelerator": "tpu", "devices": 8}, "lightning_version": "1.6",)");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["resolved"]["torch_xla_version"], "1.13");
}

// The answer shows Lightning's flag beside the executor's precision: 2.x
// turns '16-mixed' on the CPU into 'bf16-mixed' with its warning; 2.1+ on a
// TPU keeps '16-true' but trains in float32, and tpujobs' notice says why.
TEST(Routes, ValidateShowsLightningsPrecisionFlagBesideTheExecutors) {
  struct Row {
    std::string fields, lightning_precision, precision, warning_start;
  };
  for (
      const Row& row : std::vector<Row>{
          {R"("trainer": {"accelerator": "cpu", "precision": "16-mixed"}, "lightning_version": "2.0",)",
           "bf16-mixed", "bf16-true",
           "You passed `Trainer(accelerator='cpu', precision='16-mixed')` but AMP with fp16 is not "
           "supported on CPU."},
          {R"("trainer": {"accelerator": "tpu", "precision": "16-true"}, "lightning_version": "2.5",)",
           "16-true", "32-true",
           "tpujobs: precision='16-true' on a TPU trains in float32 under Lightning 2.5"},
      }) {
    FakeJobService service;
    JobsApi api(service, {});
    const Response r = validate(api, row.fields);
    ASSERT_EQ(r.status, 200) << r.body;
    const nlohmann::json body = body_of(r);
    EXPECT_EQ(body["resolved"]["lightning_precision"], row.lightning_precision) << row.fields;
    EXPECT_EQ(body["resolved"]["precision"], row.precision) << row.fields;
    bool warned = false;
    for (const auto& warning : body["warnings"]) {
      warned |= warning.get<std::string>().starts_with(row.warning_start);
    }
    EXPECT_TRUE(warned) << body["warnings"];
  }
}

TEST(Routes, MismatchedTorchAndTorchXlaIsTheImportErrorOnTheVm) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r = call(
      api, "POST", "/v1/jobs:validate",
      R"({"environment": {"python": "3.10", "torch": "2.4.1", "torch_xla": "2.5.0", "lightning": "2.4.0"},
                        "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
  ASSERT_EQ(r.status, 422) << r.body;
  const nlohmann::json error = body_of(r)["errors"][0];
  EXPECT_EQ(error["field"], "environment.torch_xla");
  EXPECT_TRUE(error["message"].get<std::string>().starts_with(
      "ImportError: /usr/local/lib/python3.10/dist-packages/_XLAC.cpython-310-x86_64-linux-gnu.so: "
      "undefined symbol: "));
  EXPECT_NE(error["hint"].get<std::string>().find("torch==2.5.0"), std::string::npos)
      << error["hint"];
}

TEST(Routes, LightningJudgesDeviceValuesOfEveryJsonType) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string rest =
      R"("model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})";
  Response r = call(api, "POST", "/v1/jobs:validate",
                    R"({"trainer": {"devices": 8.0, "num_nodes": 0}, )" + rest);
  ASSERT_EQ(r.status, 422) << r.body;
  const nlohmann::json errors = body_of(r)["errors"];
  ASSERT_EQ(errors.size(), 2u) << errors;
  EXPECT_EQ(
      errors[0]["message"],
      "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed 8.0.");
  EXPECT_EQ(errors[1]["message"], "`num_nodes` must be a positive integer, but got 0.");
  r = call(api, "POST", "/v1/jobs:validate",
           R"({"trainer": {"devices": "2,", "precision": 1}, )" + rest);
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_TRUE(
      body_of(r)["errors"][0]["message"].get<std::string>().starts_with("Precision 1 is invalid."));
}

TEST(Routes, ValidSubmitReaches201WithLocationAndIdempotencyKey) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r =
      call(api, "POST", "/v1/jobs", R"({"trainer": {"devices": 8, "precision": "bf16-true"},
      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})",
           {{"idempotency-key", "ci-42"}});
  EXPECT_EQ(r.status, 201);
  ASSERT_EQ(service.submitted.size(), 1u);
  EXPECT_EQ(service.submitted[0].idempotency_key, "ci-42");
  EXPECT_EQ(service.submitted[0].spec.training.world_size, 8);
  EXPECT_EQ(service.submitted[0].spec.training.precision, executor::Precision::kBf16);
  bool location = false;
  for (const auto& [name, value] : r.headers)
    location |= name == "Location" && value == "/v1/jobs/1";
  EXPECT_TRUE(location);
}

TEST(Routes, SameSpecHashesEquallyAndADifferentOneDoesNot) {
  FakeJobService service;
  JobsApi api(service, {});
  const std::string a =
      R"({"model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "iris"}})";
  const std::string a_reordered =
      R"({"data": {"dataset": "iris"}, "model": {"layers": [{"out": 10, "type": "linear"}]}})";
  const std::string b =
      R"({"model": {"layers": [{"type": "linear", "out": 3}]}, "data": {"dataset": "iris"}})";
  call(api, "POST", "/v1/jobs", a);
  call(api, "POST", "/v1/jobs", a_reordered);
  call(api, "POST", "/v1/jobs", b);
  ASSERT_EQ(service.submitted.size(), 3u);
  EXPECT_EQ(service.submitted[0].spec_hash, service.submitted[1].spec_hash);
  EXPECT_NE(service.submitted[0].spec_hash, service.submitted[2].spec_hash);
}

TEST(Routes, ListParsesFiltersAndRejectsBadOnes) {
  FakeJobService service;
  JobsApi api(service, {});
  EXPECT_EQ(call(api, "GET", "/v1/jobs?state=running,queued&label=team%3Dml&limit=5").status, 200);
  EXPECT_EQ(service.last_query.states, (std::vector<std::string>{"RUNNING", "QUEUED"}));
  ASSERT_EQ(service.last_query.labels.size(), 1u);
  EXPECT_EQ(service.last_query.labels[0], (std::pair<std::string, std::string>{"team", "ml"}));
  EXPECT_EQ(service.last_query.limit, 5);
  EXPECT_EQ(call(api, "GET", "/v1/jobs?state=DONE").status, 400);
  EXPECT_EQ(call(api, "GET", "/v1/jobs?limit=0").status, 400);
  EXPECT_EQ(call(api, "GET", "/v1/jobs?limit=abc").status, 400);
  EXPECT_EQ(call(api, "GET", "/v1/jobs?label=novalue").status, 400);
}

TEST(Routes, JobIdsThatAreNotPositiveIntegersAre404) {
  FakeJobService service;
  JobsApi api(service, {});
  EXPECT_EQ(call(api, "GET", "/v1/jobs/abc").status, 404);
  EXPECT_EQ(call(api, "GET", "/v1/jobs/-1").status, 404);
  EXPECT_EQ(call(api, "GET", "/v1/jobs/1").status, 200);
  EXPECT_EQ(call(api, "POST", "/v1/jobs/1/cancel").status, 409);
}

TEST(Routes, HostActionsReachTheServiceWithTheHostName) {
  FakeJobService service;
  JobsApi api(service, {});
  EXPECT_EQ(call(api, "POST", "/v1/pool/hosts/v3-32-h1:drain").status, 200);
  EXPECT_EQ(call(api, "POST", "/v1/pool/hosts/v3-32-h1:recover").status, 200);
  EXPECT_EQ(call(api, "POST", "/v1/pool/hosts/v3-32-h1:explode").status, 404);
  EXPECT_EQ(service.host_actions,
            (std::vector<std::string>{"draining v3-32-h1", "healthy v3-32-h1"}));
}

TEST(Routes, StaticPathsRefuseTraversal) {
  FakeJobService service;
  ApiOptions options;
  options.static_file = [](std::string_view path) -> std::string_view {
    return path == "/index.html" ? "<html></html>" : "";
  };
  JobsApi api(service, options);
  EXPECT_EQ(call(api, "GET", "/").status, 200);
  EXPECT_EQ(call(api, "GET", "/%2e%2e/etc/passwd").status, 400);
  EXPECT_EQ(call(api, "GET", "/nothing.js").status, 404);
}

TEST(Auth, OnceTokensExistAnonymousRequestsAre401ButHealthIsOpen) {
  FakeJobService service;
  service.require_auth = true;
  JobsApi api(service, {});
  Response r = call(api, "GET", "/v1/jobs");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.content_type, "application/problem+json");
  EXPECT_EQ(header_of(r, "WWW-Authenticate").rfind("Bearer", 0), 0u);
  EXPECT_EQ(call(api, "GET", "/healthz").status, 200);
  EXPECT_EQ(call(api, "GET", "/metrics").status, 200);
  EXPECT_EQ(call(api, "GET", "/v1/jobs", "", {{"authorization", "Bearer nope"}}).status, 401);
  EXPECT_EQ(call(api, "GET", "/v1/jobs", "", {{"authorization", "Basic dXNlcjpwdw=="}}).status,
            401);
  EXPECT_EQ(call(api, "GET", "/v1/jobs", "", {{"authorization", "Bearer user-token"}}).status, 200);
  EXPECT_EQ(service.last_query.tenant, "team-a");
  EXPECT_EQ(call(api, "GET", "/v1/jobs?access_token=user-token").status, 200);
}

TEST(Auth, SubmitsActForTheTokensTenant) {
  FakeJobService service;
  JobsApi api(service, {});
  Response r =
      call(api, "POST", "/v1/jobs",
           R"({"model": {"layers": [{"type": "linear", "out": 3}]}, "data": {"dataset": "iris"}})",
           {{"authorization", "Bearer user-token"}});
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(service.submitted.at(0).tenant, "team-a");
}

TEST(Auth, PoolAndQuotaOperationsNeedAnAdmin) {
  FakeJobService service;
  service.require_auth = true;
  JobsApi api(service, {});
  EXPECT_EQ(
      call(api, "POST", "/v1/pool/hosts/h0:drain", "", {{"authorization", "Bearer user-token"}})
          .status,
      403);
  EXPECT_EQ(
      call(api, "POST", "/v1/pool/hosts/h0:drain", "", {{"authorization", "Bearer admin-token"}})
          .status,
      200);
  EXPECT_EQ(call(api, "POST", "/v1/tenants/team-a/quota", R"({"max_cores": 8})",
                 {{"authorization", "Bearer user-token"}})
                .status,
            403);
  EXPECT_EQ(call(api, "POST", "/v1/tenants/team-a/quota", R"({"max_cores": 8})",
                 {{"authorization", "Bearer admin-token"}})
                .status,
            200);
  EXPECT_EQ(service.quotas["team-a"], 8);
  EXPECT_EQ(call(api, "POST", "/v1/tenants/team-a/quota", R"({"max_cores": -1})",
                 {{"authorization", "Bearer admin-token"}})
                .status,
            422);
  EXPECT_EQ(call(api, "GET", "/v1/pool", "", {{"authorization", "Bearer user-token"}}).status, 200);
}

std::string_view AccessName(Access access) {
  switch (access) {
    case Access::kOpen:
      return "open";
    case Access::kTenant:
      return "tenant";
    case Access::kAdmin:
      return "admin";
  }
  return "?";
}

// The route table's access column, as a reader of the API would check it.
TEST(Auth, EveryRouteDeclaresWhoMayCallIt) {
  FakeJobService service;
  JobsApi api(service, {});
  std::map<std::string, std::vector<std::string>> by_access;
  for (const Route& route : api.router().routes()) {
    by_access[std::string(AccessName(route.access))].push_back(route.method + " " + route.pattern);
  }
  EXPECT_EQ((std::vector<std::string>{"GET /healthz", "GET /readyz", "GET /metrics",
                                      "GET /openapi.json"}),
            by_access["open"]);
  EXPECT_EQ((std::vector<std::string>{
                "POST /v1/pool/hosts/{host}:drain", "POST /v1/pool/hosts/{host}:fail",
                "POST /v1/pool/hosts/{host}:recover", "POST /v1/tenants/{tenant}/quota",
                "POST /v1/pool/leases/{id}:release", "PUT /v1/notifications/allowlist",
                "POST /v1/tenants/{tenant}/limits"}),
            by_access["admin"]);
  for (const std::string& route : by_access["tenant"]) {
    EXPECT_EQ(std::string::npos, route.find("/v1/pool/hosts/")) << route;
  }
}

// Whatever the path, an admin route refuses a tenant's token before its handler runs.
TEST(Auth, EveryAdminRouteRefusesATenantToken) {
  FakeJobService service;
  service.require_auth = true;
  JobsApi api(service, {});
  for (const Route& route : api.router().routes()) {
    if (route.access != Access::kAdmin) continue;
    std::string target = route.pattern;
    for (const char* parameter : {"{host}", "{tenant}", "{id}"}) {
      if (auto at = target.find(parameter); at != std::string::npos)
        target.replace(at, std::string(parameter).size(), "1");
    }
    EXPECT_EQ(
        403, call(api, route.method, target, "{}", {{"authorization", "Bearer user-token"}}).status)
        << target;
  }
  EXPECT_TRUE(service.host_actions.empty());
}

TEST(Auth, ASubmitThatCanNeverFitTheQuotaIs422AndValidateSaysSo) {
  FakeJobService service;
  service.quotas["team-a"] = 4;
  JobsApi api(service, {});
  const std::string eight_cores =
      R"({"trainer": {"devices": 8}, "model": {"layers": [{"type": "linear", "out": 3}]},
      "data": {"dataset": "iris"}})";
  for (const char* target : {"/v1/jobs", "/v1/jobs:validate"}) {
    Response r = call(api, "POST", target, eight_cores, {{"authorization", "Bearer user-token"}});
    ASSERT_EQ(r.status, 422) << target << ": " << r.body;
    EXPECT_NE(body_of(r)["errors"][0]["message"].get<std::string>().find("at most 4"),
              std::string::npos)
        << target;
  }
  EXPECT_TRUE(service.submitted.empty());
}

// A submit resolves against a recent read of the pool; what that read
// refuses, or leaves on the CPU, is resolved again on the pool read now: an
// agent that registered a moment ago is seen (issue 29: no read of the
// hosts per submit).
std::string iris_job(const std::string& trainer) {
  return R"({"trainer": )" + trainer + R"(, "model": {"layers": [{"type": "linear", "out": 3}]},
             "data": {"dataset": "iris"}})";
}

TEST(CapacityRead, ASubmitThatFitsARecentReadDoesNotReadThePoolAgain) {
  FakeJobService service;
  JobsApi api(service, {});
  const Response r = call(api, "POST", "/v1/jobs",
                          iris_job(R"({"accelerator": "tpu", "devices": 8, "max_epochs": 1})"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(service.capacity_reads_now, 0);
}

TEST(CapacityRead, WhatARecentReadRefusesIsResolvedAgainOnThePoolAsItIsNow) {
  FakeJobService service;
  service.pool = {};  // read before the first agent registered
  service.pool_now = scheduler::PoolCapacity{{{scheduler::Generation::kV3, 4}}};
  JobsApi api(service, {});
  const Response tpu = call(api, "POST", "/v1/jobs:validate",
                            iris_job(R"({"accelerator": "tpu", "devices": 8, "max_epochs": 1})"));
  ASSERT_EQ(tpu.status, 200) << tpu.body;
  EXPECT_EQ(service.capacity_reads_now, 1);
  const Response automatic =
      call(api, "POST", "/v1/jobs:validate", iris_job(R"({"max_epochs": 1})"));
  ASSERT_EQ(automatic.status, 200) << automatic.body;
  EXPECT_EQ(body_of(automatic)["resolved"]["accelerator"], "tpu") << automatic.body;
  EXPECT_EQ(service.capacity_reads_now, 2);
}

}  // namespace
}  // namespace tpujobs::api
