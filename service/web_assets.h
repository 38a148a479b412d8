// The web UI's files, embedded at build time (web/dist).
#pragma once

#include <string_view>

namespace tpujobs::service {

// The file at `path` ("/index.html", "/assets/app.js"), or "" when absent.
std::string_view web_asset(std::string_view path);

}  // namespace tpujobs::service
