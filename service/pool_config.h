// The --pool flag: a slice name, a comma list, or @FILE with JSON.
#pragma once

#include <optional>
#include <string>

#include "scheduler/pool.h"

namespace tpujobs::service {

// "v3-32", "v3-8,v3-8,v4-16", or "@pool.json" holding either
// {"slices": ["v3-32", "v4-16"]} or {"hosts": [{"name": "a", "generation": "v3"}, ...]}.
// On failure returns nullopt and sets *error to a message naming the problem.
std::optional<scheduler::PoolLayout> load_pool(const std::string& flag, std::string* error);

}  // namespace tpujobs::service
