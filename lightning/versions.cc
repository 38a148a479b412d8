#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// ---------------------------------------------------------------------------
// lightning_version

}  // namespace

void check_lightning_version(Context& c) {
  const std::optional<std::string>& written = c.settings.lightning_version;
  if (!written || *written == "2.x") {
    c.version = Version::kV2;
  } else if (*written == "1.x") {
    c.version = Version::kV1;
  } else {
    c.error(kFieldLightningVersion,
            "`lightning_version` must be '2.x' or '1.x', got " + py_repr(*written) + ".",
            "Use \"2.x\" (the default) for Lightning 2 rules, or \"1.x\" to validate as "
            "Lightning 1.x did.");
  }
  c.out.lightning_v1 = c.version == Version::kV1;
}

// ---------------------------------------------------------------------------
// runtime

void check_runtime(Context& c) {
  const std::string runtime = c.settings.runtime.value_or("pjrt");
  if (runtime != "pjrt" && runtime != "xrt") {
    c.error(kFieldRuntime, "`runtime` must be 'pjrt' or 'xrt', got " + py_repr(runtime) + ".",
            "Use `runtime: \"pjrt\"` (the default, PJRT_DEVICE=TPU).");
    return;
  }
  if (runtime != "xrt" || c.accelerator == Accelerator::kCpu) return;
  if (c.version == Version::kV2) {
    c.error(kFieldRuntime, "The XLA XRT runtime is not supported anymore.",
            "Use `runtime: \"pjrt\"` (PJRT_DEVICE=TPU): Lightning 2.x and torch_xla 2.x run on "
            "PJRT only. Or validate as `lightning_version: \"1.x\"`.");
  } else if (c.settings.env.find("XRT_TPU_CONFIG") == c.settings.env.end()) {
    c.error(kFieldEnv, "Missing XLA configuration",
            "Set XRT_TPU_CONFIG in `env`, as on a Cloud TPU VM: export "
            "XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"");
  }
}

}  // namespace tpujobs::lightning
