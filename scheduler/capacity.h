// What the pool offers, per generation present (hosts counted whether
// healthy or not): the input of validation (api/resolution.h), which turns
// it into lightning::PoolView. A generation with 0 hosts counts as absent.
#pragma once

#include <map>

#include "scheduler/generation.h"

namespace tpujobs::scheduler {

struct PoolCapacity {
  std::map<Generation, int> hosts;
};

}  // namespace tpujobs::scheduler
