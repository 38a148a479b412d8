// `tpujobs limits`: what it sends and what it prints, against a fake server.
#include "client/limits_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace tpujobs::client {
namespace {

using nlohmann::json;

class OneAnswer final : public HttpClient {
 public:
  explicit OneAnswer(HttpResponse answer) : answer_(std::move(answer)) {}
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds) override {
    requests.push_back(request);
    return answer_;
  }
  HttpResponse stream(const HttpRequest&, const std::function<bool(std::string_view)>&,
                      std::chrono::milliseconds, std::chrono::steady_clock::time_point) override {
    return {0, "", {}, "no stream"};
  }
  std::vector<HttpRequest> requests;

 private:
  HttpResponse answer_;
};

struct Outcome {
  int code;
  std::string out;
  std::string err;
  std::vector<HttpRequest> requests;
};

Outcome run(std::vector<std::string> args, HttpResponse answer) {
  base::Result<CommandLine> line = parse_command_line("limits", args, {});
  EXPECT_TRUE(line.ok());
  OneAnswer server(std::move(answer));
  std::ostringstream out;
  std::ostringstream err;
  ClientContext context;
  context.http = &server;
  context.out = &out;
  context.err = &err;
  base::FakeClock clock;  // retries back off in its time, at once
  context.clock = &clock;
  const int code = run_client_command(line.ok() ? *line : CommandLine{}, context);
  return {code, out.str(), err.str(), server.requests};
}

const json kLimits = {{"tenant", "team-a"},
                      {"max_queued", 1000},
                      {"submits_per_second", 5},
                      {"submit_burst", nullptr},
                      {"requests_per_second", nullptr},
                      {"request_burst", nullptr},
                      {"max_array_size", 256}};

TEST(LimitsCommand, SetsTheGivenLimitsWithDefaultAsNullAndPrintsTheResult) {
  Outcome r = run({"team-a", "max_queued=1000", "submit_burst=default", "--token", "t"},
                  {200, kLimits.dump(), {}, ""});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].method, "POST");
  EXPECT_EQ(r.requests[0].target, "/v1/tenants/team-a/limits");
  EXPECT_EQ(json::parse(r.requests[0].body),
            (json{{"max_queued", 1000}, {"submit_burst", nullptr}}));
  EXPECT_NE(r.out.find("max_queued            1000\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("requests_per_second   no bound\n"), std::string::npos) << r.out;
}

TEST(LimitsCommand, ShowsWithoutAssignmentsAndExits2OnARefusal) {
  Outcome shown = run({"team-a"}, {200, kLimits.dump(), {}, ""});
  ASSERT_EQ(shown.code, 0);
  EXPECT_EQ(shown.requests.at(0).method, "GET");
  Outcome refused = run({"team-a", "max_queued=-1"},
                        {422, json{{"detail", "max_queued must be an integer"}}.dump(), {}, ""});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("max_queued must be an integer"), std::string::npos);
  Outcome malformed = run({"team-a", "max_queued"}, {200, "{}", {}, ""});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_TRUE(malformed.requests.empty());
}

}  // namespace
}  // namespace tpujobs::client
