// Reduced-precision emulation: what the MXU sees under bf16-true / 16-true.
// Matmul inputs are rounded to the narrow format (round to nearest, ties to
// even) and stored back as float, so products accumulate in fp32.
#pragma once

#include <cstddef>

#include "executor/spec.h"

namespace tpujobs::executor {

// The nearest bfloat16 value (ties to even). NaN stays NaN, infinities stay,
// values beyond bfloat16's range become infinities.
float round_to_bfloat16(float value);
// The nearest IEEE binary16 value (ties to even), including subnormals;
// magnitudes from 65520 up become infinities.
float round_to_float16(float value);

// Writes the rounding of `count` floats from `in` to `out` (which may be `in`).
// kFp32 copies unchanged.
void round_for_matmul(Precision precision, const float* in, float* out, std::size_t count);

}  // namespace tpujobs::executor
