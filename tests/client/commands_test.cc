// The client commands against a scripted fake server: exit codes, retries
// through outages, log following across dropped streams, and what is printed.
#include "client/commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tpujobs::client {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

HttpResponse answer(int status, const json& body) { return {status, body.dump(), {}, ""}; }
HttpResponse refused() { return {0, "", {}, "Connection refused"}; }

class FakeServer final : public HttpClient {
 public:
  // Answers to requests whose "METHOD target" starts with a prefix, in order;
  // the last answer for a prefix repeats.
  void script(const std::string& prefix, std::vector<HttpResponse> responses) {
    scripts_.emplace_back(prefix, std::deque<HttpResponse>(responses.begin(), responses.end()));
  }
  // Bodies handed out by successive stream() calls (each a list of pieces).
  std::deque<std::vector<std::string>> streams;

  HttpResponse send(const HttpRequest& request, milliseconds) override {
    requests.push_back(request);
    const std::string key = request.method + " " + request.target;
    for (auto& [prefix, answers] : scripts_) {
      if (key.rfind(prefix, 0) != 0) continue;
      HttpResponse response = answers.front();
      if (answers.size() > 1) answers.pop_front();
      return response;
    }
    return answer(404, {{"detail", "no script for " + key}});
  }

  HttpResponse stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_body, milliseconds,
                      std::chrono::steady_clock::time_point) override {
    requests.push_back(request);
    if (streams.empty()) return refused();
    std::vector<std::string> pieces = streams.front();
    streams.pop_front();
    for (const std::string& piece : pieces) {
      if (!on_body(piece)) break;
    }
    return {200, "", {}, ""};
  }

  std::string header(std::size_t index, const std::string& name) const {
    for (const auto& [n, v] : requests.at(index).headers) {
      if (n == name) return v;
    }
    return "";
  }

  std::vector<HttpRequest> requests;

 private:
  std::vector<std::pair<std::string, std::deque<HttpResponse>>> scripts_;
};

class ClientCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_path_ = std::filesystem::temp_directory_path() /
                 ("tpujobs-cli-spec-" + std::to_string(getpid()) + ".json");
    std::ofstream(spec_path_) << R"({"name": "digits-mlp", "trainer": {"devices": 8},
                                     "model": {"layers": [{"type": "linear", "out": 10}]},
                                     "data": {"dataset": "digits"}, "expect": {"val_accuracy": {"min": 0.9}}})";
    context_.http = &server_;
    context_.out = &out_;
    context_.err = &err_;
    context_.clock = &clock_;
    context_.retry.attempts = 3;
    context_.retry.first_backoff = milliseconds(100);
    context_.retry.max_backoff = milliseconds(400);
    context_.retry.wait_poll_seconds = 5;
  }
  void TearDown() override { std::filesystem::remove(spec_path_); }

  int run(const std::string& command, std::vector<std::string> args) {
    base::Result<CommandLine> parsed =
        parse_command_line(command, args, {{"TPUJOBS_TOKEN", "s3cret"}});
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    return run_client_command(parsed.ok() ? *parsed : CommandLine{}, context_);
  }

  json job(const std::string& state, const json& extra = json::object()) {
    json j = {{"id", 7},
              {"name", "digits-mlp"},
              {"state", state},
              {"spec", {{"expect", {{"val_accuracy", {{"min", 0.9}}}}}}}};
    j.update(extra);
    return j;
  }

  FakeServer server_;
  std::ostringstream out_;
  std::ostringstream err_;
  // Fake time, which the command's sleeps move on (at once); it notes them.
  class SleepRecordingClock final : public base::Clock {
   public:
    explicit SleepRecordingClock(std::vector<std::int64_t>& slept) : slept_(slept) {}
    time_point now() override { return fake_.now(); }
    wall_time_point wall_now() override { return fake_.wall_now(); }
    void sleep_for(std::chrono::nanoseconds duration) override {
      slept_.push_back(std::chrono::duration_cast<milliseconds>(duration).count());
      fake_.sleep_for(duration);
    }
    bool wait_for(base::MutexLock& lock, std::condition_variable& cv,
                  std::chrono::nanoseconds timeout, const std::function<bool()>& done) override {
      return fake_.wait_for(lock, cv, timeout, done);
    }

   private:
    std::vector<std::int64_t>& slept_;
    base::FakeClock fake_;
  };
  std::vector<std::int64_t> slept_;
  SleepRecordingClock clock_{slept_};
  ClientContext context_;
  std::filesystem::path spec_path_;
};

