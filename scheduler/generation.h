// Facts about the emulated TPU generations: what a host of each one has and
// which pod-slice sizes exist. Pure data; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tpujobs::scheduler {

enum class Generation { kV2, kV3, kV4 };

struct GenerationFacts {
  Generation generation;
  std::string_view name;  // "v2", "v3", "v4"
  int devices_per_host;   // 8, 8, 4
  std::int64_t hbm_bytes_per_device;
  double peak_bf16_flops_per_device;
  int mxu_dim;  // the MXU is mxu_dim x mxu_dim
  // The number in an accelerator type ("v3-32") counts TensorCores. A v2/v3
  // device is one TensorCore; a v4 device (chip) has two, so v4-8 is 4 chips
  // on one host.
  int name_units_per_device;
  // Valid slice sizes, in accelerator-type units, ascending.
  std::span<const int> slice_sizes;
};

const GenerationFacts& facts(Generation generation);

// "v2" / "v3" / "v4"; nullopt otherwise.
std::optional<Generation> parse_generation(std::string_view text);

// An accelerator type such as "v3-32".
struct SliceType {
  Generation generation;
  int size;  // in accelerator-type units (the number after the dash)

  int devices() const { return size / facts(generation).name_units_per_device; }
  int hosts() const { return devices() / facts(generation).devices_per_host; }
  std::string name() const;
};

// Parses "v3-32". Returns nullopt when the text is not "<generation>-<n>" or
// when n is not a valid slice size of that generation.
std::optional<SliceType> parse_slice_type(std::string_view text);

}  // namespace tpujobs::scheduler
