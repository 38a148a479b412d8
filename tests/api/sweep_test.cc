#include "api/sweep.h"

#include <gtest/gtest.h>

#include "api/job_spec.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

json base_with(const char* sweep) {
  json body = json::parse(R"({"name": "grid", "model": {"layers": [{"type": "linear", "out": 10}]},
                              "data": {"dataset": "digits", "batch_size": 16}})");
  body["sweep"] = json::parse(sweep);
  return body;
}

std::string fields(const std::vector<base::FieldError>& errors) {
  std::string out;
  for (const base::FieldError& e : errors) out += (out.empty() ? "" : " ") + e.field;
  return out;
}

// The errors of an expansion, none when it made children.
std::vector<base::FieldError> errors_in(const base::Result<std::vector<SweepChild>>& expanded) {
  return expanded.ok() ? std::vector<base::FieldError>{} : expanded.error().fields;
}

TEST(Sweep, CartesianProductLastPathFastestEachChildAValidSpec) {
  base::Result<std::vector<SweepChild>> expanded = expand_sweep(
      base_with(R"({"optimizer.lr": [0.001, 0.003], "data.batch_size": [32, 64, 128]})"));
  ASSERT_TRUE(expanded.ok()) << fields(errors_in(expanded));
  const std::vector<SweepChild>& children = *expanded;
  ASSERT_EQ(6u, children.size());
  std::vector<std::string> seen;
  for (const SweepChild& c : children) seen.push_back(c.values.dump());
  // nlohmann orders object keys: data.batch_size is the first path, optimizer.lr the last.
  EXPECT_EQ((std::vector<std::string>{R"({"data.batch_size":32,"optimizer.lr":0.001})",
                                      R"({"data.batch_size":32,"optimizer.lr":0.003})",
                                      R"({"data.batch_size":64,"optimizer.lr":0.001})",
                                      R"({"data.batch_size":64,"optimizer.lr":0.003})",
                                      R"({"data.batch_size":128,"optimizer.lr":0.001})",
                                      R"({"data.batch_size":128,"optimizer.lr":0.003})"}),
            seen);
  for (const SweepChild& c : children) {
    EXPECT_FALSE(c.spec.contains("sweep"));
    auto spec = parse_job_spec(c.spec);
    ASSERT_TRUE(spec) << fields(spec.error().fields);
    EXPECT_EQ(c.values["data.batch_size"].get<int>(), spec->training.data.batch_size);
    EXPECT_DOUBLE_EQ(c.values["optimizer.lr"].get<double>(), spec->training.optimizer.lr);
  }
  EXPECT_EQ(3, children[3].index);
}

TEST(Sweep, ArrayElementsAreReachable) {
  base::Result<std::vector<SweepChild>> children =
      expand_sweep(base_with(R"({"model.layers[0].out": [10, 20]})"));
  ASSERT_TRUE(children.ok()) << fields(errors_in(children));
  ASSERT_EQ(2u, children->size());
  EXPECT_EQ(20, (*children)[1].spec["model"]["layers"][0]["out"]);
  EXPECT_EQ("sweep.model.layers[3].out",
            fields(errors_in(expand_sweep(base_with(R"({"model.layers[3].out": [10]})")))));
}

TEST(Sweep, TheProductIsCapped) {
  json values = json::array();
  for (int i = 0; i < 17; ++i) values.push_back(i + 1);
  json body = base_with("{}");
  body["sweep"] = {{"trainer.seed", values}, {"trainer.max_epochs", values}};  // 289 > 256
  const std::vector<base::FieldError> errors = errors_in(expand_sweep(body));
  ASSERT_EQ("sweep", fields(errors));
  EXPECT_NE(std::string::npos, errors[0].message.find("more than 256 jobs"));
}

TEST(Sweep, BadSweepsNameTheirPath) {
  auto errors_of = [](const char* sweep) {
    base::Result<std::vector<SweepChild>> expanded = expand_sweep(base_with(sweep));
    EXPECT_FALSE(expanded.ok()) << sweep;
    return fields(errors_in(expanded));
  };
  EXPECT_EQ("sweep", errors_of("[1, 2]"));
  EXPECT_EQ("sweep", errors_of("{}"));
  EXPECT_EQ("sweep.optimizer.lr", errors_of(R"({"optimizer.lr": 0.1})"));
  EXPECT_EQ("sweep.optimizer.lr", errors_of(R"({"optimizer.lr": []})"));
  EXPECT_EQ("sweep.optimizer..lr", errors_of(R"({"optimizer..lr": [1]})"));
  EXPECT_EQ("sweep.depends_on", errors_of(R"({"depends_on": [[]]})"));
  EXPECT_EQ("sweep.name.x", errors_of(R"({"name.x": [1]})"));
}

}  // namespace
}  // namespace tpujobs::api
