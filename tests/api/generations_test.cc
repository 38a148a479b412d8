// Job specs on today's Cloud TPUs (v5e, v5p, v6e): resources.accelerator_type
// and resources.topology resolved against pools of each generation, through
// the pool view api/ builds from the scheduler's facts.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "api/job_spec.h"
#include "api/resolution.h"
#include "scheduler/pool.h"

namespace tpujobs::api {
namespace {

using scheduler::Generation;

// The hosts of a --pool value, per generation.
scheduler::PoolCapacity capacity(std::string_view pool) {
  scheduler::PoolCapacity out;
  const base::Result<scheduler::PoolLayout> layout = scheduler::parse_pool(pool);
  EXPECT_TRUE(layout.ok()) << pool;
  if (layout.ok()) {
    for (const scheduler::HostLayout& h : layout->hosts) ++out.hosts[h.generation];
  }
  return out;
}

lightning::TrainerSettings tpu(std::optional<std::string> type,
                               std::optional<std::string> topology = std::nullopt) {
  lightning::TrainerSettings s;
  s.accelerator = "tpu";
  s.accelerator_type = std::move(type);
  s.topology = std::move(topology);
  return s;
}

// "generation devices_per_host x hosts type", or "field: message | hint" of
// the first error.
std::string outcome(const lightning::TrainerSettings& settings, std::string_view pool) {
  const base::Result<Resolution> r = resolve(settings, capacity(pool));
  if (!r.ok()) {
    return r.error().fields.front().field + ": " + r.error().fields.front().message + " | " +
           r.error().fields.front().hint;
  }
  const scheduler::ResourceRequest& q = r->request;
  return std::string(q.generation ? scheduler::facts(*q.generation).name : "any") + " " +
         std::to_string(q.devices_per_host) + "x" + std::to_string(q.hosts) + " " +
         q.accelerator_type;
}

TEST(Generations, AcceleratorTypesOfEachGeneration) {
  const std::string_view pool = "v5litepod-16,v6e-8,v5p-32";
  EXPECT_EQ("v5e 8x2 v5litepod-16", outcome(tpu("v5litepod-16"), pool));
  EXPECT_EQ("v5e 8x1 v5litepod-8", outcome(tpu("v5litepod-8"), pool));
  EXPECT_EQ("v6e 8x1 v6e-8", outcome(tpu("v6e-8"), pool));
  EXPECT_EQ("v5p 4x4 v5p-32", outcome(tpu("v5p-32"), pool));
  EXPECT_EQ("v5p 4x1 v5p-8", outcome(tpu("v5p-8"), pool));
}

TEST(Generations, TopologyNamesTheSlice) {
  EXPECT_EQ("v5e 8x2 v5litepod-16", outcome(tpu(std::nullopt, "4x4"), "v5litepod-16"));
  EXPECT_EQ("v5p 4x4 v5p-32", outcome(tpu(std::nullopt, "2x2x4"), "v5p-32"));
  EXPECT_EQ("v5p 4x4 v5p-32", outcome(tpu(std::nullopt, "4x2x2"), "v5p-32"));
  EXPECT_EQ("v5e 8x2 v5litepod-16", outcome(tpu("v5litepod-16", "4x4"), "v5litepod-16"));
  EXPECT_EQ("v5p 4x1 v5p-8", outcome(tpu("v5p-8", "2x2x1"), "v5p-8"));
}

TEST(Generations, TopologyAndTypeMustAgree) {
  EXPECT_EQ(
      "resources.topology: `topology='4x4'` does not match `accelerator_type='v5litepod-8'`, "
      "which is a 2x4. | Give one of the two, or make them agree: 4x4 is v5litepod-16. "
      "Topologies here: v5e: 2x4, 4x4, 4x8, 8x8, 8x16, 16x16.",
      outcome(tpu("v5litepod-8", "4x4"), "v5litepod-16"));
  EXPECT_EQ(
      "resources.topology: `topology='2x2x4'` does not match `accelerator_type='v3-8'`, which "
      "has no topology name. | Give one of the two, or make them agree. Topologies here: none "
      "(the pool's generations have no topology names).",
      outcome(tpu("v3-8", "2x2x4"), "v3-8"));
}

TEST(Generations, TopologyOfTwoGenerationsNeedsTheType) {
  EXPECT_EQ(
      "resources.topology: '4x4' is a slice of more than one generation in the pool: "
      "v5litepod-16, v6e-16. | Name the one to use with `resources.accelerator_type` (e.g. "
      "\"v5litepod-16\"), with or without the topology.",
      outcome(tpu(std::nullopt, "4x4"), "v5litepod-16,v6e-16"));
  EXPECT_EQ("v6e 8x2 v6e-16", outcome(tpu("v6e-16", "4x4"), "v5litepod-16,v6e-16"));
}

TEST(Generations, BadTopologies) {
  EXPECT_EQ(
      "resources.topology: '4by4' is not a topology: expected 2 or 3 positive dimensions joined "
      "by 'x', such as '4x4' or '2x2x4'. | Topologies here: v5e: 2x4, 4x4, 4x8, 8x8, 8x16, "
      "16x16.",
      outcome(tpu(std::nullopt, "4by4"), "v5litepod-8"));
  EXPECT_NE(std::string::npos, outcome(tpu(std::nullopt, "3x3"), "v5litepod-8")
                                   .find("'3x3' is not the shape of a whole-host slice"));
  // Shapes of generations the pool lacks.
  EXPECT_EQ(
      "resources.topology: '2x2x4' is v4-32 or v5p-32, and the pool has hosts of neither "
      "generation. | Topologies here: v5e: 2x4, 4x4, 4x8, 8x8, 8x16, 16x16.",
      outcome(tpu(std::nullopt, "2x2x4"), "v5litepod-8"));
  EXPECT_NE(std::string::npos, outcome(tpu(std::nullopt, "16x16x24"), "v5litepod-8")
                                   .find("The pool has no v5p hosts; it has v5e (1 hosts)."));
}

TEST(Generations, AnotherGenerationsTypeOrTooBigASliceIsRefused) {
  EXPECT_NE(std::string::npos, outcome(tpu("v6e-8"), "v5litepod-16")
                                   .find("The pool has no v6e hosts; it has v5e (2 hosts)."));
  EXPECT_NE(std::string::npos,
            outcome(tpu("v5litepod-32"), "v5litepod-16").find("resources.accelerator_type"));
  EXPECT_NE(std::string::npos, outcome(tpu("v5p-64"), "v5p-32").find("resources.accelerator_type"));
  EXPECT_EQ(
      "resources.accelerator_type: 'v5litepod-12' is not a valid v5e slice. Valid v5e slices: "
      "v5litepod-8, v5litepod-16, v5litepod-32, v5litepod-64, v5litepod-128, v5litepod-256. | "
      "Pick one of the listed accelerator types; the number counts chips.",
      outcome(tpu("v5litepod-12"), "v5litepod-16"));
  EXPECT_NE(std::string::npos, outcome(tpu("v5e-8"), "v5litepod-16")
                                   .find("with generation v2, v3, v4, v5litepod, v5p or v6e"));
}

TEST(Generations, DevicesPerHostAsLightning21Computes) {
  lightning::TrainerSettings s = tpu(std::nullopt);
  s.devices.kind = lightning::DeviceValue::Kind::kString;
  s.devices.text = "auto";
  EXPECT_EQ("v5p 4x1 v5p-8", outcome(s, "v5p-8"));
  EXPECT_EQ("v6e 8x1 v6e-8", outcome(s, "v6e-8"));
  s.devices.kind = lightning::DeviceValue::Kind::kInt;
  s.devices.number = 8;
  const std::string refused = outcome(s, "v5p-8");
  EXPECT_NE(std::string::npos, refused.find("`devices` can only be 'auto', 1, 4 or [<0-3>]"))
      << refused;
}

}  // namespace
}  // namespace tpujobs::api

