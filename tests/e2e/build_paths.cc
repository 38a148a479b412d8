#include "build_paths.h"

namespace tpujobs::testing {

const std::string& tpujobs_binary() {
  static const std::string path = TPUJOBS_BINARY;
  return path;
}

}  // namespace tpujobs::testing
