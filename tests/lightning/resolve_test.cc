#include "lightning/resolve.h"

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/generation.h"

namespace tpujobs::lightning {
namespace {

std::string Join(const std::vector<std::string>& parts, std::string_view separator = " | ") {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i > 0 ? std::string(separator) : "") + parts[i];
  }
  return out;
}

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "8" -> int, "auto" / "'8'" -> string, "[0,1]" / "[]" -> list.
DeviceValue ParseDeviceValue(const std::string& text) {
  DeviceValue value;
  if (text.front() == '[') {
    value.kind = DeviceValue::Kind::kList;
    for (const std::string& item : Split(text.substr(1, text.size() - 2), ',')) {
      value.list.push_back(std::stoll(item));
    }
  } else if (text.front() == '\'') {
    value.kind = DeviceValue::Kind::kString;
    value.text = text.substr(1, text.size() - 2);
  } else if (text == "auto") {
    value.kind = DeviceValue::Kind::kString;
    value.text = text;
  } else {
    value.kind = DeviceValue::Kind::kInt;
    value.number = std::stoll(text);
  }
  return value;
}

// "devices=8 num_nodes=4 precision=bf16-true type=v3-32 v=1.x env.K=V"
TrainerSettings Settings(std::string_view text) {
  TrainerSettings settings;
  for (const std::string& token : Split(text, ' ')) {
    const std::size_t eq = token.find('=');
    const std::string key = token.substr(0, eq);
    const std::string value = token.substr(eq + 1);
    if (key == "accelerator") settings.accelerator = value;
    if (key == "devices") settings.devices = ParseDeviceValue(value);
    if (key == "tpu_cores") settings.tpu_cores = ParseDeviceValue(value);
    if (key == "num_nodes") settings.num_nodes = std::stoll(value);
    if (key == "precision") settings.precision = value;
    if (key == "strategy") settings.strategy = value;
    if (key == "runtime") settings.runtime = value;
    if (key == "type") settings.accelerator_type = value;
    if (key == "v") settings.lightning_version = value;
    if (key.starts_with("env.")) settings.env[key.substr(4)] = value;
  }
  return settings;
}

// The pool as the rules see it, with the scheduler's generation facts.
PoolView View(const std::map<scheduler::Generation, int>& hosts) {
  PoolView view;
  for (scheduler::Generation g :
       {scheduler::Generation::kV2, scheduler::Generation::kV3, scheduler::Generation::kV4}) {
    const scheduler::GenerationFacts& f = scheduler::facts(g);
    const auto it = hosts.find(g);
    view.generations.push_back({std::string(f.name), f.devices_per_host, f.name_units_per_device,
                                {f.slice_sizes.begin(), f.slice_sizes.end()},
                                it == hosts.end() ? 0 : it->second});
  }
  return view;
}

// "v3-32,v4-8": the hosts of those slices; "" has no TPU hosts.
PoolView Pool(std::string_view text) {
  std::map<scheduler::Generation, int> hosts;
  for (const std::string& name : Split(text, ',')) {
    const std::optional<scheduler::SliceType> slice = scheduler::parse_slice_type(name);
    EXPECT_TRUE(slice) << name;
    if (slice) hosts[slice->generation] += slice->hosts();
  }
  return View(hosts);
}

std::string_view KindName(DeviceRequest::Kind kind) {
  switch (kind) {
    case DeviceRequest::Kind::kCpu:
      return "cpu";
    case DeviceRequest::Kind::kSingleCore:
      return "single";
    case DeviceRequest::Kind::kHost:
      return "host";
    case DeviceRequest::Kind::kSlice:
      return "slice";
  }
  return "?";
}

// "tpu slice v3 8x4 v3-32 world=32 bf16-true xla", "cpu world=1 32-true auto",
// or the errors as "field: message | ...".
std::string Summary(const Resolution& resolution) {
  if (!resolution.errors.empty()) {
    std::vector<std::string> errors;
    for (const FieldProblem& e : resolution.errors) errors.push_back(e.field + ": " + e.message);
    return Join(errors);
  }
  const DeviceRequest& request = resolution.device;
  std::string out = resolution.accelerator;
  if (request.kind != DeviceRequest::Kind::kCpu) {
    out += " " + std::string(KindName(request.kind)) + " " +
           (request.generation ? *request.generation : std::string("any")) + " " +
           std::to_string(request.devices_per_host) + "x" + std::to_string(request.hosts);
    if (!request.accelerator_type.empty()) out += " " + request.accelerator_type;
    if (request.pinned_core) out += " core=" + std::to_string(*request.pinned_core);
  }
  out += " world=" + std::to_string(resolution.world_size) + " " +
         std::string(precision_name(resolution.precision)) + " " + resolution.strategy;
  if (resolution.lightning_v1) out += " v1";
  return out;
}

struct Case {
  std::string name;
  std::string settings;
  std::string pool;
  std::string expected;  // Summary() of the resolution
  std::string warnings = "";
};

constexpr const char* kDevicesV3 =
    "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got ";
constexpr const char* kDevicesV4 =
    "trainer.devices: `devices` can only be 'auto', 1, 4 or [<0-3>] for TPUs. Got ";
