#include "service/serve_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace tpujobs::service {
namespace {

using Args = std::vector<std::string>;

// The usage error of `tpujobs serve ARGS`; "" when they parse.
std::string serve_error(const Args& args) {
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, args);
  return line.ok() ? std::string() : line.error().message;
}

// Environment variables set for one test, restored after it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* was = std::getenv(name)) was_ = was;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (was_)
      setenv(name_, was_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> was_;
};

TEST(ServeOptions, NoOptionsGiveTheDocumentedDefaults) {
  ScopedEnv url("TPUJOBS_DATABASE_URL", "");
  ScopedEnv dir("TPUJOBS_STATE_DIR", "");
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, {});
  ASSERT_TRUE(line.ok()) << line.error().message;
  const ServeOptions& o = line->options;
  EXPECT_FALSE(line->help);
  EXPECT_EQ(o.address, "127.0.0.1");
  EXPECT_EQ(o.port, 8080);
  EXPECT_EQ(o.pool, "v3-32");
  EXPECT_EQ(o.database_url, "");
  EXPECT_EQ(o.state_dir, "state");
  EXPECT_EQ(o.db_timeout_seconds, 10);
  EXPECT_EQ(o.agent_silence_seconds, 10);
  EXPECT_EQ(o.max_body, 1u << 20);
  EXPECT_FALSE(o.retention);
  EXPECT_EQ(o.fair_share_half_life, std::chrono::hours(1));
  EXPECT_EQ(o.default_max_queued, 10000);
  EXPECT_TRUE(o.ignored.empty());
}

TEST(ServeOptions, ValuesAreTakenSpacedOrAfterAnEqualsSign) {
  base::Result<ServeLine> line = parse_serve_line(
      ServeCommand::kServe,
      {"--listen", "[::1]:0", "--pool=v5litepod-16,v6e-8", "--db-timeout=3", "--max-body", "2048",
       "--retention", "12h", "--fair-share-half-life=7d", "--notify-allow", "hooks.internal",
       "--notify-allow=http://ci.internal:8080/hook", "--max-followers", "0",
       "--default-submits-per-second", "50"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  const ServeOptions& o = line->options;
  EXPECT_EQ(o.address, "::1");
  EXPECT_EQ(o.port, 0);
  EXPECT_EQ(o.pool, "v5litepod-16,v6e-8");
  EXPECT_EQ(o.db_timeout_seconds, 3);
  EXPECT_EQ(o.max_body, 2048u);
  EXPECT_EQ(o.retention, std::chrono::hours(12));
  EXPECT_EQ(o.fair_share_half_life, std::chrono::hours(7 * 24));
  EXPECT_EQ(o.notify_allow, (Args{"hooks.internal", "http://ci.internal:8080/hook"}));
  EXPECT_EQ(o.followers.total, 0);
  EXPECT_EQ(o.followers.per_tenant, 16) << "the other bound keeps its default";
  EXPECT_EQ(o.default_submits_per_second, 50);
}

TEST(ServeOptions, TheEnvironmentNamesTheDatabaseAndStateDirUnlessTheCommandLineDoes) {
  ScopedEnv url("TPUJOBS_DATABASE_URL", "postgresql:///from-env");
  ScopedEnv dir("TPUJOBS_STATE_DIR", "/var/lib/from-env");
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, {});
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->options.database_url, "postgresql:///from-env");
  EXPECT_EQ(line->options.state_dir, "/var/lib/from-env");
  line = parse_serve_line(ServeCommand::kServe, {"--database-url", "postgresql:///given"});
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->options.database_url, "postgresql:///given");
}

