#include "build_paths.h"

namespace tpujobs::testing {

const std::string& tpujobs_binary() {
  static const std::string path = TPUJOBS_BINARY;
  return path;
}

const std::string& source_dir() {
  static const std::string path = TPUJOBS_SOURCE_DIR;
  return path;
}

}  // namespace tpujobs::testing