TEST_F(ClientCommandTest, SubmitWaitRidesOutARestartAndExitsZero) {
  server_.script("POST /v1/jobs", {answer(201, job("QUEUED"))});
  server_.script(
      "GET /v1/jobs/7/wait?timeout=5",
      {refused(), refused(), answer(503, {{"detail", "the database is unavailable"}}),
       answer(200,
              job("RUNNING", {{"progress", {{"epoch", 3}, {"max_epochs", 20}, {"step", 60}}}})),
       answer(200, job("SUCCEEDED", {{"metrics", {{"val_accuracy", 0.95}}}}))});
  EXPECT_EQ(kExitSucceeded,
            run("submit", {spec_path_.string(), "--wait", "--set", "trainer.devices=1"}));

  const json sent = json::parse(server_.requests.at(0).body);
  EXPECT_EQ(1, sent["trainer"]["devices"]);
  EXPECT_EQ("Bearer s3cret", server_.header(0, "Authorization"));
  EXPECT_EQ(0u, server_.header(0, "Idempotency-Key").rfind("tpujobs-cli-", 0)) << "a generated key";
  EXPECT_EQ((std::vector<std::int64_t>{100, 200, 400}), slept_) << "backoff doubles up to the cap";
  EXPECT_NE(std::string::npos, err_.str().find("lost the service (Connection refused)"))
      << err_.str();
  EXPECT_NE(std::string::npos, err_.str().find("reconnected")) << err_.str();
  EXPECT_NE(std::string::npos, err_.str().find("job 7 digits-mlp  RUNNING  epoch 3/20  step 60"))
      << err_.str();
  EXPECT_NE(std::string::npos, out_.str().find("job 7 digits-mlp  SUCCEEDED  val_accuracy 0.95"))
      << out_.str();
}

TEST_F(ClientCommandTest, StatusShowsAPreemptedJobAndItsPriorityParts) {
  server_.script(
      "GET /v1/jobs/7",
      {answer(200, job("QUEUED",
                       {{"pending_reason", "Preempted"},
                        {"queue_position", 2},
                        {"pending_detail", "preempted by job 9; resumes from its last checkpoint"},
                        {"priority_parts",
                         {{"base", 1}, {"fair_share", 0.25}, {"effective", 1.25}}}}))});
  EXPECT_EQ(0, run("status", {"7"}));
  EXPECT_NE(std::string::npos,
            out_.str().find("job 7 digits-mlp  QUEUED (position 2, waiting for Preempted): "
                            "preempted by job 9; resumes from its last checkpoint  priority 1.250 "
                            "(base 1 + fair share 0.250)"))
      << out_.str();
}

TEST_F(ClientCommandTest, MissedGateExitsOneWithLogTailAndHint) {
  server_.script("POST /v1/jobs", {answer(201, job("QUEUED"))});
  server_.script(
      "GET /v1/jobs/7/wait",
      {answer(200, job("FAILED", {{"metrics", {{"val_accuracy", 0.5}}},
                                  {"error",
                                   {{"type", "EXPECTATION_FAILED"},
                                    {"message", "val_accuracy = 0.5 is below the minimum 0.9"},
                                    {"hint", "Train longer (max_epochs)"}}}}))});
  server_.script("GET /v1/jobs/7/logs?after=0",
                 {answer(200, {{"lines",
                                {{{"seq", 1}, {"line", "Epoch 0: loss=2.3"}},
                                 {{"seq", 2}, {"line", "EXPECTATION_FAILED: val_accuracy"}}}},
                               {"next_after", 2}})});
  server_.script("GET /v1/jobs/7/logs?after=2",
                 {answer(200, {{"lines", json::array()}, {"next_after", 2}})});
  const std::string junit = spec_path_.string() + ".xml";
  EXPECT_EQ(kExitJobFailed,
            run("submit", {spec_path_.string(), "--idempotency-key", "ci-9", "--junit", junit}));
  EXPECT_EQ("ci-9", server_.header(0, "Idempotency-Key"));
  EXPECT_NE(std::string::npos,
            err_.str().find("--- last 2 log lines of job 7 ---\nEpoch 0: loss=2.3\n"
                            "EXPECTATION_FAILED: val_accuracy\n---\n"))
      << err_.str();
  EXPECT_NE(
      std::string::npos,
      err_.str().find(
          "tpujobs: job 7 FAILED: EXPECTATION_FAILED: val_accuracy = 0.5 is below the minimum 0.9\n"
          "  hint: Train longer (max_epochs)\n"))
      << err_.str();
  std::ifstream in(junit);
  std::stringstream xml;
  xml << in.rdbuf();
  EXPECT_NE(std::string::npos, xml.str().find("failures=\"2\"")) << xml.str();
  std::filesystem::remove(junit);
}

