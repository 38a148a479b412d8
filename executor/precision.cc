#include "executor/precision.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tpujobs::executor {

float round_to_bfloat16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffU) > 0x7f800000U) {
    return std::bit_cast<float>((bits | 0x00400000U) & 0xffff0000U);  // quiet NaN
  }
  // Adding 0x7fff plus the lowest kept bit rounds half-way cases to even; a
  // carry into the exponent is exactly the rounding up to the next binade or
  // to infinity.
  bits += 0x7fffU + ((bits >> 16) & 1U);
  return std::bit_cast<float>(bits & 0xffff0000U);
}

float round_to_float16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = bits & 0x80000000U;
  std::uint32_t magnitude = bits & 0x7fffffffU;
  if (magnitude >= 0x7f800000U) return value;  // infinity or NaN
  if (magnitude >= 0x477ff000U) {              // >= 65520: rounds to infinity
    return std::bit_cast<float>(sign | 0x7f800000U);
  }
  if (magnitude < 0x38800000U) {  // below 2^-14: binary16 subnormals, step 2^-24
    // Scaling by powers of two is exact; nearbyint rounds ties to even in the
    // default rounding mode.
    const float scaled = std::nearbyint(std::bit_cast<float>(magnitude) * 0x1.0p24f);
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(scaled * 0x1.0p-24f));
  }
  // Normal: keep 10 of float's 23 fraction bits, ties to even.
  magnitude += 0x0fffU + ((magnitude >> 13) & 1U);
  return std::bit_cast<float>(sign | (magnitude & ~0x1fffU));
}

void round_for_matmul(Precision precision, const float* in, float* out, std::size_t count) {
  switch (precision) {
    case Precision::kFp32:
      if (in != out) std::memcpy(out, in, count * sizeof(float));
      return;
    case Precision::kBf16:
      for (std::size_t i = 0; i < count; ++i) out[i] = round_to_bfloat16(in[i]);
      return;
    case Precision::kFp16:
      for (std::size_t i = 0; i < count; ++i) out[i] = round_to_float16(in[i]);
      return;
  }
}

}  // namespace tpujobs::executor
