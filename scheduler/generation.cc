#include "scheduler/generation.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace tpujobs::scheduler {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

constexpr std::array kV2Slices{8, 32, 128, 256, 512};
constexpr std::array kV3Slices{8, 32, 64, 128, 256, 512, 1024, 2048};
// v4 slices are 3-D topologies of chips (Cloud TPU "TPU v4", topologies):
// 2x2x1, 2x2x2, 2x2x4 and 2x4x4 below a cube, then AxBxC with every dimension
// a multiple of 4 (whole 4x4x4 cubes, at most 4 per dimension: 16x16x16 is
// the 4096-chip pod). The type counts TensorCores, two per chip: 4x4x12 is
// 192 chips, a v4-384.
constexpr std::array kV4Slices{8,    16,   32,   64,   128,  256,  384,  512,  768,  1024,
                               1152, 1536, 2048, 2304, 3072, 3456, 4096, 4608, 6144, 8192};

// Peak bf16 throughput per device: v2 45 TFLOP/s and v3 123 TFLOP/s per
// two-core chip; v4 275 TFLOP/s per chip (one device).
const GenerationFacts kFacts[] = {
    {Generation::kV2, "v2", 8, 8 * kGiB, 22.5e12, 128, 1, kV2Slices},
    {Generation::kV3, "v3", 8, 16 * kGiB, 61.5e12, 128, 1, kV3Slices},
    {Generation::kV4, "v4", 4, 32 * kGiB, 275e12, 128, 2, kV4Slices},
};

}  // namespace

const GenerationFacts& facts(Generation generation) { return kFacts[static_cast<int>(generation)]; }

std::optional<Generation> parse_generation(std::string_view text) {
  for (const GenerationFacts& f : kFacts) {
    if (f.name == text) return f.generation;
  }
  return std::nullopt;
}

std::string SliceType::name() const {
  return std::string(facts(generation).name) + "-" + std::to_string(size);
}

std::optional<SliceType> parse_slice_type(std::string_view text) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::optional<Generation> generation = parse_generation(text.substr(0, dash));
  if (!generation) return std::nullopt;
  const std::string_view digits = text.substr(dash + 1);
  int size = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  const std::span<const int> sizes = facts(*generation).slice_sizes;
  if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) return std::nullopt;
  return SliceType{*generation, size};
}

}  // namespace tpujobs::scheduler
