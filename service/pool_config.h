// The --pool flag: a slice name, a comma list, or @FILE with JSON.
#pragma once

#include <string>

#include "scheduler/pool.h"

namespace tpujobs::service {

// "v3-32", "v3-8,v3-8,v4-16", "v5litepod-16,v6e-8,v5p-32", or "@pool.json"
// holding either {"slices": [...]} or {"hosts": [{"name": "a", "generation":
// "v3"}, ...]}. A slice is a name ("v5litepod-16") or names its shape
// explicitly: {"generation": "v5p", "topology": "2x2x4"}, or {"type":
// "v5p-32", "topology": "2x2x4"} (the two must agree).
// On failure: kInvalid, with a message naming the problem.
base::Result<scheduler::PoolLayout> load_pool(const std::string& flag);

}  // namespace tpujobs::service
