// Lightning 1.x and 2.0 on a v5p host (4 devices): their TPU parser takes
// `devices=8` (and 'auto', which is 8), and their launcher calls
// xmp.spawn(nprocs=8); torch_xla's PJRT spawn ignores nprocs and starts one
// process per device it finds, with a warning from torch_xla 2.0 (v2.0.0
// torch_xla/experimental/pjrt.py:363, v2.5.0 torch_xla/_internal/pjrt.py:207)
// and silently in 1.13 (v1.13.0 torch_xla/distributed/
// xla_multiprocessing.py:382-383). So the job runs on the host's devices,
// while Lightning's device line says 8 (lightning/spawn_nprocs.cc). v4 and
// 2.1+ are unchanged.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lightning/resolve.h"
#include "tests/lightning/pool_view.h"

namespace tpujobs::lightning {
namespace {

TrainerSettings Tpu(const std::string& version, std::optional<std::int64_t> devices) {
  TrainerSettings s;
  s.accelerator = "tpu";
  s.lightning_version = version;
  if (devices) {
    s.devices.kind = DeviceValue::Kind::kInt;
    s.devices.number = *devices;
  }
  return s;
}

std::string Errors(const base::Result<Resolution>& r) {
  std::string out;
  for (const base::FieldError& e : base::field_errors(r)) out += e.field + ": " + e.message + "\n";
  return out;
}

// tpujobs' notices among the warnings, whether the settings resolved or not.
std::string Notices(const base::Result<Resolution>& r) {
  std::string out;
  for (const std::string& w : resolution_warnings(r))
    if (w.starts_with("tpujobs:")) out += w + "\n";
  return out;
}

constexpr const char* kUnsupported = "WARNING:root:Unsupported nprocs (8), ignoring...";

TEST(SpawnNprocs, OldLightningsEightRunsOnTheFourDevicesOfAV5pHost) {
  struct Row {
    const char* version;
    bool torch_xla_warns;  // the release's default torch_xla: 1.13 (silent) or 2.0
  };
  const Row rows[] = {{"1.6", false}, {"1.7", false}, {"1.8", false}, {"1.9", true}, {"2.0", true}};
  for (const Row& row : rows) {
    for (std::optional<std::int64_t> devices :
         {std::optional<std::int64_t>(8), std::optional<std::int64_t>()}) {
      SCOPED_TRACE(std::string(row.version) + (devices ? " devices=8" : " devices absent"));
      const base::Result<Resolution> r = resolve(Tpu(row.version, devices), View({"v5p-8"}));
      ASSERT_TRUE(r.ok()) << Errors(r);
      EXPECT_EQ(4, r->world_size);
      EXPECT_EQ(4, r->device.devices_per_host);
      EXPECT_EQ("v5p-8", r->device.accelerator_type);
      EXPECT_EQ("TPU available: True, using: 8 TPU cores", r->device_info.at(1));
      if (row.torch_xla_warns) {
        ASSERT_FALSE(r->fit_start_lines.empty());
        EXPECT_EQ(kUnsupported, r->fit_start_lines.front());
      } else {
        EXPECT_TRUE(r->fit_start_lines.empty() || r->fit_start_lines.front() != kUnsupported);
      }
      ASSERT_EQ(1u, r->notices.size());
      EXPECT_EQ("tpujobs: Lightning " + std::string(row.version) +
                    " accepts `devices=" + (devices ? "8" : "'auto'") +
                    "` on every host and launches xmp.spawn(nprocs=8); torch_xla's PJRT spawn "
                    "ignores nprocs and starts one process per device it finds, 4 on a v5p "
                    "host, so the job trains on 4 devices while Lightning's log says 8 TPU cores.",
                r->notices[0]);
    }
  }
  // A slice: every host runs its 4.
  TrainerSettings slice = Tpu("2.0", 8);
  slice.accelerator_type = "v5p-32";
  const base::Result<Resolution> r = resolve(slice, View({"v5p-32"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(16, r->world_size);
}

TEST(SpawnNprocs, TheEnvironmentsTorchXlaDecidesTheLine) {
  TrainerSettings s = Tpu("1.9", 8);
  s.environment = Environment{"3.10", "2.0.1", "2.0", "1.9.5"};
  base::Result<Resolution> r = resolve(s, View({"v5p-8"}));
  EXPECT_EQ("environment.torch_xla", r.ok() ? "" : r.error().fields[0].field)
      << "torch_xla 2.0 predates v5p (torch_xla_devices.cc)";
  // torch_xla 2.1 (pip allows its torch beside Lightning 1.9: the upper
  // bound is dropped at install) warns as 2.0 does.
  s.environment = Environment{"3.10", "2.1.0", "2.1.0", "1.9.5"};
  r = resolve(s, View({"v5p-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(4, r->world_size);
  EXPECT_EQ(kUnsupported, r->fit_start_lines.at(0));
}

TEST(SpawnNprocs, XrtV4AndNewerLightningAreUnchanged) {
  // v4 (4 devices a host too) keeps tpujobs' refusal.
  base::Result<Resolution> r = resolve(Tpu("2.0", 8), View({"v4-8"}));
  ASSERT_EQ(1u, base::field_errors(r).size());
  EXPECT_EQ("trainer.devices", r.error().fields[0].field);
  EXPECT_EQ("", Notices(r));
  // 2.1 asks torch_xla how many devices it sees: its own text.
  r = resolve(Tpu("2.1", 8), View({"v5p-8"}));
  ASSERT_EQ(1u, base::field_errors(r).size());
  EXPECT_EQ("`devices` can only be 'auto', 1, 4 or [<0-3>] for TPUs. Got 8",
            r.error().fields[0].message);
  // XRT: not PJRT's spawn.
  TrainerSettings xrt = Tpu("1.9", 8);
  xrt.runtime = "xrt";
  xrt.env["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011";
  r = resolve(xrt, View({"v5p-8"}));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ("", Notices(r));
  // An 8-device v6e host: 8 is every device, nothing to note.
  r = resolve(Tpu("2.0", 8), View({"v6e-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_TRUE(r->notices.empty());
  EXPECT_EQ(8, r->world_size);
}

}  // namespace
}  // namespace tpujobs::lightning