namespace tpujobs::api {
namespace {

// Lightning 1.x and 2.0 count 8 devices on every host and spawn
// xmp.spawn(nprocs=8); on a 4-device v5p host torch_xla's PJRT spawn ignores
// nprocs (2.0-2.5: "Unsupported nprocs (8), ignoring...", v2.0.0
// torch_xla/experimental/pjrt.py:363) and runs one process per device, so the
// job runs on the host's 4 devices (lightning/spawn_nprocs.cc). v4 keeps
// tpujobs' refusal (the held-back table).
TEST(Generations, OldLightningsEightOnAFourDeviceHost) {
  lightning::TrainerSettings s = tpu(std::nullopt);
  s.lightning_version = "2.0";
  s.devices.kind = lightning::DeviceValue::Kind::kInt;
  s.devices.number = 8;
  EXPECT_EQ("v5p 4x1 v5p-8", outcome(s, "v5p-8"));
  const base::Result<Resolution> r = resolve(s, capacity("v5p-8"));
  ASSERT_FALSE(r->fit_start_lines.empty());
  EXPECT_EQ("WARNING:root:Unsupported nprocs (8), ignoring...", r->fit_start_lines.front());
  EXPECT_EQ(4, r->world_size);
  EXPECT_EQ("v6e 8x1 v6e-8", outcome(s, "v6e-8"));
  EXPECT_TRUE(outcome(s, "v4-8").starts_with(
      "trainer.devices: `devices=8` asks for 8 devices per host, but the hosts it may run on have "
      "4 on v4 hosts."))
      << outcome(s, "v4-8");
}

}  // namespace
}  // namespace tpujobs::api

