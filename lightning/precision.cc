#include <algorithm>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// ---------------------------------------------------------------------------
// precision

// Lightning 2.x `_convert_precision_to_unified_args`: aliases to canonical
// names, with the legacy warning for the ones that change meaning.
struct PrecisionAlias {
  std::string_view written;
  std::string_view canonical;
  bool legacy_warning;
};
constexpr PrecisionAlias kPrecisionAliasesV2[] = {
    {"64", "64-true", false},
    {"32", "32-true", false},
    {"16", "16-mixed", true},
    {"bf16", "bf16-mixed", true},
};
constexpr std::string_view kPrecisionNamesV2[] = {"16-true",    "16-mixed", "bf16-true",
                                                  "bf16-mixed", "32-true",  "64-true"};
constexpr std::string_view kAllowedPrecisionsV2 =
    "('16-true', '16-mixed', 'bf16-true', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', "
    "'32', '16', 'bf16')";

// What tpujobs runs, per canonical name (the XLA plugin's supported set).
struct PrecisionRun {
  std::string_view canonical;
  Precision precision;
};
constexpr PrecisionRun kRunnablePrecisions[] = {
    {"32-true", Precision::k32True},
    {"16-true", Precision::k16True},
    {"bf16-true", Precision::kBf16True},
};

constexpr std::string_view kPrecisionHint =
    "Use `precision: \"bf16-true\"` on TPUs (the MXU multiplies in bfloat16), or \"32-true\"; "
    "mixed precision (AMP) does not exist on XLA.";

void check_precision_v2(Context& c, std::string_view written) {
  std::string canonical(written);
  for (const PrecisionAlias& alias : kPrecisionAliasesV2) {
    if (alias.written != written) continue;
    canonical = alias.canonical;
    if (alias.legacy_warning) {
      c.warn("`precision=" + std::string(written) +
             "` is supported for historical reasons but its usage is discouraged. Please set your "
             "precision to " +
             canonical + " instead!");
    }
  }
  if (std::find(std::begin(kPrecisionNamesV2), std::end(kPrecisionNamesV2), canonical) ==
      std::end(kPrecisionNamesV2)) {
    c.error(kFieldPrecision,
            "Precision " + py_repr(written) +
                " is invalid. Allowed precision values: " + std::string(kAllowedPrecisionsV2),
            std::string(kPrecisionHint));
    return;
  }
  for (const PrecisionRun& run : kRunnablePrecisions) {
    if (run.canonical == canonical) {
      c.out.precision = run.precision;
      return;
    }
  }
  if (c.accelerator == Accelerator::kCpu) {
    c.error(kFieldPrecision,
            "`precision=" + py_repr(canonical) +
                "` is not supported by the tpujobs CPU executor. `precision` must be one of: "
                "('32-true', '16-true', 'bf16-true').",
            "Use `precision: \"32-true\"` or \"bf16-true\" for a CPU job.");
    return;
  }
  c.error(kFieldPrecision,
          "`precision=" + py_repr(canonical) +
              ")` is not supported in XLA. `precision` must be one of: ('32-true', '16-true', "
              "'bf16-true').",
          std::string(kPrecisionHint));
}

// Lightning 1.x: 16, 32, 64 or 'bf16'; 16 on a TPU meant bf16.
void check_precision_v1(Context& c, std::string_view written) {
  const bool tpu = c.accelerator != Accelerator::kCpu;
  if (written == "32") {
    c.out.precision = Precision::k32True;
  } else if (written == "bf16") {
    c.out.precision = Precision::kBf16True;
  } else if (written == "16") {
    c.out.precision = Precision::kBf16True;
    c.warn(tpu ? "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported "
                 "with TPUs. Using `precision='bf16'` instead."
               : "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not "
                 "supported on CPU. Using `precision='bf16'` instead.");
  } else if (written == "64") {
    if (tpu) {
      c.error(kFieldPrecision,
              "`Trainer(accelerator='tpu', precision=64)` is not implemented. Please, open an "
              "issue in `https://github.com/Lightning-AI/lightning/issues` requesting this "
              "feature.",
              "Use `precision: \"bf16\"` (or 16, which means bf16 on TPUs) or 32.");
    } else {
      c.error(kFieldPrecision,
              "`precision=64` is not supported by the tpujobs CPU executor. `precision` must be "
              "one of: [16, 32, 'bf16'].",
              "Use `precision: 32` or \"bf16\" for a CPU job.");
    }
  } else {
    c.error(kFieldPrecision,
            "Precision " + py_repr(written) +
                " is invalid. Allowed precision values: ['16', '32', '64', 'bf16']",
            "Lightning 1.x takes 16, 32, 64 or \"bf16\" (the \"-true\"/\"-mixed\" names came in "
            "2.0): use \"bf16\" on TPUs, or `lightning_version: \"2.x\"`.");
  }
}

}  // namespace

void check_precision(Context& c) {
  if (!c.settings.precision) return;
  if (c.version == Version::kV2) {
    check_precision_v2(c, *c.settings.precision);
  } else {
    check_precision_v1(c, *c.settings.precision);
  }
}

}  // namespace tpujobs::lightning
