#include "executor/precision.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tpujobs::executor {
namespace {

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(Bfloat16, ExactValuesStay) {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f}) {
    EXPECT_EQ(round_to_bfloat16(v), v);
  }
}

TEST(Bfloat16, RoundsToNearest) {
  // 1 + 2^-8 + 2^-10 is above the half-way point between 1 and 1 + 2^-7.
  EXPECT_EQ(round_to_bfloat16(1.0f + 0x1.0p-8f + 0x1.0p-10f), 1.0f + 0x1.0p-7f);
  EXPECT_EQ(round_to_bfloat16(1.0f + 0x1.0p-9f), 1.0f);
  EXPECT_EQ(round_to_bfloat16(-(1.0f + 0x1.0p-9f)), -1.0f);
}

TEST(Bfloat16, TiesGoToEven) {
  // Exactly half-way: 0x3f808000 lies between 0x3f80 (even) and 0x3f81 (odd).
  EXPECT_EQ(round_to_bfloat16(from_bits(0x3f808000)), from_bits(0x3f800000));
  // Between 0x3f81 (odd) and 0x3f82 (even): rounds up to even.
  EXPECT_EQ(round_to_bfloat16(from_bits(0x3f818000)), from_bits(0x3f820000));
}

TEST(Bfloat16, SpecialValues) {
  EXPECT_TRUE(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_bfloat16(from_bits(0x7f800001))));  // signalling NaN stays NaN
  EXPECT_EQ(round_to_bfloat16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  // The largest float rounds past bfloat16's largest finite value to infinity.
  EXPECT_EQ(round_to_bfloat16(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());
  // Subnormals round like everything else.
  EXPECT_EQ(round_to_bfloat16(from_bits(0x00008000)), 0.0f);
  EXPECT_EQ(round_to_bfloat16(from_bits(0x00018000)), from_bits(0x00020000));
}

TEST(Float16, RoundsToElevenSignificantBits) {
  EXPECT_EQ(round_to_float16(1.0f + 0x1.0p-11f), 1.0f);  // tie, to even
  EXPECT_EQ(round_to_float16(1.0f + 0x1.0p-10f + 0x1.0p-11f),
            1.0f + 0x1.0p-9f);  // tie, to even (up)
  EXPECT_EQ(round_to_float16(1.0f + 0x1.0p-11f + 0x1.0p-20f), 1.0f + 0x1.0p-10f);
  EXPECT_EQ(round_to_float16(0.1f), 0.0999755859375f);
}

TEST(Float16, RangeAndSubnormals) {
  EXPECT_EQ(round_to_float16(65504.0f), 65504.0f);
  EXPECT_EQ(round_to_float16(65519.0f), 65504.0f);
  EXPECT_EQ(round_to_float16(65520.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_float16(-1e6f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_float16(0x1.0p-24f), 0x1.0p-24f);               // smallest subnormal
  EXPECT_EQ(round_to_float16(0x1.0p-25f), 0.0f);                     // tie to even (zero)
  EXPECT_EQ(round_to_float16(0x1.8p-24f), 0x1.0p-23f);               // tie to even (2 quanta)
  EXPECT_EQ(round_to_float16(0x1.0p-14f - 0x1.0p-26f), 0x1.0p-14f);  // rounds up into normals
  EXPECT_TRUE(std::isnan(round_to_float16(std::numeric_limits<float>::quiet_NaN())));
}

TEST(RoundForMatmul, AppliesThePrecision) {
  const float in[2] = {1.0f + 0x1.0p-9f, 1.0f + 0x1.0p-12f};
  float out[2];
  round_for_matmul(Precision::kFp32, in, out, 2);
  EXPECT_EQ(out[0], in[0]);
  round_for_matmul(Precision::kBf16, in, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  round_for_matmul(Precision::kFp16, in, out, 2);
  EXPECT_EQ(out[0], 1.0f + 0x1.0p-9f);
  EXPECT_EQ(out[1], 1.0f);
}

}  // namespace
}  // namespace tpujobs::executor
