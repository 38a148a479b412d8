// The files of db/migrations/, compiled in by tpujobs_embed (db/CMakeLists.txt).
#pragma once

#include <string_view>
#include <vector>

namespace tpujobs::db::migrations_embedded {

// The content of the named file ("001_initial.sql"); empty when absent.
std::string_view find(std::string_view name);
std::vector<std::string_view> names();

}  // namespace tpujobs::db::migrations_embedded
