#include "scheduler/generation.h"

#include <algorithm>
#include <charconv>

namespace tpujobs::scheduler {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

constexpr std::array kV2Slices{8, 32, 128, 256, 512};
constexpr std::array kV3Slices{8, 32, 64, 128, 256, 512, 1024, 2048};
// v4 slices are 3-D topologies of chips (Cloud TPU "TPU v4", topologies):
// 2x2x1, 2x2x2, 2x2x4 and 2x4x4 below a cube, then AxBxC with every dimension
// a multiple of 4 (whole 4x4x4 cubes, at most 4 per dimension: 16x16x16 is
// the 4096-chip pod). The type counts TensorCores, two per chip: 4x4x12 is
// 192 chips, a v4-384.
constexpr std::array kV4Slices{8,    16,   32,   64,   128,  256,  384,  512,  768,  1024,
                               1152, 1536, 2048, 2304, 3072, 3456, 4096, 4608, 6144, 8192};
// v5p (https://cloud.google.com/tpu/docs/v5p, "Configurations"): the same
// rule as v4, 2x2x1 / 2x2x2 / 2x2x4 / 2x4x4 below a cube, then whole 4x4x4
// cubes, "The maximum v5p shape is 16x16x24 (6144 chips, 96 cubes)"; the
// type counts TensorCores, 2 per chip ("Number of TensorCores per chip | 2"):
// 2x2x4 is 16 chips, a v5p-32.
constexpr std::array kV5pSlices{8,    16,   32,   64,   128,  256,  384,  512,  640,   768,  1024,
                                1152, 1280, 1536, 1920, 2048, 2304, 2560, 3072, 3456,  3840, 4096,
                                4608, 5120, 5760, 6144, 6912, 7680, 8192, 9216, 10240, 12288};
// v5e (https://cloud.google.com/tpu/docs/v5e, "2D slice shapes": 1x1, 2x2,
// 2x4, 4x4, 4x8, 8x8, 8x16, 16x16; "v$VERSION_NUMBER-$CHIP_COUNT", the
// version spelt "v5litepod") and v6e (https://cloud.google.com/tpu/docs/v6e,
// "Supported configurations": v6e-1 ... 16x16, 256 chips) count chips.
constexpr std::array kChipSlices{8, 16, 32, 64, 128, 256};
constexpr std::array kChipSubHostSlices{1, 4};
constexpr std::array<int, 0> kNoSubHostSlices{};
constexpr std::string_view kV2V3Source =
    "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm (v2: 8 GiB per TensorCore, "
    "v3: 16 GiB; 2 TensorCores per chip, 4 chips per host); XLA capacity: 530.00M reserved "
    "(LargeWorldModel/LWM#60, 'of 15.48G hbm' on a v3-8)";

// Peak bf16 throughput per device: v2 45 TFLOP/s and v3 123 TFLOP/s per
// two-core chip; v4 275 TFLOP/s per chip (one device). v5e 197, v5p 459 and
// v6e 918 TFLOP/s per chip (one device): the "Peak compute per chip (bf16)"
// rows of https://cloud.google.com/tpu/docs/v5e, /v5p and /v6e.
//
// HBM: v5e "16 GB" (v5e page), v5p "HBM capacity per chip (GiB) | 95" (v5p
// page), v6e "HBM capacity per chip | 32 GB" (v6e page). The capacity XLA
// reports is what users' out-of-memory texts show: "of 15.75G hbm" on
// v5litepod hosts, "of 95.74G hbm" on v5p, "of 31.25G hbm" on v6e-8 (with
// "reserved 260.00M" in its breakdown). The v5p figure exceeds the page's
// 95 GiB, so the chip is taken to hold 96 GiB (HBM2e stacks), the page
// rounding down; that is tpujobs' reading, not a quoted fact.
//
// MXU: 128x128 on v2-v4 (as before); the v5e and v5p pages give four MXUs
// per TensorCore but not their size, and tpujobs takes 128x128 for them,
// unquoted; v6e's is 256x256 (https://cloud.google.com/tpu/docs/v6e: "Each TensorCore contains
// two 256x256 matrix-multiply units (MXU)").
//
// Hosts: v4/v5p hosts hold 4 chips ("2x2x1 | 8 cores | 4 chips | 1 host",
// v5p page); torch_xla makes one device per chip from v4 on. v5e/v6e: the
// pages' "Hosts" column counts 8-chip hosts (4x4: 16 chips, 2 hosts; v6e
// "Chips per host | 8"); GKE builds multi-host slices from 4-chip nodes
// (v6e page: 4x4 is 4 VMs of ct6e-standard-4t; v5e: ct5lp-hightpu-4t).
const GenerationFacts kFacts[] = {
    {Generation::kV2, "v2", 8, 8 * kGiB, 22.5e12, 128, 1, kV2Slices, "v2", 2, 8 * kGiB - 530 * kMiB,
     0, 8, kNoSubHostSlices, kV2V3Source},
    {Generation::kV3, "v3", 8, 16 * kGiB, 61.5e12, 128, 1, kV3Slices, "v3", 2,
     16 * kGiB - 530 * kMiB, 0, 8, kNoSubHostSlices, kV2V3Source},
    {Generation::kV4, "v4", 4, 32 * kGiB, 275e12, 128, 2, kV4Slices, "v4", 2,
     32 * kGiB - 1280 * kMiB, 3, 4, kNoSubHostSlices,
     "https://cloud.google.com/tpu/docs/v4; XLA capacity 'of 30.75G hbm' (erfanzar/EasyDeL#166)"},
    {Generation::kV5e, "v5e", 8, 16 * kGiB, 197e12, 128, 1, kChipSlices, "v5litepod", 1,
     16 * kGiB - 256 * kMiB, 2, 4, kChipSubHostSlices,
     "https://cloud.google.com/tpu/docs/v5e; XLA capacity 'of 15.75G hbm' (user reports)"},
    {Generation::kV5p, "v5p", 4, 96 * kGiB, 459e12, 128, 2, kV5pSlices, "v5p", 2,
     95 * kGiB + 758 * kMiB, 3, 4, kNoSubHostSlices,
     "https://cloud.google.com/tpu/docs/v5p; XLA capacity 'of 95.74G hbm' (user reports)"},
    {Generation::kV6e, "v6e", 8, 32 * kGiB, 918e12, 256, 1, kChipSlices, "v6e", 1,
     31 * kGiB + 256 * kMiB, 2, 4, kChipSubHostSlices,
     "https://cloud.google.com/tpu/docs/v6e; XLA capacity 'of 31.25G hbm' (user reports)"},
};

constexpr Generation kAll[] = {Generation::kV2,  Generation::kV3,  Generation::kV4,
                               Generation::kV5e, Generation::kV5p, Generation::kV6e};

std::optional<int> parse_positive(std::string_view digits) {
  int value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value <= 0) return std::nullopt;
  return value;
}

