// Where the build put the tpujobs binary: an absolute path, compiled into
// build_paths.cc alone, as the repository's is (tests/support/source_dir.h).
#pragma once

#include <string>

#include "tests/support/source_dir.h"

namespace tpujobs::testing {

const std::string& tpujobs_binary();

}  // namespace tpujobs::testing
