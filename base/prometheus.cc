#include "base/prometheus.h"

namespace tpujobs::base {

std::string counter_family(std::string_view name, std::string_view help, std::string_view label,
                           const std::vector<std::pair<std::string_view, std::uint64_t>>& counts) {
  std::string out;
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" counter\n");
  for (const auto& [value, count] : counts) {
    out.append(name).append("{").append(label).append("=\"").append(value).append("\"} ");
    out.append(std::to_string(count)).append("\n");
  }
  return out;
}

}  // namespace tpujobs::base
