// The oldest torch_xla that finds the chips of each TPU generation, from
// torch_xla's own source. From 2.1, torch_xla counts a host's chips by their
// PCI device ids (torch_xla/_internal/tpu.py, num_available_chips over
// _TPU_PCI_DEVICE_IDS); a chip whose id is not in its list is not a TPU to
// it. Before 2.1 (1.13, 2.0) it had no such table and started 4 processes on
// every host (torch_xla/experimental/tpu.py, num_local_processes(
// local_chips=4)). The TPU runtime under it, libtpu, is not open source: what
// it does on a generation it predates cannot be quoted. So these messages are
// tpujobs' own, and say so: torch_xla prints nothing of its own here, it
// just finds no device.
#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// The first torch_xla whose chip table has the generation (2.1.0 for every
// generation it lists: v2/v3 0x0027, v4 0x005e, v5e 0x0063, the last as
// "Other" in v2.1.0 and "TPU v5e" from v2.2.0; v6e's 0x006f from v2.5.0).
// v5p's id is named in no tag up to v2.9.0 (the list's "Testing only" ids
// 0x0056 and 0x0062 are unnamed), so tpujobs holds v5p to 2.1, the first
// torch_xla that finds chips by id at all.
struct ChipIdRule {
  std::string_view generation;  // a TpuGeneration::name
  std::string_view pci_id;      // empty: not named upstream
  int listed_from;              // the first torch_xla (major*100+minor) listing it
  std::string_view source;
};

constexpr int kListFrom = 201;  // torch_xla 2.1: the first with _TPU_PCI_DEVICE_IDS
constexpr ChipIdRule kChipIdRules[] = {
    {"v5e", "0x0063", 201,
     "pytorch/xla v2.1.0:torch_xla/_internal/tpu.py:38-46 (_TPU_PCI_DEVICE_IDS)"},
    {"v5p", "", 201, "pytorch/xla v2.1.0:torch_xla/_internal/tpu.py:38-46 (_TPU_PCI_DEVICE_IDS)"},
    {"v6e", "0x006f", 205,
     "pytorch/xla v2.5.0:torch_xla/_internal/tpu.py:50-51 (_TPU_PCI_DEVICE_IDS)"},
};

// What the torch_xla releases before the chip table pin and assume.
struct PreTableRelease {
  int torch_xla;
  std::string_view libtpu;  // the libtpu-nightly its setup.py installs
  std::string_view source;
};
constexpr PreTableRelease kPreTable[] = {
    {113, "0.1.dev20220930",
     "v1.13.0:setup.py:56, v1.13.0:torch_xla/experimental/tpu.py:72-75 (num_local_processes)"},
    {200, "0.1.dev20230213",
     "v2.0.0:setup.py:63, v2.0.0:torch_xla/experimental/tpu.py:80-83 (num_local_processes)"},
};

std::string version_text(int version) {
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

const ChipIdRule* rule_for(Generation g) {
  for (const ChipIdRule& r : kChipIdRules) {
    if (r.generation == generation_name(g)) return &r;
  }
  return nullptr;
}

std::string message(int xla, const ChipIdRule& rule) {
  const std::string generation(rule.generation);
  const std::string since = "torch_xla " + version_text(rule.listed_from) + ".0";
  if (xla >= kListFrom) {
    return "tpujobs: torch_xla " + version_text(xla) + " finds no TPU on a " + generation +
           " host: it counts a host's chips by PCI device id, and lists " + generation + "'s (" +
           std::string(rule.pci_id) + ") only from " + since + " (" + std::string(rule.source) +
           ").";
  }
  const PreTableRelease* pre = nullptr;
  for (const PreTableRelease& p : kPreTable) {
    if (p.torch_xla == xla) pre = &p;
  }
  std::string text = "tpujobs: torch_xla " + version_text(xla) + " predates " + generation +
                     ": it has no table of TPU chip ids (torch_xla finds chips by PCI id from " +
                     "2.1.0, " + std::string(kChipIdRules[0].source) + ")";
  if (pre) {
    text += ", starts 4 processes on every host, and installs libtpu-nightly " +
            std::string(pre->libtpu) + " (pytorch/xla " + std::string(pre->source) + ")";
  }
  return text + ". libtpu is not open source, so what it does on a " + generation +
         " host cannot be quoted: tpujobs refuses the job, and this text is its own.";
}

}  // namespace

void check_torch_xla_knows_chips(Context& c) {
  if (!c.torch_xla_from_environment || !c.request_ok || c.accelerator != Accelerator::kTpu) return;
  const int xla = c.out.torch_xla_version;
  std::vector<Generation> candidates = c.device_generations();
  if (c.out.device.generation) {
    if (Generation g = find_generation(c.pool, *c.out.device.generation)) candidates = {g};
  }
  const ChipIdRule* missing = nullptr;
  for (Generation g : candidates) {
    const ChipIdRule* rule = rule_for(g);
    if (!rule || xla >= rule->listed_from) return;  // some generation the job may run on is known
    missing = rule;
  }
  if (!missing) return;
  const std::string generation(missing->generation);
  c.error("environment.torch_xla", message(xla, *missing),
          "Install torch_xla " + version_text(missing->listed_from) +
              " or later (with the torch of the same minor version) on " + generation +
              " hosts, or run on a generation it knows. Its wheels: " +
              torch_xla_wheels_from(missing->listed_from) + ".");
}

}  // namespace tpujobs::lightning
