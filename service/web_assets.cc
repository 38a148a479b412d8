#include "service/web_assets.h"

#include <string_view>
#include <vector>

namespace tpujobs::web_files {
std::string_view find(std::string_view name);
}

namespace tpujobs::service {

std::string_view web_asset(std::string_view path) {
  // Files are embedded flat, by name: "/assets/app.js" is "app.js".
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.empty()) return {};
  return web_files::find(name);
}

}  // namespace tpujobs::service
