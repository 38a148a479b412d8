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

// What torch_xla's XRT client throws without XRT_TPU_CONFIG (or another
// device configuration): XLA_ERROR() << "Missing XLA configuration", which
// tf_logging.cc's ErrorGenerator turns into "__FILE__:__LINE__ : message"
// (Python shows it as that RuntimeError). By torch_xla (major*100+minor).
struct MissingXlaConfiguration {
  Versions versions;
  std::string_view text;
  std::string_view source;
};
constexpr MissingXlaConfiguration kMissingXlaConfiguration[] = {
    // 1.13 and 2.0 build third_party/xla_client inside TensorFlow's tree, as
    // tensorflow/compiler/xla/xla_client.
    {{113, 113},
     "tensorflow/compiler/xla/xla_client/computation_client.cc:280 : Missing XLA configuration",
     "pytorch/xla v1.13.0:third_party/xla_client/computation_client.cc:280 "
     "(ComputationClient::Create; tf_logging.cc ErrorGenerator)"},
    {{200, 200},
     "tensorflow/compiler/xla/xla_client/computation_client.cc:280 : Missing XLA configuration",
     "pytorch/xla v2.0.0:third_party/xla_client/computation_client.cc:280 "
     "(ComputationClient::Create; tf_logging.cc ErrorGenerator)"},
    // 2.1.0+xrt, built from the xrt branch.
    {{201, 201},
     "torch_xla/csrc/runtime/xrt_computation_client.cc:493 : Missing XLA configuration",
     "pytorch/xla xrt branch (torch_xla 2.1.0+xrt):torch_xla/csrc/runtime/"
     "xrt_computation_client.cc:493 (XrtComputationClient::XrtComputationClient)"},
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

int release_patch(std::string_view text, const Release& release) {
  for (std::string_view version : {text, release.tag}) {
    std::string_view rest = version;
    // major.minor.patch: the third number.
    if (leading_int(rest) && rest.starts_with('.')) {
      rest.remove_prefix(1);
      if (leading_int(rest) && rest.starts_with('.')) {
        rest.remove_prefix(1);
        if (const std::optional<int> patch = leading_int(rest)) return *patch;
      }
    }
  }
  return 0;
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
  // The full version written, when there is one: environment.lightning
  // chose the release, else lightning_version ("2.5.1") did.
  std::string_view full = release->tag;
  if (c.release_from_environment) {
    full = *c.settings.environment->lightning;
  } else if (written && find_release(*written) == release) {
    full = *written;
  }
  c.patch = patch_number(c.version, release_patch(full, *release));
  c.out.lightning_version = release->name();
  c.out.lightning_tag = std::string(release->tag);
  c.out.lightning_v1 = c.version < 200;
  // environment.torch_xla, when known, set it already.
  if (!c.torch_xla_from_environment) c.out.torch_xla_version = default_torch_xla(c.version);
}

void name_lightning_tag(Context& c) {
  // The release's tag, unless a row that holds for earlier patches only
  // supplied texts: then the newest patch release those rows hold for (a
  // 2.5.1 job quotes 2.5.2's FSDP text, which 2.5.3 rewrote).
  const int tag_patch = patch_number(c.version, release_patch(c.release->tag, *c.release));
  if (c.texts_last_patch < tag_patch) {
    c.out.lightning_tag = c.release->name() + "." + std::to_string(c.texts_last_patch % 100);
  }
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
    // A torch_xla without XRT is refused by check_environment.
    const MissingXlaConfiguration* missing =
        row_for<MissingXlaConfiguration>(kMissingXlaConfiguration, c.out.torch_xla_version);
    if (!missing) return;
    c.error(kFieldEnv, std::string(missing->text),
            "Set XRT_TPU_CONFIG in `env`, as on a Cloud TPU VM: export "
            "XRT_TPU_CONFIG=\"localservice;0;localhost:51011\"",
            missing->source);
  }
}

std::vector<RuleText> runtime_rule_texts() {
  std::vector<RuleText> out;
  for (const RuntimeRule& rule : kRuntimeRules) {
    if (!rule.xrt_error.empty()) out.push_back({kFieldRuntime, rule.xrt_error, rule.source});
  }
  for (const MissingXlaConfiguration& row : kMissingXlaConfiguration) {
    out.push_back({kFieldEnv, row.text, row.source});
  }
  return out;
}

}  // namespace tpujobs::lightning