TEST_F(ClientCommandTest, RejectedSpecExitsTwoWithFieldErrors) {
  server_.script(
      "POST /v1/jobs:validate",
      {answer(422, {{"detail", "1 problem with the job spec"},
                    {"errors",
                     {{{"field", "trainer.devices"},
                       {"message", "`devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3"},
                       {"hint", "Use devices: 8"}}}}})});
  EXPECT_EQ(kExitRejected, run("validate", {spec_path_.string()}));
  EXPECT_EQ("tpujobs: validating " + spec_path_.string() +
                ": HTTP 422: 1 problem with the job spec\n"
                "  trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3\n"
                "    hint: Use devices: 8\n",
            err_.str());
}

TEST_F(ClientCommandTest, UnreachableServerExitsFourAfterRetries) {
  server_.script("GET /v1/pool", {refused()});
  EXPECT_EQ(kExitUnreachable, run("pool", {}));
  EXPECT_EQ(3u, server_.requests.size());
  EXPECT_NE(std::string::npos, err_.str().find("cannot reach the service")) << err_.str();
  server_.script("GET /v1/jobs/7", {answer(500, {{"detail", "boom"}})});
  EXPECT_EQ(kExitUnreachable, run("status", {"7"}));
}

TEST_F(ClientCommandTest, CancelledJobExitsThreeAndTimeoutExits124) {
  server_.script("GET /v1/jobs/7/wait", {answer(200, job("CANCELLED"))});
  server_.script("GET /v1/jobs/7/logs", {answer(200, {{"lines", json::array()}})});
  EXPECT_EQ(kExitCancelled, run("wait", {"7"}));

  FakeServer running;
  running.script("GET /v1/jobs/8/wait?timeout=0", {answer(200, job("RUNNING"))});
  running.script("GET /v1/jobs/8/logs", {answer(200, {{"lines", json::array()}})});
  context_.http = &running;
  EXPECT_EQ(kExitTimedOut, run("wait", {"8", "--timeout", "0s"}));
  EXPECT_NE(std::string::npos, err_.str().find("--timeout 0s elapsed; job 7 is still RUNNING"))
      << err_.str();
}

TEST_F(ClientCommandTest, FollowResumesAfterADroppedStream) {
  server_.streams.push_back(
      {"retry: 1000\n\nid: 1\nevent: log\ndata: {\"seq\":1,\"line\":\"Epoch 0\"}\n\nid: 2\nev"});
  server_.streams.push_back({"id: 2\nevent: log\ndata: {\"seq\":2,",
                             "\"line\":\"Epoch 1\"}\n\n: keep-alive\n\n",
                             "event: end\ndata: {\"state\":\"SUCCEEDED\"}\n\n"});
  EXPECT_EQ(kExitSucceeded, run("logs", {"7", "--follow"}));
  EXPECT_EQ("Epoch 0\nEpoch 1\n", out_.str());
  ASSERT_EQ(2u, server_.requests.size());
  EXPECT_EQ("/v1/jobs/7/logs?after=0", server_.requests[0].target);
  EXPECT_EQ("/v1/jobs/7/logs?after=1", server_.requests[1].target)
      << "resumes after the last line it printed";
  EXPECT_EQ("text/event-stream", server_.header(0, "Accept"));
}

