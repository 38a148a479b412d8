// TPU generations and pod slices as the rules and their messages see them:
// accelerator types ("v3-32"), slice sizes, hosts per slice. The facts come
// in through PoolView; nothing here holds a copy of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lightning/resolve.h"

namespace tpujobs::lightning {

// A generation is named by its entry in the PoolView, which outlives every
// use during one resolve().
using Generation = const TpuGeneration*;

// What its accelerator types start with: "v3", "v5litepod", "v5p", "v6e".
const std::string& type_prefix(Generation generation);

// An accelerator type such as "v3-32".
struct SliceType {
  Generation generation;
  int size;  // in accelerator-type units (the number after the dash)

  int devices() const { return size / generation->units_per_device; }
  int hosts() const { return devices() / generation->devices_per_host; }
  std::string name() const { return type_prefix(generation) + "-" + std::to_string(size); }
  // Its default shape ("4x4"); empty when the generation has no topology names.
  std::string topology() const;
};

int devices_per_host(Generation generation);
const std::string& generation_name(Generation generation);

// The generation called `name` ("v3"); nullptr when the pool does not know it.
Generation find_generation(const PoolView& pool, std::string_view name);

// The generation whose accelerator types start with `prefix`; nullptr when none.
Generation find_type_prefix(const PoolView& pool, std::string_view prefix);

// "4x2" -> "2x4", "4x2x2" -> "2x2x4"; nullopt when not 2 or 3 positive
// integers joined by 'x'.
std::optional<std::string> canonical_topology(std::string_view text);

// Parses "v3-32". nullopt when the text is not "<generation>-<n>" or n is
// not a valid slice size of that generation.
std::optional<SliceType> parse_slice_type(const PoolView& pool, std::string_view text);

// "v3-8, v3-32, v3-64, ..."
std::string slice_names(Generation generation);
// "1, 4, 8, 16, ...": the num_nodes values that make a slice.
std::string slice_host_counts(Generation generation);
// The largest slice of `generation` with at most `hosts` hosts.
std::optional<SliceType> largest_slice(Generation generation, int hosts);
// The slice with the most hosts of any generation of the pool view.
SliceType largest_slice_anywhere(const PoolView& pool);
// The slice of `devices` devices of `generation`, if that size exists.
std::optional<SliceType> slice_of(Generation generation, std::int64_t devices);
// "8 on v2/v3 hosts, 4 on v4 hosts"
std::string host_counts_text(const std::vector<Generation>& generations);

}  // namespace tpujobs::lightning
