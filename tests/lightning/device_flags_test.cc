// Lightning 1.x's device-specific Trainer flags `gpus`, `ipus`,
// `num_processes` (and `tpu_cores`), lightning/device_flags.cc: 1.6-1.9 map
// them onto the accelerator and devices flags as
// `_map_deprecated_devices_specific_info_to_accelerator_and_device_flag`
// does (1.9.5 src/pytorch_lightning/trainer/connectors/
// accelerator_connector.py:462-519): the first true of `num_processes or
// gpus or ipus or tpu_cores` replaces `devices`, and with no `accelerator`
// the last true of ipus, tpu_cores, gpus, num_processes sets it ("ipu",
// "tpu", "cuda" -- "gpu" in 1.6 -- "cpu"); 1.7-1.9 warn that each is
// deprecated. 2.x is Python's TypeError (tests/api/generations_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lightning/resolve.h"
#include "tests/lightning/pool_view.h"

namespace tpujobs::lightning {
namespace {

DeviceValue Int(std::int64_t n) {
  DeviceValue v;
  v.kind = DeviceValue::Kind::kInt;
  v.number = n;
  return v;
}

DeviceValue Str(std::string text) {
  DeviceValue v;
  v.kind = DeviceValue::Kind::kString;
  v.text = std::move(text);
  return v;
}

TrainerSettings Version(const std::string& version) {
  TrainerSettings s;
  s.lightning_version = version;
  return s;
}

// "field: message [source]" of every error, one a line.
std::string Errors(const base::Result<Resolution>& r) {
  std::string out;
  for (const base::FieldError& e : base::field_errors(r))
    out += e.field + ": " + e.message + " [" + e.source + "]\n";
  return out;
}

std::string Warnings(const base::Result<Resolution>& r) {
  std::string out;
  for (const std::string& w : resolution_warnings(r)) out += w + "\n";
  return out;
}

std::string Deprecated(const std::string& flag, const std::string& value,
                       const std::string& accelerator) {
  return "Setting `Trainer(" + flag + "=" + value +
         ")` is deprecated in v1.7 and will be removed in v2.0. Please use "
         "`Trainer(accelerator='" +
         accelerator + "', devices=" + value + ")` instead.\n";
}

constexpr const char* kTpuUnused =
    "TPU available but not used. Set `accelerator` and `devices` using "
    "`Trainer(accelerator='tpu', devices=8)`.\n";

// gpus=8 without `accelerator`: CUDA (1.7-1.9) or GPU (1.6), which is not
// available, named on `trainer.gpus`; on every generation.
TEST(DeviceFlags, GpusAloneAsksForAGpuThatIsNotThere) {
  struct Row {
    const char* version;
    const char* message;
    const char* source;
    bool deprecated;
  };
  const Row rows[] = {
      {"1.6",
       "GPUAccelerator can not run on your system since the accelerator is not available. The "
       "following accelerator(s) is available and can be passed into `accelerator` argument of "
       "`Trainer`: ['cpu', 'tpu'].",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py", false},
      {"1.7",
       "CUDAAccelerator can not run on your system since the accelerator is not available. The "
       "following accelerator(s) is available and can be passed into `accelerator` argument of "
       "`Trainer`: ['cpu', 'tpu'].",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py", true},
      {"1.9",
       "`CUDAAccelerator` can not run on your system since the accelerator is not available. The "
       "following accelerator(s) is available and can be passed into `accelerator` argument of "
       "`Trainer`: ['cpu', 'tpu'].",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py", true},
  };
  for (const char* pool : {"v3-8", "v5p-8", "v6e-8"}) {
    for (const Row& row : rows) {
      SCOPED_TRACE(std::string(row.version) + " on " + pool);
      TrainerSettings s = Version(row.version);
      s.gpus = Int(8);
      s.removed_arguments = {"gpus"};
      const base::Result<Resolution> r = resolve(s, View({pool}));
      EXPECT_EQ(std::string("trainer.gpus: ") + row.message + " [" + row.source + "]\n", Errors(r));
      EXPECT_EQ(row.deprecated ? Deprecated("gpus", "8", "gpu") : "", Warnings(r));
    }
  }
}

TEST(DeviceFlags, IpusAloneAsksForAnIpu) {
  TrainerSettings s = Version("1.8");
  s.ipus = Int(8);
  const base::Result<Resolution> r = resolve(s, View({"v3-8"}));
  EXPECT_EQ(
      "trainer.ipus: `IPUAccelerator` can not run on your system since the accelerator is not "
      "available. The following accelerator(s) is available and can be passed into "
      "`accelerator` argument of `Trainer`: ['cpu', 'tpu']. "
      "[1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py]\n",
      Errors(r));
  EXPECT_EQ(Deprecated("ipus", "8", "ipu"), Warnings(r));
}

// With accelerator='tpu' the flag is the TPU's device count: 8 is a host,
// 4 is refused with the release's TPU parser text, named on the flag.
TEST(DeviceFlags, WithTheTpuAcceleratorAFlagIsTheDeviceCount) {
  TrainerSettings s = Version("1.9");
  s.accelerator = "tpu";
  s.gpus = Int(8);
  base::Result<Resolution> r = resolve(s, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ("tpu", r->accelerator);
  EXPECT_EQ(8, r->world_size);
  EXPECT_EQ(Deprecated("gpus", "8", "gpu"), Warnings(r));

  s.gpus = Int(4);
  r = resolve(s, View({"v3-8"}));
  EXPECT_EQ(
      "trainer.gpus: `devices` can only be 1, 8 or [<1-8>] for TPUs. "
      "[1.9.5:src/lightning_fabric/accelerators/tpu.py]\n",
      Errors(r));

  TrainerSettings v16 = Version("1.6");
  v16.accelerator = "tpu";
  v16.num_processes = Str("x");
  r = resolve(v16, View({"v3-8"}));
  EXPECT_EQ(
      "trainer.num_processes: invalid literal for int() with base 10: 'x' "
      "[1.6.5:pytorch_lightning/utilities/device_parser.py]\n",
      Errors(r));
  EXPECT_EQ("", Warnings(r));  // 1.6 deprecates none of them

  // devices is ignored for the flag, with Lightning's warning.
  TrainerSettings ignored = Version("1.9");
  ignored.accelerator = "tpu";
  ignored.num_processes = Int(1);
  ignored.devices = Int(8);
  r = resolve(ignored, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ(1, r->world_size);
  EXPECT_EQ(Deprecated("num_processes", "1", "cpu") +
                "The flag `devices=8` will be ignored, instead the device specific number 1 "
                "will be used\n",
            Warnings(r));
}

// num_processes alone: the CPU, with its processes.
TEST(DeviceFlags, NumProcessesAloneIsACpuJob) {
  TrainerSettings s = Version("1.9");
  s.num_processes = Int(2);
  base::Result<Resolution> r = resolve(s, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ("cpu", r->accelerator);
  EXPECT_EQ(Deprecated("num_processes", "2", "cpu") +
                "tpujobs runs `accelerator='cpu'` jobs as one process on the executor's threads; "
                "`devices=2` trains one replica.\n" +
                kTpuUnused,
            Warnings(r));

  s.num_processes = Int(-1);
  r = resolve(s, View({"v3-8"}));
  EXPECT_EQ(
      "trainer.num_processes: `devices` selected with `CPUAccelerator` should be an int > 0. "
      "[1.9.5:src/lightning_fabric/accelerators/cpu.py:85 (_parse_cpu_cores)]\n",
      Errors(r));
}

// Several flags: the first true of num_processes, gpus, ipus, tpu_cores
// gives the devices; the last true of ipus, tpu_cores, gpus, num_processes
// the accelerator; and Lightning says more than one was set.
TEST(DeviceFlags, SeveralFlagsFollowPythonsOrAndTheLastAssignment) {
  TrainerSettings s = Version("1.9");
  s.num_processes = Int(1);
  s.tpu_cores = Int(8);
  base::Result<Resolution> r = resolve(s, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ("cpu", r->accelerator);  // num_processes is assigned last
  EXPECT_EQ(Deprecated("num_processes", "1", "cpu") + Deprecated("tpu_cores", "8", "tpu") +
                "more than one device specific flag has been set\n" + kTpuUnused,
            Warnings(r));

  // gpus=0 is not None (warned) but false: tpu_cores=8 decides.
  TrainerSettings zero_gpus = Version("1.8");
  zero_gpus.gpus = Int(0);
  zero_gpus.tpu_cores = Int(8);
  r = resolve(zero_gpus, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ("tpu", r->accelerator);
  EXPECT_EQ(8, r->world_size);
  EXPECT_EQ(Deprecated("gpus", "0", "gpu") + Deprecated("tpu_cores", "8", "tpu") +
                "more than one device specific flag has been set\n",
            Warnings(r));

  // gpus='0' is true and comes first, and `flag not in ([], 0, "0")` then
  // maps nothing: tpu_cores=8 is dropped and the job runs on the CPU.
  TrainerSettings quoted = Version("1.9");
  quoted.gpus = Str("0");
  quoted.tpu_cores = Int(8);
  r = resolve(quoted, View({"v3-8"}));
  ASSERT_TRUE(r.ok()) << Errors(r);
  EXPECT_EQ("cpu", r->accelerator);
  EXPECT_EQ(Deprecated("gpus", "'0'", "gpu") + Deprecated("tpu_cores", "8", "tpu") + kTpuUnused,
            Warnings(r));
}

// devices=0 is refused before any flag is mapped: the accelerator is None.
TEST(DeviceFlags, ZeroDevicesIsRefusedBeforeTheFlags) {
  TrainerSettings s = Version("1.9");
  s.gpus = Int(8);
  s.devices = Int(0);
  const base::Result<Resolution> r = resolve(s, View({"v3-8"}));
  EXPECT_EQ(
      "trainer.devices: `Trainer(devices=0)` value is not a valid input using None accelerator. "
      "[1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py]\n",
      Errors(r));
  EXPECT_EQ("", Warnings(r));
}

// Under 2.x the values do not matter: Python refuses the keyword.
TEST(DeviceFlags, TwoXRefusesTheKeywordWhateverItsValue) {
  for (const char* version : {"2.0", "2.1", "2.5"}) {
    TrainerSettings s = Version(version);
    s.accelerator = "tpu";
    s.num_processes = Int(8);
    s.removed_arguments = {"num_processes"};
    const base::Result<Resolution> r = resolve(s, View({"v5litepod-8"}));
    ASSERT_FALSE(r.ok()) << version;
    EXPECT_EQ("trainer.num_processes", r.error().fields[0].field);
    EXPECT_EQ("Trainer.__init__() got an unexpected keyword argument 'num_processes'",
              r.error().fields[0].message);
    EXPECT_TRUE(resolution_warnings(r).empty()) << Warnings(r);
  }
}

}  // namespace
}  // namespace tpujobs::lightning