TEST(ServeOptions, BadValuesNameTheOptionAndWhatItTakes) {
  EXPECT_EQ(serve_error({"--db-timeout", "0"}), "--db-timeout must be an integer from 1 to 3600");
  EXPECT_EQ(serve_error({"--io-threads", "two"}), "--io-threads must be an integer from 1 to 64");
  EXPECT_EQ(serve_error({"--max-body", "12"}),
            "--max-body must be an integer from 1024 to 67108864");
  EXPECT_EQ(serve_error({"--listen", "8080"}), "--listen needs ADDR:PORT, got '8080'");
  EXPECT_EQ(serve_error({"--listen", "127.0.0.1:99999"}),
            "--listen: bad port in '127.0.0.1:99999'");
  EXPECT_EQ(serve_error({"--name", "a/b"}),
            "--name needs a name of 1 to 64 characters without spaces or '/'");
  EXPECT_EQ(serve_error({"--retention", "500ms"}),
            "--retention needs a duration of at least 1s such as 30d or 12h");
  EXPECT_EQ(serve_error({"--fair-share-half-life", "soon"}),
            "--fair-share-half-life needs a duration of at least 1s such as 1h or 7d");
  EXPECT_EQ(serve_error({"--pool", ""}), "--pool needs a value such as v3-32");
  EXPECT_EQ(serve_error({"--db-timeout"}), "--db-timeout needs a value");
  EXPECT_NE(serve_error({"--notify-allow", "ftp://x"}).find("--notify-allow 'ftp://x' "),
            std::string::npos);
  EXPECT_EQ(serve_error({"--wat=1"}), "unknown option '--wat'");
  EXPECT_EQ(serve_error({"extra"}), "unknown option 'extra'");
}

TEST(ServeOptions, HelpIsAnsweredWhateverElseIsGiven) {
  base::Result<ServeLine> line =
      parse_serve_line(ServeCommand::kServe, {"--db-timeout", "0", "--help"});
  ASSERT_TRUE(line.ok());
  EXPECT_TRUE(line->help);
  const std::string usage = serve_usage(ServeCommand::kServe);
  for (const char* option :
       {"--listen ADDR:PORT", "--database-url URL", "--retention DUR", "--default-max-queued N",
        "--max-waiters-per-tenant N", "--max-wide-requests-per-tenant N"})
    EXPECT_NE(usage.find(option), std::string::npos) << option << " is not in\n" << usage;
}

TEST(ServeOptions, AnAgentTakesOnlyItsOwnOptions) {
  base::Result<ServeLine> line =
      parse_serve_line(ServeCommand::kAgent,
                       {"--database-url", "postgresql:///c", "--pool", "v4-16", "--name", "agent-1",
                        "--workers", "2", "--collective-timeout", "5", "--training-nice", "0"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->options.name, "agent-1");
  EXPECT_EQ(line->options.workers, 2);
  EXPECT_EQ(line->options.training_nice, 0);
  EXPECT_EQ(line->options.collective_timeout_seconds, 5);
  line = parse_serve_line(ServeCommand::kAgent, {"--listen", "127.0.0.1:0"});
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().message, "unknown option '--listen'");
  const std::string usage = serve_usage(ServeCommand::kAgent);
  EXPECT_NE(usage.find("--collective-address HOST"), std::string::npos) << usage;
  EXPECT_EQ(usage.find("--listen"), std::string::npos) << usage;
}

TEST(ServeOptions, TrainingRunsAtNiceTenUnlessToldOtherwiseWithinZeroToNineteen) {
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, {});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->options.training_nice, 10);
  line = parse_serve_line(ServeCommand::kServe, {"--training-nice", "19"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->options.training_nice, 19);
  line = parse_serve_line(ServeCommand::kServe, {"--training-nice", "-5"});
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().message, "--training-nice must be an integer from 0 to 19");
  EXPECT_NE(serve_usage(ServeCommand::kServe).find("--training-nice N"), std::string::npos);
}

TEST(ServeOptions, TheLeaderRunsAtNiceMinusTenUnlessToldOtherwiseWithinMinusTwentyToZero) {
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, {});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->options.leader_nice, -10);
  line = parse_serve_line(ServeCommand::kServe, {"--leader-nice", "0"});
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->options.leader_nice, 0);
  line = parse_serve_line(ServeCommand::kServe, {"--leader-nice", "5"});
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().message, "--leader-nice must be an integer from -20 to 0");
  EXPECT_NE(serve_usage(ServeCommand::kServe).find("--leader-nice N"), std::string::npos);
  EXPECT_EQ(serve_usage(ServeCommand::kAgent).find("--leader-nice"), std::string::npos);
}

TEST(ServeOptions, TheLeaseTimeoutIsAcceptedAndSaidToHaveNoEffect) {
  base::Result<ServeLine> line = parse_serve_line(ServeCommand::kServe, {"--lease-timeout", "30"});
  ASSERT_TRUE(line.ok());
  ASSERT_EQ(line->options.ignored.size(), 1u);
  EXPECT_NE(line->options.ignored[0].find("--agent-silence"), std::string::npos);
}

}  // namespace
}  // namespace tpujobs::service
