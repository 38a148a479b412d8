// A pipeline that trains on its own data, with the CLI only: `tpujobs
// upload data.csv` against a live service prints the dataset's id, and
// `tpujobs submit ... --set 'data.dataset={"upload":"ID"}' --wait` trains on
// it to the end. A file sent as a form would have lost its newlines: the
// upload must arrive as the file it is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/client/client_process.h"
#include "tests/e2e/jobs_api.h"
#include "tests/e2e/service_process.h"

namespace tpujobs::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Two well-separated classes on a line through two features, 200 rows.
std::string two_class_csv() {
  std::string csv = "x,y,label\n";
  for (int i = 0; i < 200; ++i) {
    const int label = i % 2;
    const double x = (label ? 3.0 : -3.0) + (i % 7) * 0.1;
    const double y = (label ? -2.0 : 2.0) + (i % 5) * 0.1;
    csv += std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(label) + "\n";
  }
  return csv;
}

TEST(Upload, ADatasetUploadedWithTheCliIsWhatASubmittedJobTrainsOn) {
  std::string pattern = (fs::temp_directory_path() / "tpujobs-cli-upload-XXXXXX").string();
  ASSERT_NE(nullptr, mkdtemp(pattern.data()));
  const fs::path root = pattern;
  fs::create_directory(root / "client");
  std::ofstream(root / "client" / "two classes.csv", std::ios::binary) << two_class_csv();
  std::ofstream(root / "client" / "job.json") << json{
      {"name", "on-my-data"},
      {"trainer", {{"devices", 1}, {"max_epochs", 10}, {"seed", 3}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 2}}})}}},
      {"data", {{"dataset", "iris"}, {"batch_size", 16}}},
      {"optimizer", {{"type", "adam"}, {"lr", 0.05}}},
      {"expect", {{"val_accuracy", {{"min", 0.9}}}}}}.dump();

  ServiceProcess service;
  ASSERT_EQ("", service.start()) << service.log();
  const Environment env = {{"TPUJOBS_URL", "http://127.0.0.1:" + std::to_string(service.port())}};

  const ClientRun uploaded =
      run_client_process({"upload", "two classes.csv"}, env, root / "client");
  ASSERT_EQ(0, uploaded.exit_code) << uploaded.err << service.log();
  std::string id = uploaded.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  ASSERT_EQ(id.rfind("ds_", 0), 0u) << "stdout is the id alone: '" << uploaded.out << "'";
  EXPECT_NE(uploaded.err.find("'two classes'"), std::string::npos) << uploaded.err;
  EXPECT_NE(uploaded.err.find("200 rows, 2 features, 2 classes"), std::string::npos)
      << uploaded.err << " (a file that lost its newlines reads as one row)";

  const ClientRun trained =
      run_client_process({"submit", "job.json", "--set", "data.dataset={\"upload\":\"" + id + "\"}",
                          "--wait", "--json"},
                         env, root / "client");
  ASSERT_EQ(0, trained.exit_code) << trained.out << trained.err << service.log();
  const json job = json::parse(trained.out, nullptr, false);
  ASSERT_TRUE(job.is_object()) << trained.out;
  EXPECT_EQ(job["state"], "SUCCEEDED") << job.dump();
  EXPECT_EQ(job["spec"]["data"]["dataset"], (json{{"upload", id}})) << job.dump();
  EXPECT_GE(job["metrics"]["val_accuracy"].get<double>(), 0.9) << job.dump();

  // The same upload repeated with one key (a CI step re-run after its
  // answer was lost) prints the dataset stored the first time; the key with
  // another file is refused, exit 2.
  const ClientRun keyed = run_client_process(
      {"upload", "two classes.csv", "--idempotency-key", "ci-17-data"}, env, root / "client");
  ASSERT_EQ(0, keyed.exit_code) << keyed.err << service.log();
  EXPECT_NE(keyed.out, uploaded.out) << "a new key stores a new dataset";
  const ClientRun repeated = run_client_process(
      {"upload", "two classes.csv", "--idempotency-key", "ci-17-data"}, env, root / "client");
  ASSERT_EQ(0, repeated.exit_code) << repeated.err << service.log();
  EXPECT_EQ(repeated.out, keyed.out) << repeated.err;
  EXPECT_NE(repeated.err.find("(same idempotency key)"), std::string::npos) << repeated.err;
  std::ofstream(root / "client" / "two classes.csv", std::ios::app) << "1.0,1.0,1\n";
  const ClientRun changed = run_client_process(
      {"upload", "two classes.csv", "--idempotency-key", "ci-17-data"}, env, root / "client");
  EXPECT_EQ(2, changed.exit_code) << changed.out << changed.err;
  EXPECT_NE(changed.err.find("another file or under another name"), std::string::npos)
      << changed.err;

  // A file that is not a dataset: the service's reason, exit 2.
  std::ofstream(root / "client" / "bad.csv") << "x,label\n1,0\nnot-a-number,1\n";
  const ClientRun refused = run_client_process({"upload", "bad.csv"}, env, root / "client");
  EXPECT_EQ(2, refused.exit_code) << refused.err;
  EXPECT_NE(refused.err.find("line 3"), std::string::npos) << refused.err;

  EXPECT_EQ(0, service.stop()) << service.log();
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

}  // namespace
}  // namespace tpujobs::testing
