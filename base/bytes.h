// Bytes: random ones from the kernel, and their lower-case hex text. What
// API tokens, notification secrets, digests and replica tags are made of.
#pragma once

#include <span>
#include <string>

namespace tpujobs::base {

// Fills every byte of `out` from the kernel's random source (getrandom(2)),
// which blocks only until that source is seeded at boot. Short reads and
// interruptions are retried, so on return the whole buffer is random.
void fill_random(std::span<unsigned char> out);

// Two lower-case hex digits a byte, in order: {0x00, 0xab, 0x7f} -> "00ab7f".
std::string lower_hex(std::span<const unsigned char> bytes);

}  // namespace tpujobs::base
