#include "client/junit_report.h"

#include <gtest/gtest.h>

namespace tpujobs::client {
namespace {

using nlohmann::json;

json job(const std::string& state, const json& metrics, const json& error = nullptr) {
  return {{"id", 42},
          {"name", "digits-mlp"},
          {"state", state},
          {"spec", {{"expect", {{"val_accuracy", {{"min", 0.9}}}, {"val_loss", {{"max", 0.5}}}}}}},
          {"metrics", metrics},
          {"error", error}};
}

std::string summary(const std::vector<GateOutcome>& gates) {
  std::string text;
  for (const GateOutcome& g : gates) {
    text += g.metric + ":" +
            (g.passed    ? "passed"
             : g.skipped ? "skipped"
                         : "failed") +
            (g.message.empty() ? "" : "(" + g.message + ")") + " ";
  }
  return text;
}

TEST(ExitCode, FollowsTheJobState) {
  EXPECT_EQ(0, exit_code_for_job(json{{"state", "SUCCEEDED"}}));
  EXPECT_EQ(1, exit_code_for_job(json{{"state", "FAILED"}}));
  EXPECT_EQ(3, exit_code_for_job(json{{"state", "CANCELLED"}}));
  EXPECT_EQ(std::nullopt, exit_code_for_job(json{{"state", "RUNNING"}}));
  EXPECT_EQ(std::nullopt, exit_code_for_job(json("garbage")));
}

TEST(Gates, CheckedWithTheServiceRule) {
  EXPECT_EQ("val_accuracy:passed val_loss:passed ",
            summary(evaluate_gates(job("SUCCEEDED", {{"val_accuracy", 0.9}, {"val_loss", 0.5}}))));
  EXPECT_EQ(
      "val_accuracy:failed(val_accuracy = 0.85 is below the minimum 0.9) "
      "val_loss:failed(val_loss = 0.7 is above the maximum 0.5) ",
      summary(evaluate_gates(job("FAILED", {{"val_accuracy", 0.85}, {"val_loss", 0.7}},
                                 {{"type", "EXPECTATION_FAILED"}}))));
}

TEST(Gates, MissingMetricFailsASucceededJobButIsSkippedForACrash) {
  EXPECT_EQ("val_accuracy:failed(the job did not report the metric val_accuracy) val_loss:passed ",
            summary(evaluate_gates(job("SUCCEEDED", {{"val_loss", 0.1}}))));
  EXPECT_EQ(
      "val_accuracy:skipped(the job is FAILED without a final val_accuracy) "
      "val_loss:skipped(the job is FAILED without a final val_loss) ",
      summary(evaluate_gates(job("FAILED", nullptr, {{"type", "RESOURCE_EXHAUSTED"}}))));
  EXPECT_EQ(
      "val_accuracy:skipped(the job is still RUNNING (val_accuracy = 0.5 so far)) "
      "val_loss:skipped(the job is RUNNING without a final val_loss) ",
      summary(evaluate_gates(job("RUNNING", {{"val_accuracy", 0.5}}))));
  EXPECT_TRUE(
      evaluate_gates(json{{"state", "SUCCEEDED"}, {"spec", {{"name", "no gates"}}}}).empty());
}

TEST(JUnit, PassingJob) {
  const std::string xml =
      junit_report(job("SUCCEEDED", {{"val_accuracy", 0.97}, {"val_loss", 0.1}}),
                   {"Epoch 19: loss=0.1"}, false, 12.5);
  EXPECT_EQ(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"tpujobs\" tests=\"3\" failures=\"0\" errors=\"0\" skipped=\"0\" "
      "time=\"12.5\">\n"
      "  <testsuite name=\"tpujobs.digits-mlp\" tests=\"3\" failures=\"0\" errors=\"0\" "
      "skipped=\"0\" time=\"12.5\">\n"
      "    <properties>\n"
      "      <property name=\"job_id\" value=\"42\"/>\n"
      "      <property name=\"state\" value=\"SUCCEEDED\"/>\n"
      "    </properties>\n"
      "    <testcase classname=\"tpujobs.digits-mlp\" name=\"training run\" time=\"12.5\">\n"
      "      <system-out>Epoch 19: loss=0.1\n</system-out>\n"
      "    </testcase>\n"
      "    <testcase classname=\"tpujobs.digits-mlp.expect\" name=\"expect val_accuracy &gt;= "
      "0.9\" time=\"0\">\n"
      "      <properties><property name=\"value\" value=\"0.97\"/></properties>\n"
      "    </testcase>\n"
      "    <testcase classname=\"tpujobs.digits-mlp.expect\" name=\"expect val_loss &lt;= 0.5\" "
      "time=\"0\">\n"
      "      <properties><property name=\"value\" value=\"0.1\"/></properties>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n",
      xml);
}

TEST(JUnit, MissedGateFailsTheRunAndTheGateWithTheLogTail) {
  const json failed = job("FAILED", {{"val_accuracy", 0.85}, {"val_loss", 0.2}},
                          {{"type", "EXPECTATION_FAILED"},
                           {"message", "val_accuracy = 0.85 is below the minimum 0.9"},
                           {"hint", "Train longer (max_epochs)"}});
  const std::string xml =
      junit_report(failed, {"Epoch 19: <done>", "EXPECTATION_FAILED: ..."}, false, 3);
  EXPECT_NE(std::string::npos, xml.find("tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\""))
      << xml;
  EXPECT_NE(
      std::string::npos,
      xml.find("<failure type=\"EXPECTATION_FAILED\" message=\"val_accuracy = 0.85 is below the "
               "minimum 0.9\">"
               "val_accuracy = 0.85 is below the minimum 0.9\nhint: Train longer (max_epochs)\n\n"
               "last log lines:\nEpoch 19: &lt;done&gt;\nEXPECTATION_FAILED: ...\n</failure>"))
      << xml;
  // The gate that held passes; the one that missed fails on its own.
  EXPECT_NE(std::string::npos,
            xml.find("name=\"expect val_loss &lt;= 0.5\" time=\"0\">\n"
                     "      <properties><property name=\"value\" value=\"0.2\"/></properties>\n"
                     "    </testcase>"))
      << xml;
}

TEST(JUnit, TimeoutAndCrashSkipTheGates) {
  const std::string timeout = junit_report(job("RUNNING", nullptr), {}, true, 60);
  EXPECT_NE(std::string::npos,
            timeout.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"2\""))
      << timeout;
  EXPECT_NE(std::string::npos, timeout.find("<failure type=\"TIMEOUT\" message=\"gave up waiting "
                                            "after 60s; job 42 is still RUNNING\">"))
      << timeout;
  const std::string oom = junit_report(
      job("FAILED", nullptr, {{"type", "RESOURCE_EXHAUSTED"}, {"message", "Ran out of memory"}}),
      {}, false, 1);
  EXPECT_NE(std::string::npos,
            oom.find("<failure type=\"RESOURCE_EXHAUSTED\" message=\"Ran out of memory\">"))
      << oom;
  EXPECT_NE(std::string::npos,
            oom.find("<skipped message=\"the job is FAILED without a final val_accuracy\"/>"))
      << oom;
}

TEST(JUnit, EscapesMarkupAndControlCharacters) {
  EXPECT_EQ("a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;\n\t?",
            xml_escape("a <b> & \"c\" 'd'\n\t\x01"));
}

TEST(JunitArray, OneCasePerChildWithItsValuesAndMetrics) {
  json ok = {{"id", 12},
             {"name", "grid"},
             {"state", "SUCCEEDED"},
             {"array", {{"id", 12}, {"index", 0}, {"values", {{"optimizer.lr", 0.001}}}}},
             {"metrics", {{"val_accuracy", 0.97}}},
             {"spec", {{"expect", {{"val_accuracy", {{"min", 0.9}}}}}}}};
  json gate_missed = ok;
  gate_missed["id"] = 13;
  gate_missed["array"] = {{"id", 12}, {"index", 1}, {"values", {{"optimizer.lr", 0.1}}}};
  gate_missed["metrics"] = {{"val_accuracy", 0.5}};
  json failed = {{"id", 14},
                 {"name", "grid"},
                 {"state", "FAILED"},
                 {"array", {{"id", 12}, {"index", 2}, {"values", {{"optimizer.lr", 1.0}}}}},
                 {"error", {{"type", "NUMERICAL_ERROR"}, {"message", "loss is NaN"}}}};
  const std::string xml =
      junit_array_report(12, {ok, gate_missed, failed}, {false, false, false}, 3.5);
  EXPECT_NE(xml.find(R"(tests="3" failures="2")"), std::string::npos) << xml;
  EXPECT_NE(xml.find(R"(name="child 0 {&quot;optimizer.lr&quot;:0.001}")"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find(R"(<property name="val_accuracy" value="0.97"/>)"), std::string::npos) << xml;
  EXPECT_NE(xml.find(R"(<failure type="EXPECTATION_FAILED")"), std::string::npos) << xml;
  EXPECT_NE(xml.find(R"(<failure type="NUMERICAL_ERROR" message="loss is NaN")"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find(R"(<property name="array_id" value="12"/>)"), std::string::npos) << xml;
  const std::string waited = junit_array_report(12, {ok}, {true}, 1);
  EXPECT_NE(waited.find(R"(<failure type="TIMEOUT")"), std::string::npos) << waited;
}

}  // namespace
}  // namespace tpujobs::client