TEST_F(ClientCommandTest, ListPrintsATable) {
  server_.script("GET /v1/jobs?state=RUNNING&label=team%3Dml&limit=50",
                 {answer(200, {{"jobs",
                                {job("RUNNING", {{"progress", {{"epoch", 2}, {"max_epochs", 20}}},
                                                 {"metrics", {{"val_accuracy", 0.81}}},
                                                 {"created_at", "2026-01-01T00:00:00Z"}})}},
                               {"next_cursor", nullptr}})});
  EXPECT_EQ(kExitSucceeded, run("list", {"--state", "RUNNING", "--label", "team=ml"}));
  EXPECT_EQ(
      "ID  NAME        STATE    PROGRESS    VAL_ACCURACY  CREATED\n"
      "7   digits-mlp  RUNNING  epoch 2/20  0.81          2026-01-01T00:00:00Z\n",
      out_.str());
}

TEST_F(ClientCommandTest, PoolOfAClusterNamesEachHostsAgentAndListsTheAgents) {
  auto host = [](const std::string& name, const std::string& agent, const std::string& state,
                 const json& job) {
    json cores = json::array();
    for (int c = 0; c < 4; ++c) cores.push_back({{"core", c}, {"job", job}});
    return json{{"name", name},
                {"agent", agent},
                {"agent_state", state},
                {"generation", "v4"},
                {"health", state == "alive" ? "healthy" : "unreachable"},
                {"devices", 4},
                {"cores_in_use", job.is_null() ? 0 : 4},
                {"cores", cores}};
  };
  const json pool = {
      {"hosts",
       {host("a-h0", "agent-a", "alive", 42), host("a-h1", "agent-a", "alive", 41),
        host("b-h0", "agent-b", "lost", 41), host("b-h1", "agent-b", "lost", nullptr)}},
      {"agents",
       {{{"name", "agent-a"},
         {"state", "alive"},
         {"epoch", 3},
         {"workers", 4},
         {"last_heartbeat", "2026-11-24T00:00:05Z"},
         {"hosts", {"a-h0", "a-h1"}},
         {"running_jobs", {41, 42}}},
        {{"name", "agent-b"},
         {"state", "lost"},
         {"epoch", 5},
         {"workers", 2},
         {"last_heartbeat", "2026-11-23T23:58:30Z"},
         {"hosts", {"b-h0", "b-h1"}},
         {"running_jobs", json::array()}}}},
      {"total_cores", 16},
      {"used_cores", 12},
      {"healthy_cores", 8},
      {"utilization", 0.75},
      {"queued_jobs", 0},
      {"running_jobs", 2}};
  server_.script("GET /v1/pool", {answer(200, pool)});
  EXPECT_EQ(kExitSucceeded, run("pool", {}));
  EXPECT_EQ(
      "HOST  AGENT           GENERATION  HEALTH       CORES  IN USE  JOBS\n"
      "a-h0  agent-a         v4          healthy      4      4       42\n"
      "a-h1  agent-a         v4          healthy      4      4       41\n"
      "b-h0  agent-b (lost)  v4          unreachable  4      4       41\n"
      "b-h1  agent-b (lost)  v4          unreachable  4      0       -\n"
      "16 cores, 12 in use (75%), 8 healthy; 2 jobs running, 0 queued\n"
      "AGENT    STATE  LAST HEARTBEAT        HOSTS      RUNNING JOBS\n"
      "agent-a  alive  2026-11-24T00:00:05Z  a-h0,a-h1  41,42\n"
      "agent-b  lost   2026-11-23T23:58:30Z  b-h0,b-h1  -\n",
      out_.str());
}

