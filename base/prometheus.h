// Prometheus text exposition of a counter family with one label, as
// /metrics answers it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpujobs::base {

// "# HELP <name> <help>\n# TYPE <name> counter\n", then
// "<name>{<label>="<value>"} <count>\n" for each (value, count), in order.
// The values are written as given: they must need no escaping.
std::string counter_family(std::string_view name, std::string_view help, std::string_view label,
                           const std::vector<std::pair<std::string_view, std::uint64_t>>& counts);

}  // namespace tpujobs::base
