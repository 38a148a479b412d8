// Random bytes and their hex text: known bytes give known text, and the
// random source fills every byte of a buffer, differently each call.
#include "base/bytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

namespace tpujobs::base {
namespace {

TEST(LowerHex, TwoLowerCaseDigitsAByteInOrder) {
  const std::array<unsigned char, 6> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  EXPECT_EQ(lower_hex(bytes), "00017f80abff");
  EXPECT_EQ(lower_hex({}), "");
}

TEST(LowerHex, EveryByteValue) {
  std::vector<unsigned char> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<unsigned char>(i);
  const std::string hex = lower_hex(all);
  ASSERT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 8), "00010203");
  EXPECT_EQ(hex.substr(2 * 0x9e, 4), "9e9f");
  EXPECT_EQ(hex.substr(504), "fcfdfeff");
}

// True when no 32-byte stretch of `bytes` is left all `fill`: a stretch
// the random source really wrote is all one value with odds of 2^-248.
bool every_stretch_written(const std::vector<unsigned char>& bytes, unsigned char fill) {
  for (std::size_t at = 0; at < bytes.size(); at += 32) {
    const auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(at);
    const auto end = bytes.begin() + static_cast<std::ptrdiff_t>(std::min(at + 32, bytes.size()));
    if (std::all_of(begin, end, [&](unsigned char b) { return b == fill; })) return false;
  }
  return true;
}

TEST(FillRandom, FillsTheWholeBuffer) {
  // A fill that stopped short, or wrote one part twice, would leave a
  // stretch as it was; two prefills, so that a stretch the source happened
  // to write with the prefill's value cannot pass for one it skipped.
  for (unsigned char fill : {0x00, 0xff}) {
    std::vector<unsigned char> bytes(1 << 16, fill);
    fill_random(bytes);
    EXPECT_TRUE(every_stretch_written(bytes, fill)) << "prefill " << int(fill);
  }
}

TEST(FillRandom, TwoCallsDiffer) {
  std::array<unsigned char, 32> first{};
  std::array<unsigned char, 32> second{};
  fill_random(first);
  fill_random(second);
  EXPECT_NE(lower_hex(first), lower_hex(second));
}

}  // namespace
}  // namespace tpujobs::base