// The generation and size of "<prefix>-<n>" whatever n is.
std::optional<std::pair<Generation, int>> split_type(std::string_view text) {
  const std::size_t dash = text.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::optional<int> size = parse_positive(text.substr(dash + 1));
  if (!size) return std::nullopt;
  for (Generation g : kAll) {
    if (facts(g).type_prefix == text.substr(0, dash)) return std::pair{g, *size};
  }
  return std::nullopt;
}

bool contains(std::span<const int> sizes, int size) {
  return std::find(sizes.begin(), sizes.end(), size) != sizes.end();
}

// Dimensions ascending: a 4x8x4 is a 4x4x8.
Topology canonical(Topology t) {
  auto order = [&t](int i, int j) {
    if (t.dims[i] > t.dims[j]) std::swap(t.dims[i], t.dims[j]);
  };
  order(0, 1);
  if (t.rank == 3) {
    order(1, 2);
    order(0, 1);
  }
  return t;
}

std::vector<Topology> topologies_2d() {
  return {{{1, 1, 1}, 2}, {{2, 2, 1}, 2}, {{2, 4, 1}, 2},  {{4, 4, 1}, 2},
          {{4, 8, 1}, 2}, {{8, 8, 1}, 2}, {{8, 16, 1}, 2}, {{16, 16, 1}, 2}};
}

