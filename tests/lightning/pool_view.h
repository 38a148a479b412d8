// The pool as the service hands it to the rules: the scheduler's facts of
// every generation, with the hosts of the named slices ("v5p-32", "v6e-8").
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lightning/resolve.h"
#include "scheduler/generation.h"

namespace tpujobs::lightning {

inline PoolView View(const std::vector<std::string>& slices) {
  std::map<scheduler::Generation, int> hosts;
  for (const std::string& name : slices) {
    const std::optional<scheduler::SliceType> slice = scheduler::parse_slice_type(name);
    EXPECT_TRUE(slice) << name;
    if (slice) hosts[slice->generation] += slice->hosts();
  }
  PoolView view;
  for (scheduler::Generation generation : scheduler::all_generations()) {
    const scheduler::GenerationFacts& f = scheduler::facts(generation);
    TpuGeneration& g = view.generations.emplace_back();
    g.name = std::string(f.name);
    g.devices_per_host = f.devices_per_host;
    g.units_per_device = f.name_units_per_device;
    g.slice_sizes = {f.slice_sizes.begin(), f.slice_sizes.end()};
    g.hosts = hosts.contains(generation) ? hosts[generation] : 0;
    g.type_prefix = std::string(f.type_prefix);
    g.type_counts_chips = f.tensorcores_per_chip == 1;
  }
  return view;
}

}  // namespace tpujobs::lightning
