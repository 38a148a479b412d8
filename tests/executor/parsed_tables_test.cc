#include "executor/parsed_tables.h"

#include <gtest/gtest.h>

#include "executor/dataset.h"
#include "tests/executor/training_fakes.h"

namespace tpujobs::executor {
namespace {

TEST(ParsedTables, TheSameKeyIsParsedOnceAndShared) {
  ParsedTables tables(1 << 20);
  auto first = tables.parse("upload:a", "x,label\n1,0\n2,1\n", Loss::kCrossEntropy);
  auto second = tables.parse("upload:a", "x,label\n1,0\n2,1\n", Loss::kCrossEntropy);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ((*second)->values, (std::vector<float>{1, 2}));
  EXPECT_EQ(tables.parses(), 1);
  EXPECT_EQ(tables.hits(), 1);
  EXPECT_EQ(tables.bytes(), ParsedTables::size_of(**first));
}

TEST(ParsedTables, TheLossDecidesWhichLabelsParseSoItIsPartOfTheKey) {
  ParsedTables tables(1 << 20);
  const char* csv = "x,label\n1,0.5\n";
  auto regression = tables.parse("upload:r", csv, Loss::kMse);
  ASSERT_TRUE(regression.ok());
  auto classes = tables.parse("upload:r", csv, Loss::kCrossEntropy);
  ASSERT_FALSE(classes.ok());
  EXPECT_EQ(classes.error().message, "line 2: label '0.5' is not an integer class index");
}

TEST(ParsedTables, AFailedParseIsNotKept) {
  ParsedTables tables(1 << 20);
  EXPECT_FALSE(tables.parse("upload:bad", "x,label\n1,y\n", Loss::kCrossEntropy).ok());
  EXPECT_FALSE(tables.parse("upload:bad", "x,label\n1,y\n", Loss::kCrossEntropy).ok());
  EXPECT_EQ(tables.parses(), 2);
  EXPECT_EQ(tables.bytes(), 0u);
}

TEST(ParsedTables, TheLeastRecentlyUsedGoFirstAndNoneLargerThanTheBoundIsKept) {
  const std::string csv = "x,label\n1,0\n";
  const std::size_t one =
      ParsedTables::size_of(*parse_csv(csv, Loss::kCrossEntropy));  // each table the same size
  ParsedTables tables(2 * one);
  auto a = *tables.parse("a", csv, Loss::kCrossEntropy);
  auto b = *tables.parse("b", csv, Loss::kCrossEntropy);
  EXPECT_EQ(tables.parse("a", csv, Loss::kCrossEntropy)->get(), a.get());  // a used after b
  auto c = *tables.parse("c", csv, Loss::kCrossEntropy);                   // b goes
  EXPECT_EQ(tables.bytes(), 2 * one);
  EXPECT_EQ(tables.parse("a", csv, Loss::kCrossEntropy)->get(), a.get());
  EXPECT_EQ(tables.parse("c", csv, Loss::kCrossEntropy)->get(), c.get());
  EXPECT_NE(tables.parse("b", csv, Loss::kCrossEntropy)->get(), b.get());  // parsed again
  EXPECT_EQ(tables.parses(), 4);

  ParsedTables small(one - 1);
  auto big = small.parse("big", csv, Loss::kCrossEntropy);
  ASSERT_TRUE(big.ok());  // parsed for its job
  EXPECT_EQ(small.bytes(), 0u);
  EXPECT_NE(small.parse("big", csv, Loss::kCrossEntropy)->get(), big->get());
}

class KeptDatasets : public fakes::MapDatasets {
 public:
  ParsedTables* parsed_tables() override { return &tables; }
  ParsedTables tables{64 << 20};
};

TEST(ParsedTables, AJobLoadsTheSameSplitFromAKeptTableAsFromTheText) {
  fakes::MapDatasets fresh;
  KeptDatasets kept;
  fresh.uploads["u1"] = kept.uploads["u1"] = "a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n9,10,1\n";
  for (const char* name : {"digits", "iris", "u1"}) {
    DataSpec spec;
    if (std::string(name) == "u1") {
      spec.source = UploadedData{name};
    } else {
      spec.source = BuiltinData{name};
    }
    spec.val_fraction = 0.2;
    for (std::uint64_t seed : {1, 2}) {  // the second seed's load finds the table kept
      auto expected = load_dataset(spec, Loss::kCrossEntropy, seed, fresh);
      auto got = load_dataset(spec, Loss::kCrossEntropy, seed, kept);
      ASSERT_TRUE(expected.ok() && got.ok()) << name;
      EXPECT_EQ(got->train.values, expected->train.values) << name;
      EXPECT_EQ(got->train.labels, expected->train.labels) << name;
      EXPECT_EQ(got->validation.values, expected->validation.values) << name;
      EXPECT_EQ(got->description, expected->description) << name;
      EXPECT_EQ(got->classes, expected->classes) << name;
    }
  }
  EXPECT_EQ(kept.tables.parses(), 3);
  EXPECT_EQ(kept.tables.hits(), 3);
  // An upload whose text changed under the same id is parsed again.
  kept.uploads["u1"] = "a,b,label\n1,2,0\n3,4,2\n";
  DataSpec spec;
  spec.source = UploadedData{"u1"};
  auto changed = load_dataset(spec, Loss::kCrossEntropy, 1, kept);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->classes, 3);
  EXPECT_EQ(kept.tables.parses(), 4);
}

}  // namespace
}  // namespace tpujobs::executor