std::vector<Topology> topologies_3d(int longest) {
  std::vector<Topology> out{{{2, 2, 1}, 3}, {{2, 2, 2}, 3}, {{2, 2, 4}, 3}, {{2, 4, 4}, 3}};
  for (int a = 4; a <= 16; a += 4) {
    for (int b = a; b <= 16; b += 4) {
      for (int c = b; c <= longest; c += 4) out.push_back({{a, b, c}, 3});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Topology& x, const Topology& y) { return x.chips() < y.chips(); });
  return out;
}

}  // namespace

std::string Topology::text() const {
  std::string out = std::to_string(dims[0]);
  for (int i = 1; i < rank; ++i) out += "x" + std::to_string(dims[i]);
  return out;
}

std::optional<Topology> parse_topology(std::string_view text) {
  Topology topology;
  int rank = 0;
  while (true) {
    const std::size_t x = text.find('x');
    const std::optional<int> dim = parse_positive(text.substr(0, x));
    if (!dim || rank == 3) return std::nullopt;
    topology.dims[rank++] = *dim;
    if (x == std::string_view::npos) break;
    text.remove_prefix(x + 1);
  }
  if (rank < 2) return std::nullopt;
  topology.rank = rank;
  return topology;
}

const GenerationFacts& facts(Generation generation) { return kFacts[static_cast<int>(generation)]; }

std::span<const Generation> all_generations() { return kAll; }

std::optional<Generation> parse_generation(std::string_view text) {
  for (const GenerationFacts& f : kFacts) {
    if (f.name == text) return f.generation;
  }
  return std::nullopt;
}

std::string SliceType::name() const {
  return std::string(facts(generation).type_prefix) + "-" + std::to_string(size);
}

std::optional<Topology> SliceType::topology() const {
  const int chips = devices();  // a device is a chip from v4 on
  std::optional<Topology> best;
  for (const Topology& t : topologies(generation)) {
    if (t.chips() != chips) continue;
    const auto longest = [](const Topology& x) {
      return std::max({x.dims[0], x.dims[1], x.dims[2]});
    };
    if (!best || longest(t) < longest(*best)) best = t;
  }
  return best;
}

std::optional<SliceType> parse_slice_type(std::string_view text) {
  const auto split = split_type(text);
  if (!split || !contains(facts(split->first).slice_sizes, split->second)) return std::nullopt;
  return SliceType{split->first, split->second};
}

std::optional<std::string> sub_host_type_reason(std::string_view text) {
  const auto split = split_type(text);
  if (!split || !contains(facts(split->first).sub_host_sizes, split->second)) return std::nullopt;
  const GenerationFacts& f = facts(split->first);
  const SliceType whole{split->first, f.slice_sizes.front()};
  return "'" + std::string(text) + "' is " + std::to_string(split->second) + " of a " +
         std::string(f.name) + " host's " + std::to_string(f.devices_per_host) +
         " chips (one VM, a sub-host type); tpujobs emulates whole hosts: use " + whole.name() +
         " (" + whole.topology()->text() + ")";
}

std::span<const Topology> topologies(Generation generation) {
  // Made once, then constant: every resolution of a job's trainer settings
  // reads them (the scheduler leader resolves each new job).
  static const std::vector<Topology> k2d = topologies_2d();
  static const std::vector<Topology> k3d = topologies_3d(16);
  static const std::vector<Topology> kV5p3d = topologies_3d(24);
  switch (facts(generation).topology_rank) {
    case 2:
      return k2d;
    case 3:
      return generation == Generation::kV5p ? kV5p3d : k3d;
    default:
      return {};
  }
}

std::optional<SliceType> slice_of_topology(Generation generation, const Topology& topology) {
  const GenerationFacts& f = facts(generation);
  if (topology.rank != f.topology_rank) return std::nullopt;
  const Topology wanted = canonical(topology);
  for (const Topology& t : topologies(generation)) {
    if (canonical(t) != wanted) continue;
    const int size = t.chips() * f.name_units_per_device;
    if (!contains(f.slice_sizes, size)) return std::nullopt;
    return SliceType{generation, size};
  }
  return std::nullopt;
}

}  // namespace tpujobs::scheduler
