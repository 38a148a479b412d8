// Where the repository is: an absolute path, compiled into source_dir.cc
// alone. A test source that only calls this is the same in every clone, and
// ccache finds it compiled (a definition on every test's command line made
// each clean clone compile them all again).
#pragma once

#include <string>

namespace tpujobs::testing {

const std::string& source_dir();

}  // namespace tpujobs::testing