constexpr const char* kTpuCores = "`tpu_cores` can only be 1, 8 or [<1-8>]";
constexpr const char* kV3Slices =
    "Valid v3 slices: v3-8, v3-32, v3-64, v3-128, v3-256, v3-512, v3-1024, v3-2048.";
constexpr const char* kXlaPrecision =
    ")` is not supported in XLA. `precision` must be one of: ('32-true', '16-true', "
    "'bf16-true').";
constexpr const char* kDeprecated8 =
    "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please use "
    "`Trainer(accelerator='tpu', devices=8)` instead.";
constexpr const char* kTpuUnused =
    "TPU available but not used. Set `accelerator` and `devices` using "
    "`Trainer(accelerator='tpu', devices=8)`.";
constexpr const char* kUnavailable =
    "` can not run on your system since the accelerator is not available. The following "
    "accelerator(s) is available and can be passed into `accelerator` argument of `Trainer`: ";

std::string S(std::string a, std::string_view b) { return a + std::string(b); }

const std::vector<Case>& Cases() {
  static const std::vector<Case>* cases = new std::vector<Case>{
      // --- Lightning 2.x devices on a v3 pool -------------------------------
      {"v2_devices_8", "devices=8", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v2_devices_1", "devices=1", "v3-32", "tpu single v3 1x1 world=1 32-true single_xla"},
      {"v2_devices_core3", "devices=[3]", "v3-32",
       "tpu single v3 1x1 core=3 world=1 32-true single_xla"},
      {"v2_devices_core0", "devices=[0]", "v3-8",
       "tpu single v3 1x1 core=0 world=1 32-true single_xla"},
      {"v2_devices_core7", "devices=[7]", "v3-8",
       "tpu single v3 1x1 core=7 world=1 32-true single_xla"},
      {"v2_devices_auto", "devices=auto", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v2_defaults", "", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v2_devices_string_8", "devices='8'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v2_devices_string_plus_1", "devices='+1'", "v3-8",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"v2_devices_3", "devices=3", "v3-32", S(kDevicesV3, "3")},
      {"v2_devices_2", "devices=2", "v3-8", S(kDevicesV3, "2")},
      {"v2_devices_16", "devices=16", "v3-32", S(kDevicesV3, "16")},
      {"v2_devices_core8", "devices=[8]", "v3-32", S(kDevicesV3, "[8]")},
      {"v2_devices_core_negative", "devices=[-1]", "v3-8", S(kDevicesV3, "[-1]")},
      {"v2_devices_two_cores", "devices=[0,1]", "v3-32", S(kDevicesV3, "[0, 1]")},
      {"v2_devices_string_3", "devices='3'", "v3-32", S(kDevicesV3, "3")},
      {"v2_devices_string_list", "devices='0,1'", "v3-32", S(kDevicesV3, "[0, 1]")},
      {"v2_devices_string_minus_1", "devices='-1'", "v3-32", S(kDevicesV3, "-1")},
      {"v2_devices_minus_1", "devices=-1", "v3-32", S(kDevicesV3, "-1")},
      {"v2_devices_string_core", "devices='5,'", "v3-8",
       "tpu single v3 1x1 core=5 world=1 32-true single_xla"},
      {"v2_devices_0_auto", "devices=0", "v3-32",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using auto accelerator."},
      {"v2_devices_0_tpu", "accelerator=tpu devices='0'", "v3-32",
       "trainer.devices: `Trainer(devices='0')` value is not a valid input using tpu "
       "accelerator."},
      {"v2_devices_empty_list", "accelerator=tpu devices=[]", "v3-32",
       "trainer.devices: `Trainer(devices=[])` value is not a valid input using tpu accelerator."},
      {"v2_devices_garbage", "devices='abc'", "v3-32",
       "trainer.devices: Could not parse the selected TPU devices: 'abc'"},
      // --- other generations -----------------------------------------------
      {"v2_v4_devices_4", "devices=4", "v4-32", "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"v2_v4_devices_8", "devices=8", "v4-16", S(kDevicesV4, "8")},
      {"v2_v4_core3", "devices=[3]", "v4-8", "tpu single v4 1x1 core=3 world=1 32-true single_xla"},
      {"v2_v4_core4", "devices=[4]", "v4-8", S(kDevicesV4, "[4]")},
      {"v2_v4_auto", "devices=auto", "v4-8", "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"v2_v4_defaults", "", "v4-32", "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"v2_gen_v2_host", "devices=8", "v2-32", "tpu host v2 8x1 v2-8 world=8 32-true xla"},
      {"v2_gen_v2_slice", "devices=8 num_nodes=4", "v2-32",
       "tpu slice v2 8x4 v2-32 world=32 32-true xla"},
      {"v2_gen_v2_bad_slice", "devices=8 num_nodes=8", "v2-128",
       "trainer.num_nodes: `devices=8` x `num_nodes=8` makes a v2-64, which is not a valid v2 "
       "slice. Valid v2 slices: v2-8, v2-32, v2-128, v2-256, v2-512."},
      {"v2_gen_v2_devices_3", "devices=3", "v2-8",
       "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3"},
      // --- pod slices --------------------------------------------------------
      {"v2_slice_v3_32", "devices=8 num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"v2_slice_auto_devices", "num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"v2_slice_one_node", "num_nodes=1 devices=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v2_slice_v3_64_on_128", "num_nodes=8", "v3-128",
       "tpu slice v3 8x8 v3-64 world=64 32-true xla"},
      {"v2_slice_v3_16", "devices=8 num_nodes=2", "v3-32",
       S("trainer.num_nodes: `devices=8` x `num_nodes=2` makes a v3-16, which is not a valid v3 "
         "slice. ",
         kV3Slices)},
      {"v2_slice_too_big", "devices=8 num_nodes=8", "v3-32",
       "trainer.num_nodes: A v3-64 slice needs 8 v3 hosts, but the pool has 4."},
      {"v2_slice_single_core", "devices=1 num_nodes=4", "v3-32",
       "trainer.devices: `num_nodes=4` asks for a pod slice of whole hosts, but `devices=1` uses "
       "1 of the 8 devices of each v3 host."},
      {"v2_slice_pinned_core", "devices=[2] num_nodes=2", "v3-32",
       "trainer.devices: `num_nodes=2` asks for a pod slice of whole hosts, but `devices=[2]` "
       "uses 1 of the 8 devices of each v3 host."},
      {"v2_slice_v4_16", "devices=4 num_nodes=2", "v4-32",
       "tpu slice v4 4x2 v4-16 world=8 32-true xla"},
      {"v2_slice_v4_24", "devices=4 num_nodes=3", "v4-32",
       "trainer.num_nodes: `devices=4` x `num_nodes=3` makes a v4-24, which is not a valid v4 "
       "slice. Valid v4 slices: v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-512, v4-1024, "
       "v4-2048, v4-4096."},
      {"v2_slice_v4_too_big", "num_nodes=8", "v4-32",
       "trainer.num_nodes: A v4-64 slice needs 8 v4 hosts, but the pool has 4."},
      {"v2_num_nodes_0", "num_nodes=0", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got 0."},
      {"v2_num_nodes_negative", "devices=8 num_nodes=-2", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got -2."},
      {"v2_num_nodes_huge", "num_nodes=9223372036854775807", "v3-32",
       "trainer.num_nodes: `num_nodes=9223372036854775807` is more hosts than any TPU pod slice "
       "has (the largest, v4-4096, has 512)."},
      {"v2_num_nodes_huge_with_type", "type=v3-32 num_nodes=513", "v3-32",
       "trainer.num_nodes: `num_nodes=513` is more hosts than any TPU pod slice has (the largest, "
       "v4-4096, has 512)."},
      // --- resources.accelerator_type ----------------------------------------
      {"type_v3_32", "type=v3-32", "v3-32", "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"type_v3_8", "type=v3-8", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"type_v3_8_one_core", "type=v3-8 devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"type_v3_8_pinned", "type=v3-8 devices=[5]", "v3-32",
       "tpu single v3 1x1 core=5 world=1 32-true single_xla"},
      {"type_v3_32_agrees", "type=v3-32 devices=8 num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"type_v3_32_devices_only", "type=v3-32 devices=8", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"type_v3_32_one_core", "type=v3-32 devices=1", "v3-32",
       "resources.accelerator_type: `accelerator_type='v3-32'` is 4 hosts x 8 devices, but "
       "`devices=1` asks for a single core."},
      {"type_disagrees", "type=v3-32 devices=8 num_nodes=2", "v3-32",
       "resources.accelerator_type: `accelerator_type='v3-32'` is 4 hosts x 8 devices, but "
       "`devices=8` x `num_nodes=2` asks for 16 devices."},
      {"type_larger_than_pool", "type=v3-64", "v3-32",
       "resources.accelerator_type: A v3-64 slice needs 8 v3 hosts, but the pool has 4."},
      {"type_generation_missing", "type=v4-8", "v3-32",
       "resources.accelerator_type: The pool has no v4 hosts; it has v3 (4 hosts)."},
      {"type_invalid_size", "type=v3-16", "v3-32",
       S("resources.accelerator_type: 'v3-16' is not a valid v3 slice. ", kV3Slices)},
      {"type_unknown_generation", "type=v5e-8", "v3-32",
       "resources.accelerator_type: 'v5e-8' is not a TPU accelerator type this service "
       "emulates: expected <generation>-<cores> with generation v2, v3 or v4, e.g. 'v3-32'."},
      {"type_v4_16", "type=v4-16", "v4-32", "tpu slice v4 4x2 v4-16 world=8 32-true xla"},
      {"type_v4_8_devices_4", "type=v4-8 devices=4", "v4-8",
       "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"type_v4_8_devices_8", "type=v4-8 devices=8", "v4-8", S(kDevicesV4, "8")},
      {"type_picks_generation_for_message", "type=v3-8 devices=4", "v3-8,v4-8", S(kDevicesV3, "4")},
      {"type_v2_32_mixed", "type=v2-32", "v2-32,v3-32",
       "tpu slice v2 8x4 v2-32 world=32 32-true xla"},
      // --- mixed pools --------------------------------------------------------
      {"mixed_devices_8_v3_only", "devices=8", "v3-8,v4-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"mixed_devices_4_v4_only", "devices=4", "v3-8,v4-8",
       "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"mixed_devices_1_any", "devices=1", "v3-8,v4-8",
       "tpu single any 1x1 world=1 32-true single_xla"},
      {"mixed_core5_v3_only", "devices=[5]", "v3-8,v4-8",
       "tpu single v3 1x1 core=5 world=1 32-true single_xla"},
      {"mixed_core2_any", "devices=[2]", "v3-8,v4-8",
       "tpu single any 1x1 core=2 world=1 32-true single_xla"},
      {"mixed_auto_largest_host", "devices=auto", "v3-8,v4-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"mixed_devices_3", "devices=3", "v3-8,v4-8", S(kDevicesV3, "3")},
      {"mixed_v2_v3_host_any", "devices=8", "v2-8,v3-8", "tpu host any 8x1 world=8 32-true xla"},
      {"mixed_slice_newest", "devices=8 num_nodes=4", "v2-32,v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"mixed_slice_where_hosts_are", "num_nodes=4", "v2-32,v3-8",
       "tpu slice v2 8x4 v2-32 world=32 32-true xla"},
      {"mixed_slice_v4", "devices=4 num_nodes=4", "v3-32,v4-32",
       "tpu slice v4 4x4 v4-32 world=16 32-true xla"},
      {"mixed_slice_too_big", "num_nodes=8", "v2-32,v3-32",
       "trainer.num_nodes: A v3-64 slice needs 8 v3 hosts, but the pool has 4."},
      // --- accelerator ---------------------------------------------------------
      {"accelerator_cpu", "accelerator=cpu", "v3-32", "cpu world=1 32-true auto"},
      {"accelerator_tpu_no_tpu", "accelerator=tpu", "",
       "trainer.accelerator: No TPU devices were found."},
      {"accelerator_auto_no_tpu", "accelerator=auto", "", "cpu world=1 32-true auto"},
      {"accelerator_default_no_tpu", "", "", "cpu world=1 32-true auto"},
      {"accelerator_gpu", "accelerator=gpu", "v3-32",
       S(S("trainer.accelerator: `Trainer(accelerator='gpu')", kUnavailable), "['tpu', 'cpu'].")},
      {"accelerator_cuda_no_tpu", "accelerator=cuda", "",
       S(S("trainer.accelerator: `Trainer(accelerator='cuda')", kUnavailable), "['cpu'].")},
      {"accelerator_unknown", "accelerator=foo", "v3-32",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='foo'`. "
       "Available names are: auto, cpu, cuda, mps, tpu."},
      {"accelerator_cpu_devices_4", "accelerator=cpu devices=4", "v3-32",
       "cpu world=1 32-true auto",
       "tpujobs runs `accelerator='cpu'` jobs as one process on the executor's threads; "
       "`devices=4` trains one replica."},
      {"accelerator_cpu_devices_negative", "accelerator=cpu devices=-1", "v3-32",
       "trainer.devices: `devices` selected with `CPUAccelerator` should be an int > 0."},
      {"accelerator_cpu_devices_0", "accelerator=cpu devices=0", "v3-32",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using cpu accelerator."},
      {"accelerator_cpu_num_nodes", "accelerator=cpu num_nodes=2", "v3-32",
       "trainer.num_nodes: `num_nodes=2` asks for several TPU hosts, but the job runs with "
       "`accelerator='cpu'`."},
      {"accelerator_cpu_type", "accelerator=cpu type=v3-8", "v3-32",
       "resources.accelerator_type: `accelerator_type='v3-8'` names a TPU slice, but the job "
       "runs with `accelerator='cpu'`."},
      {"accelerator_cpu_tpu_cores", "accelerator=cpu tpu_cores=8", "v3-32",
       "trainer.tpu_cores: `tpu_cores=8` asks for TPU cores, but the job runs with "
       "`accelerator='cpu'`."},
      // --- precision, 2.x --------------------------------------------------
      {"precision_bf16_true", "precision=bf16-true", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla"},
      {"precision_16_true", "precision=16-true", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 16-true xla"},
      {"precision_32_alias", "precision=32", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"precision_32_true", "precision=32-true devices=1", "v4-8",
       "tpu single v4 1x1 world=1 32-true single_xla"},
      {"precision_16_mixed", "precision=16-mixed", "v3-32",
       S("trainer.precision: `precision='16-mixed'", kXlaPrecision)},
      {"precision_bf16_mixed", "precision=bf16-mixed", "v3-32",
       S("trainer.precision: `precision='bf16-mixed'", kXlaPrecision)},
      {"precision_16_legacy", "precision=16", "v3-32",
       S("trainer.precision: `precision='16-mixed'", kXlaPrecision),
       "`precision=16` is supported for historical reasons but its usage is discouraged. Please "
       "set your precision to 16-mixed instead!"},
      {"precision_bf16_legacy", "precision=bf16", "v3-32",
       S("trainer.precision: `precision='bf16-mixed'", kXlaPrecision),
       "`precision=bf16` is supported for historical reasons but its usage is discouraged. "
       "Please set your precision to bf16-mixed instead!"},
      {"precision_64", "precision=64", "v3-32",
       S("trainer.precision: `precision='64-true'", kXlaPrecision)},
      {"precision_invalid", "precision=8", "v3-32",
       "trainer.precision: Precision '8' is invalid. Allowed precision values: ('16-true', "
       "'16-mixed', 'bf16-true', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', "
       "'16', 'bf16')"},
      {"precision_cpu_bf16_true", "accelerator=cpu precision=bf16-true", "v3-32",
       "cpu world=1 bf16-true auto"},
      {"precision_cpu_mixed", "accelerator=cpu precision=bf16-mixed", "v3-32",
       "trainer.precision: `precision='bf16-mixed'` is not supported by the tpujobs CPU executor. "
       "`precision` must be one of: ('32-true', '16-true', 'bf16-true')."},
      // --- strategy, 2.x ---------------------------------------------------
      {"strategy_xla", "strategy=xla devices=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"strategy_xla_one_core", "strategy=xla devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true xla"},
      {"strategy_single_xla", "strategy=single_xla devices=[1]", "v3-32",
       "tpu single v3 1x1 core=1 world=1 32-true single_xla"},
      {"strategy_single_xla_8", "strategy=single_xla devices=8", "v3-32",
       "trainer.strategy: `strategy='single_xla'` runs on one TPU core, but `devices=8` asks for "
       "8."},
      {"strategy_xla_debug", "strategy=xla_debug num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla_debug"},
      {"strategy_auto", "strategy=auto devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"strategy_ddp", "strategy=ddp", "v3-32",
       "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` "
       "or `XLAStrategy`, found DDPStrategy."},
      {"strategy_ddp_spawn", "strategy=ddp_spawn", "v3-32",
       "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` "
       "or `XLAStrategy`, found DDPStrategy."},
      {"strategy_deepspeed", "strategy=deepspeed", "v4-8",
       "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` "
       "or `XLAStrategy`, found DeepSpeedStrategy."},
      {"strategy_fsdp", "strategy=fsdp", "v3-32",
       "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` "
       "or `XLAStrategy`, found FSDPStrategy."},
      {"strategy_unknown", "strategy=foo", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='foo'`. It must be "
       "either a string or an instance of `lightning.pytorch.strategies.Strategy`. Valid names on "
       "TPUs: auto, xla, single_xla, xla_debug."},
      {"strategy_v1_name_under_v2", "strategy=tpu_spawn", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='tpu_spawn'`. It must "
       "be either a string or an instance of `lightning.pytorch.strategies.Strategy`. Valid names "
       "on TPUs: auto, xla, single_xla, xla_debug."},
      {"strategy_cpu_ddp", "accelerator=cpu strategy=ddp", "v3-32",
       "trainer.strategy: `strategy='ddp'` is not supported for `accelerator='cpu'` jobs: tpujobs "
       "runs them as one process on the executor's threads."},
      // --- runtime ---------------------------------------------------------
      {"runtime_xrt_v2", "runtime=xrt", "v3-32",
       "runtime: The XLA XRT runtime is not supported anymore."},
      {"runtime_pjrt", "runtime=pjrt devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"runtime_unknown", "runtime=grpc", "v3-32",
       "runtime: `runtime` must be 'pjrt' or 'xrt', got 'grpc'."},
      // --- tpu_cores under 2.x -----------------------------------------------
      {"tpu_cores_8", "tpu_cores=8", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla",
       kDeprecated8},
      {"tpu_cores_core1", "tpu_cores=[1]", "v3-32",
       "tpu single v3 1x1 core=0 world=1 32-true single_xla",
       "Setting `Trainer(tpu_cores=[1])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[1])` instead."},
      {"tpu_cores_core8", "tpu_cores=[8]", "v3-8",
       "tpu single v3 1x1 core=7 world=1 32-true single_xla",
       "Setting `Trainer(tpu_cores=[8])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[8])` instead."},
      {"tpu_cores_core0", "tpu_cores=[0]", "v3-32", S("trainer.tpu_cores: ", kTpuCores),
       "Setting `Trainer(tpu_cores=[0])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[0])` instead."},
      {"tpu_cores_3", "tpu_cores=3", "v3-32", S("trainer.tpu_cores: ", kTpuCores),
       "Setting `Trainer(tpu_cores=3)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=3)` instead."},
      {"tpu_cores_and_devices", "tpu_cores=8 devices=8", "v3-32",
       "trainer.tpu_cores: `devices=8` and `tpu_cores=8` were both given; pass only one of "
       "them."},
      {"tpu_cores_no_tpu", "tpu_cores=8", "", "trainer.tpu_cores: No TPU devices were found."},
      {"tpu_cores_8_on_v4", "tpu_cores=8", "v4-8",
       "trainer.tpu_cores: `tpu_cores=8` asks for 8 devices per host, but the hosts it may run on "
       "have 4 on v4 hosts.",
       kDeprecated8},
      {"tpu_cores_slice", "tpu_cores=8 num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla", kDeprecated8},
      // --- Lightning 1.x -----------------------------------------------------
      {"v1_devices_8", "v=1.x accelerator=tpu devices=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_devices_3", "v=1.x accelerator=tpu devices=3", "v3-32",
       S("trainer.devices: ", kTpuCores)},
      {"v1_devices_core8", "v=1.x accelerator=tpu devices=[8]", "v3-32",
       "tpu single v3 1x1 core=7 world=1 32-true single_xla v1"},
      {"v1_devices_core0", "v=1.x accelerator=tpu devices=[0]", "v3-32",
       S("trainer.devices: ", kTpuCores)},
      {"v1_devices_string_is_core", "v=1.x accelerator=tpu devices='3'", "v3-32",
       "tpu single v3 1x1 core=2 world=1 32-true single_xla v1"},
      {"v1_devices_0", "v=1.x accelerator=tpu devices=0", "v3-32",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using tpu accelerator."},
      {"v1_devices_garbage", "v=1.x accelerator=tpu devices='abc'", "v3-32",
       "trainer.devices: invalid literal for int() with base 10: 'abc'"},
      {"v1_tpu_cores_implies_tpu", "v=1.x tpu_cores=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_default_is_cpu", "v=1.x", "v3-32", "cpu world=1 32-true auto v1", kTpuUnused},
      {"v1_default_no_tpu", "v=1.x", "", "cpu world=1 32-true auto v1"},
      {"v1_accelerator_auto", "v=1.x accelerator=auto devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla v1"},
      {"v1_precision_16", "v=1.x accelerator=tpu precision=16", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1",
       "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
       "Using `precision='bf16'` instead."},
      {"v1_precision_bf16", "v=1.x accelerator=tpu precision=bf16", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1"},
      {"v1_precision_32", "v=1.x accelerator=tpu precision=32", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_precision_64", "v=1.x accelerator=tpu precision=64", "v3-32",
       "trainer.precision: `Trainer(accelerator='tpu', precision=64)` is not implemented. Please, "
       "open an issue in `https://github.com/Lightning-AI/lightning/issues` requesting this "
       "feature."},
      {"v1_precision_2x_name", "v=1.x accelerator=tpu precision=bf16-true", "v3-32",
       "trainer.precision: Precision 'bf16-true' is invalid. Allowed precision values: ['16', "
       "'32', '64', 'bf16']"},
      {"v1_precision_16_cpu", "v=1.x accelerator=cpu precision=16", "v3-32",
       "cpu world=1 bf16-true auto v1",
       "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not supported on "
       "CPU. Using `precision='bf16'` instead."},
      {"v1_xrt_without_config", "v=1.x accelerator=tpu runtime=xrt", "v3-32",
       "env: Missing XLA configuration"},
      {"v1_xrt_with_config",
       "v=1.x accelerator=tpu runtime=xrt env.XRT_TPU_CONFIG=localservice;0;localhost:51011",
       "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_strategy_tpu_spawn", "v=1.x accelerator=tpu strategy=tpu_spawn", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_strategy_debug", "v=1.x accelerator=tpu strategy=tpu_spawn_debug", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla_debug v1"},
      {"v1_strategy_single_tpu", "v=1.x accelerator=tpu strategy=single_tpu devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla v1"},
      {"v1_strategy_xla_unknown", "v=1.x accelerator=tpu strategy=xla", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='xla'`. It must be "
       "either a string or an instance of `pytorch_lightning.strategies.Strategy`. Valid names on "
       "TPUs: auto, tpu_spawn, single_tpu, tpu_spawn_debug."},
      {"v1_strategy_ddp_spawn", "v=1.x accelerator=tpu strategy=ddp_spawn", "v3-32",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`TPUSpawnStrategy`, found DDPSpawnStrategy."},
      {"v1_v4_devices_4", "v=1.x accelerator=tpu devices=4", "v4-8",
       S("trainer.devices: ", kTpuCores)},
      {"v1_v4_devices_8", "v=1.x accelerator=tpu devices=8", "v4-8",
       "trainer.devices: `devices=8` asks for 8 devices per host, but the hosts it may run on "
       "have 4 on v4 hosts."},
      {"v1_v4_auto", "v=1.x accelerator=tpu", "v4-8",
       "tpu host v4 4x1 v4-8 world=4 32-true xla v1"},
      {"v1_v4_core_5", "v=1.x accelerator=tpu devices=[5]", "v4-8",
       "trainer.devices: `devices=[5]` asks for core 4 (0-based) of a host, but the hosts it may "
       "run on have 4 on v4 hosts."},
      {"v1_slice", "v=1.x accelerator=tpu devices=8 num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla v1"},
      {"v1_mixed_core6", "v=1.x accelerator=tpu devices=[6]", "v3-8,v4-8",
       "tpu single v3 1x1 core=5 world=1 32-true single_xla v1"},
      {"v1_v2_slice", "v=1.x accelerator=tpu type=v2-32", "v2-32",
       "tpu slice v2 8x4 v2-32 world=32 32-true xla v1"},
      {"v1_accelerator_unknown", "v=1.x accelerator=foo", "v3-32",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='foo'`. "
       "Available names are: auto, cpu, cuda, hpu, ipu, mps, tpu."},
      {"version_unknown", "v=3.x devices=8", "v3-32",
       "lightning_version: `lightning_version` must be '2.x' or '1.x', got '3.x'."},
  };
  return *cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << ": " << c.settings; }

class ResolveTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResolveTableTest, ResolvesOrExplains) {
  const Case& c = GetParam();
  const Resolution resolution = resolve(Settings(c.settings), Pool(c.pool));
  EXPECT_EQ(c.expected, Summary(resolution)) << c.settings << " on " << c.pool;
  EXPECT_EQ(c.warnings, Join(resolution.warnings)) << c.settings << " on " << c.pool;
  for (const FieldProblem& problem : resolution.errors) {
    EXPECT_FALSE(problem.hint.empty()) << problem.field << ": " << problem.message;
  }
  if (resolution.errors.empty()) {
    const int expected_world = resolution.accelerator == "tpu" ? resolution.device.cores() : 1;
    EXPECT_EQ(expected_world, resolution.world_size);
  }
}

INSTANTIATE_TEST_SUITE_P(Lightning, ResolveTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(ResolveTest, TableIsLargeAndNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : Cases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  EXPECT_GE(Cases().size(), 80u);
}

std::vector<std::string> Fields(const Resolution& resolution) {
  std::vector<std::string> fields;
  for (const FieldProblem& problem : resolution.errors) fields.push_back(problem.field);
  return fields;
}

TEST(ResolveTest, ReportsEveryProblemAtOnce) {
  const Resolution resolution =
      resolve(Settings("devices=3 precision=16-mixed strategy=ddp runtime=xrt"), Pool("v3-32"));
  EXPECT_EQ((std::vector<std::string>{"trainer.devices", "trainer.precision", "trainer.strategy",
                                      "runtime"}),
            Fields(resolution));
  EXPECT_EQ(S(kDevicesV3, "3"), "trainer.devices: " + resolution.errors[0].message);
}

TEST(ResolveTest, ReportsSliceAndSettingProblemsTogether) {
  const Resolution resolution = resolve(
      Settings("v=1.x accelerator=tpu type=v4-8 num_nodes=0 precision=bf16-mixed strategy=xla"),
      Pool("v3-32"));
  EXPECT_EQ((std::vector<std::string>{"resources.accelerator_type", "trainer.num_nodes",
                                      "trainer.precision", "trainer.strategy"}),
            Fields(resolution))
      << Summary(resolution);
}

TEST(ResolveTest, InvalidAcceleratorStillChecksTheRest) {
  const Resolution resolution =
      resolve(Settings("accelerator=gpu precision=64 strategy=foo"), Pool("v4-8"));
  EXPECT_EQ(
      (std::vector<std::string>{"trainer.accelerator", "trainer.precision", "trainer.strategy"}),
      Fields(resolution));
}

TEST(ResolveTest, SameSpecDiffersBetweenLightningVersions) {
  const char* spec = "accelerator=tpu devices=8 precision=16";
  const Resolution v2 = resolve(Settings(spec), Pool("v3-8"));
  const Resolution v1 = resolve(Settings(std::string(spec) + " v=1.x"), Pool("v3-8"));
  EXPECT_EQ((std::vector<std::string>{"trainer.precision"}), Fields(v2));
  EXPECT_TRUE(v1.errors.empty()) << Summary(v1);
  EXPECT_EQ(Precision::kBf16True, v1.precision);
  EXPECT_TRUE(v1.lightning_v1);
}

TEST(ResolveTest, SliceRequestCarriesEverythingPlacementNeeds) {
  const Resolution resolution =
      resolve(Settings("num_nodes=16 precision=bf16-true"), Pool("v3-128"));
  ASSERT_TRUE(resolution.errors.empty()) << Summary(resolution);
  const DeviceRequest& request = resolution.device;
  EXPECT_EQ(DeviceRequest::Kind::kSlice, request.kind);
  EXPECT_EQ("v3", request.generation);
  EXPECT_EQ(8, request.devices_per_host);
  EXPECT_EQ(16, request.hosts);
  EXPECT_EQ(128, request.cores());
  EXPECT_EQ("v3-128", request.accelerator_type);
  EXPECT_FALSE(request.pinned_core);
  EXPECT_EQ(128, resolution.world_size);
  EXPECT_EQ("tpu", resolution.accelerator);
  EXPECT_EQ("xla", resolution.strategy);
  EXPECT_EQ("bf16-true", precision_name(resolution.precision));
}

TEST(ResolveTest, GenerationsWithoutHostsCountAsAbsent) {
  std::map<scheduler::Generation, int> hosts;
  hosts[scheduler::Generation::kV3] = 0;
  hosts[scheduler::Generation::kV4] = 2;
  EXPECT_EQ("tpu host v4 4x1 v4-8 world=4 32-true xla",
            Summary(resolve(Settings(""), View(hosts))));
  hosts[scheduler::Generation::kV4] = 0;
  EXPECT_EQ("trainer.accelerator: No TPU devices were found.",
            Summary(resolve(Settings("accelerator=tpu"), View(hosts))));
}

TEST(ResolveTest, HintsSayWhatToChange) {
  const Resolution xrt = resolve(Settings("v=1.x accelerator=tpu runtime=xrt"), Pool("v3-8"));
  ASSERT_EQ(1u, xrt.errors.size());
  EXPECT_NE(std::string::npos,
            xrt.errors[0].hint.find("export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\""));

  const Resolution devices = resolve(Settings("devices=3"), Pool("v3-8,v4-8"));
  ASSERT_EQ(1u, devices.errors.size());
  EXPECT_NE(std::string::npos, devices.errors[0].hint.find("8 on v3 hosts, 4 on v4 hosts"))
      << devices.errors[0].hint;

  const Resolution slice = resolve(Settings("num_nodes=8"), Pool("v3-32"));
  ASSERT_EQ(1u, slice.errors.size());
  EXPECT_NE(std::string::npos, slice.errors[0].hint.find("v3-32 (`num_nodes: 4`)"))
      << slice.errors[0].hint;
}

// Every combination of a few values per setting: either problems, each
// with a hint, or a request the pool can hold.
TEST(ResolveTest, EveryCombinationIsExplainedOrFitsThePool) {
  const std::vector<std::string> devices = {"",
                                            "devices=0",
                                            "devices=1",
                                            "devices=4",
                                            "devices=8",
                                            "devices=[0]",
                                            "devices=[7]",
                                            "devices=auto",
                                            "devices='2,3'"};
  const std::vector<std::string> tpu_cores = {"", "tpu_cores=[1]"};
  const std::vector<std::string> num_nodes = {"", "num_nodes=0", "num_nodes=4", "num_nodes=513"};
  const std::vector<std::string> accelerators = {"", "accelerator=tpu", "accelerator=cpu",
                                                 "accelerator=auto", "accelerator=gpu"};
  const std::vector<std::string> types = {"", "type=v3-32", "type=v4-8", "type=v9-1"};
  const std::vector<std::string> versions = {"", "v=1.x"};
  const std::vector<std::string> pools = {"", "v3-32", "v3-8,v4-8", "v2-32"};
  int valid = 0;
  int invalid = 0;
  for (const std::string& d : devices)
    for (const std::string& t : tpu_cores)
      for (const std::string& n : num_nodes)
        for (const std::string& a : accelerators)
          for (const std::string& ty : types)
            for (const std::string& v : versions)
              for (const std::string& pool_text : pools) {
                const std::string text = Join({d, t, n, a, ty, v}, " ");
                const PoolView pool = Pool(pool_text);
                const Resolution r = resolve(Settings(text), pool);
                if (!r.errors.empty()) {
                  ++invalid;
                  for (const FieldProblem& p : r.errors) {
                    ASSERT_FALSE(p.hint.empty()) << text << " on " << pool_text;
                    ASSERT_FALSE(p.message.empty()) << text << " on " << pool_text;
                  }
                  continue;
                }
                ++valid;
                const DeviceRequest& q = r.device;
                if (r.accelerator == "cpu") {
                  ASSERT_EQ(DeviceRequest::Kind::kCpu, q.kind) << text;
                  ASSERT_EQ(1, r.world_size) << text;
                  continue;
                }
                ASSERT_EQ("tpu", r.accelerator) << text;
                ASSERT_EQ(q.cores(), r.world_size) << text;
                ASSERT_GE(q.hosts, 1) << text;
                for (const TpuGeneration& generation : pool.generations) {
                  if (generation.hosts == 0) continue;
                  if (q.generation && *q.generation != generation.name) continue;
                  const int hosts = generation.hosts;
                  const int per_host = generation.devices_per_host;
                  const bool fits = q.kind == DeviceRequest::Kind::kSingleCore
                                        ? q.pinned_core.value_or(0) < per_host
                                        : q.devices_per_host == per_host;
                  if (q.generation) {
                    ASSERT_TRUE(fits) << text << " on " << pool_text;
                    ASSERT_LE(q.hosts, hosts) << text << " on " << pool_text;
                  }
                }
                if (q.kind == DeviceRequest::Kind::kSlice ||
                    (q.kind == DeviceRequest::Kind::kHost && q.generation)) {
                  const std::optional<scheduler::SliceType> slice =
                      scheduler::parse_slice_type(q.accelerator_type);
                  ASSERT_TRUE(slice) << text << " -> " << q.accelerator_type;
                  ASSERT_EQ(q.cores(), slice->devices()) << text;
                  ASSERT_EQ(q.hosts, slice->hosts()) << text;
                }
              }
  EXPECT_GT(valid, 200);
  EXPECT_GT(invalid, 1000);
}

TEST(ResolveTest, PrecisionNames) {
  EXPECT_EQ("32-true", precision_name(Precision::k32True));
  EXPECT_EQ("16-true", precision_name(Precision::k16True));
  EXPECT_EQ("bf16-true", precision_name(Precision::kBf16True));
}

}  // namespace
}  // namespace tpujobs::lightning
