// The script check's torch_xla calls (DESIGN §10): arguments torch_xla's
// runtime refuses or ignores, by the torch_xla version the requirements pin,
// each with torch_xla's own text and the tag it comes from (script_xla.cc).
#pragma once

#include <string_view>
#include <vector>

#include "lightning/script_calls.h"
#include "lightning/script_check.h"

namespace tpujobs::lightning {

// `call` is an xmp.spawn(...) call: its `nprocs` under PJRT.
void check_xla_spawn(const LightningCall& call, std::string_view path,
                     const ScriptCheckOptions& options, std::vector<Finding>* out);

}  // namespace tpujobs::lightning
