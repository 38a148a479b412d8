// Facts about the emulated TPU generations: what a host of each one has,
// which pod-slice sizes exist, their topologies and their names. Pure data;
// no I/O. Every fact is cited in generation.cc, beside the table that holds
// it; docs/tpu-types.md maps each Cloud TPU type to what tpujobs emulates.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::scheduler {

enum class Generation { kV2, kV3, kV4, kV5e, kV5p, kV6e };

// A slice's shape in chips: "2x4" (2D: v5e, v6e) or "2x2x4" (3D: v4, v5p).
struct Topology {
  std::array<int, 3> dims{1, 1, 1};
  int rank = 2;  // 2 or 3

  int chips() const { return dims[0] * dims[1] * dims[2]; }
  std::string text() const;  // "4x4", "2x2x4"
  bool operator==(const Topology&) const = default;
};

// Parses "4x4" or "2x2x4" (positive dimensions); nullopt otherwise.
std::optional<Topology> parse_topology(std::string_view text);

struct GenerationFacts {
  Generation generation;
  std::string_view name;  // "v2", "v3", "v4", "v5e", "v5p", "v6e"
  // The devices torch_xla sees on one host of the shape tpujobs emulates:
  // v2/v3 8 (a device per TensorCore), v4/v5p 4 (a device per chip),
  // v5e/v6e 8 (Cloud TPU's 8-chip hosts; see gke_devices_per_host).
  int devices_per_host;
  std::int64_t hbm_bytes_per_device;
  double peak_bf16_flops_per_device;
  int mxu_dim;  // the MXU is mxu_dim x mxu_dim
  // Accelerator-type units per torch_xla device. The number in a type counts
  // TensorCores on v2-v4 and v5p (a v4/v5p chip has two, one device) and
  // chips on v5e/v6e: v4-8 and v5p-8 are 4 chips, v5litepod-8 is 8.
  int name_units_per_device;
  // Valid slice sizes of whole hosts, in accelerator-type units, ascending.
  std::span<const int> slice_sizes;
  // What the name of a type starts with: "v3" ("v3-32"), "v5litepod"
  // ("v5litepod-16"), "v5p", "v6e".
  std::string_view type_prefix;
  int tensorcores_per_chip;  // 2 on v2, v3, v4, v5p; 1 on v5e, v6e
  // The HBM capacity XLA reports in its out-of-memory text ("Used X of
  // 15.75G hbm" on v5e): the device's HBM less what the runtime keeps.
  std::int64_t hbm_reported_bytes;
  // 0 (no topology names: v2/v3), 2 (v5e, v6e: 2D torus) or 3 (v4, v5p).
  int topology_rank;
  // GKE builds multi-host v5e/v6e slices from 4-chip nodes (machine types
  // ct5lp-hightpu-4t / ct6e-standard-4t), so torch_xla sees 4 devices per
  // node there; on Cloud TPU's own hosts it sees devices_per_host.
  int gke_devices_per_host;
  // Sizes that are valid accelerator types but smaller than one host
  // (v5litepod-1, v5litepod-4, v6e-1, v6e-4): one VM with part of a host.
  std::span<const int> sub_host_sizes;
  std::string_view source;  // the public documents the facts above quote
};

const GenerationFacts& facts(Generation generation);

// Every generation, oldest first.
std::span<const Generation> all_generations();

// "v2" ... "v6e"; nullopt otherwise.
std::optional<Generation> parse_generation(std::string_view text);

// An accelerator type such as "v3-32" or "v5litepod-16".
struct SliceType {
  Generation generation;
  int size;  // in accelerator-type units (the number after the dash)

  int devices() const { return size / facts(generation).name_units_per_device; }
  int hosts() const { return devices() / facts(generation).devices_per_host; }
  std::string name() const;
  // Its default topology ("4x4" for v5litepod-16, "2x2x4" for v5p-32);
  // nullopt for v2/v3.
  std::optional<Topology> topology() const;
};

// Parses "v3-32" / "v5litepod-16" / "v5p-32" / "v6e-8". Returns nullopt when
// the text is not "<type prefix>-<n>" or when n is not a valid whole-host
// slice size of that generation.
std::optional<SliceType> parse_slice_type(std::string_view text);

// When `text` names a valid type smaller than one host ("v5litepod-4"), why
// tpujobs does not emulate it, naming the whole-host type to use instead;
// nullopt otherwise.
std::optional<std::string> sub_host_type_reason(std::string_view text);

// Every valid topology of `generation` with its chip count, in ascending
// chips (several shapes may share a size: 4x4x8 and 4x8x4 are one canonical
// 4x4x8). Empty for v2/v3.
std::span<const Topology> topologies(Generation generation);

// The slice a topology names: "4x4" on v5e is v5litepod-16, "2x2x4" on v5p
// is v5p-32. Dimensions are compared in any order for 3D shapes (a 4x8x4 is
// a 4x4x8). nullopt when the shape is not a valid whole-host slice.
std::optional<SliceType> slice_of_topology(Generation generation, const Topology& topology);

}  // namespace tpujobs::scheduler