namespace tpujobs::api {
namespace {

TEST(Generations, TorchXlaBefore25FindsNoV6eChips) {
  lightning::TrainerSettings s = tpu("v6e-8");
  s.environment = lightning::Environment{"3.10", "2.4.0", "2.4.0", "2.4.0"};
  EXPECT_EQ(
      "environment.torch_xla: tpujobs: torch_xla 2.4 finds no TPU on a v6e host: it counts a "
      "host's chips by PCI device id, and lists v6e's (0x006f) only from torch_xla 2.5.0 "
      "(pytorch/xla v2.5.0:torch_xla/_internal/tpu.py:50-51 (_TPU_PCI_DEVICE_IDS)). | Install "
      "torch_xla 2.5 or later (with the torch of the same minor version) on v6e hosts, or run on "
      "a generation it knows. Its wheels: 2.5 for Python 3.9-3.11.",
      outcome(s, "v6e-8,v5litepod-8"));
  s.accelerator_type = "v5litepod-8";
  EXPECT_EQ("v5e 8x1 v5litepod-8", outcome(s, "v6e-8,v5litepod-8"));
  s.accelerator_type = std::nullopt;  // either generation: v5e's chips are known
  s.environment = lightning::Environment{"3.10", "2.5.0", "2.5.0", "2.4.0"};
  s.accelerator_type = "v6e-8";
  EXPECT_EQ("v6e 8x1 v6e-8", outcome(s, "v6e-8"));
}

// Lightning 2.0 removed `gpus`, `ipus` and `num_processes` from
// Trainer.__init__ (keyword-only, no **kwargs: 2.0.0
// src/lightning/pytorch/trainer/trainer.py:90-132), so Python refuses the
// keyword, as it does `tpu_cores`; on every generation, null or not. Before
// Python 3.10 the TypeError names the function `__init__()`. 1.x maps them
// onto the accelerator and the devices, the spec's values reaching the rules.
TEST(Generations, RemovedTrainerArgumentsUnder2x) {
  auto first_error = [](const std::string& version, const nlohmann::json& trainer,
                        std::string_view pool, const std::string& python = "3.10") {
    nlohmann::json body = nlohmann::json::parse(
        R"({"model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})");
    body["lightning_version"] = version;
    body["trainer"] = trainer;
    if (python != "3.10") body["environment"] = {{"python", python}, {"torch_xla", "2.5.0"}};
    const auto spec = parse_job_spec(body);
    EXPECT_TRUE(spec) << trainer.dump();
    if (!spec) return std::string("no spec");
    const base::Result<Resolution> r = resolve(spec->trainer, capacity(pool));
    if (r.ok()) return std::string("no error");
    const auto& e = r.error().fields.front();
    return e.field + ": " + e.message + " | " + e.hint + " [" + e.source + "]";
  };
  const std::string source =
      "[2.0.0:src/lightning/pytorch/trainer/trainer.py:90-132 (Trainer.__init__ has no ";
  for (const char* pool : {"v5litepod-8", "v6e-8", "v5p-8", "v3-8"}) {
    for (const char* version : {"2.0", "2.1", "2.5"}) {
      EXPECT_EQ(
          "trainer.gpus: Trainer.__init__() got an unexpected keyword argument 'gpus' | "
          "Lightning 2.0 removed `gpus`: use `accelerator` with `devices` (`accelerator: "
          "\"tpu\"`, `devices: 8` on a TPU host). " +
              source + "gpus)]",
          first_error(version, {{"accelerator", "tpu"}, {"gpus", 8}}, pool))
          << version << " on " << pool;
      EXPECT_EQ(
          "trainer.ipus: Trainer.__init__() got an unexpected keyword argument 'ipus' | "
          "Lightning 2.0 removed `ipus`: use `accelerator` with `devices`; tpujobs runs "
          "`accelerator: \"tpu\"` (`devices: 8` on a TPU host) or `\"cpu\"`. " +
              source + "ipus)]",
          first_error(version, {{"ipus", nullptr}}, pool))
          << version << " on " << pool;
      EXPECT_EQ(
          "trainer.num_processes: Trainer.__init__() got an unexpected keyword argument "
          "'num_processes' | Lightning 2.0 removed `num_processes`: use `accelerator` with "
          "`devices` (`accelerator: \"cpu\"`, `devices: 2`; or `accelerator: \"tpu\"`, "
          "`devices: 8`). " +
              source + "num_processes)]",
          first_error(version, {{"accelerator", "cpu"}, {"num_processes", 2}}, pool))
          << version << " on " << pool;
    }
  }
  EXPECT_TRUE(
      first_error("2.5", {{"gpus", 1}}, "v6e-8", "3.9")
          .starts_with("trainer.gpus: __init__() got an unexpected keyword argument 'gpus' |"));
  // gpus and num_processes: Python names one (nlohmann's object is sorted).
  EXPECT_TRUE(first_error("2.5", {{"num_processes", 1}, {"gpus", 1}}, "v6e-8")
                  .starts_with("trainer.gpus: Trainer.__init__() got an unexpected keyword"));
  EXPECT_EQ("no error", first_error("2.5", {{"accelerator", "tpu"}, {"devices", 8}}, "v6e-8"));
  // 1.x takes these arguments and maps them as the tag does
  // (lightning/device_flags.cc; tests/lightning/device_flags_test.cc): gpus=8
  // asks for CUDA, which a TPU VM does not have.
  EXPECT_EQ(
      "trainer.gpus: `CUDAAccelerator` can not run on your system since the accelerator is not "
      "available. The following accelerator(s) is available and can be passed into "
      "`accelerator` argument of `Trainer`: ['cpu', 'tpu']. | tpujobs emulates TPU hosts, not "
      "GPUs: use `accelerator: \"tpu\"` (or \"auto\") and drop GPU-only settings. "
      "[1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py]",
      first_error("1.9", {{"gpus", 8}}, "v5litepod-8"));
  EXPECT_EQ("no error", first_error("1.6", {{"num_processes", 2}}, "v3-8"));
  EXPECT_EQ("no error", first_error("1.9", {{"accelerator", "tpu"}, {"ipus", 8}}, "v3-8"));
}

}  // namespace
}  // namespace tpujobs::api
