#include "base/bytes.h"

#include <sys/random.h>

namespace tpujobs::base {

void fill_random(std::span<unsigned char> out) {
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = getrandom(out.data() + got, out.size() - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
}

std::string lower_hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

}  // namespace tpujobs::base
