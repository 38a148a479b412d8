#include "executor/dataset.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

std::string csv_error(std::string_view text, Loss loss = Loss::kCrossEntropy) {
  auto parsed = parse_csv(text, loss);
  return parsed.ok() ? "(parsed)" : parsed.error().message;
}

TEST(ParseCsv, ReadsFeaturesLabelsAndClasses) {
  auto parsed = parse_csv("a,b,label\n1,2.5,0\n-3,4e-1,2\r\n\n5, 6 ,1\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const CsvTable& table = *parsed;
  EXPECT_EQ(table.columns, (std::vector<std::string>{"a", "b", "label"}));
  EXPECT_EQ(table.rows, 3);
  EXPECT_EQ(table.features, 2);
  EXPECT_EQ(table.classes, 3);
  EXPECT_EQ(table.values, (std::vector<float>{1, 2.5f, -3, 0.4f, 5, 6}));
  EXPECT_EQ(table.labels, (std::vector<float>{0, 2, 1}));
}

TEST(ParseCsv, ErrorsNameTheLine) {
  EXPECT_EQ(csv_error(""), "empty input: expected a header row and at least one data row");
  EXPECT_EQ(csv_error("\n\n"), "empty input: expected a header row and at least one data row");
  EXPECT_EQ(csv_error("a,label\n"), "no data rows after the header (line 1)");
  EXPECT_EQ(csv_error("a,b\n1,2\n"),
            "line 1: the header has no 'label' column (expected feature columns, then 'label')");
  EXPECT_EQ(csv_error("a,b,label\n1,2,0\n1,2\n"),
            "line 3: expected 3 fields like the header, found 2");
  EXPECT_EQ(csv_error("a,b,label\n1,2,0\n1,2,0,4\n"),
            "line 3: expected 3 fields like the header, found 4");
  EXPECT_EQ(csv_error("a,b,label\n1,2,0\n\n1,x7,0\n"),
            "line 4, column 'b': 'x7' is not a finite number");
  EXPECT_EQ(csv_error("a,label\n1,0\nnan,1\n"), "line 3, column 'a': 'nan' is not a finite number");
  EXPECT_EQ(csv_error("a,label\n1,0\n2,\n"), "line 3, column 'label': '' is not a finite number");
  EXPECT_EQ(csv_error("a,label\n1,0\n2,1.5\n"),
            "line 3: label '1.5' is not an integer class index");
  EXPECT_EQ(csv_error("a,label\n1,-1\n"),
            "line 2: label '-1' is out of range (class indices are 0..65535)");
  EXPECT_EQ(csv_error("a,label\n1,70000\n"),
            "line 2: label '70000' is out of range (class indices are 0..65535)");
}

TEST(ParseCsv, RegressionAcceptsAnyFiniteTarget) {
  auto parsed = parse_csv("x,label\n1,0.25\n2,-7\n", Loss::kMse);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->classes, 0);
  EXPECT_EQ(parsed->labels, (std::vector<float>{0.25f, -7}));
}

TEST(LoadDataset, BuiltinsSplitAndStandardizeWithTrainStatistics) {
  fakes::MapDatasets none;
  for (const auto& [name, rows, features, classes] :
       std::vector<std::tuple<std::string, int, int, int>>{{"iris", 150, 4, 3},
                                                           {"wine", 178, 13, 3},
                                                           {"breast_cancer", 569, 30, 2},
                                                           {"digits", 1797, 64, 10}}) {
    DataSpec spec;
    spec.source = BuiltinData{name};
    spec.val_fraction = 0.2;
    auto loaded = load_dataset(spec, Loss::kCrossEntropy, 42, none);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    const DatasetSplit& split = *loaded;
    EXPECT_EQ(split.train.rows + split.validation.rows, rows) << name;
    EXPECT_EQ(split.validation.rows, std::llround(rows * 0.2)) << name;
    EXPECT_EQ(split.train.features, features) << name;
    EXPECT_EQ(split.classes, classes) << name;
    // Feature 1 of the training split has mean 0 and standard deviation 1 (or is constant 0).
    double sum = 0, squares = 0;
    for (std::int64_t r = 0; r < split.train.rows; ++r) {
      const double v = split.train.values[r * features + 1];
      sum += v;
      squares += v * v;
    }
    EXPECT_NEAR(sum / split.train.rows, 0.0, 1e-4) << name;
    const double variance = squares / split.train.rows;
    EXPECT_TRUE(std::abs(variance - 1.0) < 1e-3 || variance < 1e-9) << name << " " << variance;
  }
}

TEST(LoadDataset, ErrorsForUnknownBuiltinMissingUploadAndBadUpload) {
  fakes::MapDatasets datasets;
  datasets.uploads["ds_bad"] = "a,label\n1,0\n2,x\n";
  DataSpec spec;
  spec.source = BuiltinData{"mnist"};
  auto error = [&] { return load_dataset(spec, Loss::kCrossEntropy, 1, datasets).error().message; };
  EXPECT_EQ(error(),
            "unknown built-in dataset 'mnist' (available: iris, wine, breast_cancer, digits)");
  spec.source = UploadedData{"ds_none"};
  EXPECT_EQ(error(), "no uploaded dataset 'ds_none'");
  spec.source = UploadedData{"ds_bad"};
  EXPECT_EQ(error(), "dataset upload ds_bad: line 3, column 'label': 'x' is not a finite number");
}

TEST(LoadDataset, SplitIsDeterministicPerSeed) {
  fakes::MapDatasets none;
  DataSpec spec;
  spec.source = BuiltinData{"iris"};
  auto a = *load_dataset(spec, Loss::kCrossEntropy, 1, none);
  auto b = *load_dataset(spec, Loss::kCrossEntropy, 1, none);
  auto c = *load_dataset(spec, Loss::kCrossEntropy, 2, none);
  EXPECT_EQ(a.validation.values, b.validation.values);
  EXPECT_NE(a.validation.values, c.validation.values);
}

TEST(Synthetic, GeneratorsHonourTheirParameters) {
  for (SyntheticKind kind : {SyntheticKind::kBlobs, SyntheticKind::kSpirals, SyntheticKind::kXor,
                             SyntheticKind::kRegression}) {
    SyntheticData spec{kind, 300, 5, 4, 0.1};
    int classes = -1;
    auto generated = generate_synthetic(spec, 3, &classes);
    ASSERT_TRUE(generated.ok()) << generated.error().message;
    const Dataset& data = *generated;
    EXPECT_EQ(data.rows, 300);
    EXPECT_EQ(data.features, 5);
    const int expected_classes = kind == SyntheticKind::kXor          ? 2
                                 : kind == SyntheticKind::kRegression ? 0
                                                                      : 4;
    EXPECT_EQ(classes, expected_classes);
    for (float label : data.labels) {
      if (expected_classes > 0) {
        EXPECT_GE(label, 0);
        EXPECT_LT(label, expected_classes);
      }
      EXPECT_TRUE(std::isfinite(label));
    }
  }
  int classes = 0;
  EXPECT_EQ(generate_synthetic({SyntheticKind::kBlobs, 1, 2, 2, 0.1}, 1, &classes).error().message,
            "synthetic data: n must be at least 2");
  EXPECT_EQ(
      generate_synthetic({SyntheticKind::kSpirals, 10, 1, 2, 0.1}, 1, &classes).error().message,
      "synthetic data: features must be at least 2");
}

}  // namespace
}  // namespace tpujobs::executor
