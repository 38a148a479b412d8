// db/ speaks the project's one error idiom, base::Result and base::Status;
// these names let code inside db/ (and its callers) write db::Result.
#pragma once

#include "base/result.h"

namespace tpujobs::db {

using base::Error;
using base::ErrorCode;
using base::make_error;
using base::Result;
using base::Status;
using base::to_string;

}  // namespace tpujobs::db
