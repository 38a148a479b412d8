// The environment check knows the generations (lightning/torch_xla_devices.cc):
// a torch_xla that does not find a generation's chips is refused, with
// tpujobs' own text (torch_xla prints nothing; libtpu is not open source)
// resting on torch_xla's source: its chip id table from v2.1.0
// (torch_xla/_internal/tpu.py:38-46; v6e's 0x006f from v2.5.0), and before
// it 1.13's and 2.0's 4-processes-a-host launcher and libtpu pins. The hint
// names the torch_xla releases that work and their wheels' Pythons.
#include <gtest/gtest.h>

#include <string>

#include "lightning/resolve.h"
#include "tests/lightning/pool_view.h"

namespace tpujobs::lightning {
namespace {

TrainerSettings WithEnvironment(const std::string& version, Environment environment) {
  TrainerSettings s;
  s.accelerator = "tpu";
  s.lightning_version = version;
  s.environment = std::move(environment);
  return s;
}

std::string First(const base::Result<Resolution>& r) {
  if (r.ok()) return "no error";
  return r.error().fields[0].field + ": " + r.error().fields[0].message + " | " +
         r.error().fields[0].hint + " [" + r.error().fields[0].source + "]";
}

TEST(TorchXlaDevices, TorchXlaBeforeTheChipTableIsRefusedOnTheNewGenerations) {
  const TrainerSettings v20 = WithEnvironment("2.0", {"3.10", "2.0.1", "2.0.0", "2.0.9"});
  EXPECT_EQ(
      "environment.torch_xla: tpujobs: torch_xla 2.0 predates v5e: it has no table of TPU chip "
      "ids (torch_xla finds chips by PCI id from 2.1.0, pytorch/xla "
      "v2.1.0:torch_xla/_internal/tpu.py:38-46 (_TPU_PCI_DEVICE_IDS)), starts 4 processes on "
      "every host, and installs libtpu-nightly 0.1.dev20230213 (pytorch/xla v2.0.0:setup.py:63, "
      "v2.0.0:torch_xla/experimental/tpu.py:80-83 (num_local_processes)). libtpu is not open "
      "source, so what it does on a v5e host cannot be quoted: tpujobs refuses the job, and "
      "this text is its own. | Install torch_xla 2.1 or later (with the torch of the same minor "
      "version) on v5e hosts, or run on a generation it knows. Its wheels: 2.1-2.3 for Python "
      "3.8-3.11, 2.4-2.5 for Python 3.9-3.11. []",
      First(resolve(v20, View({"v5litepod-8"}))));
  const std::string v6e = First(resolve(v20, View({"v6e-8"})));
  EXPECT_TRUE(v6e.starts_with("environment.torch_xla: tpujobs: torch_xla 2.0 predates v6e:"))
      << v6e;
  EXPECT_NE(std::string::npos,
            v6e.find("| Install torch_xla 2.5 or later (with the torch of the same minor version) "
                     "on v6e hosts, or run on a generation it knows. Its wheels: 2.5 for Python "
                     "3.9-3.11."))
      << v6e;

  const TrainerSettings v18 = WithEnvironment("1.8", {"3.8", "1.13.1", "1.13", "1.8.6"});
  const std::string v5p = First(resolve(v18, View({"v5p-8"})));
  EXPECT_NE(std::string::npos, v5p.find("tpujobs: torch_xla 1.13 predates v5p:")) << v5p;
  EXPECT_NE(std::string::npos,
            v5p.find("installs libtpu-nightly 0.1.dev20220930 (pytorch/xla v1.13.0:setup.py:56"))
      << v5p;
}

TEST(TorchXlaDevices, KnownGenerationsAndMixedPoolsRun) {
  const TrainerSettings v21 = WithEnvironment("2.1", {"3.10", "2.1.0", "2.1.0", "2.1.4"});
  EXPECT_EQ("no error", First(resolve(v21, View({"v5litepod-8"}))));
  EXPECT_EQ("no error", First(resolve(v21, View({"v5p-8"}))));
  const TrainerSettings v20 = WithEnvironment("2.0", {"3.10", "2.0.1", "2.0.0", "2.0.9"});
  EXPECT_EQ("no error", First(resolve(v20, View({"v3-8"}))));
  // The job may run on v3 hosts, whose chips torch_xla 2.0 drives.
  EXPECT_EQ("no error", First(resolve(v20, View({"v3-8", "v5litepod-8"}))));
  // No `environment`: a fresh Cloud TPU VM, whose torch_xla matches.
  TrainerSettings bare;
  bare.accelerator = "tpu";
  bare.lightning_version = "2.0";
  EXPECT_EQ("no error", First(resolve(bare, View({"v5litepod-8"}))));
}

}  // namespace
}  // namespace tpujobs::lightning
