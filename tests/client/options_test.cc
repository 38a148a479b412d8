#include "client/options.h"

#include <gtest/gtest.h>

#include "client/http_client.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

CommandLine parse_ok(const std::string& command, const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& environment = {}) {
  base::Result<CommandLine> parsed = parse_command_line(command, args, environment);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return parsed.ok() ? *parsed : CommandLine{};
}

// apply_override's error message, "" when it applied.
std::string override_error(json* spec, std::string_view assignment) {
  const base::Status applied = apply_override(spec, assignment);
  return applied.ok() ? "" : applied.error().message;
}

std::string parse_error(const std::string& command, const std::vector<std::string>& args) {
  base::Result<CommandLine> parsed = parse_command_line(command, args, {});
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(ParseCommandLine, SubmitWithEveryOption) {
  CommandLine line = parse_ok(
      "submit", {"spec.json", "--wait", "--follow", "--timeout", "10m", "--idempotency-key=ci-1",
                 "--junit", "out.xml", "--set", "trainer.devices=8", "--set=a.b=c", "--json"});
  EXPECT_EQ(std::vector<std::string>{"spec.json"}, line.positionals);
  EXPECT_TRUE(line.wait);
  EXPECT_TRUE(line.follow);
  EXPECT_TRUE(line.json);
  EXPECT_EQ(milliseconds(600000), line.timeout);
  EXPECT_EQ("ci-1", line.idempotency_key);
  EXPECT_EQ("out.xml", line.junit_path);
  EXPECT_EQ((std::vector<std::string>{"trainer.devices=8", "a.b=c"}), line.overrides);
}

TEST(ParseCommandLine, TimeoutFollowAndJUnitImplyWait) {
  EXPECT_FALSE(parse_ok("submit", {"s.json"}).wait);
  EXPECT_TRUE(parse_ok("submit", {"s.json", "--timeout", "5s"}).wait);
  EXPECT_TRUE(parse_ok("submit", {"s.json", "--follow"}).wait);
  EXPECT_TRUE(parse_ok("submit", {"s.json", "--junit", "r.xml"}).wait);
}

TEST(ParseCommandLine, ServerAndTokenFromEnvironmentUnlessGiven) {
  const std::map<std::string, std::string> env = {{"TPUJOBS_URL", "http://ci:9000"},
                                                  {"TPUJOBS_TOKEN", "secret"}};
  CommandLine from_env = parse_ok("pool", {}, env);
  EXPECT_EQ("http://ci:9000", from_env.server);
  EXPECT_EQ("secret", from_env.token);
  CommandLine given = parse_ok("pool", {"--server", "http://other:1", "--token=t2"}, env);
  EXPECT_EQ("http://other:1", given.server);
  EXPECT_EQ("t2", given.token);
  EXPECT_EQ("http://127.0.0.1:8080", parse_ok("pool", {}).server);
}

TEST(ParseCommandLine, ListFilters) {
  CommandLine line = parse_ok("list", {"--state", "running", "--label", "pipeline=ci-1",
                                       "--label=team=ml", "--limit", "7"});
  EXPECT_EQ("RUNNING", line.state);
  EXPECT_EQ((std::vector<std::string>{"pipeline=ci-1", "team=ml"}), line.labels);
  EXPECT_EQ(7, line.limit);
}

TEST(ParseCommandLine, UsageAndArrayOptions) {
  CommandLine usage = parse_ok("usage", {"--from", "2026-11-23T00:00:00Z", "--to", "1h",
                                         "--group-by", "label:pipeline", "--csv"});
  EXPECT_EQ("2026-11-23T00:00:00Z", usage.from);
  EXPECT_EQ("1h", usage.to);
  EXPECT_EQ("label:pipeline", usage.group_by);
  EXPECT_TRUE(usage.csv);
  EXPECT_EQ("tenant", parse_ok("usage", {}).group_by);
  EXPECT_EQ("--group-by must be tenant, label or label:KEY, got 'host'",
            parse_error("usage", {"--group-by", "host"}));
  EXPECT_EQ(12, parse_ok("list", {"--array", "12"}).array);
  EXPECT_EQ("--array needs a job array ID (a positive integer), got 'x'",
            parse_error("list", {"--array", "x"}));
}

TEST(ParseCommandLine, NotificationCommands) {
  EXPECT_EQ(std::vector<std::string>{"7"}, parse_ok("notifications", {"7"}).positionals);
  EXPECT_EQ("a job ID is a positive integer, got 'x'", parse_error("notifications", {"x"}));
  EXPECT_TRUE(parse_ok("notify-secret", {"--rotate"}).rotate);
  EXPECT_FALSE(parse_ok("notify-secret", {}).rotate);
  EXPECT_EQ("unexpected argument 'now'", parse_error("notify-secret", {"now"}));
  CommandLine allow = parse_ok("notify-allow", {"--remove", "a.example", "127.0.0.1:9000"});
  EXPECT_TRUE(allow.remove);
  EXPECT_EQ((std::vector<std::string>{"a.example", "127.0.0.1:9000"}), allow.positionals);
  EXPECT_TRUE(parse_ok("notify-allow", {}).positionals.empty());
}

TEST(ParseCommandLine, HelpWinsOverEverythingElse) {
  CommandLine line = parse_ok("wait", {"--bogus", "-h"});
  EXPECT_TRUE(line.help);
  EXPECT_NE(std::string::npos, command_usage("wait").find("--timeout DUR"));
  for (const std::string& command : client_commands()) {
    EXPECT_NE(std::string::npos, command_usage(command).find("usage: tpujobs " + command))
        << command;
    EXPECT_NE(std::string::npos, command_usage(command).find("124 --timeout elapsed")) << command;
  }
}

TEST(ParseCommandLine, UsageErrors) {
  EXPECT_EQ("SPEC.json is missing", parse_error("submit", {"--wait"}));
  EXPECT_EQ("unexpected argument 'b.json'", parse_error("submit", {"a.json", "b.json"}));
  EXPECT_EQ("unknown option '--wiat' for `tpujobs submit`",
            parse_error("submit", {"a.json", "--wiat"}));
  EXPECT_EQ("unknown option '--follow' for `tpujobs status`",
            parse_error("status", {"3", "--follow"}));
  EXPECT_EQ("--timeout needs a value", parse_error("wait", {"3", "--timeout"}));
  EXPECT_EQ("--timeout: 'soon' is not a duration (try 90s, 10m or 1h30m)",
            parse_error("wait", {"3", "--timeout", "soon"}));
  EXPECT_EQ("a job ID is a positive integer, got 'abc'", parse_error("status", {"abc"}));
  EXPECT_EQ("a job ID is a positive integer, got '0'", parse_error("cancel", {"0"}));
  EXPECT_EQ("--set needs PATH=VALUE, got 'trainer.devices'",
            parse_error("submit", {"a.json", "--set", "trainer.devices"}));
  EXPECT_EQ("--limit must be an integer from 1 to 500", parse_error("list", {"--limit", "0"}));
  EXPECT_EQ("--wait takes no value", parse_error("submit", {"a.json", "--wait=yes"}));
  EXPECT_EQ("unexpected argument 'extra'", parse_error("pool", {"extra"}));
  EXPECT_EQ("unknown command 'launch'", parse_error("launch", {}));
  EXPECT_FALSE(is_client_command("serve"));
  EXPECT_TRUE(is_client_command("validate"));
}

TEST(ParseCommandLine, DoubleDashEndsOptionsAndDashIsStdin) {
  EXPECT_EQ(std::vector<std::string>{"--odd-name.json"},
            parse_ok("validate", {"--", "--odd-name.json"}).positionals);
  EXPECT_EQ(std::vector<std::string>{"-"}, parse_ok("submit", {"-"}).positionals);
}

TEST(Duration, Units) {
  EXPECT_EQ(milliseconds(90000), parse_duration("90"));
  EXPECT_EQ(milliseconds(1500), parse_duration("1.5"));
  EXPECT_EQ(milliseconds(500), parse_duration("500ms"));
  EXPECT_EQ(milliseconds(30000), parse_duration("30s"));
  EXPECT_EQ(milliseconds(600000), parse_duration("10m"));
  EXPECT_EQ(milliseconds(7200000), parse_duration("2h"));
  EXPECT_EQ(milliseconds(86400000), parse_duration("1d"));
  EXPECT_EQ(milliseconds(5400000), parse_duration("1h30m"));
  EXPECT_EQ(milliseconds(1500), parse_duration("1.5s"));
  EXPECT_EQ(milliseconds(0), parse_duration("0s"));
}

TEST(Duration, Rejects) {
  for (const char* text : {"", "-5s", "10x", "m", "1.2.3s", ".5s", "10 m", "1h30", "5.s"}) {
    EXPECT_EQ(std::nullopt, parse_duration(text)) << text;
  }
}

TEST(Duration, Formats) {
  EXPECT_EQ("0s", format_duration(milliseconds(999)));
  EXPECT_EQ("59s", format_duration(milliseconds(59000)));
  EXPECT_EQ("3m05s", format_duration(milliseconds(185000)));
  EXPECT_EQ("1h02m", format_duration(milliseconds(3720000)));
}

TEST(Override, ValuesAreJsonWhenTheyParseElseStrings) {
  json spec = json::parse(R"({"trainer": {"devices": 8, "precision": "bf16-true"}})");
  EXPECT_EQ("", override_error(&spec, "trainer.devices=1"));
  EXPECT_EQ("", override_error(&spec, "trainer.precision=32-true"));
  EXPECT_EQ("", override_error(&spec, "trainer.gradient_clip_val=null"));
  EXPECT_EQ("", override_error(&spec, "trainer.devices=[3]"));
  EXPECT_EQ("", override_error(&spec, "data.shuffle=false"));
  EXPECT_EQ("", override_error(&spec, "name=\"42\""));
  EXPECT_EQ("", override_error(&spec, "labels.url=a=b"));
  EXPECT_EQ(R"({"data":{"shuffle":false},"labels":{"url":"a=b"},"name":"42",)"
            R"("trainer":{"devices":[3],"gradient_clip_val":null,"precision":"32-true"}})",
            spec.dump());
}

TEST(Override, CreatesMissingObjectsForGates) {
  json spec = json::parse(R"({"name": "x"})");
  EXPECT_EQ("", override_error(&spec, "expect.val_accuracy.min=0.95"));
  EXPECT_EQ(R"({"expect":{"val_accuracy":{"min":0.95}},"name":"x"})", spec.dump());
}

TEST(Override, ArrayIndices) {
  json spec =
      json::parse(R"({"model": {"layers": [{"type": "linear", "out": 128}, {"type": "relu"}]}})");
  EXPECT_EQ("", override_error(&spec, "model.layers[0].out=256"));
  EXPECT_EQ("", override_error(&spec, "model.layers[2]={\"type\":\"linear\",\"out\":10}"));
  EXPECT_EQ(
      R"({"model":{"layers":[{"out":256,"type":"linear"},{"type":"relu"},{"out":10,"type":"linear"}]}})",
      spec.dump());
}

TEST(Override, ErrorsLeaveTheSpecUnchanged) {
  json spec = json::parse(R"({"model": {"layers": [{"type": "relu"}]}, "name": "x"})");
  const std::string before = spec.dump();
  EXPECT_EQ("--set model.layers[5].out=1: index 5 is past the end of model.layers (size 1)",
            override_error(&spec, "model.layers[5].out=1"));
  EXPECT_EQ("--set name.first=a: cannot set 'first' inside a string",
            override_error(&spec, "name.first=a"));
  EXPECT_EQ("--set model[0]=1: model[0] indexes a non-array", override_error(&spec, "model[0]=1"));
  EXPECT_NE("", override_error(&spec, "a..b=1"));
  EXPECT_NE("", override_error(&spec, "[0]=1"));
  EXPECT_NE("", override_error(&spec, "a.=1"));
  EXPECT_NE("", override_error(&spec, "no_equals"));
  EXPECT_EQ(before, spec.dump());
}

TEST(ServerUrl, Parses) {
  base::Result<ServerUrl> url = parse_server_url("http://127.0.0.1:8080");
  ASSERT_TRUE(url);
  EXPECT_EQ("127.0.0.1", url->host);
  EXPECT_EQ("8080", url->port);
  EXPECT_EQ("", url->base_path);
  url = parse_server_url("http://tpujobs.internal/api/");
  ASSERT_TRUE(url);
  EXPECT_EQ("tpujobs.internal", url->host);
  EXPECT_EQ("80", url->port);
  EXPECT_EQ("/api", url->base_path);
  url = parse_server_url("http://[::1]:9000");
  ASSERT_TRUE(url);
  EXPECT_EQ("::1", url->host);
  EXPECT_EQ("9000", url->port);
}

TEST(ServerUrl, Rejects) {
  const base::Result<ServerUrl> https = parse_server_url("https://x");
  ASSERT_FALSE(https.ok());
  EXPECT_NE(std::string::npos, https.error().message.find("https is not supported"));
  EXPECT_FALSE(parse_server_url("127.0.0.1:8080"));
  EXPECT_FALSE(parse_server_url("http://:8080"));
  EXPECT_FALSE(parse_server_url("http://host:99999"));
  EXPECT_FALSE(parse_server_url("http://host:80x"));
}

}  // namespace
}  // namespace tpujobs::client
