// Where the build put the tpujobs binary and where the repository is:
// absolute paths, compiled into build_paths.cc alone. A test source that
// only calls these is the same in every clone, and ccache finds it compiled
// (a definition on every test's command line made each clean clone compile
// them all again).
#pragma once

#include <string>

namespace tpujobs::testing {

const std::string& tpujobs_binary();
const std::string& source_dir();

}  // namespace tpujobs::testing