TEST_F(ClientCommandTest, PoolPrintsEachGenerationsLayout) {
  const json pool = {{"hosts", json::array()},
                     {"generations",
                      {{{"generation", "v3"},
                        {"hosts", 1},
                        {"devices_per_host", 8},
                        {"slice", "v3-8"},
                        {"topology", nullptr},
                        {"host_block", nullptr},
                        {"hbm_bytes_per_device", 17179869184.0},
                        {"hbm_reported_bytes", 16621830144.0},
                        {"mxu_dim", 128},
                        {"peak_bf16_flops_per_device", 61.5e12}},
                       {{"generation", "v5p"},
                        {"hosts", 4},
                        {"devices_per_host", 4},
                        {"slice", "v5p-32"},
                        {"topology", "2x2x4"},
                        {"host_block", "2x2x1"},
                        {"hbm_bytes_per_device", 103079215104.0},
                        {"hbm_reported_bytes", 102804489011.0},
                        {"mxu_dim", 128},
                        {"peak_bf16_flops_per_device", 459e12}}}},
                     {"total_cores", 24},
                     {"used_cores", 0},
                     {"healthy_cores", 24},
                     {"utilization", 0.0},
                     {"queued_jobs", 0},
                     {"running_jobs", 0}};
  server_.script("GET /v1/pool", {answer(200, pool)});
  EXPECT_EQ(kExitSucceeded, run("pool", {}));
  EXPECT_EQ(
      "HOST  AGENT  GENERATION  HEALTH  CORES  IN USE  JOBS\n"
      "24 cores, 0 in use (0%), 24 healthy; 0 jobs running, 0 queued\n"
      "GENERATION  HOSTS  DEVICES/HOST  SLICE   TOPOLOGY  HOST BLOCK  HBM/DEVICE  XLA HBM  MXU     "
      " "
      "BF16 TFLOP/S\n"
      "v3          1      8             v3-8    -         -           16 GiB      15.48G   128x128 "
      " "
      "62\n"
      "v5p         4      4             v5p-32  2x2x4     2x2x1       96 GiB      95.74G   128x128 "
      " "
      "459\n"
      "No agent has registered yet: start one with `tpujobs agent`.\n",
      out_.str());
}

TEST_F(ClientCommandTest, NotificationsPrintEachDeliveryAndItsAttempts) {
  server_.script("GET /v1/jobs/7/notifications",
                 {answer(200, {{"job_id", 7},
                               {"notifications",
                                {{{"id", 3},
                                  {"event", "finished"},
                                  {"state", "SUCCEEDED"},
                                  {"status", "delivered"},
                                  {"url", "http://ci.example/h"},
                                  {"attempts",
                                   {{{"attempt", 1},
                                     {"at", "2026-01-01T00:00:01Z"},
                                     {"duration_ms", 12.4},
                                     {"status_code", 500},
                                     {"error", "the receiver answered 500"},
                                     {"sender", "replica-a/1"}},
                                    {{"attempt", 2},
                                     {"at", "2026-01-01T00:00:02Z"},
                                     {"duration_ms", 3.0},
                                     {"status_code", 200},
                                     {"sender", "replica-b/2"}}}}}}}})});
  EXPECT_EQ(kExitSucceeded, run("notifications", {"7"}));
  EXPECT_EQ(
      "DELIVERY  EVENT     STATE      STATUS     ATTEMPTS  URL\n"
      "3         finished  SUCCEEDED  delivered  2         http://ci.example/h\n"
      "  delivery 3 attempt 1 at 2026-01-01T00:00:01Z: HTTP 500 (the receiver answered 500), 12 "
      "ms, by replica-a/1\n"
      "  delivery 3 attempt 2 at 2026-01-01T00:00:02Z: HTTP 200, 3 ms, by replica-b/2\n",
      out_.str());
}

TEST_F(ClientCommandTest, UploadSendsTheFileAsCsvUnderItsNameAndPrintsTheId) {
  const std::filesystem::path csv = std::filesystem::temp_directory_path() /
                                    ("tpujobs-upload-" + std::to_string(getpid()) + " sensors.csv");
  std::ofstream(csv, std::ios::binary) << "a,b,label\n1,2,0\n3,4,1\n";
  // (Scripts match by prefix, the first registered first.)
  server_.script("POST /v1/datasets?name=mine",
                 {answer(422, {{"detail", "line 3: 'x' is not a number"}})});
  server_.script(
      "POST /v1/datasets",
      {answer(201, {{"id", "ds_9"}, {"name", "x"}, {"rows", 2}, {"features", 2}, {"classes", 2}})});
  EXPECT_EQ(kExitSucceeded, run("upload", {csv.string()}));
  ASSERT_EQ(server_.requests.size(), 1u);
  const std::string stem = csv.stem().string();
  std::string encoded;
  for (char c : stem) encoded += c == ' ' ? std::string("%20") : std::string(1, c);
  EXPECT_EQ(server_.requests[0].target, "/v1/datasets?name=" + encoded);
  EXPECT_EQ(server_.header(0, "Content-Type"), "text/csv");
  EXPECT_EQ(server_.requests[0].body, "a,b,label\n1,2,0\n3,4,1\n") << "newlines kept";
  EXPECT_EQ("ds_9\n", out_.str()) << "the id alone on stdout, for $(...)";
  EXPECT_NE(err_.str().find("--set 'data.dataset={\"upload\":\"ds_9\"}'"), std::string::npos)
      << err_.str();

  // --name, and a refusal reported with the service's detail (exit 2).
  EXPECT_EQ(kExitRejected, run("upload", {csv.string(), "--name", "mine"}));
  EXPECT_NE(err_.str().find("line 3: 'x' is not a number"), std::string::npos) << err_.str();
  EXPECT_EQ(kExitRejected, run("upload", {(csv.string() + ".missing")}));
  EXPECT_NE(err_.str().find("cannot read"), std::string::npos);
  std::filesystem::remove(csv);
}

