#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// ---------------------------------------------------------------------------
// accelerator

enum class AcceleratorKind { kTpu, kCpu, kAuto, kUnavailable };

struct AcceleratorRule {
  std::string_view name;
  AcceleratorKind kind;
};

constexpr AcceleratorRule kAcceleratorRules[] = {
    {"tpu", AcceleratorKind::kTpu},          {"cpu", AcceleratorKind::kCpu},
    {"auto", AcceleratorKind::kAuto},        {"gpu", AcceleratorKind::kUnavailable},
    {"cuda", AcceleratorKind::kUnavailable}, {"mps", AcceleratorKind::kUnavailable},
    {"hpu", AcceleratorKind::kUnavailable},  {"ipu", AcceleratorKind::kUnavailable},
};

// Lightning's "invalid accelerator name" list (the registry, sorted).
std::string_view registered_accelerators(Version version) {
  return version == Version::kV2 ? "auto, cpu, cuda, mps, tpu"
                                 : "auto, cpu, cuda, hpu, ipu, mps, tpu";
}

}  // namespace

void check_accelerator(Context& c) {
  const bool tpu_cores_given = c.settings.tpu_cores.kind != DeviceValue::Kind::kAbsent;
  std::optional<AcceleratorKind> kind;
  if (!c.settings.accelerator) {
    // 2.x defaults to 'auto'; 1.x defaulted to the CPU unless a device flag
    // such as tpu_cores named the accelerator.
    if (c.version == Version::kV2) {
      kind = tpu_cores_given ? AcceleratorKind::kTpu : AcceleratorKind::kAuto;
    } else {
      kind = tpu_cores_given ? AcceleratorKind::kTpu : AcceleratorKind::kCpu;
      if (!tpu_cores_given && c.tpu_available()) {
        c.warn(
            "TPU available but not used. Set `accelerator` and `devices` using "
            "`Trainer(accelerator='tpu', devices=8)`.");
      }
    }
  } else {
    const std::string& written = *c.settings.accelerator;
    for (const AcceleratorRule& rule : kAcceleratorRules) {
      if (rule.name == written) kind = rule.kind;
    }
    if (!kind) {
      c.error(kFieldAccelerator,
              "You selected an invalid accelerator name: `accelerator=" + py_repr(written) +
                  "`. Available names are: " + std::string(registered_accelerators(c.version)) +
                  ".",
              "tpujobs emulates TPUs: use `accelerator: \"tpu\"` (or \"auto\"), or \"cpu\".");
      return;
    }
  }

  switch (*kind) {
    case AcceleratorKind::kCpu:
      c.accelerator = Accelerator::kCpu;
      break;
    case AcceleratorKind::kAuto:
      c.accelerator = c.tpu_available() ? Accelerator::kTpu : Accelerator::kCpu;
      break;
    case AcceleratorKind::kTpu:
      if (c.tpu_available()) {
        c.accelerator = Accelerator::kTpu;
      } else {
        c.error(c.settings.accelerator ? kFieldAccelerator : kFieldTpuCores,
                "No TPU devices were found.",
                "This pool has no TPU hosts: use `accelerator: \"cpu\"` (or \"auto\", which "
                "falls back to the CPU), or submit to a service started with TPU hosts "
                "(--pool v3-8).");
      }
      break;
    case AcceleratorKind::kUnavailable:
      c.error(kFieldAccelerator,
              "`Trainer(accelerator=" + py_repr(*c.settings.accelerator) +
                  ")` can not run on your system since the accelerator is not available. The "
                  "following accelerator(s) is available and can be passed into `accelerator` "
                  "argument of `Trainer`: " +
                  (c.tpu_available() ? "['tpu', 'cpu']" : "['cpu']") + ".",
              "tpujobs emulates TPU hosts, not GPUs: use `accelerator: \"tpu\"` (or \"auto\") and "
              "drop GPU-only settings.");
      break;
  }
  if (c.accelerator != Accelerator::kUnresolved) {
    c.out.accelerator = c.accelerator == Accelerator::kTpu ? "tpu" : "cpu";
  }
}

}  // namespace tpujobs::lightning
