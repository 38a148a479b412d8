#include "service/text_delta.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

std::string round_trip(const std::string& base_text, const std::string& text, std::size_t* size) {
  const DeltaBase base(std::make_shared<const std::string>(base_text));
  const std::string delta = delta_encode(base, text);
  if (size != nullptr) *size = delta.size();
  std::string out = "prefix:";
  delta_decode(*base.text(), delta, out);
  return out;
}

const std::string kView =
    R"({"array":{"id":1,"index":4,"values":{"trainer.seed":4}},"attempt":0,)"
    R"("created_at":"2026-11-29T08:54:46.956Z","estimate":{"classes":3,"device":"v3"},)"
    R"("id":5,"labels":{},"name":"queued","spec":{"data":{"batch_size":16,"dataset":"iris"},)"
    R"("trainer":{"accelerator":"tpu","devices":1,"max_epochs":1,"seed":4}},"state":"QUEUED"})";

TEST(TextDelta, ASimilarTextComesBackWholeFromAFewBytes) {
  // Numbers of other widths and of the same width differ.
  const std::string other =
      R"({"array":{"id":4951,"index":49,"values":{"trainer.seed":6049}},"attempt":0,)"
      R"("created_at":"2026-11-29T08:55:00.484Z","estimate":{"classes":3,"device":"v3"},)"
      R"("id":5000,"labels":{},"name":"queued","spec":{"data":{"batch_size":16,"dataset":"iris"},)"
      R"("trainer":{"accelerator":"tpu","devices":1,"max_epochs":1,"seed":6049}},"state":"QUEUED"})";
  std::size_t size = 0;
  EXPECT_EQ(round_trip(kView, other, &size), "prefix:" + other);
  EXPECT_LT(size, other.size() / 4);
}

TEST(TextDelta, TheBaseItselfIsOneCopy) {
  std::size_t size = 0;
  EXPECT_EQ(round_trip(kView, kView, &size), "prefix:" + kView);
  EXPECT_LE(size, 6u);
}

TEST(TextDelta, AnUnlikeShortOrEmptyTextComesBackAsItIs) {
  const std::string unlike = "nothing in common with that base at all: 0123456789";
  EXPECT_EQ(round_trip(kView, unlike, nullptr), "prefix:" + unlike);
  EXPECT_EQ(round_trip(kView, "ab", nullptr), "prefix:ab");
  EXPECT_EQ(round_trip(kView, "", nullptr), "prefix:");
  EXPECT_EQ(round_trip("", kView, nullptr), "prefix:" + kView);
  EXPECT_EQ(round_trip("short", "short and more", nullptr), "prefix:short and more");
}

TEST(TextDelta, TextsLongerThanAVarintByteAndMovedPartsRoundTrip) {
  std::string base_text;
  for (int i = 0; i < 300; ++i) base_text += "member" + std::to_string(i) + ",";
  std::string text = base_text.substr(1500) + "inserted" + base_text.substr(0, 1500);
  std::size_t size = 0;
  EXPECT_EQ(round_trip(base_text, text, &size), "prefix:" + text);
  EXPECT_LT(size, 64u);
}

}  // namespace
}  // namespace tpujobs::service
