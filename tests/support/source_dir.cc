#include "tests/support/source_dir.h"

namespace tpujobs::testing {

const std::string& source_dir() {
  static const std::string path = TPUJOBS_SOURCE_DIR;
  return path;
}

}  // namespace tpujobs::testing
