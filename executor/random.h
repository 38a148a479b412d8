// Seeded randomness for training: a small generator with explicitly
// implemented distributions, so that a seed gives the same numbers with every
// standard library, and whose whole state is two integers (cheap to derive per
// step and replica, trivial to checkpoint).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace tpujobs::executor {

// SplitMix64's finalizer: a bijective mix of 64 bits.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A stream key from a seed and a path of counters (purpose, epoch, step,
// replica, ...): the same inputs give the same stream, whatever ran before.
inline std::uint64_t derive_seed(std::uint64_t seed, std::initializer_list<std::uint64_t> path) {
  std::uint64_t key = mix64(seed);
  for (std::uint64_t part : path) key = mix64(key ^ mix64(part + 0x632be59bd9b4e019ULL));
  return key;
}

// SplitMix64 as a generator: state is a single counter.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Uniform integer in [0, bound), without modulo bias (Lemire's method).
  std::uint64_t below(std::uint64_t bound) {
    unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
    std::uint64_t low = static_cast<std::uint64_t>(product);
    if (low < bound) {
      const std::uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        product = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<std::uint64_t>(product);
      }
    }
    return static_cast<std::uint64_t>(product >> 64);
  }
  // Standard normal by the Box-Muller transform (one value per call).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

}  // namespace tpujobs::executor
