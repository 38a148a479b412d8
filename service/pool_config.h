// The --pool flag: a slice name, a comma list, or @FILE with JSON.
#pragma once

#include <string>

#include "scheduler/pool.h"

namespace tpujobs::service {

// "v3-32", "v3-8,v3-8,v4-16", or "@pool.json" holding either
// {"slices": ["v3-32", "v4-16"]} or {"hosts": [{"name": "a", "generation": "v3"}, ...]}.
// On failure: kInvalid, with a message naming the problem.
base::Result<scheduler::PoolLayout> load_pool(const std::string& flag);

}  // namespace tpujobs::service
