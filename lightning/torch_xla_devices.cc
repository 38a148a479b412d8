// Which TPU chips the environment's torch_xla finds on a host. From 2.1,
// torch_xla counts a host's chips by their PCI device ids
// (torch_xla/_internal/tpu.py, num_available_chips over _TPU_PCI_DEVICE_IDS);
// a chip whose id is not in its list is not a TPU to it. This is a tpujobs
// message: torch_xla prints nothing of its own, it just finds no device.
#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

struct ChipIdRule {
  std::string_view generation;  // a TpuGeneration::name
  std::string_view pci_id;
  int listed_from;  // the first torch_xla (major*100+minor) listing it
  std::string_view source;
};

// torch_xla 2.0 counted chips another way (no _TPU_PCI_DEVICE_IDS in
// v2.0.0), so the rule holds from 2.1. v2-v4 are listed in v2.1.0 (0x0027,
// 0x005e), v5e's 0x0063 too (as "Other"; "TPU v5e" from v2.2.0).
constexpr int kListFrom = 201;
constexpr ChipIdRule kChipIdRules[] = {
    {"v6e", "0x006f", 205,
     "pytorch/xla v2.5.0:torch_xla/_internal/tpu.py:50-51 (_TPU_PCI_DEVICE_IDS)"},
};

std::string version_text(int version) {
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

}  // namespace

void check_torch_xla_knows_chips(Context& c) {
  if (!c.torch_xla_from_environment || !c.request_ok || c.accelerator != Accelerator::kTpu) return;
  const int xla = c.out.torch_xla_version;
  if (xla < kListFrom) return;
  std::vector<Generation> candidates = c.device_generations();
  if (c.out.device.generation) {
    if (Generation g = find_generation(c.pool, *c.out.device.generation)) candidates = {g};
  }
  const ChipIdRule* missing = nullptr;
  for (Generation g : candidates) {
    const ChipIdRule* rule = nullptr;
    for (const ChipIdRule& r : kChipIdRules) {
      if (r.generation == generation_name(g) && xla < r.listed_from) rule = &r;
    }
    if (!rule) return;  // some generation the job may run on is known
    missing = rule;
  }
  if (!missing) return;
  c.error("environment.torch_xla",
          "tpujobs: torch_xla " + version_text(xla) + " finds no TPU on a " +
              std::string(missing->generation) +
              " host: it counts a host's chips by PCI device "
              "id, and lists " +
              std::string(missing->generation) + "'s (" + std::string(missing->pci_id) +
              ") only from torch_xla " + version_text(missing->listed_from) + ".0 (" +
              std::string(missing->source) + ").",
          "Install torch_xla " + version_text(missing->listed_from) +
              " or later (with the torch of the same minor version) on " +
              std::string(missing->generation) + " hosts, or run on a generation it knows.");
}

}  // namespace tpujobs::lightning
