// Request-target parsing: path and query, percent-decoded.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tpujobs::api {

// Decodes %XX escapes (and '+' as space when `plus_is_space`); kInvalid,
// naming where, on a malformed escape.
base::Result<std::string> percent_decode(std::string_view in, bool plus_is_space);

// A request target's decoded path and query parameters.
struct RequestTarget {
  std::string path;
  std::multimap<std::string, std::string> query;
};

// Splits "/v1/jobs?state=RUNNING&label=a%3Db" into its decoded path and
// query parameters. Malformed escapes are kept verbatim.
RequestTarget split_target(std::string_view target);

}  // namespace tpujobs::api
