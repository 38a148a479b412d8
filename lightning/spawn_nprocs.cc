// Lightning 1.x and 2.0 on v5e, v5p and v6e hosts that have fewer than 8
// devices: their TPU parser accepts `devices=8` (1, 8 or [<1-8>] on every
// host; 'auto' is 8 too), and their launcher spawns the processes with
// `xmp.spawn(..., nprocs=8)` (2.0.9 src/lightning/pytorch/strategies/
// launchers/xla.py:75-79, nprocs=self._strategy.num_processes). The runtime
// does not refuse it: torch_xla's PJRT spawn ignores any nprocs but 1, with
// a warning from 2.0 (silently in 1.13), and starts one process per device
// it finds on the host. So the job runs on the host's devices.
//
// v2-v4 keep tpujobs' refusal (slices.cc report_host_misfit): the held-back
// acceptance table holds them as they were.
#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// torch_xla calls logging.basicConfig() on import (v2.0.0
// torch_xla/__init__.py:11, v2.5.0 :24), so the root logger's default format
// prints spawn's logging.warning as "WARNING:root:<message>". The message is
// script_xla.cc's (pjrt_spawn_nprocs). torch_xla 1.13's xmp.spawn drops
// nprocs under PJRT and says nothing (v1.13.0
// torch_xla/distributed/xla_multiprocessing.py:382-383).
constexpr std::string_view kRootWarning = "WARNING:root:";
constexpr int kSilentTorchXla = 113;

// What spawn does with nprocs=8 under this torch_xla: true when it runs one
// process per device (warned about in *text, empty when silent).
bool ignores_nprocs(int torch_xla, std::string_view* text) {
  *text = {};
  if (torch_xla == kSilentTorchXla) return true;
  const std::optional<PjrtSpawnNprocs> spawn = pjrt_spawn_nprocs(torch_xla);
  if (!spawn || spawn->refused) return false;  // 2.6+ raises; no 1.x/2.0 allows its torch
  *text = spawn->text;
  return true;
}

constexpr std::string_view kNewGenerations[] = {"v5e", "v5p", "v6e"};

bool is_new(Generation g) {
  for (std::string_view name : kNewGenerations) {
    if (generation_name(g) == name) return true;
  }
  return false;
}

}  // namespace

bool follow_spawn_nprocs(Context& c) {
  constexpr int kLightningCount = 8;  // the 1-based parsers' "every core of a host"
  if (c.version > 200) return false;
  // 'auto' too: 1.x and 2.0's TPUAccelerator.auto_device_count() is 8.
  const bool every_core =
      c.ask && (c.ask->kind == DeviceAsk::Kind::kAuto ||
                (c.ask->kind == DeviceAsk::Kind::kCount && c.ask->count == kLightningCount));
  if (!every_core) return false;
  if (c.settings.runtime.value_or("pjrt") != "pjrt") return false;
  const std::vector<Generation> generations = c.device_generations();
  std::string_view text;
  if (!ignores_nprocs(c.out.torch_xla_version, &text) || generations.empty()) return false;
  for (Generation g : generations) {
    if (!is_new(g) || devices_per_host(g) >= kLightningCount) return false;
  }
  // One process per device torch_xla finds: every device of a host.
  c.ask = DeviceAsk{};
  c.lightning_num_devices = kLightningCount;
  return true;
}

void note_spawn_nprocs(Context& c) {
  std::string_view text;
  ignores_nprocs(c.out.torch_xla_version, &text);
  const std::string nprocs = std::to_string(c.lightning_num_devices.value_or(8));
  if (!text.empty()) {
    c.out.fit_start_lines.push_back(std::string(kRootWarning) + fill(text, {{"nprocs", nprocs}}));
  }
  const std::string notice =
      "tpujobs: Lightning " + c.release->name() + " accepts " + c.devices_written() +
      " on every host and launches xmp.spawn(nprocs=" + nprocs +
      "); torch_xla's PJRT spawn ignores nprocs and starts one process per device it finds, " +
      std::to_string(c.out.device.devices_per_host) + " on a " +
      c.out.device.generation.value_or("TPU") + " host, so the job trains on " +
      std::to_string(c.out.device.cores()) + " devices while Lightning's log says " + nprocs +
      " TPU cores.";
  c.out.notices.push_back(notice);
  c.warn(notice);
}

}  // namespace tpujobs::lightning