// The client's own retry of an upload whose answer was lost sends the same
// Idempotency-Key, so the service answers the dataset the first attempt
// stored (200) rather than storing a second copy.
TEST_F(ClientCommandTest, AnUploadRetriedAfterA503SendsItsKeyAgainAndTakesTheStoredDataset) {
  const std::filesystem::path csv = std::filesystem::temp_directory_path() /
                                    ("tpujobs-upload-retry-" + std::to_string(getpid()) + ".csv");
  std::ofstream(csv, std::ios::binary) << "a,label\n1,0\n";
  server_.script(
      "POST /v1/datasets",
      {answer(503, {{"detail", "the database is unavailable: no answer within 10 s"}}),
       answer(200, {{"id", "ds_4"}, {"name", "x"}, {"rows", 1}, {"features", 1}, {"classes", 1}})});
  EXPECT_EQ(kExitSucceeded, run("upload", {csv.string()}));
  ASSERT_EQ(server_.requests.size(), 2u);
  const std::string key = server_.header(0, "Idempotency-Key");
  EXPECT_EQ(0u, key.rfind("tpujobs-cli-", 0)) << "a generated key: " << key;
  EXPECT_EQ(key, server_.header(1, "Idempotency-Key")) << "the retry repeats it";
  EXPECT_EQ("ds_4\n", out_.str());
  EXPECT_NE(err_.str().find("(same idempotency key)"), std::string::npos) << err_.str();

  // A key of the user's own is sent as given.
  EXPECT_EQ(kExitSucceeded, run("upload", {csv.string(), "--idempotency-key", "ci-9-upload"}));
  EXPECT_EQ("ci-9-upload", server_.header(server_.requests.size() - 1, "Idempotency-Key"));
  std::filesystem::remove(csv);
}

TEST_F(ClientCommandTest, NotifyAllowAddsAndRemovesEntriesOfTheStoredList) {
  server_.script("GET /v1/notifications/allowlist", {answer(200, {{"entries", {"a.example"}}})});
  server_.script("PUT /v1/notifications/allowlist",
                 {answer(200, {{"entries", {"a.example", "b.example:80"}}})});
  EXPECT_EQ(kExitSucceeded, run("notify-allow", {"b.example:80", "a.example"}));
  ASSERT_EQ(server_.requests.size(), 2u);
  EXPECT_EQ(json::parse(server_.requests[1].body),
            (json{{"entries", {"a.example", "b.example:80"}}}));
  EXPECT_EQ("a.example\nb.example:80\n", out_.str());
  EXPECT_EQ(kExitSucceeded, run("notify-allow", {"--remove", "a.example"}));
  EXPECT_EQ(json::parse(server_.requests[3].body), (json{{"entries", json::array()}}));
}

TEST_F(ClientCommandTest, NotifySecretIsShownOnlyWhenRotated) {
  server_.script("GET /v1/notifications/secret",
                 {answer(200, {{"tenant", "team-a"}, {"exists", false}})});
  server_.script("POST /v1/notifications/secret",
                 {answer(201, {{"tenant", "team-a"}, {"secret", "tpjn_abc"}})});
  EXPECT_EQ(kExitSucceeded, run("notify-secret", {}));
  EXPECT_NE(out_.str().find("has no notification secret"), std::string::npos) << out_.str();
  out_.str("");
  EXPECT_EQ(kExitSucceeded, run("notify-secret", {"--rotate"}));
  EXPECT_EQ("tpjn_abc\n", out_.str());
}

}  // namespace
}  // namespace tpujobs::client
