#include "lightning/versions.h"

#include <charconv>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

constexpr Release kReleases[] = {
    {1, 6, "1.6.5"}, {1, 7, "1.7.7"}, {1, 8, "1.8.6"}, {1, 9, "1.9.5"}, {2, 0, "2.0.9"},
    {2, 1, "2.1.4"}, {2, 2, "2.2.5"}, {2, 3, "2.3.3"}, {2, 4, "2.4.0"}, {2, 5, "2.5.6"},
};

// The leading integer of `text`, advancing it; nullopt when there is none.
std::optional<int> leading_int(std::string_view& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return value;
}

// Runtime rows: what Lightning does with torch_xla's XRT runtime.
struct RuntimeRule {
  Versions versions;
  std::string_view xrt_error;  // empty: XRT runs (with XRT_TPU_CONFIG)
  std::string_view source;
};
constexpr RuntimeRule kRuntimeRules[] = {
    {{106, 201}, "", "2.1.4:src/lightning/fabric/accelerators/xla.py (_using_pjrt)"},
    {{202, 299},
     "The XLA XRT runtime is not supported anymore.",
     "2.2.5:src/lightning/fabric/accelerators/xla.py (XLAAccelerator.__init__)"},
};

}  // namespace

std::span<const Release> releases() { return kReleases; }

const Release* find_release(std::string_view text) {
  if (text == "1.x") return &kReleases[3];
  if (text == "2.x") return &kReleases[std::size(kReleases) - 1];
  std::string_view rest = text;
  const std::optional<int> major = leading_int(rest);
  if (!major || rest.empty() || rest.front() != '.') return nullptr;
  rest.remove_prefix(1);
  const std::optional<int> minor = leading_int(rest);
  if (!minor) return nullptr;
  // "2.1" or a full version: "2.1.3", "2.1.0rc1", "2.1.3.post0".
  if (!rest.empty() && rest.front() != '.' && !rest.starts_with("rc") && !rest.starts_with("a") &&
      !rest.starts_with("b") && !rest.starts_with("+")) {
    return nullptr;
  }
  for (const Release& release : kReleases) {
    if (release.major == *major && release.minor == *minor) return &release;
  }
  return nullptr;
}

std::string release_names() {
  std::vector<std::string> names;
  for (const Release& release : kReleases) names.push_back(release.name());
  names.emplace_back("1.x");
  names.emplace_back("2.x");
  return join(names, ", ");
}

void check_lightning_version(Context& c) {
  const std::optional<std::string>& written = c.settings.lightning_version;
  // environment.lightning wins; a disagreeing lightning_version is reported
  // by check_environment.
  const Release* release =
      written && !c.release_from_environment ? find_release(*written) : c.default_release;
  if (written && !find_release(*written)) {
    c.error(
        kFieldLightningVersion,
        "`lightning_version` must be one of " + release_names() + ", got " + py_repr(*written) +
            ".",
        "Use the version `pip show lightning` prints on the TPU VM (\"2.1\"), or \"2.x\" / \"1.x\" "
        "for the last release of each.");
    release = c.default_release;
  }
  c.release = release;
  c.version = release->number();
  c.out.lightning_version = release->name();
  c.out.lightning_tag = std::string(release->tag);
  c.out.lightning_v1 = c.version < 200;
  // environment.torch_xla, when known, set it already.
  if (!c.torch_xla_from_environment) c.out.torch_xla_version = default_torch_xla(c.version);
}

void check_runtime(Context& c) {
  const std::string runtime = c.settings.runtime.value_or("pjrt");
  if (runtime != "pjrt" && runtime != "xrt") {
    c.error(kFieldRuntime, "`runtime` must be 'pjrt' or 'xrt', got " + py_repr(runtime) + ".",
            "Use `runtime: \"pjrt\"` (the default, PJRT_DEVICE=TPU).");
    return;
  }
  if (runtime != "xrt" || c.accelerator == Accelerator::kCpu) return;
  const RuntimeRule* rule = row_for<RuntimeRule>(kRuntimeRules, c.version);
  if (rule && !rule->xrt_error.empty()) {
    c.error(kFieldRuntime, std::string(rule->xrt_error),
            "Use `runtime: \"pjrt\"` (PJRT_DEVICE=TPU): Lightning 2.2 and later run on PJRT only. "
            "Or validate with `lightning_version: \"2.1\"` or older.",
            rule->source);
  } else if (c.settings.env.find("XRT_TPU_CONFIG") == c.settings.env.end()) {
    c.error(kFieldEnv, "Missing XLA configuration",
            "Set XRT_TPU_CONFIG in `env`, as on a Cloud TPU VM: export "
            "XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"");
  }
}

std::vector<RuleText> runtime_rule_texts() {
  std::vector<RuleText> out;
  for (const RuntimeRule& rule : kRuntimeRules) {
    if (!rule.xrt_error.empty()) out.push_back({kFieldRuntime, rule.xrt_error, rule.source});
  }
  return out;
}

}  // namespace tpujobs::lightning
