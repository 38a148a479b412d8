#include "base/result.h"

namespace tpujobs::base {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kConflict:
      return "CONFLICT";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kInvalid:
      return "INVALID";
    case ErrorCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // namespace tpujobs::base
