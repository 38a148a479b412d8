#include "lightning/resolve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "lightning/checks.h"
#include "scheduler/generation.h"
#include "tests/support/source_dir.h"

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

// "8" -> int, "auto" / "'8'" -> string ('_' stands for a space: "'_8_'"),
// "[0,1]" / "[]" -> list, "[1.0]" / "['1']" -> a list with a non-int,
// "8.0" -> float, "True" / "False" -> bool, "{}" -> dict, "None".
DeviceValue ParseDeviceValue(const std::string& text) {
  DeviceValue value;
  if (text.front() == '[') {
    value.kind = DeviceValue::Kind::kList;
    for (const std::string& item : Split(text.substr(1, text.size() - 2), ',')) {
      if (value.list_length++ == 0) {
        value.list_first_type = item.front() == '\''                  ? "str"
                                : item.find('.') != std::string::npos ? "float"
                                                                      : "int";
        if (item.front() != '\'') value.list_first_number = std::stod(item);
      }
      if (item.front() == '\'') {
        if (value.list_other_type.empty()) value.list_other_type = "str";
      } else if (item.find('.') != std::string::npos) {
        if (value.list_other_type.empty()) value.list_other_type = "float";
      } else {
        value.list.push_back(std::stoll(item));
      }
    }
  } else if (text.front() == '\'') {
    value.kind = DeviceValue::Kind::kString;
    value.text = text.substr(1, text.size() - 2);
    std::replace(value.text.begin(), value.text.end(), '_', ' ');
  } else if (text.find('.') != std::string::npos || text == "True" || text == "False" ||
             text == "{}" || text == "None") {
    value.kind = DeviceValue::Kind::kOther;
    value.python_type = text == "{}"                          ? "dict"
                        : text == "None"                      ? "NoneType"
                        : text.find('.') != std::string::npos ? "float"
                                                              : "bool";
    value.python_repr = text;
    value.equals_zero = text == "False" || text == "0.0";
  } else if (text == "auto") {
    value.kind = DeviceValue::Kind::kString;
    value.text = text;
  } else {
    value.kind = DeviceValue::Kind::kInt;
    value.number = std::stoll(text);
  }
  return value;
}

// "devices=8 num_nodes=4 precision=bf16-true type=v3-32 v=1.x env.K=V"; a
// precision of digits is a number (precision=16), quoted a string
// (precision='16'); py=, torch=, xla=, pl= fill `environment`.
TrainerSettings Settings(std::string_view text) {
  TrainerSettings settings;
  for (const std::string& token : Split(text, ' ')) {
    const std::size_t eq = token.find('=');
    const std::string key = token.substr(0, eq);
    const std::string value = token.substr(eq + 1);
    if (key == "accelerator") settings.accelerator = value;
    if (key == "devices") settings.devices = ParseDeviceValue(value);
    if (key == "tpu_cores") settings.tpu_cores = ParseDeviceValue(value);
    if (key == "num_nodes") settings.num_nodes = ParseDeviceValue(value);
    if (key == "precision") {
      const bool quoted = value.front() == '\'';
      settings.precision = quoted ? value.substr(1, value.size() - 2) : value;
      settings.precision_is_number =
          !quoted &&
          std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    }
    auto environment = [&]() -> Environment& {
      if (!settings.environment) settings.environment.emplace();
      return *settings.environment;
    };
    if (key == "py") environment().python = value;
    if (key == "torch") environment().torch = value;
    if (key == "xla") environment().torch_xla = value;
    if (key == "pl") environment().lightning = value;
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
    view.generations.push_back({std::string(f.name),
                                f.devices_per_host,
                                f.name_units_per_device,
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
std::string Summary(const base::Result<Resolution>& resolution) {
  if (!resolution.ok()) {
    std::vector<std::string> errors;
    for (const base::FieldError& e : base::field_errors(resolution))
      errors.push_back(e.field + ": " + e.message);
    return Join(errors);
  }
  const DeviceRequest& request = resolution->device;
  std::string out = resolution->accelerator;
  if (request.kind != DeviceRequest::Kind::kCpu) {
    out += " " + std::string(KindName(request.kind)) + " " +
           (request.generation ? *request.generation : std::string("any")) + " " +
           std::to_string(request.devices_per_host) + "x" + std::to_string(request.hosts);
    if (!request.accelerator_type.empty()) out += " " + request.accelerator_type;
    if (request.pinned_core) out += " core=" + std::to_string(*request.pinned_core);
  }
  out += " world=" + std::to_string(resolution->world_size) + " " +
         std::string(precision_name(resolution->precision)) + " " + resolution->strategy;
  if (resolution->lightning_v1) out += " v1";
  return out;
}

// The tag whose texts the settings got: the resolution's lightning_tag, or
// the tag a refusal's first text cites ("2.5.2" of "2.5.2:src/...").
std::string TextsTag(const base::Result<Resolution>& resolution) {
  if (resolution.ok()) return resolution->lightning_tag;
  const std::string& source = resolution.error().fields.front().source;
  return source.substr(0, source.find(':'));
}

// tpujobs' notices among the warnings, whether the settings resolved or not.
std::vector<std::string> Notices(const base::Result<Resolution>& resolution) {
  std::vector<std::string> out;
  for (const std::string& warning : resolution_warnings(resolution))
    if (warning.starts_with("tpujobs:")) out.push_back(warning);
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
constexpr const char* kSixteenTrueNotice25 =
    "tpujobs: precision='16-true' on a TPU trains in float32 under Lightning 2.5, as it does on a "
    "real TPU: Lightning's XLAPrecision sets XLA_USE_F16=1, which torch_xla does not read "
    "(torch_xla 2.5 reads neither it nor the deprecated XLA_USE_FP16), and nothing converts the "
    "model, so the model stays float32: no memory saving and no fp16 arithmetic. tpujobs runs and "
    "sizes this job in float32. Hint: use precision \"bf16-true\" for half precision on TPUs.";
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
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using tpu accelerator."},
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
       "slice. Valid v4 slices: v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-384, v4-512, v4-768, "
       "v4-1024, v4-1152, v4-1536, v4-2048, v4-2304, v4-3072, v4-3456, v4-4096, v4-4608, v4-6144, "
       "v4-8192."},
      {"v2_slice_v4_too_big", "num_nodes=8", "v4-32",
       "trainer.num_nodes: A v4-64 slice needs 8 v4 hosts, but the pool has 4."},
      {"v2_num_nodes_0", "num_nodes=0", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got 0."},
      {"v2_num_nodes_negative", "devices=8 num_nodes=-2", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got -2."},
      {"v2_num_nodes_huge", "num_nodes=9223372036854775807", "v3-32",
       "trainer.num_nodes: `num_nodes=9223372036854775807` is more hosts than any TPU pod slice "
       "has (the largest, v4-8192, has 1024)."},
      {"v2_num_nodes_huge_with_type", "type=v3-32 num_nodes=513", "v3-32",
       "resources.accelerator_type: `accelerator_type='v3-32'` is 4 hosts x 8 devices, but "
       "`devices='auto'` x `num_nodes=513` asks for 4104 devices."},
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
      {"accelerator_cpu", "accelerator=cpu", "v3-32", "cpu world=1 32-true auto",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      {"accelerator_tpu_no_tpu", "accelerator=tpu", "",
       "trainer.accelerator: `XLAAccelerator` can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu']."},
      {"accelerator_auto_no_tpu", "accelerator=auto", "", "cpu world=1 32-true auto"},
      {"accelerator_default_no_tpu", "", "", "cpu world=1 32-true auto"},
      {"accelerator_gpu", "accelerator=gpu", "v3-32",
       "trainer.accelerator: No supported gpu backend found!"},
      {"accelerator_cuda_no_tpu", "accelerator=cuda", "",
       "trainer.accelerator: `CUDAAccelerator` can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu']."},
      {"accelerator_unknown", "accelerator=foo", "v3-32",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='foo'`. "
       "Available names are: auto, cpu, cuda, mps, tpu."},
      {"accelerator_cpu_devices_4", "accelerator=cpu devices=4", "v3-32",
       "cpu world=1 32-true auto",
       "tpujobs runs `accelerator='cpu'` jobs as one process on the executor's threads; "
       "`devices=4` trains one replica. | TPU available but not used. You can set it by doing "
       "`Trainer(accelerator='tpu')`."},
      {"accelerator_cpu_devices_negative", "accelerator=cpu devices=-1", "v3-32",
       "trainer.devices: `devices` selected with `CPUAccelerator` should be an int > 0."},
      // _parse_cpu_cores: isinstance(True, int), so True is one process
      // (2.5.6 fabric/accelerators/cpu.py:98); a float is not an int.
      {"accelerator_cpu_devices_true", "accelerator=cpu devices=True", "",
       "cpu world=1 32-true auto"},
      {"accelerator_cpu_devices_float", "accelerator=cpu devices=2.0", "",
       "trainer.devices: `devices` selected with `CPUAccelerator` should be an int > 0."},
      {"accelerator_cpu_devices_0", "accelerator=cpu devices=0", "v3-32",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using cpu accelerator."},
      {"accelerator_cpu_num_nodes", "accelerator=cpu num_nodes=2", "v3-32",
       "trainer.num_nodes: `num_nodes=2` asks for several TPU hosts, but the job runs with "
       "`accelerator='cpu'`.",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      {"accelerator_cpu_type", "accelerator=cpu type=v3-8", "v3-32",
       "resources.accelerator_type: `accelerator_type='v3-8'` names a TPU slice, but the job runs "
       "with `accelerator='cpu'`.",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      {"accelerator_cpu_tpu_cores", "accelerator=cpu tpu_cores=8", "v3-32",
       "trainer.tpu_cores: Trainer.__init__() got an unexpected keyword argument 'tpu_cores'"},
      // --- precision, 2.x --------------------------------------------------
      {"precision_bf16_true", "precision=bf16-true", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla"},
      // XLAPrecision sets XLA_USE_F16, which torch_xla never reads: float32.
      {"precision_16_true", "precision=16-true", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla", kSixteenTrueNotice25},
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
      {"precision_invalid", "precision='8'", "v3-32",
       "trainer.precision: Precision '8' is invalid. Allowed precision values: "
       "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
       "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')"},
      {"precision_cpu_bf16_true", "accelerator=cpu precision=bf16-true", "v3-32",
       "cpu world=1 bf16-true auto",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      {"precision_cpu_mixed", "accelerator=cpu precision=bf16-mixed", "v3-32",
       "cpu world=1 bf16-true auto",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
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
       "trainer.strategy: To use the `DeepSpeedStrategy`, you must have DeepSpeed installed. "
       "Install it by running `pip install -U deepspeed`."},
      {"strategy_fsdp", "strategy=fsdp", "v3-32",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but received "
       "`accelerator='tpu'`. Please set `accelerator='cuda'`, `accelerator='gpu'`, or pass a "
       "`CUDAAccelerator()` instance to use FSDP."},
      {"strategy_unknown", "strategy=foo", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='foo'`. It must be "
       "either a string or an instance of `lightning.pytorch.strategies.Strategy`. Example "
       "choices: auto, ddp, ddp_spawn, deepspeed, ... Find a complete list of options in our "
       "documentation at https://lightning.ai"},
      {"strategy_v1_name_under_v2", "strategy=tpu_spawn", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='tpu_spawn'`. It must "
       "be either a string or an instance of `lightning.pytorch.strategies.Strategy`. Example "
       "choices: auto, ddp, ddp_spawn, deepspeed, ... Find a complete list of options in our "
       "documentation at https://lightning.ai"},
      {"strategy_cpu_ddp", "accelerator=cpu strategy=ddp", "v3-32",
       "trainer.strategy: `strategy='ddp'` is not supported for `accelerator='cpu'` jobs: tpujobs "
       "runs them as one process on the executor's threads.",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      // --- runtime ---------------------------------------------------------
      {"runtime_xrt_v2", "runtime=xrt", "v3-32",
       "runtime: The XLA XRT runtime is not supported anymore."},
      {"runtime_pjrt", "runtime=pjrt devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"runtime_unknown", "runtime=grpc", "v3-32",
       "runtime: `runtime` must be 'pjrt' or 'xrt', got 'grpc'."},
      // --- tpu_cores under 2.x -----------------------------------------------
      {"tpu_cores_8", "v=1.9 tpu_cores=8", "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=8)` instead."},
      {"tpu_cores_core1", "v=1.9 tpu_cores=[1]", "v3-32",
       "tpu single v3 1x1 core=0 world=1 32-true single_xla v1",
       "Setting `Trainer(tpu_cores=[1])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[1])` instead."},
      {"tpu_cores_core8", "v=1.9 tpu_cores=[8]", "v3-8",
       "tpu single v3 1x1 core=7 world=1 32-true single_xla v1",
       "Setting `Trainer(tpu_cores=[8])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[8])` instead."},
      {"tpu_cores_core0", "v=1.9 tpu_cores=[0]", "v3-32",
       "trainer.tpu_cores: `devices` can only be 1, 8 or [<1-8>] for TPUs.",
       "Setting `Trainer(tpu_cores=[0])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[0])` instead."},
      {"tpu_cores_3", "v=1.9 tpu_cores=3", "v3-32",
       "trainer.tpu_cores: `devices` can only be 1, 8 or [<1-8>] for TPUs.",
       "Setting `Trainer(tpu_cores=3)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=3)` instead."},
      {"tpu_cores_and_devices", "v=1.9 tpu_cores=8 devices=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=8)` instead. | The flag `devices=8` will be "
       "ignored, instead the device specific number 8 will be used"},
      {"tpu_cores_no_tpu", "v=1.9 tpu_cores=8", "",
       "trainer.tpu_cores: `TPUAccelerator` can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu'].",
       kDeprecated8},
      {"tpu_cores_8_on_v4", "v=1.9 tpu_cores=8", "v4-8",
       "trainer.tpu_cores: `tpu_cores=8` asks for 8 devices per host, but the hosts it may run on "
       "have 4 on v4 hosts.",
       kDeprecated8},
      {"tpu_cores_slice", "v=1.9 tpu_cores=8 num_nodes=4", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla v1",
       "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=8)` instead."},
      // --- Lightning 1.x -----------------------------------------------------
      {"v1_devices_8", "v=1.x accelerator=tpu devices=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_devices_3", "v=1.x accelerator=tpu devices=3", "v3-32",
       "trainer.devices: `devices` can only be 1, 8 or [<1-8>] for TPUs."},
      {"v1_devices_core8", "v=1.x accelerator=tpu devices=[8]", "v3-32",
       "tpu single v3 1x1 core=7 world=1 32-true single_xla v1"},
      {"v1_devices_core0", "v=1.x accelerator=tpu devices=[0]", "v3-32",
       "trainer.devices: `devices` can only be 1, 8 or [<1-8>] for TPUs."},
      {"v1_devices_string_is_core", "v=1.x accelerator=tpu devices='3'", "v3-32",
       "tpu single v3 1x1 core=2 world=1 32-true single_xla v1"},
      {"v1_devices_0", "v=1.x accelerator=tpu devices=0", "v3-32",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using tpu accelerator."},
      {"v1_devices_garbage", "v=1.x accelerator=tpu devices='abc'", "v3-32",
       "trainer.devices: invalid literal for int() with base 10: 'abc'"},
      {"v1_tpu_cores_implies_tpu", "v=1.x tpu_cores=8", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=8)` instead."},
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
       "trainer.precision: Precision 'bf16-true' is invalid. Allowed precision values: ('64', "
       "'32', '16', 'bf16', 64, 32, 16)"},
      {"v1_precision_16_cpu", "v=1.x accelerator=cpu precision=16", "v3-32",
       "cpu world=1 bf16-true auto v1",
       "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not supported on "
       "CPU. Using `precision='bf16'` instead. | TPU available but not used. Set `accelerator` and "
       "`devices` using `Trainer(accelerator='tpu', devices=8)`."},
      {"v1_xrt_without_config", "v=1.x accelerator=tpu runtime=xrt", "v3-32",
       "env: tensorflow/compiler/xla/xla_client/computation_client.cc:280 : Missing XLA "
       "configuration"},
      {"v1_xrt_with_config",
       "v=1.x accelerator=tpu runtime=xrt env.XRT_TPU_CONFIG=localservice;0;localhost:51011",
       "v3-32", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v1_strategy_tpu_spawn", "v=1.x accelerator=tpu strategy=tpu_spawn", "v3-32",
       "trainer.strategy: `Trainer(strategy='tpu_spawn')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp_spawn', accelerator='tpu')` instead."},
      {"v1_strategy_debug", "v=1.x accelerator=tpu strategy=tpu_spawn_debug", "v3-32",
       "tpu host v3 8x1 v3-8 world=8 32-true xla_debug v1"},
      {"v1_strategy_single_tpu", "v=1.x accelerator=tpu strategy=single_tpu devices=1", "v3-32",
       "tpu single v3 1x1 world=1 32-true single_xla v1"},
      {"v1_strategy_xla_unknown", "v=1.x accelerator=tpu strategy=xla", "v3-32",
       "trainer.strategy: You selected an invalid strategy name: `strategy='xla'`. It must be "
       "either a string or an instance of `pytorch_lightning.strategies.Strategy`. Example "
       "choices: ddp, ddp_spawn, deepspeed, dp, ... Find a complete list of options in our "
       "documentation at https://lightning.ai"},
      {"v1_strategy_ddp_spawn", "v=1.x accelerator=tpu strategy=ddp_spawn", "v3-32",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`TPUSpawnStrategy`, found DDPSpawnStrategy."},
      {"v1_v4_devices_4", "v=1.x accelerator=tpu devices=4", "v4-8",
       "trainer.devices: `devices` can only be 1, 8 or [<1-8>] for TPUs."},
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
       "Available names are: cpu, cuda, hpu, ipu, mps, tpu."},
      {"version_unknown", "v=3.x devices=8", "v3-32",
       "lightning_version: `lightning_version` must be one of 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, "
       "2.3, 2.4, 2.5, 1.x, 2.x, got '3.x'."},
  };
  return *cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name << ": " << c.settings; }

class ResolveTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResolveTableTest, ResolvesOrExplains) {
  const Case& c = GetParam();
  const base::Result<Resolution> resolution = resolve(Settings(c.settings), Pool(c.pool));
  EXPECT_EQ(c.expected, Summary(resolution)) << c.settings << " on " << c.pool;
  EXPECT_EQ(c.warnings, Join(resolution_warnings(resolution))) << c.settings << " on " << c.pool;
  for (const base::FieldError& problem : base::field_errors(resolution)) {
    EXPECT_FALSE(problem.hint.empty()) << problem.field << ": " << problem.message;
  }
  if (resolution.ok()) {
    const int expected_world = resolution->accelerator == "tpu" ? resolution->device.cores() : 1;
    EXPECT_EQ(expected_world, resolution->world_size);
  }
}

INSTANTIATE_TEST_SUITE_P(Lightning, ResolveTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// Cases per Lightning version, each naming the upstream source (tag:path)
// whose code or test it follows. Summary() as in the table above.
struct VersionCase {
  std::string name;
  std::string source;
  std::string settings;
  std::string pool;
  std::string expected;
  std::string warnings = "";
};

void PrintTo(const VersionCase& c, std::ostream* os) { *os << c.name << ": " << c.settings; }

constexpr const char* kNotAvailableXla =
    "`XLAAccelerator` can not run on your system since the accelerator is not available. The "
    "following accelerator(s) is available and can be passed into `accelerator` argument of "
    "`Trainer`: ";
constexpr const char* kInvalidStrategy2 =
    "It must be either a string or an instance of `lightning.pytorch.strategies.Strategy`. "
    "Example choices: auto, ddp, ddp_spawn, deepspeed, ... Find a complete list of options in our "
    "documentation at https://lightning.ai";
constexpr const char* kAllowed21 =
    "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
    "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')";
constexpr const char* kAllowed20 =
    "('16-mixed', 'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')";
constexpr const char* kXlaOnly = "`precision` must be one of: ('32-true', '16-true', 'bf16-true').";
constexpr const char* kOneBased19 = "`devices` can only be 1, 8 or [<1-8>] for TPUs.";
constexpr const char* kTypeError21 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but you passed ";
constexpr const char* kTypeError17 =
    "Device IDs (GPU/TPU) must be an int, a string, a sequence of ints or None, but you passed ";
constexpr const char* kUnexpectedTpuCores =
    "trainer.tpu_cores: Trainer.__init__() got an unexpected keyword argument 'tpu_cores'";
constexpr const char* kWrongStrategy21 =
    "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` or "
    "`XLAStrategy`, found ";
constexpr const char* kWrongStrategy1 =
    "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
    "`TPUSpawnStrategy`, found ";

const std::vector<VersionCase>& VersionCases() {
  static const auto* cases = new std::vector<VersionCase>{
      // --- devices, 2.1+: _parse_tpu_devices / _check_tpu_devices_valid -------------------
      {"v21_devices_string_8", "2.1.4:src/lightning/fabric/accelerators/xla.py",
       "v=2.1 devices='8'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v25_devices_string_padded", "2.5.6:src/lightning/fabric/accelerators/xla.py",
       "v=2.5 devices='_8_'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v22_devices_string_trailing_comma", "2.2.5:src/lightning/fabric/accelerators/xla.py",
       "v=2.2 devices='2,'", "v3-8", "tpu single v3 1x1 core=2 world=1 32-true single_xla"},
      {"v21_devices_string_list_repr", "2.1.4:tests/tests_fabric/accelerators/test_xla.py",
       "v=2.1 devices='[1]'", "v3-8",
       "trainer.devices: Could not parse the selected TPU devices: '[1]'"},
      {"v21_devices_anything_else", "2.1.4:tests/tests_fabric/accelerators/test_xla.py",
       "v=2.1 devices='anything-else'", "v3-8",
       "trainer.devices: Could not parse the selected TPU devices: 'anything-else'"},
      {"v21_devices_5", "2.1.4:tests/tests_fabric/accelerators/test_xla.py", "v=2.1 devices=5",
       "v3-8", "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 5"},
      {"v24_devices_string_3", "2.4.0:src/lightning/fabric/accelerators/xla.py",
       "v=2.4 devices='3'", "v3-8",
       "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got 3"},
      {"v23_devices_two_cores", "2.3.3:src/lightning/fabric/accelerators/xla.py",
       "v=2.3 devices=[0,1]", "v3-8",
       "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got [0, 1]"},
      {"v21_devices_v4_count", "2.1.4:src/lightning/fabric/accelerators/xla.py (auto_device_count)",
       "v=2.1 devices=8", "v4-8",
       "trainer.devices: `devices` can only be 'auto', 1, 4 or [<0-3>] for TPUs. Got 8"},
      {"v21_devices_float",
       "2.1.4:src/lightning/fabric/utilities/device_parser.py (_check_data_type)",
       "v=2.1 devices=8.0", "v3-8", S(S("trainer.devices: ", kTypeError21), "8.0.")},
      {"v25_devices_bool",
       "2.5.6:src/lightning/fabric/utilities/device_parser.py (_check_data_type)",
       "v=2.5 devices=True", "v3-8", S(S("trainer.devices: ", kTypeError21), "True.")},
      {"v21_devices_none", "2.1.4:src/lightning/fabric/utilities/device_parser.py:198",
       "v=2.1 devices=None", "v3-8",
       "trainer.devices: Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, but "
       "you passed None"},
      // 2.0's default is 'auto': an explicit None passes the parser and
      // leaves no device for the strategy Lightning picks.
      {"v20_devices_none_leaves_no_device",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:427",
       "v=2.0 devices=None", "v3-8",
       "trainer.devices: TypeError: 'NoneType' object is not subscriptable"},
      {"v20_tpu_devices_none_leaves_no_device",
       "2.0.9:src/lightning/fabric/accelerators/tpu.py:167 (devices in (1, 8, None))",
       "v=2.0 accelerator=tpu devices=None", "v3-8",
       "trainer.devices: TypeError: 'NoneType' object is not subscriptable"},
      // A named XLAStrategy gets parallel_devices=None; the connector
      // finishes and _log_device_info's trainer.num_devices asserts (2.0.9
      // trainer.py:1119, setup.py:165). Another strategy is refused for the
      // TPU first, with no word about the devices.
      {"v20_xla_strategy_devices_none_asserts",
       "2.0.9:src/lightning/pytorch/trainer/trainer.py:1119 (Trainer.device_ids)",
       "v=2.0 strategy=XLA devices=None", "v3-8", "trainer.devices: AssertionError"},
      {"v20_xla_debug_devices_none_asserts",
       "2.0.9:src/lightning/pytorch/trainer/trainer.py:1119 (Trainer.device_ids)",
       "v=2.0 accelerator=tpu strategy=xla_debug devices=None", "v3-8",
       "trainer.devices: AssertionError"},
      {"v20_auto_strategy_devices_none",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:427",
       "v=2.0 strategy=AUTO devices=None", "v3-8",
       "trainer.devices: TypeError: 'NoneType' object is not subscriptable"},
      {"v20_ddp_devices_none_is_the_strategy_error",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:590 "
       "(_lazy_init_strategy)",
       "v=2.0 strategy=ddp devices=None", "v3-8",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`XLAStrategy`, found DDPStrategy."},
      // 1.x: None is the default of both flags, so devices=None beside
      // tpu_cores is not "given" (`if devices:`), and tpu_cores=None names no
      // accelerator for devices='auto'.
      {"v16_tpu_cores_beside_devices_none",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:458 (if devices:)",
       "v=1.6 tpu_cores=8 devices=None", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v18_devices_auto_tpu_cores_none",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.8 devices=auto tpu_cores=None", "",
       "trainer.devices: You passed `devices=auto` but haven't specified "
       "`accelerator=('auto'|'tpu'|'gpu'|'ipu'|'cpu'|'hpu'|'mps')` for the devices mapping."},
      {"v19_devices_none_is_auto",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:584",
       "v=1.9 accelerator=tpu devices=None", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v16_cpu_devices_none_is_auto",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:538",
       "v=1.6 accelerator=cpu devices=None", "v3-8", "cpu world=1 32-true auto v1",
       "TPU available but not used. Set `accelerator` and `devices` using "
       "`Trainer(accelerator='tpu', devices=8)`."},
      {"v21_devices_list_of_float", "2.1.4:src/lightning/fabric/utilities/device_parser.py",
       "v=2.1 devices=[1.0]", "v3-8",
       S(kTypeError21, "a sequence of float.").insert(0, "trainer.devices: ")},
      {"v21_devices_zero_float",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 devices=0.0", "v3-8",
       "trainer.devices: `Trainer(devices=0.0)` value is not a valid input using tpu accelerator."},
      {"v21_devices_false",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 devices=False", "v3-8",
       "trainer.devices: `Trainer(devices=False)` value is not a valid input using tpu "
       "accelerator."},
      {"v21_devices_empty_list",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 devices=[]", "v3-8",
       "trainer.devices: `Trainer(devices=[])` value is not a valid input using tpu accelerator."},
      {"v21_devices_string_zero",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 accelerator=auto devices='0'", "v3-8",
       "trainer.devices: `Trainer(devices='0')` value is not a valid input using tpu accelerator."},
      // --- devices, 1.x and 2.0: 1-based ---------------------------------------------------
      {"v20_devices_3", "2.0.9:src/lightning/fabric/accelerators/tpu.py", "v=2.0 devices=3", "v3-8",
       S("trainer.devices: ", kOneBased19)},
      {"v20_devices_core1_is_first", "2.0.9:src/lightning/fabric/accelerators/tpu.py",
       "v=2.0 devices=[1]", "v3-8", "tpu single v3 1x1 core=0 world=1 32-true single_xla"},
      {"v20_devices_core0", "2.0.9:src/lightning/fabric/accelerators/tpu.py", "v=2.0 devices=[0]",
       "v3-8", S("trainer.devices: ", kOneBased19)},
      {"v20_devices_string_4_is_a_list",
       "2.0.9:src/lightning/fabric/accelerators/tpu.py (_parse_tpu_devices_str: '4' -> [4])",
       "v=2.0 devices='4'", "v3-8", "tpu single v3 1x1 core=3 world=1 32-true single_xla"},
      {"v19_devices_3", "1.9.5:src/lightning_fabric/accelerators/tpu.py",
       "v=1.9 accelerator=tpu devices=3", "v3-8", S("trainer.devices: ", kOneBased19)},
      {"v18_devices_3", "1.8.6:src/lightning_lite/accelerators/tpu.py",
       "v=1.8 accelerator=tpu devices=3", "v3-8", S("trainer.devices: ", kTpuCores)},
      {"v17_devices_3", "1.7.7:src/pytorch_lightning/utilities/device_parser.py",
       "v=1.7 accelerator=tpu devices=3", "v3-8", S("trainer.devices: ", kTpuCores)},
      {"v16_devices_3", "1.6.5:pytorch_lightning/utilities/device_parser.py",
       "v=1.6 accelerator=tpu devices=3", "v3-8", S("trainer.devices: ", kTpuCores)},
      {"v16_devices_float", "1.6.5:pytorch_lightning/utilities/device_parser.py (_check_data_type)",
       "v=1.6 accelerator=tpu devices=8.0", "v3-8",
       "trainer.devices: Device ID's (GPU/TPU) must be int, string or sequence of ints or None."},
      // 1.6's _check_data_type does not look inside a list; _tpu_cores_valid
      // compares its first item with 1 and 8 whatever the list's length.
      {"v16_devices_list_of_float_passes_the_parser",
       "1.6.5:pytorch_lightning/utilities/device_parser.py:240-243, :254",
       "v=1.6 accelerator=tpu devices=[1.0]", "v3-8",
       "trainer.devices: Lightning 1.6 accepts a float as the TPU core of `devices` and hands it "
       "to torch_xla as the device ordinal; tpujobs does not run such a job."},
      {"v16_devices_list_of_str", "1.6.5:pytorch_lightning/utilities/device_parser.py:254",
       "v=1.6 accelerator=tpu devices=['1']", "v3-8",
       "trainer.devices: TypeError: '<=' not supported between instances of 'int' and 'str'"},
      {"v16_devices_float_out_of_range", "1.6.5:pytorch_lightning/utilities/device_parser.py:254",
       "v=1.6 accelerator=tpu devices=[9.0]", "v3-8", S("trainer.devices: ", kTpuCores)},
      {"v16_devices_int_then_float", "1.6.5:pytorch_lightning/utilities/device_parser.py:254",
       "v=1.6 accelerator=tpu devices=[1,2.0]", "v3-8", S("trainer.devices: ", kTpuCores)},
      {"v16_tpu_cores_str_then_int", "1.6.5:pytorch_lightning/utilities/device_parser.py:254",
       "v=1.6 tpu_cores=['a',1]", "v3-8",
       "trainer.tpu_cores: TypeError: '<=' not supported between instances of 'int' and 'str'"},
      {"v17_devices_float",
       "1.7.7:src/pytorch_lightning/utilities/device_parser.py (_check_data_type)",
       "v=1.7 accelerator=tpu devices=8.0", "v3-8",
       S(S("trainer.devices: ", kTypeError17), "float.")},
      // A string of no numbers parses to [], which the 1-based check indexes.
      {"v16_devices_empty_string",
       "1.6.5:pytorch_lightning/utilities/device_parser.py:254 (_tpu_cores_valid)",
       "v=1.6 accelerator=tpu devices=''", "v3-8",
       "trainer.devices: IndexError: list index out of range"},
      {"v17_devices_comma", "1.7.7:src/pytorch_lightning/utilities/device_parser.py:304",
       "v=1.7 accelerator=tpu devices=','", "v3-8",
       "trainer.devices: IndexError: list index out of range"},
      // 1.7-1.9 warn about tpu_cores with the device flags, after the
      // accelerator name and devices=0 are checked and before the accelerator
      // is resolved or instantiated, so the warning precedes those errors.
      {"v19_tpu_cores_warned_before_gpu_backend",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:484 (:202 after)",
       "v=1.9 accelerator=gpu tpu_cores=8", "v3-8",
       "trainer.accelerator: No supported gpu backend found!", kDeprecated8},
      {"v17_tpu_cores_warned_before_unavailable",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:453 (:532 after)",
       "v=1.7 accelerator=tpu tpu_cores=8", "",
       "trainer.accelerator: TPUAccelerator can not run on your system since the accelerator is "
       "not "
       "available. The following accelerator(s) is available and can be passed into `accelerator` "
       "argument of `Trainer`: ['cpu'].",
       kDeprecated8},
      {"v18_tpu_cores_zero_warned_before_devices_mapping",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:447 (:419 after)",
       "v=1.8 devices=auto tpu_cores=0", "",
       "trainer.devices: You passed `devices=auto` but haven't specified "
       "`accelerator=('auto'|'tpu'|'gpu'|'ipu'|'cpu'|'hpu'|'mps')` for the devices mapping.",
       "Setting `Trainer(tpu_cores=0)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=0)` instead."},
      {"v19_tpu_cores_not_warned_after_accelerator_name",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:295 (:484 after)",
       "v=1.9 accelerator=bogus tpu_cores=8", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='bogus'`. "
       "Available names are: cpu, cuda, hpu, ipu, mps, tpu."},
      {"v18_tpu_cores_space", "1.8.6:src/lightning_lite/accelerators/tpu.py:168",
       "v=1.8 tpu_cores='_'", "v3-8", "trainer.tpu_cores: IndexError: list index out of range",
       "Setting `Trainer(tpu_cores=' ')` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=' ')` instead."},
      {"v19_devices_empty_string", "1.9.5:src/lightning_fabric/accelerators/tpu.py:168",
       "v=1.9 accelerator=tpu devices=''", "v3-8",
       "trainer.devices: IndexError: list index out of range"},
      {"v20_devices_space", "2.0.9:src/lightning/fabric/accelerators/tpu.py:173",
       "v=2.0 devices='_'", "v3-8", "trainer.devices: IndexError: list index out of range"},
      {"v21_devices_empty_string",
       "2.1.4:src/lightning/fabric/accelerators/xla.py (_check_tpu_devices_valid)",
       "v=2.1 devices=''", "v3-8",
       "trainer.devices: `devices` can only be 'auto', 1, 8 or [<0-7>] for TPUs. Got []"},
      // Python's truthiness: `devices=''` beside tpu_cores is not "given".
      // A false tpu_cores picks no accelerator: `if tpu_cores:` after
      // `flag not in ([], 0, "0")` (1.9.5 accelerator_connector.py:494-514).
      {"v19_tpu_cores_zero_is_a_cpu_job",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:514",
       "v=1.9 tpu_cores=0", "v3-8", "cpu world=1 32-true auto v1",
       "Setting `Trainer(tpu_cores=0)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=0)` instead. | TPU available but not used. Set "
       "`accelerator` and `devices` using `Trainer(accelerator='tpu', devices=8)`."},
      {"v16_tpu_cores_string_zero_is_a_cpu_job",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:457",
       "v=1.6 tpu_cores='0'", "v3-8", "cpu world=1 32-true auto v1", kTpuUnused},
      {"v18_tpu_cores_none_is_absent",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py (is not None)",
       "v=1.8 tpu_cores=None", "v3-8", "cpu world=1 32-true auto v1", kTpuUnused},
      {"v16_tpu_cores_beside_empty_devices",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py (if devices:)",
       "v=1.6 tpu_cores=8 devices=''", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      // 1.6 takes an accelerator that names a strategy as the strategy, with a
      // deprecation warning (1.6.5 accelerator_connector.py:296-301).
      {"v16_accelerator_names_a_strategy",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:298",
       "v=1.6 accelerator=tpu_spawn_debug tpu_cores=8", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla_debug v1",
       "Passing `Trainer(accelerator='tpu_spawn_debug')` has been deprecated in v1.5 and will be "
       "removed in v1.7. Use `Trainer(strategy='tpu_spawn_debug')` instead."},
      {"v16_accelerator_tpu_spawn_is_built",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:264 (strategy only)",
       "v=1.6 accelerator=tpu_spawn tpu_cores=8", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Passing `Trainer(accelerator='tpu_spawn')` has been deprecated in v1.5 and will be "
       "removed in v1.7. Use `Trainer(strategy='tpu_spawn')` instead."},
      // accelerator='ddp_cpu' (no registered name) becomes the strategy
      // flag (1.6.5 accelerator_connector.py:302), refused on a TPU machine,
      // else 'ddp_spawn' (:604-612).
      {"v16_accelerator_ddp_cpu_on_a_tpu_machine",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:607",
       "v=1.6 accelerator=ddp_cpu tpu_cores=8", "v3-8",
       "trainer.accelerator: `accelerator='ddp_cpu'` is not supported on TPU machines. Learn more: "
       "https://github.com/Lightning-AI/lightning/issues/7810"},
      {"v160_accelerator_ddp_cpu_on_a_tpu_machine",
       "1.6.0:pytorch_lightning/trainer/connectors/accelerator_connector.py:579",
       "v=1.6.0 accelerator=ddp_cpu tpu_cores=8", "v3-8",
       "trainer.accelerator: `accelerator='ddp_cpu'` is not supported on TPU machines. Learn more: "
       "https://github.com/PyTorchLightning/pytorch-lightning/issues/7810"},
      {"v16_accelerator_ddp_cpu_is_ddp_spawn",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:612",
       "v=1.6 accelerator=ddp_cpu", "",
       "trainer.strategy: `strategy='ddp_spawn'` is not supported for `accelerator='cpu'` jobs: "
       "tpujobs runs them as one process on the executor's threads."},
      // strategy='ddp_cpu' itself is refused by name in every 1.x release,
      // first among the flag checks (1.6.5 accelerator_connector.py:259,
      // 1.7.7 :275, 1.9.5 :265); 2.0 no longer knows the name.
      {"v16_strategy_ddp_cpu",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:259",
       "v=1.6 strategy=DDP_CPU tpu_cores=8", "v3-8",
       "trainer.strategy: `Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp'|'ddp_spawn', accelerator='cpu')` instead."},
      {"v16_strategy_and_accelerator_ddp_cpu",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:259",
       "v=1.6 accelerator=ddp_cpu strategy=ddp_cpu", "v3-8",
       "trainer.strategy: `Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp'|'ddp_spawn', accelerator='cpu')` instead."},
      {"v17_strategy_ddp_cpu",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:275",
       "v=1.7 accelerator=cpu strategy=ddp_cpu", "",
       "trainer.strategy: `Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp'|'ddp_spawn'|'ddp_fork', accelerator='cpu')` instead."},
      {"v19_strategy_ddp_cpu",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:265",
       "v=1.9 accelerator=tpu devices=8 strategy=ddp_cpu", "v3-8",
       "trainer.strategy: `Trainer(strategy='ddp_cpu')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp'|'ddp_spawn'|'ddp_fork', accelerator='cpu')` instead."},
      {"v20_strategy_ddp_cpu_is_no_name",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:210",
       "v=2.0 strategy=ddp_cpu", "v3-8",
       "trainer.strategy: You selected an invalid strategy name: `strategy='ddp_cpu'`. It must be "
       "either a string or an instance of `lightning.pytorch.strategies.Strategy`. Example "
       "choices: "
       "auto, ddp, ddp_spawn, deepspeed, ... Find a complete list of options in our documentation "
       "at https://lightning.ai"},
      {"v16_accelerator_names_ddp",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:298",
       "v=1.6 accelerator=ddp tpu_cores=8", "v3-8", S(kWrongStrategy1, "DDPStrategy."),
       "Passing `Trainer(accelerator='ddp')` has been deprecated in v1.5 and will be removed in "
       "v1.7. Use `Trainer(strategy='ddp')` instead."},
      {"v16_accelerator_and_strategy_disagree",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:277",
       "v=1.6 accelerator=ddp strategy=DDP_Spawn tpu_cores=8", "v3-8",
       S("trainer.accelerator: strategy ddp_spawn already set through `strategy` flag, but have "
         "also passed ddp in through the accelerator flag. | ",
         S(kWrongStrategy1, "DDPSpawnStrategy."))},
      {"v19_devices_bad_string",
       "1.9.5:src/lightning_fabric/accelerators/tpu.py (_parse_tpu_devices_str)",
       "v=1.9 accelerator=tpu devices='x'", "v3-8",
       "trainer.devices: invalid literal for int() with base 10: 'x'"},
      {"v19_devices_auto_without_accelerator",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 devices=auto", "v3-8",
       "trainer.devices: You passed `devices=auto` but haven't specified "
       "`accelerator=('auto'|'tpu'|'gpu'|'ipu'|'cpu'|'hpu'|'mps')` for the devices mapping."},
      {"v19_devices_zero_names_flag",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 accelerator=tpu devices=0", "v3-8",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using tpu accelerator."},
      // --- tpu_cores ---------------------------------------------------------------------
      {"v16_tpu_cores_no_warning",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py", "v=1.6 tpu_cores=8",
       "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v17_tpu_cores_deprecated",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.7 tpu_cores=[2]", "v3-8", "tpu single v3 1x1 core=1 world=1 32-true single_xla v1",
       "Setting `Trainer(tpu_cores=[2])` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=[2])` instead."},
      {"v19_tpu_cores_string_repr",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 tpu_cores='8'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Setting `Trainer(tpu_cores='8')` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices='8')` instead."},
      {"v19_tpu_cores_with_devices",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py "
       "(test_accelerator_tpu_with_tpu_cores_priority)",
       "v=1.9 accelerator=tpu devices=1 tpu_cores=8", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1",
       "Setting `Trainer(tpu_cores=8)` is deprecated in v1.7 and will be removed in v2.0. Please "
       "use `Trainer(accelerator='tpu', devices=8)` instead. | The flag `devices=1` will be "
       "ignored, "
       "instead the device specific number 8 will be used"},
      {"v20_tpu_cores_removed", "2.0.9:src/lightning/pytorch/trainer/trainer.py",
       "v=2.0 tpu_cores=8", "v3-8", kUnexpectedTpuCores},
      {"v25_tpu_cores_removed_py39",
       "2.5.6:src/lightning/pytorch/trainer/trainer.py (Python 3.9 TypeError)",
       "v=2.5 tpu_cores=8 py=3.9 torch=2.5.0 xla=2.5.0", "v3-8",
       "trainer.tpu_cores: __init__() got an unexpected keyword argument 'tpu_cores'"},
      // --- accelerator -------------------------------------------------------------------
      {"v21_accelerator_hpu",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 accelerator=hpu", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='hpu'`. "
       "Available names are: auto, cpu, cuda, mps, tpu."},
      {"v25_accelerator_ipu",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.5 accelerator=ipu", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='ipu'`. "
       "Available names are: auto, cpu, cuda, mps, tpu."},
      {"v20_accelerator_hpu_registered",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.0 accelerator=hpu", "v3-8",
       "trainer.accelerator: `HPUAccelerator` can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu', 'tpu']."},
      {"v20_accelerator_unknown",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.0 accelerator=foo", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='foo'`. "
       "Available names are: auto, cpu, cuda, hpu, ipu, mps, tpu."},
      {"v21_accelerator_cuda",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 accelerator=cuda", "v3-8",
       "trainer.accelerator: `CUDAAccelerator` can not run on your system since the accelerator "
       "is not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu', 'tpu']."},
      {"v21_accelerator_gpu",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 accelerator=gpu", "v3-8", "trainer.accelerator: No supported gpu backend found!"},
      {"v17_accelerator_mps",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.7 accelerator=mps", "v3-8",
       "trainer.accelerator: MPSAccelerator can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu', 'tpu']."},
      // 1.6 keeps the flag only when it is a registered name, 'auto' or a
      // strategy name: any other string leaves it None, so Lightning picks
      // the CPU (or the TPU for tpu_cores) as if none was given.
      {"v16_accelerator_cuda_unknown",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:293 (dropped)",
       "v=1.6 accelerator=cuda", "v3-8", "cpu world=1 32-true auto v1", kTpuUnused},
      {"v16_cpu_devices_true", "1.6.5:pytorch_lightning/utilities/device_parser.py:154",
       "v=1.6 accelerator=cpu devices=True", "", "cpu world=1 32-true auto v1"},
      {"v16_accelerator_upper_case_dropped",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:294 (case-sensitive)",
       "v=1.6 accelerator=TPU tpu_cores=8", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v16_accelerator_unknown_devices_auto",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:439",
       "v=1.6 accelerator=foo devices=auto", "v3-8",
       "trainer.devices: You passed `devices=auto` but haven't specified "
       "`accelerator=('auto'|'tpu'|'gpu'|'ipu'|'cpu'|'hpu)` for the devices mapping"},
      {"v16_accelerator_unknown_devices_0",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:423",
       "v=1.6 accelerator=foo tpu_cores=8 devices=0", "v3-8",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using None accelerator."},
      {"v17_accelerator_unknown_refused",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:293",
       "v=1.7 accelerator=TPU", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='TPU'`. "
       "Available names are: cpu, cuda, hpu, ipu, mps, tpu."},
      {"v16_accelerator_gpu", "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.6 accelerator=gpu", "v3-8",
       "trainer.accelerator: GPUAccelerator can not run on your system since the accelerator is "
       "not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu', 'tpu']."},
      {"v21_cuda_devices_zero",
       "2.1.4:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_passing_zero_and_empty_list_to_devices_flag)",
       "v=2.1 accelerator=cuda devices=[]", "v3-8",
       "trainer.accelerator: `CUDAAccelerator` can not run on your system since the accelerator "
       "is not available. The following accelerator(s) is available and can be passed into "
       "`accelerator` argument of `Trainer`: ['cpu', 'tpu']. | trainer.devices: "
       "`Trainer(devices=[])` value is not a valid input using cuda accelerator."},
      {"v21_tpu_without_tpu",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 accelerator=tpu", "", S(S("trainer.accelerator: ", kNotAvailableXla), "['cpu'].")},
      {"v19_cpu_on_tpu_warns", "1.9.5:src/pytorch_lightning/trainer/setup.py (_log_device_info)",
       "v=1.9", "v4-8", "cpu world=1 32-true auto v1",
       "TPU available but not used. Set `accelerator` and `devices` using "
       "`Trainer(accelerator='tpu', devices=8)`."},
      {"v22_cpu_on_tpu_warns", "2.2.5:src/lightning/pytorch/trainer/setup.py (_log_device_info)",
       "v=2.2 accelerator=cpu", "v3-8", "cpu world=1 32-true auto",
       "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`."},
      // --- precision ---------------------------------------------------------------------
      {"v21_precision_int_repr",
       "2.1.4:src/lightning/fabric/connector.py (_convert_precision_to_unified_args)",
       "v=2.1 precision=1", "v3-8",
       S(S("trainer.precision: Precision 1 is invalid. Allowed precision values: ", kAllowed21),
         "")},
      {"v21_precision_transformer_engine", "2.1.4:src/lightning/pytorch/plugins/precision/xla.py",
       "v=2.1 precision=transformer-engine", "v3-8",
       S("trainer.precision: `precision='transformer-engine')` is not supported in XLA. ",
         kXlaOnly)},
      {"v20_precision_transformer_engine", "2.0.9:src/lightning/fabric/connector.py",
       "v=2.0 precision=transformer-engine", "v3-8",
       S(S("trainer.precision: Precision 'transformer-engine' is invalid. Allowed precision "
           "values: ",
           kAllowed20),
         "")},
      {"v20_precision_bf16_true_is_2_1", "2.0.9:src/lightning/fabric/connector.py",
       "v=2.0 precision=bf16-true", "v3-8",
       S(S("trainer.precision: Precision 'bf16-true' is invalid. Allowed precision values: ",
           kAllowed20),
         "")},
      {"v20_precision_16_mixed_on_tpu",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.0 precision=16", "v3-8", "tpu host v3 8x1 v3-8 world=8 bf16-true xla",
       "16 is supported for historical reasons but its usage is discouraged. Please set your "
       "precision to 16-mixed instead! | You passed `Trainer(accelerator='tpu', "
       "precision='16-mixed')` but AMP with fp16 is not supported on TPUs. Using "
       "`precision='bf16-mixed'` instead."},
      {"v20_precision_64_on_tpu",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.0 precision=64-true", "v3-8",
       "trainer.precision: `Trainer(accelerator='tpu', precision='64-true')` is not implemented. "
       "Please, open an issue in `https://github.com/Lightning-AI/lightning/issues` requesting "
       "this feature."},
      {"v23_precision_16_alias", "2.3.3:src/lightning/fabric/connector.py", "v=2.3 precision=16",
       "v3-8", S("trainer.precision: `precision='16-mixed')` is not supported in XLA. ", kXlaOnly),
       "`precision=16` is supported for historical reasons but its usage is discouraged. Please "
       "set your precision to 16-mixed instead!"},
      {"v25_precision_bf16_true", "2.5.6:src/lightning/pytorch/plugins/precision/xla.py",
       "v=2.5 precision=bf16-true", "v3-8", "tpu host v3 8x1 v3-8 world=8 bf16-true xla"},
      {"v18_precision_mixed_gone",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.8 accelerator=tpu precision=mixed", "v3-8",
       "trainer.precision: Precision 'mixed' is invalid. Allowed precision values: ('16', '32', "
       "'64', 'bf16')"},
      {"v16_precision_16_bf16",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.6 accelerator=tpu precision=16", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1",
       "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
       "Using `precision='bf16'` instead."},
      {"v19_precision_32_true_invalid",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 accelerator=tpu precision=32-true", "v3-8",
       "trainer.precision: Precision '32-true' is invalid. Allowed precision values: ('64', '32', "
       "'16', 'bf16', 64, 32, 16)"},
      {"v17_precision_64_on_tpu",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.7 accelerator=tpu precision=64", "v3-8",
       "trainer.precision: `Trainer(accelerator='tpu', precision=64)` is not implemented. Please, "
       "open an issue in `https://github.com/Lightning-AI/lightning/issues` requesting this "
       "feature."},
      // --- strategy ----------------------------------------------------------------------
      {"v21_strategy_upper_case",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 strategy=XLA", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v21_strategy_single_device", "2.1.4:src/lightning/pytorch/strategies/single_device.py",
       "v=2.1 strategy=single_device", "v3-8", S(kWrongStrategy21, "SingleDeviceStrategy.")},
      {"v22_strategy_ddp_find_unused", "2.2.5:src/lightning/pytorch/strategies/ddp.py",
       "v=2.2 strategy=ddp_spawn_find_unused_parameters_true", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v21_strategy_fsdp_cpu_offload",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 strategy=fsdp_cpu_offload", "v3-8",
       "trainer.strategy: You selected strategy to be `fsdp`, but GPU accelerator is not used."},
      // --- upstream unit tests, 2.5 -----------------------------------------------------------
      {"v25_precision_1",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_validate_precision_type[1])",
       "v=2.5 precision=1", "v3-8",
       "trainer.precision: Precision 1 is invalid. Allowed precision values: "
       "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
       "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')"},
      {"v25_precision_12",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_validate_precision_type[12])",
       "v=2.5 precision=12", "v3-8",
       "trainer.precision: Precision 12 is invalid. Allowed precision values: "
       "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
       "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')"},
      {"v25_precision_invalid",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_validate_precision_type[invalid])",
       "v=2.5 precision='invalid'", "v3-8",
       "trainer.precision: Precision 'invalid' is invalid. Allowed precision values: "
       "('transformer-engine', 'transformer-engine-float16', '16-true', '16-mixed', 'bf16-true', "
       "'bf16-mixed', '32-true', '64-true', 64, 32, 16, '64', '32', '16', 'bf16')"},
      {"v25_accelerator_invalid",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_accelerator_invalid_choice)",
       "v=2.5 accelerator=invalid", "v3-8",
       "trainer.accelerator: You selected an invalid accelerator name: `accelerator='invalid'`. "
       "Available names are: auto, cpu, cuda, mps, tpu."},
      {"v25_tpu_16_true_ddp",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.5 accelerator=tpu precision=16-true strategy=ddp", "v3-8",
       "trainer.strategy: The `XLAAccelerator` can only be used with a `SingleDeviceXLAStrategy` "
       "or "
       "`XLAStrategy`, found DDPStrategy."},
      // --- upstream unit tests, 2.0 -----------------------------------------------------------
      {"v20_tpu_precision_64_true",
       "2.0.9:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.0 accelerator=tpu precision=64-true", "v3-8",
       "trainer.precision: `Trainer(accelerator='tpu', precision='64-true')` is not implemented. "
       "Please, open an issue in `https://github.com/Lightning-AI/lightning/issues` requesting "
       "this feature."},
      {"v20_tpu_16_mixed_ddp",
       "2.0.9:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.0 accelerator=tpu precision=16-mixed strategy=ddp", "v3-8",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`XLAStrategy`, found DDPStrategy.",
       "You passed `Trainer(accelerator='tpu', precision='16-mixed')` but AMP with fp16 is not "
       "supported on TPUs. Using `precision='bf16-mixed'` instead."},
      // --- upstream unit tests, 1.9 -----------------------------------------------------------
      {"v19_tpu_precision_64",
       "1.9.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=1.9 accelerator=tpu precision=64", "v3-8",
       "trainer.precision: `Trainer(accelerator='tpu', precision=64)` is not implemented. Please, "
       "open an issue in `https://github.com/Lightning-AI/lightning/issues` requesting this "
       "feature."},
      {"v19_tpu_16_ddp",
       "1.9.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=1.9 accelerator=tpu precision=16 strategy=ddp", "v3-8",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`TPUSpawnStrategy`, found DDPStrategy.",
       "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
       "Using `precision='bf16'` instead."},
      {"v19_cpu_fsdp_native",
       "1.9.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_check_native_fsdp_strategy_and_fallback)",
       "v=1.9 accelerator=cpu strategy=fsdp_native", "v3-8",
       "trainer.strategy: You selected strategy to be `fsdp_native`, but GPU accelerator is not "
       "used."},
      {"v24_strategy_fsdp",
       "2.4.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_strategy_and_fallback)",
       "v=2.4 strategy=fsdp", "v3-8",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but got: tpu"},
      {"v25_strategy_fsdp_cpu",
       "2.5.6:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_check_fsdp_strategy_and_fallback)",
       "v=2.5 accelerator=cpu strategy=fsdp", "v3-8",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but received "
       "`accelerator='cpu'`. Please set `accelerator='cuda'`, `accelerator='gpu'`, or pass a "
       "`CUDAAccelerator()` instance to use FSDP."},
      {"v20_strategy_fsdp_cpu",
       "2.0.9:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_check_fsdp_strategy_and_fallback)",
       "v=2.0 accelerator=cpu strategy=fsdp", "v3-8",
       "trainer.strategy: You selected strategy to be `fsdp`, but GPU accelerator is not used."},
      {"v25_strategy_deepspeed_cpu",
       "2.5.6:src/lightning/pytorch/strategies/deepspeed.py (DeepSpeedStrategy.__init__)",
       "v=2.5 accelerator=cpu strategy=deepspeed", "v3-8",
       "trainer.strategy: To use the `DeepSpeedStrategy`, you must have DeepSpeed installed. "
       "Install it by running `pip install -U deepspeed`."},
      {"v24_strategy_single_tpu_gone", "2.4.0:src/lightning/pytorch/strategies/single_xla.py",
       "v=2.4 strategy=single_tpu", "v3-8",
       S("trainer.strategy: You selected an invalid strategy name: `strategy='single_tpu'`. ",
         kInvalidStrategy2)},
      {"v20_strategy_single_tpu", "2.0.9:src/lightning/pytorch/strategies/single_tpu.py",
       "v=2.0 devices=1 strategy=single_tpu", "v3-8",
       "tpu single v3 1x1 world=1 32-true single_xla"},
      {"v20_strategy_wrong",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.0 strategy=ddp", "v3-8",
       "trainer.strategy: The `TPUAccelerator` can only be used with a `SingleTPUStrategy` or "
       "`XLAStrategy`, found DDPStrategy."},
      {"v19_strategy_tpu_spawn",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 accelerator=tpu strategy=tpu_spawn", "v3-8",
       "trainer.strategy: `Trainer(strategy='tpu_spawn')` is not a valid strategy, you can use "
       "`Trainer(strategy='ddp_spawn', accelerator='tpu')` instead."},
      {"v19_strategy_ddp_spawn",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 accelerator=tpu strategy=ddp_spawn", "v3-8", S(kWrongStrategy1, "DDPSpawnStrategy.")},
      {"v19_strategy_debug", "1.9.5:src/pytorch_lightning/strategies/tpu_spawn.py",
       "v=1.9 accelerator=tpu strategy=tpu_spawn_debug", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla_debug v1"},
      {"v19_strategy_fsdp_native",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py",
       "v=1.9 accelerator=tpu strategy=fsdp_native", "v3-8",
       "trainer.strategy: You selected strategy to be `fsdp_native`, but GPU accelerator is not "
       "used."},
      {"v18_strategy_unknown_registry", "1.8.6:src/lightning_lite/strategies/registry.py",
       "v=1.8 accelerator=tpu strategy=xla", "v3-8",
       "trainer.strategy: \"'xla' not found in registry. Available names: bagua, colossalai, ddp, "
       "ddp_find_unused_parameters_false, ddp_fork, ddp_fork_find_unused_parameters_false, "
       "ddp_fully_sharded, ddp_notebook, ddp_notebook_find_unused_parameters_false, ddp_sharded, "
       "ddp_sharded_find_unused_parameters_false, ddp_sharded_spawn, "
       "ddp_sharded_spawn_find_unused_parameters_false, ddp_spawn, "
       "ddp_spawn_find_unused_parameters_false, deepspeed, deepspeed_stage_1, deepspeed_stage_2, "
       "deepspeed_stage_2_offload, deepspeed_stage_3, deepspeed_stage_3_offload, "
       "deepspeed_stage_3_offload_nvme, dp, fsdp, fsdp_native, fsdp_native_full_shard_offload, "
       "horovod, hpu_parallel, hpu_single, ipu_strategy, single_device, single_tpu, tpu_spawn, "
       "tpu_spawn_debug\""},
      {"v16_strategy_deepspeed", "1.6.5:pytorch_lightning/strategies/deepspeed.py",
       "v=1.6 accelerator=tpu strategy=deepspeed", "v3-8",
       "trainer.strategy: To use the DeepSpeed plugin, you must have DeepSpeed installed. pip "
       "install deepspeed"},
      // --- precision plugins and strategy registries, 1.9-2.4 (the plugin follows the strategy)
      // -----
      {"v21_tpu_16_true_ddp",
       "2.1.4:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.1 accelerator=tpu precision=16-true strategy=ddp", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v22_tpu_16_true_ddp",
       "2.2.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.2 accelerator=tpu precision=16-true strategy=ddp", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_tpu_16_true_ddp",
       "2.4.0:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_unsupported_tpu_choice)",
       "v=2.4 accelerator=tpu precision=16-true strategy=ddp", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v21_tpu_16_mixed_ddp_no_xla_precision",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision: XLAPrecision only for an XLA strategy)",
       "v=2.1 accelerator=tpu precision=16-mixed strategy=ddp", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_tpu_64_true_ddp_spawn",
       "2.4.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision)",
       "v=2.4 accelerator=tpu precision=64-true strategy=ddp_spawn", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_deepspeed_before_precision",
       "2.4.0:src/lightning/pytorch/strategies/deepspeed.py (the registry builds the strategy "
       "before the precision plugin)",
       "v=2.4 strategy=deepspeed_stage_3 precision=bf16-mixed", "v3-8",
       "trainer.strategy: To use the `DeepSpeedStrategy`, you must have DeepSpeed installed. "
       "Install it by running `pip install -U deepspeed`."},
      {"v22_fsdp_before_precision",
       "2.2.5:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_strategy_and_fallback before _check_and_init_precision)",
       "v=2.2 strategy=fsdp precision=16-mixed", "v3-8",
       "trainer.strategy: You selected strategy to be `fsdp`, but GPU accelerator is not used."},
      {"v21_ddp_spawn_devices_8",
       "2.1.4:tests/tests_pytorch/accelerators/test_xla.py "
       "(test_strategy_choice_tpu_str_ddp_spawn)",
       "v=2.1 strategy=ddp_spawn accelerator=tpu devices=8", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v22_ddp_spawn_devices_8",
       "2.2.5:tests/tests_pytorch/accelerators/test_xla.py "
       "(test_strategy_choice_tpu_str_ddp_spawn)",
       "v=2.2 strategy=ddp_spawn accelerator=tpu devices=8", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_ddp_spawn_devices_8",
       "2.4.0:tests/tests_pytorch/accelerators/test_xla.py "
       "(test_strategy_choice_tpu_str_ddp_spawn)",
       "v=2.4 strategy=ddp_spawn accelerator=tpu devices=8", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_xla_debug_devices_8",
       "2.4.0:tests/tests_pytorch/accelerators/test_xla.py "
       "(test_strategy_choice_tpu_str_xla_debug)",
       "v=2.4 strategy=xla_debug accelerator=tpu devices=8", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla_debug"},
      {"v21_xla_debug_registry",
       "2.1.4:tests/tests_pytorch/strategies/test_registry.py (test_xla_debug_strategy_registry)",
       "v=2.1 strategy=xla_debug", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla_debug"},
      {"v22_ddp_notebook_find_unused_true",
       "2.2.5:tests/tests_pytorch/strategies/test_registry.py "
       "(test_ddp_find_unused_parameters_strategy_registry)",
       "v=2.2 strategy=ddp_notebook_find_unused_parameters_true", "v3-8",
       S(kWrongStrategy21, "DDPStrategy.")},
      {"v24_deepspeed_stage_2_offload",
       "2.4.0:tests/tests_pytorch/strategies/test_registry.py "
       "(test_strategy_registry_with_deepspeed_strategies)",
       "v=2.4 strategy=deepspeed_stage_2_offload", "v3-8",
       "trainer.strategy: To use the `DeepSpeedStrategy`, you must have DeepSpeed installed. "
       "Install it by running `pip install -U deepspeed`."},
      {"v24_deepspeed_stage_1_offload_is_fabric_only",
       "2.4.0:src/lightning/pytorch/strategies/deepspeed.py (register_strategies: no "
       "stage_1_offload)",
       "v=2.4 strategy=deepspeed_stage_1_offload", "v3-8",
       S("trainer.strategy: You selected an invalid strategy name: "
         "`strategy='deepspeed_stage_1_offload'`. ",
         kInvalidStrategy2)},
      {"v24_accelerator_auto_devices_8",
       "2.4.0:tests/tests_pytorch/accelerators/test_xla.py (test_accelerator_tpu)",
       "v=2.4 accelerator=auto devices=8", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v22_accelerator_auto_devices_auto",
       "2.2.5:tests/tests_pytorch/accelerators/test_xla.py (test_accelerator_tpu)",
       "v=2.2 accelerator=auto devices=auto", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v21_accelerator_tpu_devices_auto",
       "2.1.4:tests/tests_pytorch/accelerators/test_xla.py (test_accelerator_tpu)",
       "v=2.1 accelerator=tpu devices=auto", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v24_device_ids_core2",
       "2.4.0:tests/tests_pytorch/accelerators/test_xla.py (test_trainer_config_device_ids[[2]])",
       "v=2.4 accelerator=tpu devices=[2]", "v3-8",
       "tpu single v3 1x1 core=2 world=1 32-true single_xla"},
      {"v24_device_ids_string_8",
       "2.4.0:tests/tests_pytorch/accelerators/test_xla.py (test_trainer_config_device_ids['8'])",
       "v=2.4 accelerator=tpu devices='8'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v21_device_ids_1",
       "2.1.4:tests/tests_pytorch/accelerators/test_xla.py (test_trainer_config_device_ids[1])",
       "v=2.1 accelerator=tpu devices=1", "v3-8", "tpu single v3 1x1 world=1 32-true single_xla"},
      {"v21_xla_precision_16_mixed",
       "2.1.4:tests/tests_pytorch/plugins/precision/test_xla.py (test_precision_input_validation)",
       "v=2.1 accelerator=tpu precision=16-mixed", "v3-8",
       S("trainer.precision: `precision='16-mixed')` is not supported in XLA. ", kXlaOnly)},
      {"v22_xla_precision_bf16_mixed",
       "2.2.5:tests/tests_pytorch/plugins/precision/test_xla.py (test_precision_input_validation)",
       "v=2.2 accelerator=tpu precision=bf16-mixed", "v3-8",
       S("trainer.precision: `precision='bf16-mixed')` is not supported in XLA. ", kXlaOnly)},
      {"v24_xla_precision_64_true",
       "2.4.0:tests/tests_pytorch/plugins/precision/test_xla.py (test_precision_input_validation)",
       "v=2.4 accelerator=tpu precision=64-true", "v3-8",
       S("trainer.precision: `precision='64-true')` is not supported in XLA. ", kXlaOnly)},
      {"v22_xla_precision_16_alias",
       "2.2.5:src/lightning/fabric/connector.py (_convert_precision_to_unified_args) + "
       "plugins/precision/xla.py",
       "v=2.2 accelerator=tpu precision='16'", "v3-8",
       S("trainer.precision: `precision='16-mixed')` is not supported in XLA. ", kXlaOnly),
       "`precision=16` is supported for historical reasons but its usage is discouraged. Please "
       "set your precision to 16-mixed instead!"},
      // _desired_dtype is float16 (test_selected_dtype) but nothing uses it;
      // XLA_USE_F16 (test_teardown) is not what torch_xla 2.4 reads
      // (XLA_USE_FP16, v2.4.0 torch_xla/csrc/dtype.cpp:22): float32.
      {"v24_xla_precision_16_true",
       "2.4.0:src/lightning/pytorch/plugins/precision/xla.py:54; "
       "2.4.0:tests/tests_pytorch/plugins/precision/test_xla.py (test_teardown)",
       "v=2.4 accelerator=tpu precision=16-true", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla",
       "tpujobs: precision='16-true' on a TPU trains in float32 under Lightning 2.4, as it does on "
       "a real TPU: Lightning's XLAPrecision sets XLA_USE_F16=1, which torch_xla does not read "
       "(torch_xla 2.4 reads XLA_USE_FP16), and nothing converts the model, so the model stays "
       "float32: no memory saving and no fp16 arithmetic. tpujobs runs and sizes this job in "
       "float32. Hint: use precision \"bf16-true\" for half precision on TPUs."},
      {"v21_xla_precision_bf16_true",
       "2.1.4:tests/tests_pytorch/plugins/precision/test_xla.py (test_selected_dtype)",
       "v=2.1 accelerator=tpu precision=bf16-true devices=1", "v3-8",
       "tpu single v3 1x1 world=1 bf16-true single_xla"},
      {"v22_accelerator_choice_tpu_core1",
       "2.2.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_accelerator_choice_tpu[tpu-devices2])",
       "v=2.2 accelerator=tpu devices=[1]", "v3-8",
       "tpu single v3 1x1 core=1 world=1 32-true single_xla"},
      {"v22_accelerator_choice_auto_1",
       "2.2.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_accelerator_choice_tpu[auto-1])",
       "v=2.2 accelerator=auto devices=1", "v3-8", "tpu single v3 1x1 world=1 32-true single_xla"},
      {"v24_accelerator_choice_tpu_auto_v4",
       "2.4.0:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_accelerator_choice_tpu[tpu-auto])",
       "v=2.4 accelerator=tpu devices=auto", "v4-8", "tpu host v4 4x1 v4-8 world=4 32-true xla"},
      {"v24_zero_devices_tpu_string",
       "2.4.0:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_passing_zero_and_empty_list_to_devices_flag)",
       "v=2.4 accelerator=tpu devices='0'", "v3-8",
       "trainer.devices: `Trainer(devices='0')` value is not a valid input using tpu accelerator."},
      {"v22_zero_devices_tpu_list",
       "2.2.5:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_passing_zero_and_empty_list_to_devices_flag)",
       "v=2.2 accelerator=tpu devices=[]", "v3-8",
       "trainer.devices: `Trainer(devices=[])` value is not a valid input using tpu accelerator."},
      {"v24_zero_devices_cpu",
       "2.4.0:tests/tests_pytorch/trainer/connectors/test_accelerator_connector.py "
       "(test_passing_zero_and_empty_list_to_devices_flag)",
       "v=2.4 accelerator=cpu devices=0", "v3-8",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using cpu accelerator."},
      {"v21_cpu_transformer_engine",
       "2.1.4:src/lightning/fabric/plugins/precision/transformer_engine.py "
       "(TransformerEnginePrecision.__init__)",
       "v=2.1 accelerator=cpu precision=transformer-engine", "",
       "trainer.precision: Requirement 'transformer_engine>=0.11.0' not met. HINT: Try running "
       "`pip install -U 'transformer_engine>=0.11.0'`"},
      {"v24_ddp_transformer_engine_float16",
       "2.4.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision: TransformerEnginePrecision for a non-XLA strategy)",
       "v=2.4 accelerator=tpu strategy=ddp precision=transformer-engine-float16", "v3-8",
       "trainer.precision: Requirement 'transformer_engine>=0.11.0' not met. HINT: Try running "
       "`pip install -U 'transformer_engine>=0.11.0'` | trainer.strategy: The `XLAAccelerator` can "
       "only be used with a `SingleDeviceXLAStrategy` or `XLAStrategy`, found DDPStrategy."},
      // 1.9
      {"v19_accelerator_auto_devices_8",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py (test_accelerator_tpu)",
       "v=1.9 accelerator=auto devices=8", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v19_accelerator_auto_devices_auto",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py (test_accelerator_tpu)",
       "v=1.9 accelerator=auto devices=auto", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v19_accelerator_tpu_devices_none",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py (test_accelerator_tpu)",
       "v=1.9 accelerator=tpu", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v19_device_ids_string_core",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py (test_trainer_config_device_ids['2,']: "
       "1-based)",
       "v=1.9 accelerator=tpu devices='2,'", "v3-8",
       "tpu single v3 1x1 core=1 world=1 32-true single_xla v1"},
      {"v19_device_ids_string_8",
       "1.9.5:tests/tests_pytorch/accelerators/test_tpu.py (test_trainer_config_device_ids['8'])",
       "v=1.9 accelerator=tpu devices='8'", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v19_strategy_bagua",
       "1.9.5:src/pytorch_lightning/strategies/bagua.py (BaguaStrategy.__init__)",
       "v=1.9 accelerator=tpu strategy=bagua", "v3-8",
       "trainer.strategy: To use the `BaguaStrategy`, you must have `Bagua` installed. Use `pip "
       "install bagua` to install it."},
      {"v19_strategy_horovod",
       "1.9.5:src/pytorch_lightning/strategies/horovod.py (HorovodStrategy.__init__)",
       "v=1.9 accelerator=tpu strategy=horovod precision=64", "v3-8",
       "trainer.strategy: Requested `strategy=\"horovod\"`, but Horovod is not installed. Install "
       "with `HOROVOD_WITH_PYTORCH=1 pip install horovod[pytorch]`"},
      // 2.0-2.2 check for the separate packages right after lower-casing,
      // before the name (2.0.9 accelerator_connector.py:203-207), with
      // str(RequirementCache(...)) of the newest lightning-utilities < 1.0.
      {"v20_strategy_colossalai",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:203-204",
       "v=2.0 strategy=colossalai", "v3-8",
       "trainer.strategy: Requirement 'lightning-colossalai' not met. HINT: Try running `pip "
       "install -U 'lightning-colossalai'`"},
      {"v21_strategy_bagua_upper",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:192, :198-199",
       "v=2.1 strategy=Bagua", "v3-8",
       "trainer.strategy: Requirement 'lightning-bagua' not met. HINT: Try running `pip install "
       "-U 'lightning-bagua'`"},
      {"v22_strategy_colossalai_cpu_py38",
       "2.2.5:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:196-197; "
       "Lightning-AI/utilities v0.11.9:src/lightning_utilities/core/imports.py:148",
       "pl=2.2.5 torch=2.2.0 py=3.8 accelerator=cpu strategy=colossalai", "v3-8",
       "trainer.strategy: Requirement 'lightning-colossalai' not met. HINT: Try running `pip "
       "install -U 'lightning-colossalai'`"},
      // 2.0.0 checks ColossalAI only (accelerator_connector.py:202): 'bagua'
      // is not a name it knows.
      {"v200_strategy_bagua",
       "2.0.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:205",
       "v=2.0.0 strategy=bagua", "v3-8",
       S("trainer.strategy: You selected an invalid strategy name: `strategy='bagua'`. ",
         kInvalidStrategy2)},
      // 2.3 dropped both checks.
      {"v23_strategy_colossalai",
       "2.3.3:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.3 strategy=colossalai", "v3-8",
       S("trainer.strategy: You selected an invalid strategy name: `strategy='colossalai'`. ",
         kInvalidStrategy2)},
      {"v18_strategy_colossalai",
       "1.8.6:src/pytorch_lightning/strategies/colossalai.py (ColossalAIStrategy.__init__)",
       "v=1.8 accelerator=tpu strategy=colossalai", "v3-8",
       "trainer.strategy: To use the `ColossalAIStrategy`, please install `colossalai` first. "
       "Download `colossalai` by consulting `https://colossalai.org/download`."},
      {"v20_strategy_hpu_parallel",
       "2.0.9:src/lightning/pytorch/strategies/hpu_parallel.py (HPUParallelStrategy.__init__)",
       "v=2.0 strategy=hpu_parallel", "v3-8",
       "trainer.strategy: `HPUParallelStrategy` requires HPU devices to run"},
      {"v16_strategy_ipu", "1.6.5:pytorch_lightning/strategies/ipu.py (IPUStrategy.__init__)",
       "v=1.6 accelerator=tpu strategy=ipu_strategy", "v3-8",
       "trainer.strategy: The IPU Accelerator requires IPU devices to run. Learn more or get "
       "started with IPUs at https://www.graphcore.ai/getstarted"},
      {"v19_strategy_ddp_sharded",
       "1.9.5:src/pytorch_lightning/strategies/sharded.py (FairScale deprecation)",
       "v=1.9 accelerator=tpu strategy=ddp_sharded", "v3-8",
       S(kWrongStrategy1, "DDPShardedStrategy."),
       "PyTorch Lightning's sharded implementation using FairScale has been deprecated in v1.9.0 "
       "and will be removed in v2.0.0. You can try using the `Trainer(strategy='fsdp_native')` "
       "instead. The difference is that native FSDP uses PyTorch's implementation and the current "
       "strategy uses FairScale's implementation (which was upstreamed to PyTorch). After removal, "
       "`strategy='fsdp'` will use the native version by default."},
      {"v18_strategy_ddp_sharded_no_warning", "1.8.6:src/pytorch_lightning/strategies/sharded.py",
       "v=1.8 accelerator=tpu strategy=ddp_sharded", "v3-8",
       S(kWrongStrategy1, "DDPShardedStrategy.")},
      // --- 2.x on the CPU: '16-mixed' becomes 'bf16-mixed' with a warning -----------------------
      {"v20_cpu_16_mixed",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision)",
       "v=2.0 accelerator=cpu precision=16-mixed", "", "cpu world=1 bf16-true auto",
       "You passed `Trainer(accelerator='cpu', precision='16-mixed')` but AMP with fp16 is not "
       "supported on CPU. Using `precision='bf16-mixed'` instead."},
      {"v21_cpu_16_alias",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision)",
       "v=2.1 accelerator=cpu precision=16", "", "cpu world=1 bf16-true auto",
       "`precision=16` is supported for historical reasons but its usage is discouraged. Please "
       "set your precision to 16-mixed instead! | You passed `Trainer(accelerator='cpu', "
       "precision='16-mixed')` but AMP with fp16 is not supported on CPU. Using "
       "`precision='bf16-mixed'` instead."},
      {"v25_cpu_16_mixed_tpu_pool",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision)",
       "v=2.5 accelerator=cpu precision=16-mixed", "v3-8", "cpu world=1 bf16-true auto",
       "You passed `Trainer(accelerator='cpu', precision='16-mixed')` but AMP with fp16 is not "
       "supported on CPU. Using `precision='bf16-mixed'` instead. | TPU available but not used. "
       "You can set it by doing `Trainer(accelerator='tpu')`."},
      {"v24_cpu_bf16_mixed",
       "2.4.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (MixedPrecision on "
       "the CPU)",
       "v=2.4 accelerator=cpu precision=bf16-mixed", "", "cpu world=1 bf16-true auto"},
      {"v19_cpu_16",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py "
       "(_check_and_init_precision)",
       "v=1.9 accelerator=cpu precision=16", "", "cpu world=1 bf16-true auto v1",
       "You passed `Trainer(accelerator='cpu', precision=16)` but native AMP is not supported on "
       "CPU. Using `precision='bf16'` instead."},
      // --- num_nodes, runtime ------------------------------------------------------------
      {"v21_num_nodes_zero",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py",
       "v=2.1 num_nodes=0", "v3-8",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got 0."},
      {"v21_xrt_allowed", "2.1.4:src/lightning/fabric/accelerators/xla.py (_using_pjrt)",
       "v=2.1 runtime=xrt env.XRT_TPU_CONFIG=localservice;0;localhost:51011", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"v22_xrt_refused", "2.2.5:src/lightning/fabric/accelerators/xla.py", "v=2.2 runtime=xrt",
       "v3-8", "runtime: The XLA XRT runtime is not supported anymore."},
      // --- v4 slices are 3-D topologies ----------------------------------------------------
      {"topology_v4_384", "cloud.google.com/tpu/docs/v4 (4x4x12 chips)", "type=v4-384", "v4-384",
       "tpu slice v4 4x48 v4-384 world=192 32-true xla"},
      {"topology_v4_96_is_no_slice", "cloud.google.com/tpu/docs/v4 (48 chips: no AxBxC of cubes)",
       "devices=4 num_nodes=12", "v4-384",
       "trainer.num_nodes: `devices=4` x `num_nodes=12` makes a v4-96, which is not a valid v4 "
       "slice. Valid v4 slices: v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-384, v4-512, v4-768, "
       "v4-1024, v4-1152, v4-1536, v4-2048, v4-2304, v4-3072, v4-3456, v4-4096, v4-4608, v4-6144, "
       "v4-8192."},
      // --- environment -------------------------------------------------------------------
      {"env_selects_rules", "2.0.9:src/lightning/fabric/accelerators/tpu.py",
       "pl=2.0.9 torch=2.0.1 xla=2.0 py=3.10 devices=[1]", "v3-8",
       "tpu single v3 1x1 core=0 world=1 32-true single_xla"},
      {"env_disagrees_with_version", "environment.lightning selects the rules",
       "pl=2.1.3 v=1.x torch=2.1.0 xla=2.1.0", "v3-8",
       "lightning_version: `lightning_version` '1.x' selects the rules of Lightning 1.9, but "
       "`environment.lightning` is 2.1.3."},
      {"env_torch_xla_mismatch", "pytorch/xla#8292 (ImportError of _XLAC)",
       "pl=2.4.0 torch=2.4.1 xla=2.5.0 py=3.10", "v3-8",
       "environment.torch_xla: ImportError: /usr/local/lib/python3.10/dist-packages/_XLAC.cpython-"
       "310-x86_64-linux-gnu.so: undefined symbol: _ZN2at6native12cpu_fallbackERKN3c1014Operator"
       "HandleEPSt6vectorINS1_6IValueESaIS6_EEbNS1_11DispatchKeyE"},
      // CPython 3.7's extension suffix carries the pymalloc "m" (PEP 3149;
      // gone in 3.8): pytorch/xla#2538 shows "_XLAC.cpython-37m-x86_64-linux-gnu.so".
      {"env_torch_mismatch_python_37", "pytorch/xla#2538 (cpython-37m)",
       "pl=1.8.6 torch=1.12.1 xla=1.13 py=3.7 accelerator=tpu devices=8", "v3-8",
       "environment.torch_xla: ImportError: /usr/local/lib/python3.7/dist-packages/"
       "_XLAC.cpython-37m-x86_64-linux-gnu.so: undefined symbol: "
       "_ZN5torch8autograd12VariableInfoC1ERKN2at6TensorE"},
      {"env_torch_mismatch_python_38", "pytorch/xla#5553 (cpython-38)",
       "pl=1.8.6 torch=1.12.1 xla=1.13 py=3.8 accelerator=tpu devices=8", "v3-8",
       "environment.torch_xla: ImportError: /usr/local/lib/python3.8/dist-packages/"
       "_XLAC.cpython-38-x86_64-linux-gnu.so: undefined symbol: "
       "_ZN5torch8autograd12VariableInfoC1ERKN2at6TensorE"},
      {"env_no_torch_xla_tpu",
       "2.1.4:src/lightning/fabric/accelerators/xla.py (XLAAccelerator.__init__)",
       "pl=2.1.3 torch=2.1.0 accelerator=tpu", "v3-8",
       "trainer.accelerator: Requirement 'torch_xla>=1.13' not met. HINT: Try running `pip "
       "install -U 'torch_xla>=1.13'`"},
      // 1.8-1.9: TPUAccelerator.__init__ raises ModuleNotFoundError(str(_XLA_AVAILABLE))
      // (1.9.5 src/pytorch_lightning/accelerators/tpu.py:29) before is_available().
      {"env_v18_no_torch_xla_utilities_03",
       "lightning-utilities v0.3.0 imports.py:98 (1.8.0-1.8.3 pin ==0.3.*)",
       "pl=1.8.2 torch=1.12.1 py=3.8 accelerator=tpu", "v3-8",
       "trainer.accelerator: Requirement 'torch_xla' not met, DistributionNotFound: The "
       "'torch_xla' distribution was not found and is required by the application"},
      {"env_v18_no_torch_xla", "1.8.6:src/lightning_lite/accelerators/tpu.py:120",
       "pl=1.8.6 torch=1.12.1 py=3.8 accelerator=tpu", "v3-8",
       "trainer.accelerator: Requirement 'torch_xla' not met. HINT: Try running `pip install -U "
       "'torch_xla'`"},
      {"env_v190_no_torch_xla", "1.9.0:src/lightning_fabric/accelerators/tpu.py:120",
       "pl=1.9.0 torch=1.13.1 py=3.8 accelerator=tpu", "v3-8",
       "trainer.accelerator: Requirement 'torch_xla' not met. HINT: Try running `pip install -U "
       "'torch_xla'`"},
      // 1.8.4-1.9.0 install the newest lightning-utilities, which on Python 3.7
      // is 0.10.1 (0.11.0 requires 3.8): pkg_resources' words and the HINT.
      {"env_v184_no_torch_xla_python37",
       "lightning-utilities v0.10.1 imports.py:137 (1.8.4 requirements/pytorch/base.txt:13, "
       "upper bound dropped)",
       "pl=1.8.4 torch=1.12.1 py=3.7 accelerator=tpu", "v3-8",
       "trainer.accelerator: DistributionNotFound: The 'torch_xla' distribution was not found and "
       "is required by the application. HINT: Try running `pip install -U 'torch_xla'`"},
      {"env_v190_no_torch_xla_python37_tpu_cores",
       "lightning-utilities v0.10.1 imports.py:137 (1.9.0 requirements/pytorch/base.txt)",
       "pl=1.9.0 torch=1.13.1 py=3.7 tpu_cores=8", "v3-8",
       "trainer.tpu_cores: DistributionNotFound: The 'torch_xla' distribution was not found and is "
       "required by the application. HINT: Try running `pip install -U 'torch_xla'`",
       kDeprecated8},
      {"env_v191_no_torch_xla_tpu_cores", "1.9.1:src/lightning_fabric/accelerators/tpu.py:120",
       "pl=1.9.1 torch=1.13.1 py=3.8 tpu_cores=8", "v3-8",
       "trainer.tpu_cores: Module not found: 'torch_xla'. HINT: Try running `pip install -U "
       "torch_xla`",
       kDeprecated8},
      {"env_v195_no_torch_xla", "1.9.5:src/lightning_fabric/accelerators/tpu.py:120",
       "pl=1.9.5 torch=1.13.1 py=3.8 accelerator=tpu", "v3-8",
       "trainer.accelerator: Module not found: 'torch_xla'. HINT: Try running `pip install -U "
       "torch_xla`"},
      {"env_no_torch_xla_auto_is_cpu",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_choose_auto_accelerator)",
       "pl=2.1.3 torch=2.1.0", "v3-8", "cpu world=1 32-true auto"},
      {"env_lightning_needs_newer_torch",
       "2.3.3:requirements/pytorch/base.txt, upper bound raised to <3.0 at install",
       "pl=2.3.0 torch=1.13.1 xla=1.13 py=3.8", "v3-8",
       "environment.torch: ERROR: pip's dependency resolver does not currently take into account "
       "all the packages that are installed. This behaviour is the source of the following "
       "dependency conflicts.\nlightning 2.3.0 requires torch<3.0,>=2.0.0, but you have torch "
       "1.13.1 which is incompatible."},
      {"env_python_without_wheel",
       "pytorch/xla v2.5.0:README.md (torch_xla 2.5 wheels: cp39-cp311)",
       "pl=2.5.0 torch=2.5.0 xla=2.5.0 py=3.8", "v3-8",
       "environment.lightning: ERROR: No matching distribution found for lightning==2.5.0 | "
       "environment.torch_xla: ERROR: No matching distribution found for torch_xla==2.5.0"},
      // --- Python, by release (python_requires) ---------------------------------------------
      {"env_python_38_lightning_24", "2.4.0:src/lightning/__setup__.py (python_requires >=3.9)",
       "pl=2.4.0 torch=2.3.0 xla=2.3.0 py=3.8 accelerator=cpu", "v3-8",
       "environment.lightning: ERROR: No matching distribution found for lightning==2.4.0"},
      {"env_python_38_lightning_23", "2.3.3:src/lightning/__setup__.py (python_requires >=3.8)",
       "pl=2.3.3 torch=2.3.0 xla=2.3.0 py=3.8", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"env_python_36_lightning_19",
       "1.9.5:src/pytorch_lightning/__setup__.py (python_requires >=3.7)",
       "pl=1.9.5 py=3.6 accelerator=cpu", "v3-8",
       "environment.lightning: ERROR: No matching distribution found for pytorch-lightning==1.9.5"},
      {"env_python_37_lightning_20", "2.0.9:src/lightning/__setup__.py (python_requires >=3.8)",
       "pl=2.0.9 py=3.7 accelerator=cpu", "v3-8",
       "environment.lightning: ERROR: No matching distribution found for lightning==2.0.9"},
      // --- num_nodes of other types: int(num_nodes) up to 2.0, isinstance(int) from 2.1 --------
      {"v20_num_nodes_str",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (int(num_nodes))",
       "v=2.0 accelerator=tpu devices=8 num_nodes='4'", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"v20_num_nodes_float_truncates",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (int(num_nodes))",
       "v=2.0 accelerator=tpu devices=8 num_nodes=4.7", "v3-32",
       "tpu slice v3 8x4 v3-32 world=32 32-true xla"},
      {"v20_num_nodes_bad_literal",
       "2.0.9:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (int(num_nodes))",
       "v=2.0 num_nodes='2.5'", "v3-32",
       "trainer.num_nodes: invalid literal for int() with base 10: '2.5'"},
      {"v16_num_nodes_none",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py (None is 1)",
       "v=1.6 tpu_cores=8 num_nodes=None", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"v19_num_nodes_list",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py (int(num_nodes))",
       "v=1.9 accelerator=tpu devices=8 num_nodes=[4]", "v3-32",
       "trainer.num_nodes: int() argument must be a string, a bytes-like object or a real number, "
       "not 'list'"},
      {"v19_num_nodes_list_python_38",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py (int(num_nodes)); "
       "CPython 3.8",
       "pl=1.9.5 torch=1.13.1 xla=1.13.0 py=3.8 accelerator=tpu devices=8 num_nodes=[4]", "v3-32",
       "trainer.num_nodes: int() argument must be a string, a bytes-like object or a number, not "
       "'list'"},
      {"v21_num_nodes_str",
       "2.1.4:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_device_config_and_set_final_flags)",
       "v=2.1 num_nodes='4'", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got 4."},
      {"v25_num_nodes_float",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_device_config_and_set_final_flags)",
       "v=2.5 num_nodes=4.0", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got 4.0."},
      {"v25_num_nodes_false",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_device_config_and_set_final_flags)",
       "v=2.5 num_nodes=False", "v3-32",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got False."},
      {"v25_num_nodes_none",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py "
       "(_check_device_config_and_set_final_flags)",
       "v=2.5 num_nodes=None", "v3-8",
       "trainer.num_nodes: `num_nodes` must be a positive integer, but got None."},
      {"v25_num_nodes_true_is_1",
       "2.5.6:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (isinstance(True, "
       "int))",
       "v=2.5 num_nodes=True", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"env_xla_use_bf16_notice", "pytorch/xla v2.4.0:torch_xla/csrc/dtype.cpp (ShouldUseBF16)",
       "pl=2.4.0 torch=2.4.0 xla=2.4.0 py=3.10 env.XLA_USE_BF16=1", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla",
       "XLA_USE_BF16 will be deprecated after the 2.4 release, please convert your model to bf16 "
       "directly"},
      // XLAPrecision('bf16-true') sets XLA_USE_BF16=1 itself, so torch_xla
      // 2.4 and 2.5 print their notice for it too, once.
      {"env_bf16_true_sets_xla_use_bf16",
       "2.5.6:src/lightning/pytorch/plugins/precision/xla.py:57; pytorch/xla "
       "v2.5.0:torch_xla/csrc/dtype.cpp:14",
       "pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 precision=bf16-true", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla",
       "XLA_USE_BF16 will be deprecated after the 2.5 release, please convert your model to bf16 "
       "directly"},
      {"env_bf16_true_torch_xla_24",
       "2.4.0:src/lightning/pytorch/plugins/precision/xla.py:57; pytorch/xla "
       "v2.4.0:torch_xla/csrc/dtype.cpp:14",
       "pl=2.4.0 torch=2.4.0 xla=2.4.0 py=3.10 precision=bf16-true devices=1", "v3-8",
       "tpu single v3 1x1 world=1 bf16-true single_xla",
       "XLA_USE_BF16 will be deprecated after the 2.4 release, please convert your model to bf16 "
       "directly"},
      {"env_bf16_true_and_env_notice_once",
       "pytorch/xla v2.5.0:torch_xla/csrc/dtype.cpp:34 (static: read once)",
       "pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 precision=bf16-true env.XLA_USE_BF16=1", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla",
       "XLA_USE_BF16 will be deprecated after the 2.5 release, please convert your model to bf16 "
       "directly"},
      {"env_bf16_true_torch_xla_23_silent", "pytorch/xla v2.3.0:torch_xla/csrc/dtype.cpp",
       "pl=2.5.6 torch=2.3.0 xla=2.3.0 py=3.10 precision=bf16-true", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla"},
      {"env_32_true_torch_xla_25_silent", "2.5.6:src/lightning/pytorch/plugins/precision/xla.py",
       "pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 precision=32-true", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"env_xla_use_bf16_silent_before_2_4", "pytorch/xla v2.1.0:torch_xla/csrc/dtype.cpp",
       "pl=2.1.3 torch=2.1.0 xla=2.1.0 env.XLA_USE_BF16=true", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla"},
      // torch_xla 2.4 reads the user's XLA_USE_FP16 first (dtype.cpp:180-185)
      // and prints its own notice; XLA_USE_BF16 is then never read.
      {"env_xla_use_fp16_notice_24", "pytorch/xla v2.4.0:torch_xla/csrc/dtype.cpp:25",
       "pl=2.4.0 torch=2.4.0 xla=2.4.0 py=3.10 env.XLA_USE_FP16=1 env.XLA_USE_BF16=1", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 16-true xla",
       "XLA_USE_FP16 will be deprecated after the 2.4 release, please convert your model to fp16 "
       "directly | tpujobs: env XLA_USE_FP16 makes torch_xla 2.4 store every float32 tensor on "
       "the TPU as float16 (torch_xla reads it itself, and before XLA_USE_BF16), so this job "
       "trains and is sized in float16, not as precision='32-true' says. Unset XLA_USE_FP16 to "
       "train in '32-true'."},
      {"env_xla_use_fp16_read_false_24", "pytorch/xla v2.4.0:torch_xla/csrc/dtype.cpp:22",
       "pl=2.4.0 torch=2.4.0 xla=2.4.0 py=3.10 env.XLA_USE_FP16=0", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      // torch_xla 2.5 no longer reads it; `import torch_xla` warns when it is
      // set at all (`if os.environ.get(env_var)`), "0" too, on the CPU too.
      {"env_xla_use_fp16_import_warning_25", "pytorch/xla v2.5.0:torch_xla/__init__.py:188",
       "pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 accelerator=cpu env.XLA_USE_FP16=0", "v3-8",
       "cpu world=1 32-true auto",
       "The environment variable 'XLA_USE_FP16' is deprecated Please update your code to avoid "
       "using it. | TPU available but not used. You can set it by doing "
       "`Trainer(accelerator='tpu')`."},
      {"env_xla_use_fp16_empty_25", "pytorch/xla v2.5.0:torch_xla/__init__.py:188",
       "pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 env.XLA_USE_FP16=", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      // Lightning 2.0's TPUBf16PrecisionPlugin sets XLA_USE_BF16 too
      // (2.0.9 plugins/precision/tpu_bf16.py:31).
      {"env_v20_bf16_mixed_torch_xla_24",
       "2.0.9:src/lightning/pytorch/plugins/precision/tpu_bf16.py:31",
       "pl=2.0.9 torch=2.4.0 xla=2.4.0 py=3.10 precision=bf16-mixed", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla",
       "XLA_USE_BF16 will be deprecated after the 2.4 release, please convert your model to bf16 "
       "directly"},
      {"env_xrt_removed", "pytorch/xla v2.2.0 (XRT removed)",
       "pl=2.1.3 torch=2.2.0 xla=2.2.0 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "runtime: torch_xla 2.2.0 has no XRT runtime (removed in torch_xla 2.2)."},
      // The upper bound of requirements/pytorch/base.txt is not what pip
      // enforces: a torch newer than it installs (2.x: below 3.0; 1.x: any).
      {"env_torch_newer_than_the_ci_bound_installs",
       "2.1.4:src/lightning/__setup__.py (unfreeze=\"major\")",
       "pl=2.1.4 torch=2.3.0 xla=2.3.0 py=3.10", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"env_torch_newer_than_the_ci_bound_installs_1x",
       "1.9.5:src/pytorch_lightning/__setup__.py (unfreeze=\"all\")",
       "pl=1.9.5 torch=2.1.0 xla=2.1.0 py=3.10 accelerator=tpu devices=8", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla v1"},
      {"env_unknown_torch_xla_is_tpujobs_own_refusal",
       "pytorch/xla v2.6.0 exists: not pip's 'No matching distribution'",
       "pl=2.5.6 torch=2.6.0 xla=2.6.0 py=3.10", "v3-8",
       "environment.torch_xla: torch_xla 2.6.0 is not a release tpujobs reproduces (1.13, and 2.0 "
       "to 2.5)."},
      {"env_torch_3_is_refused_by_2x", "2.5.6:src/lightning/__setup__.py (unfreeze=\"major\")",
       "pl=2.5.6 torch=3.0.0 py=3.10", "v3-8",
       "environment.torch: ERROR: pip's dependency resolver does not currently take into account "
       "all the packages that are installed. This behaviour is the source of the following "
       "dependency conflicts.\nlightning 2.5.6 requires torch<3.0,>=2.1.0, but you have torch "
       "3.0.0 which is incompatible."},
      {"env_lightning_180_to_183_torch_star", "1.8.3:requirements/pytorch/base.txt:5",
       "pl=1.8.2 torch=1.8.1 py=3.8", "",
       "environment.torch: ERROR: pip's dependency resolver does not currently take into account "
       "all the packages that are installed. This behaviour is the source of the following "
       "dependency conflicts.\npytorch-lightning 1.8.2 requires torch>=1.9.*, but you have torch "
       "1.8.1 which is incompatible."},
      {"env_lightning_184_torch_zero", "1.8.4:requirements/pytorch/base.txt:5",
       "pl=1.8.4 torch=1.8.1 py=3.8", "",
       "environment.torch: ERROR: pip's dependency resolver does not currently take into account "
       "all the packages that are installed. This behaviour is the source of the following "
       "dependency conflicts.\npytorch-lightning 1.8.4 requires torch>=1.9.0, but you have torch "
       "1.8.1 which is incompatible."},

      // --- precision as a string, 1.6-1.8: the plugin compares the flag with ints --------
      {"v16_precision_string_16",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:720",
       "v=1.6 accelerator=tpu precision='16'", "v3-8", "trainer.precision: No precision set"},
      {"v17_precision_string_32",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:746",
       "v=1.7 accelerator=tpu precision='32'", "v3-8", "trainer.precision: No precision set"},
      {"v17_precision_mixed",
       "1.7.7:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:746",
       "v=1.7 accelerator=tpu precision='mixed'", "v3-8", "trainer.precision: No precision set"},
      {"v18_precision_string_16",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:683",
       "v=1.8 accelerator=tpu precision='16'", "v3-8", "trainer.precision: No precision set"},
      {"v18_precision_string_64",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:735",
       "v=1.8 accelerator=tpu precision='64'", "v3-8", "trainer.precision: No precision set"},
      {"v18_precision_string_16_cpu",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:701",
       "v=1.8 accelerator=cpu precision='16'", "", "trainer.precision: No precision set"},
      {"v18_precision_int_16",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:683",
       "v=1.8 accelerator=tpu precision=16", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1",
       "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
       "Using `precision='bf16'` instead."},
      {"v18_precision_string_bf16",
       "1.8.6:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:683",
       "v=1.8 accelerator=tpu precision='bf16'", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1"},
      {"v19_precision_string_16",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:320 "
       "(str(precision))",
       "v=1.9 accelerator=tpu precision='16'", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 bf16-true xla v1",
       "You passed `Trainer(accelerator='tpu', precision=16)` but AMP is not supported with TPUs. "
       "Using `precision='bf16'` instead."},

      // --- the patch releases of 2.5 ---------------------------------------------------
      {"v25_patch2_fsdp",
       "2.5.2:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:464",
       "pl=2.5.2 torch=2.5.0 xla=2.5.0 strategy=fsdp", "v3-8",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but got: tpu"},
      {"v25_patch0_fsdp_by_version",
       "2.5.0:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:464",
       "v=2.5.0 strategy=fsdp", "v3-8",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but got: tpu"},
      {"v25_patch3_fsdp",
       "2.5.3:src/lightning/pytorch/trainer/connectors/accelerator_connector.py:458",
       "pl=2.5.3 torch=2.5.0 xla=2.5.0 strategy=fsdp", "v3-8",
       "trainer.strategy: The strategy `fsdp` requires a GPU accelerator, but received "
       "`accelerator='tpu'`. Please set `accelerator='cuda'`, `accelerator='gpu'`, or pass a "
       "`CUDAAccelerator()` instance to use FSDP."},

      // --- XRT without XRT_TPU_CONFIG: torch_xla's "file:line : message" ---------------------
      {"v16_xrt_without_config",
       "pytorch/xla v1.13.0:third_party/xla_client/computation_client.cc:280",
       "v=1.6 accelerator=tpu runtime=xrt", "v3-8",
       "env: tensorflow/compiler/xla/xla_client/computation_client.cc:280 : Missing XLA "
       "configuration"},
      {"v21_xrt_build_without_config",
       "pytorch/xla xrt:torch_xla/csrc/runtime/xrt_computation_client.cc:493",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt runtime=xrt", "v3-8",
       "env: torch_xla/csrc/runtime/xrt_computation_client.cc:493 : Missing XLA configuration"},
      {"v21_xrt_build_with_config", "pytorch/xla v2.5.0:README.md:199 (2.1.0+xrt wheel)",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      // The 2.1.0+xrt build was published for Python 3.10 only.
      {"v21_xrt_build_python_39",
       "pytorch/xla v2.5.0:README.md:199 (2.1 (XRT + Python 3.10)); artifacts.auto.tfvars "
       "xrt_versioned_builds",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt py=3.9 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "environment.torch_xla: ERROR: No matching distribution found for torch_xla==2.1.0+xrt"},
      {"v21_xrt_build_python_38", "pytorch/xla v2.5.0:README.md:199 (2.1 (XRT + Python 3.10))",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt py=3.8.18 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "environment.torch_xla: ERROR: No matching distribution found for torch_xla==2.1.0+xrt"},
      {"v21_xrt_build_python_311", "pytorch/xla v2.5.0:README.md:199 (2.1 (XRT + Python 3.10))",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt py=3.11 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "environment.torch_xla: ERROR: No matching distribution found for torch_xla==2.1.0+xrt"},
      {"v21_xrt_build_python_310", "pytorch/xla v2.5.0:README.md:199 (2.1 (XRT + Python 3.10))",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0+xrt py=3.10.12 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      // The main 2.1.0 wheels (PJRT) exist for 3.8 to 3.11.
      {"v21_main_wheel_python_39", "pytorch/xla v2.5.0:README.md (torch_xla-2.1.0 wheels)",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0 py=3.9", "v3-8", "tpu host v3 8x1 v3-8 world=8 32-true xla"},
      {"env_xrt_not_in_21_wheel", "pytorch/xla v2.1.0 (no xrt_computation_client)",
       "pl=2.1.4 torch=2.1.0 xla=2.1.0 runtime=xrt env.XRT_TPU_CONFIG=x", "v3-8",
       "runtime: torch_xla 2.1.0 has no XRT runtime (only the 2.1.0+xrt build has it)."},

      // --- KeyError's str() is the repr of its text --------------------------------------
      {"v16_strategy_unknown_registry",
       "1.6.5:pytorch_lightning/strategies/strategy_registry.py:99",
       "v=1.6 accelerator=tpu strategy=foo", "v3-8",
       "trainer.strategy: \"'foo' not found in registry. Available names: bagua, ddp, ddp2, "
       "ddp_find_unused_parameters_false, ddp_fully_sharded, ddp_sharded, "
       "ddp_sharded_find_unused_parameters_false, ddp_sharded_spawn, "
       "ddp_sharded_spawn_find_unused_parameters_false, ddp_spawn, "
       "ddp_spawn_find_unused_parameters_false, deepspeed, deepspeed_stage_1, deepspeed_stage_2, "
       "deepspeed_stage_2_offload, deepspeed_stage_3, deepspeed_stage_3_offload, "
       "deepspeed_stage_3_offload_nvme, dp, fsdp, horovod, hpu_parallel, hpu_single, ipu_strategy, "
       "single_device, single_tpu, tpu_spawn, tpu_spawn_debug\""},

      // --- 1.x checks devices=0 before it maps tpu_cores ---------------------------------
      {"v19_tpu_cores_with_devices_0",
       "1.9.5:src/pytorch_lightning/trainer/connectors/accelerator_connector.py:440",
       "v=1.9 tpu_cores=8 devices=0", "v3-8",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using None accelerator."},
      {"v16_tpu_cores_with_devices_0",
       "1.6.5:pytorch_lightning/trainer/connectors/accelerator_connector.py:423",
       "v=1.6 accelerator=tpu tpu_cores=8 devices=0", "v3-8",
       "trainer.devices: `Trainer(devices=0)` value is not a valid input using tpu accelerator."},
  };
  return *cases;
}

class VersionTableTest : public ::testing::TestWithParam<VersionCase> {};

TEST_P(VersionTableTest, FollowsUpstream) {
  const VersionCase& c = GetParam();
  const base::Result<Resolution> resolution = resolve(Settings(c.settings), Pool(c.pool));
  EXPECT_EQ(c.expected, Summary(resolution)) << c.source;
  EXPECT_EQ(c.warnings, Join(resolution_warnings(resolution))) << c.source;
}

INSTANTIATE_TEST_SUITE_P(Versions, VersionTableTest, ::testing::ValuesIn(VersionCases()),
                         [](const ::testing::TestParamInfo<VersionCase>& info) {
                           return info.param.name;
                         });

// Every supported version has cases, and every case names its source.
TEST(ResolveTest, VersionTableCoversEveryRelease) {
  std::set<std::string> versions;
  for (const VersionCase& c : VersionCases()) {
    EXPECT_FALSE(c.source.empty()) << c.name;
    if (c.name[0] == 'v') versions.insert(c.name.substr(1, 2));
  }
  for (const char* v : {"16", "17", "18", "19", "20", "21", "22", "23", "24", "25"}) {
    EXPECT_TRUE(versions.count(v)) << "no case for Lightning " << v;
  }
}

// Does `message` read as `text` with its {placeholders} filled in?
bool FillsTemplate(std::string_view text, std::string_view message) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  while (true) {
    const std::size_t open = text.find('{', start);
    const std::size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      break;
    }
    pieces.push_back(text.substr(start, open - start));
    start = close + 1;
  }
  if (!message.starts_with(pieces.front()) || !message.ends_with(pieces.back())) return false;
  std::size_t at = pieces.front().size();
  for (std::size_t i = 1; i + 1 < pieces.size(); ++i) {
    at = message.find(pieces[i], at);
    if (at == std::string_view::npos) return false;
    at += pieces[i].size();
  }
  return pieces.size() == 1 ? message == text : at <= message.size() - pieces.back().size();
}

// Lightning 2.1-2.5's Trainer: XLAPrecision('16-true') sets XLA_USE_F16=1
// (2.1.4 ... 2.5.6 src/lightning/pytorch/plugins/precision/xla.py:54) and
// never converts the module; torch_xla reads XLA_USE_FP16 (v2.1.0
// tensor_util.cpp:50, v2.4.0 dtype.cpp:22) or, from 2.5, neither. So the job
// trains in float32, and says so in a notice of tpujobs' own.
TEST(ResolveTest, SixteenTrueOnATpuTrainsInFloat32From21) {
  for (const std::string version : {"2.1", "2.2", "2.3", "2.4", "2.5"}) {
    const base::Result<Resolution> r =
        resolve(Settings("v=" + version + " precision=16-true"), Pool("v3-8"));
    ASSERT_TRUE(r.ok()) << version << ": " << r.error().fields.front().message;
    EXPECT_EQ("32-true", precision_name(r->precision)) << version;
    EXPECT_EQ("16-true", r->lightning_precision) << version;  // trainer.precision
    ASSERT_EQ(1u, r->notices.size()) << version;
    const std::string& notice = r->notices[0];
    EXPECT_TRUE(
        notice.starts_with("tpujobs: precision='16-true' on a TPU trains in float32 "
                           "under Lightning " +
                           version))
        << notice;
    for (const char* says : {"sets XLA_USE_F16=1, which torch_xla does not read",
                             "no memory saving and no fp16 arithmetic",
                             "use precision \"bf16-true\" for half precision on TPUs"}) {
      EXPECT_NE(std::string::npos, notice.find(says)) << version << ": " << notice;
    }
    EXPECT_NE(resolution_warnings(r).end(),
              std::find(resolution_warnings(r).begin(), resolution_warnings(r).end(), notice));
  }
  // The torch_xla in play names what it reads instead.
  const base::Result<Resolution> xla21 =
      resolve(Settings("pl=2.1.4 torch=2.1.0 xla=2.1.0 py=3.10 precision=16-true"), Pool("v3-8"));
  ASSERT_EQ(1u, xla21->notices.size()) << Join(resolution_warnings(xla21));
  EXPECT_NE(std::string::npos, xla21->notices[0].find("(torch_xla 2.1 reads XLA_USE_FP16)"))
      << xla21->notices[0];
  // The user's own XLA_USE_FP16 reaches a torch_xla that reads it (up to
  // 2.4): every float tensor is fp16 then, as upstream, and nothing to say.
  const base::Result<Resolution> own_fp16 = resolve(
      Settings("pl=2.4.0 torch=2.4.0 xla=2.4.0 py=3.10 precision=16-true env.XLA_USE_FP16=1"),
      Pool("v3-8"));
  ASSERT_TRUE(own_fp16.ok()) << own_fp16.error().message;
  EXPECT_EQ("16-true", precision_name(own_fp16->precision));
  EXPECT_TRUE(own_fp16->notices.empty());
  // torch_xla 2.5 no longer reads it.
  const base::Result<Resolution> ignored_fp16 = resolve(
      Settings("pl=2.5.6 torch=2.5.0 xla=2.5.0 py=3.10 precision=16-true env.XLA_USE_FP16=1"),
      Pool("v3-8"));
  EXPECT_EQ("32-true", precision_name(ignored_fp16->precision));
  EXPECT_EQ(1u, ignored_fp16->notices.size());
  // On the CPU '16-true' is HalfPrecision, which converts the module: fp16.
  const base::Result<Resolution> cpu =
      resolve(Settings("v=2.5 accelerator=cpu precision=16-true"), Pool("v3-8"));
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ("16-true", precision_name(cpu->precision));
  EXPECT_TRUE(cpu->notices.empty());
  // bf16-true sets XLA_USE_BF16, which torch_xla reads: bfloat16, no notice.
  const base::Result<Resolution> bf16 =
      resolve(Settings("v=2.5 precision=bf16-true"), Pool("v3-8"));
  EXPECT_EQ("bf16-true", precision_name(bf16->precision));
  EXPECT_TRUE(bf16->notices.empty());
  // Before 2.1 there is no '16-true'; 16 is bfloat16 on a TPU, unchanged.
  const base::Result<Resolution> v20 = resolve(Settings("v=2.0 precision=16"), Pool("v3-8"));
  ASSERT_TRUE(v20.ok()) << v20.error().message;
  EXPECT_EQ("bf16-true", precision_name(v20->precision));
  EXPECT_TRUE(v20->notices.empty());
  const base::Result<Resolution> v20_true =
      resolve(Settings("v=2.0 precision=16-true"), Pool("v3-8"));
  EXPECT_FALSE(v20_true.ok());
  EXPECT_TRUE(Notices(v20_true).empty());
}

// Every message that names a source is the text of a row of that source's
// table, placeholders filled; every warning not tpujobs' own is one too. So
// a text cannot drift from the table (and the docs built from it).
TEST(ResolveTest, EveryUpstreamMessageIsARuleTableText) {
  const std::vector<RuleText> texts = all_rule_texts();
  std::vector<std::pair<std::string, std::string>> runs;  // settings, pool
  for (const Case& c : Cases()) runs.emplace_back(c.settings, c.pool);
  for (const VersionCase& c : VersionCases()) runs.emplace_back(c.settings, c.pool);
  int checked = 0;
  for (const auto& [settings, pool] : runs) {
    const base::Result<Resolution> resolution = resolve(Settings(settings), Pool(pool));
    for (const base::FieldError& problem : base::field_errors(resolution)) {
      if (problem.source.empty()) continue;
      ++checked;
      const bool found = std::any_of(texts.begin(), texts.end(), [&](const RuleText& text) {
        return text.source == problem.source && text.field == problem.field &&
               FillsTemplate(text.text, problem.message);
      });
      EXPECT_TRUE(found) << settings << ": " << problem.field << ": " << problem.message << " ["
                         << problem.source << "]";
    }
    for (const std::string& warning : resolution_warnings(resolution)) {
      if (warning.starts_with("tpujobs")) continue;
      ++checked;
      const bool found = std::any_of(texts.begin(), texts.end(), [&](const RuleText& text) {
        return text.field == "warning" && FillsTemplate(text.text, warning);
      });
      EXPECT_TRUE(found) << settings << ": warning " << warning;
    }
  }
  EXPECT_GT(checked, 80);
}

// Each table text's source names a tag of a release it holds for, or another
// cited source.
TEST(ResolveTest, EveryRuleTextCitesItsSource) {
  for (const RuleText& text : all_rule_texts()) {
    EXPECT_FALSE(text.source.empty()) << text.text;
    EXPECT_FALSE(text.text.empty()) << text.source;
  }
}

// docs/lightning-rules.md lists every text of every table (as Markdown
// table cells: '|' escaped, line breaks as <br>), so the docs cannot drift
// from the rules.
TEST(ResolveTest, EveryRuleTextIsInTheDocs) {
  std::ifstream file(tpujobs::testing::source_dir() + "/docs/lightning-rules.md");
  ASSERT_TRUE(file) << "docs/lightning-rules.md";
  std::stringstream docs;
  docs << file.rdbuf();
  for (const RuleText& text : all_rule_texts()) {
    std::string cell;
    for (char ch : text.text) {
      if (ch == '|')
        cell += "\\|";
      else if (ch == '\n')
        cell += "<br>";
      else
        cell += ch;
    }
    EXPECT_NE(docs.str().find("| " + cell + " |"), std::string::npos) << text.text;
    EXPECT_NE(docs.str().find("`" + std::string(text.source) + "`"), std::string::npos)
        << text.source;
  }
}

// _log_device_info prints the GPU and TPU lines, the IPU line up to 2.2 and
// the HPU line up to 2.4; the TPU count is the devices of one host.
TEST(ResolveTest, DeviceInfoLinesAreThoseOfTheRelease) {
  const std::string gpu = "GPU available: False, used: False";
  const std::string ipu = "IPU available: False, using: 0 IPUs";
  const std::string hpu = "HPU available: False, using: 0 HPUs";
  struct Row {
    std::string settings, pool;
    std::vector<std::string> lines;
  };
  const std::string tpu8 = "TPU available: True, using: 8 TPU cores";
  for (const Row& row : std::vector<Row>{
           {"v=1.6 tpu_cores=8", "v3-8", {gpu, tpu8, ipu, hpu}},  // 1.6.5 trainer.py
           {"v=1.9 accelerator=tpu devices=8", "v3-8", {gpu, tpu8, ipu, hpu}},
           {"v=2.1", "v3-8", {gpu, tpu8, ipu, hpu}},  // 2.1.4 setup.py
           {"v=2.2", "v3-8", {gpu, tpu8, ipu, hpu}},
           {"v=2.3", "v3-8", {gpu, tpu8, hpu}},  // 2.3.3: no IPU line
           {"v=2.4", "v3-8", {gpu, tpu8, hpu}},
           {"v=2.5", "v3-8", {gpu, tpu8}},         // 2.5.6: no HPU line
           {"v=2.5.5", "v3-8", {gpu, tpu8, hpu}},  // 2.5.5 setup.py:169 still has it
           {"pl=2.5.0 torch=2.5.0 xla=2.5.0", "v3-8", {gpu, tpu8, hpu}},
           {"v=2.5 num_nodes=4", "v3-32", {gpu, tpu8}},  // per host, not 32
           {"v=2.5 devices=1", "v3-8", {gpu, "TPU available: True, using: 1 TPU cores"}},
           {"v=2.5 accelerator=cpu", "v3-8", {gpu, "TPU available: True, using: 0 TPU cores"}},
           {"v=2.1", "", {gpu, "TPU available: False, using: 0 TPU cores", ipu, hpu}},
       }) {
    const base::Result<Resolution> resolution = resolve(Settings(row.settings), Pool(row.pool));
    ASSERT_TRUE(resolution.ok()) << row.settings;
    EXPECT_EQ(row.lines, resolution->device_info) << row.settings;
  }
}

// Trainer.__init__ builds the accelerator connector before _log_device_info
// (2.1.4 trainer.py:401 then :472): an error of Lightning's (or pip's, or
// Python's on the call) means no device lines and no "TPU available but not
// used". A refusal of tpujobs' own is no error upstream, where the lines
// are logged.
TEST(ResolveTest, DeviceInfoOnlyWhenLightningRaisedNothing) {
  const std::string unused =
      "TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`.";
  struct Row {
    std::string settings;
    bool lightning_raised;
  };
  for (const Row& row : std::vector<Row>{
           {"accelerator=cpu devices=0", true},   // the connector's devices check
           {"accelerator=cpu devices=-1", true},  // _parse_cpu_cores
           {"accelerator=cpu strategy=fsdp", true},
           {"accelerator=cpu tpu_cores=8", true},  // Trainer() has no such keyword
           {"pl=2.4.0 torch=2.3.0 xla=2.3.0 py=3.8 accelerator=cpu", true},  // pip
           {"accelerator=cpu num_nodes=2", false},  // tpujobs' own refusals
           {"accelerator=cpu type=v3-8", false},
           {"accelerator=cpu strategy=ddp", false},
       }) {
    const base::Result<Resolution> r = resolve(Settings(row.settings), Pool("v3-8"));
    ASSERT_EQ(1u, base::field_errors(r).size()) << row.settings;
    EXPECT_EQ(row.lightning_raised, !r.error().fields.front().source.empty()) << row.settings;
    const bool warned = std::find(resolution_warnings(r).begin(), resolution_warnings(r).end(),
                                  unused) != resolution_warnings(r).end();
    EXPECT_EQ(!row.lightning_raised, warned) << row.settings;
  }
}

// lightning_tag names the tag whose texts the job got: the release's, or the
// newest patch release whose texts equal the installed one's. 2.5.0-2.5.2
// have 2.4's FSDP text (2.5.2 accelerator_connector.py:464), which 2.5.3
// rewrote (2.5.3 accelerator_connector.py:458); 2.5.0-2.5.5 print the HPU
// line (2.5.5 setup.py:169), which 2.5.6 dropped. A refusal names no tag:
// each of its texts cites its own source.
TEST(ResolveTest, LightningTagIsTheTagTheTextsCameFrom) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"v=2.5", "2.5.6"},
      {"pl=2.5.6 torch=2.5.0 xla=2.5.0", "2.5.6"},
      {"pl=2.5.0 torch=2.5.0 xla=2.5.0", "2.5.2"},
      {"pl=2.5.1 torch=2.5.0 xla=2.5.0", "2.5.2"},
      {"pl=2.5.2 torch=2.5.0 xla=2.5.0", "2.5.2"},
      {"pl=2.5.3 torch=2.5.0 xla=2.5.0", "2.5.5"},
      {"v=2.5.5", "2.5.5"},
      {"v=2.4", "2.4.0"},
      {"pl=2.3.1 torch=2.3.0 xla=2.3.0", "2.3.3"},
      {"v=2.1", "2.1.4"},
      {"v=1.6", "1.6.5"},
      {"pl=1.8.2 torch=1.12.1 py=3.8", "1.8.6"},
  };
  for (const auto& [settings, tag] : rows) {
    const base::Result<Resolution> r = resolve(Settings(settings), Pool("v3-8"));
    ASSERT_TRUE(r.ok()) << settings << ": " << Summary(r);
    EXPECT_EQ(tag, r->lightning_tag) << settings;
  }
  // pip's refusal quotes 1.8.0-1.8.3's "torch>=1.9.*".
  const base::Result<Resolution> pip =
      resolve(Settings("pl=1.8.2 torch=1.8.1 py=3.8"), Pool("v3-8"));
  ASSERT_FALSE(pip.ok());
  EXPECT_TRUE(pip.error().fields[0].source.starts_with("1.8.3:")) << pip.error().fields[0].source;
  // The FSDP text a 2.5.1 job gets is the one 2.5.2 has, 2.4's.
  const base::Result<Resolution> fsdp =
      resolve(Settings("pl=2.5.1 torch=2.5.0 xla=2.5.0 accelerator=cpu strategy=fsdp"), Pool(""));
  ASSERT_EQ(1u, base::field_errors(fsdp).size());
  EXPECT_EQ("The strategy `fsdp` requires a GPU accelerator, but got: cpu",
            fsdp.error().fields[0].message);
  EXPECT_TRUE(fsdp.error().fields[0].source.starts_with("2.4.0:")) << fsdp.error().fields[0].source;
}

// The texts lightning-utilities and torch_xla write cite the file that writes
// them, not the caller or a README.
TEST(ResolveTest, CitesTheFileThatWritesTheText) {
  const base::Result<Resolution> missing =
      resolve(Settings("pl=2.1.4 torch=2.1.0 py=3.10 accelerator=tpu"), Pool("v3-8"));
  ASSERT_EQ(1u, base::field_errors(missing).size());
  EXPECT_EQ(
      "Requirement 'torch_xla>=1.13' not met. HINT: Try running `pip install -U "
      "'torch_xla>=1.13'`",
      missing.error().fields[0].message);
  EXPECT_TRUE(missing.error().fields[0].source.starts_with(
      "Lightning-AI/utilities v0.12.0:src/lightning_utilities/core/imports.py:148"))
      << missing.error().fields[0].source;
  int notices = 0;
  for (const RuleText& text : all_rule_texts()) {
    if (!text.text.starts_with("XLA_USE_BF16 will be deprecated")) continue;
    ++notices;
    EXPECT_NE(std::string_view::npos, text.source.find(":torch_xla/csrc/dtype.cpp:14"))
        << text.source;
  }
  EXPECT_EQ(2, notices);  // torch_xla 2.4 and 2.5
}

// torch_xla up to 2.4 reads the user's XLA_USE_FP16 itself and stores every
// float32 tensor as float16, before it looks at XLA_USE_BF16 (v2.4.0
// torch_xla/csrc/dtype.cpp:180-185; v2.1.0 tensor_util.cpp:1163): whatever
// the precision, a TPU job trains in fp16 then, and a notice says why. 2.5
// no longer reads it; the CPU has no XLA tensors.
TEST(ResolveTest, UsersXlaUseFp16MakesTpuTensorsFloat16UpTo24) {
  struct Row {
    std::string settings;
    std::string precision;     // precision_name()
    std::string lightning;     // lightning_precision
    std::string notice_names;  // "" when no notice
  };
  const Row rows[] = {
      {"pl=2.4.0 torch=2.4.0 xla=2.4.0 precision=32-true env.XLA_USE_FP16=1", "16-true", "32-true",
       "torch_xla 2.4 store every float32 tensor on the TPU as float16"},
      {"pl=2.4.0 torch=2.4.0 xla=2.4.0 precision=bf16-true env.XLA_USE_FP16=1", "16-true",
       "bf16-true", "not as precision='bf16-true' says"},
      {"pl=2.1.4 torch=2.1.0 xla=2.1.0 env.XLA_USE_FP16=true", "16-true", "32-true",
       "torch_xla 2.1 store"},
      {"pl=2.4.0 torch=2.4.0 xla=2.4.0 env.XLA_USE_FP16=1 env.XLA_USE_BF16=1", "16-true", "32-true",
       "before XLA_USE_BF16"},
      {"pl=1.9.5 torch=1.13.1 xla=1.13 py=3.8 tpu_cores=8 precision=bf16 env.XLA_USE_FP16=1",
       "16-true", "bf16", "not as precision='bf16' says"},
      {"pl=1.9.5 torch=1.13.1 xla=1.13 py=3.8 tpu_cores=8 precision=32 env.XLA_USE_FP16=1",
       "16-true", "32", "not as precision=32 says"},
      {"pl=2.0.9 torch=2.0.1 xla=2.0 precision=16-mixed env.XLA_USE_FP16=1", "16-true",
       "bf16-mixed", "Unset XLA_USE_FP16 to train in 'bf16-mixed'"},
      {"pl=2.4.0 torch=2.4.0 xla=2.4.0 precision=32-true env.XLA_USE_FP16=0", "32-true", "32-true",
       ""},
      {"pl=2.5.6 torch=2.5.0 xla=2.5.0 precision=32-true env.XLA_USE_FP16=1", "32-true", "32-true",
       ""},
      {"pl=2.4.0 torch=2.4.0 xla=2.4.0 accelerator=cpu precision=32-true env.XLA_USE_FP16=1",
       "32-true", "32-true", ""},
  };
  for (const Row& row : rows) {
    const base::Result<Resolution> r = resolve(Settings(row.settings), Pool("v3-8"));
    ASSERT_TRUE(r.ok()) << row.settings << ": " << Summary(r);
    EXPECT_EQ(row.precision, precision_name(r->precision)) << row.settings;
    EXPECT_EQ(row.lightning, r->lightning_precision) << row.settings;
    if (row.notice_names.empty()) {
      EXPECT_TRUE(r->notices.empty()) << row.settings << ": " << Join(r->notices);
      continue;
    }
    ASSERT_EQ(1u, r->notices.size()) << row.settings << ": " << Join(r->notices);
    EXPECT_TRUE(r->notices[0].starts_with("tpujobs: env XLA_USE_FP16 makes ")) << r->notices[0];
    EXPECT_NE(std::string::npos, r->notices[0].find(row.notice_names)) << r->notices[0];
  }
}

// 1.9's strategy checks changed in its patch releases: 1.9.0-1.9.1 check no
// name (the registry's KeyError, 'auto' too), 1.9.2 refuses an unknown name
// naming lightning.pytorch's Strategy, 1.9.3 pytorch_lightning's, and only
// 1.9.4 accepts 'auto' (1.9.x src/pytorch_lightning/trainer/connectors/
// accelerator_connector.py:276-283; 1.9.1 lightning_fabric/strategies/registry.py:98).
TEST(ResolveTest, StrategyChecksOf19FollowThePatchRelease) {
  const std::string invalid = "You selected an invalid strategy name: ";
  const std::string lightning_class =
      " It must be either a string or an instance of `lightning.pytorch.strategies.Strategy`.";
  const std::string pl_class =
      " It must be either a string or an instance of `pytorch_lightning.strategies.Strategy`.";
  struct Row {
    std::string settings, message_start, tag;
  };
  for (const Row& row : std::vector<Row>{
           {"v=1.9.0 accelerator=tpu strategy=foo",
            "\"'foo' not found in registry. Available names: bagua, colossalai, ddp, ", "1.9.1"},
           {"v=1.9.1 accelerator=tpu strategy=auto", "\"'auto' not found in registry. ", "1.9.1"},
           {"v=1.9.0 accelerator=tpu", "", "1.9.1"},
           {"v=1.9.2 accelerator=tpu strategy=foo", invalid + "`strategy='foo'`." + lightning_class,
            "1.9.2"},
           {"v=1.9.2 accelerator=tpu strategy=auto",
            invalid + "`strategy='auto'`." + lightning_class, "1.9.2"},
           {"v=1.9.3 accelerator=tpu strategy=auto", invalid + "`strategy='auto'`." + pl_class,
            "1.9.3"},
           {"v=1.9.4 accelerator=tpu strategy=auto", "", "1.9.5"},
           {"v=1.9.4 accelerator=tpu strategy=Foo", invalid + "`strategy='foo'`." + pl_class,
            "1.9.5"},
           {"v=1.9 accelerator=tpu strategy=auto", "", "1.9.5"},
       }) {
    const base::Result<Resolution> resolution = resolve(Settings(row.settings), Pool("v3-8"));
    if (row.message_start.empty()) {
      EXPECT_TRUE(resolution.ok()) << row.settings << ": " << Summary(resolution);
    } else {
      ASSERT_EQ(1u, base::field_errors(resolution).size())
          << row.settings << ": " << Summary(resolution);
      EXPECT_EQ("trainer.strategy", resolution.error().fields[0].field) << row.settings;
      EXPECT_TRUE(resolution.error().fields[0].message.starts_with(row.message_start))
          << row.settings << ": " << resolution.error().fields[0].message;
    }
    EXPECT_EQ(row.tag, TextsTag(resolution)) << row.settings;
  }
}

// 1.6.0 does not lower-case `strategy` (1.6.1 added it; 1.6.5
// accelerator_connector.py:255): 'DDP_Spawn' is the registry's KeyError.
TEST(ResolveTest, Lightning160DoesNotLowerCaseTheStrategy) {
  const base::Result<Resolution> v160 =
      resolve(Settings("v=1.6.0 accelerator=tpu strategy=TPU_SPAWN_DEBUG"), Pool("v3-8"));
  ASSERT_EQ(1u, base::field_errors(v160).size()) << Summary(v160);
  EXPECT_TRUE(v160.error().fields[0].message.starts_with(
      "\"'TPU_SPAWN_DEBUG' not found in registry. Available names: bagua, ddp, "))
      << v160.error().fields[0].message;
  const base::Result<Resolution> v165 =
      resolve(Settings("v=1.6.5 accelerator=tpu strategy=TPU_SPAWN_DEBUG"), Pool("v3-8"));
  ASSERT_TRUE(v165.ok()) << Summary(v165);
  EXPECT_EQ("xla_debug", v165->strategy);
  const base::Result<Resolution> v161 =
      resolve(Settings("v=1.6.1 accelerator=tpu strategy=TPU_SPAWN_DEBUG"), Pool("v3-8"));
  EXPECT_TRUE(v161.ok()) << Summary(v161);
  const base::Result<Resolution> lower =
      resolve(Settings("v=1.6.0 accelerator=tpu strategy=tpu_spawn_debug"), Pool("v3-8"));
  EXPECT_TRUE(lower.ok()) << Summary(lower);
}

// 1.x checks the strategy name in _check_config_and_set_final_flags
// ('ddp_cpu', 'tpu_spawn', and from 1.9.2 an unknown name: 1.9.5
// accelerator_connector.py:265-284) before it maps `tpu_cores` and warns
// (:484 deprecated, :499 devices ignored): no warning with those errors. An
// error raised later (1.9.1's registry KeyError, a non-TPU strategy) comes
// after the warning.
TEST(ResolveTest, StrategyNameErrorsOf1xComeBeforeTheTpuCoresWarnings) {
  struct Row {
    std::string settings;
    bool warned;
  };
  for (const Row& row : std::vector<Row>{
           {"v=1.9 tpu_cores=8 strategy=foo", false},
           {"v=1.9.2 tpu_cores=8 strategy=auto", false},  // 'auto' passes from 1.9.4
           {"v=1.9 tpu_cores=8 strategy=tpu_spawn", false},
           {"v=1.7 tpu_cores=8 strategy=ddp_cpu", false},
           {"v=1.6 tpu_cores=8 devices=4 strategy=tpu_spawn", false},
           {"v=1.6 tpu_cores=8 devices=4 strategy=ddp_cpu", false},
           {"v=1.9.1 tpu_cores=8 strategy=foo", true},  // StrategyRegistry.get, later
           {"v=1.8 tpu_cores=8 strategy=foo", true},
           {"v=1.6 tpu_cores=8 devices=4 strategy=foo", true},
           {"v=1.9 tpu_cores=8 strategy=ddp", true},  // refused for the TPU, later
       }) {
    const base::Result<Resolution> r = resolve(Settings(row.settings), Pool("v3-8"));
    ASSERT_EQ(1u, base::field_errors(r).size()) << row.settings;
    EXPECT_EQ(row.warned, !resolution_warnings(r).empty())
        << row.settings << ": " << Join(resolution_warnings(r));
  }
}

// The precision value is checked in the same function (1.9.5
// accelerator_connector.py:316, 1.6.5 :306), and int(num_nodes) opens
// _check_device_config_and_set_final_flags (:437, 1.6.5 :420): both before
// the tpu_cores warnings. precision=64 on a TPU is refused later
// (_check_and_init_precision), after them.
TEST(ResolveTest, PrecisionAndNumNodesErrorsOf1xComeBeforeTheTpuCoresWarnings) {
  struct Row {
    std::string settings;
    bool warned;
  };
  for (const Row& row : std::vector<Row>{
           {"v=1.9 tpu_cores=8 precision='8'", false},
           {"v=1.7 tpu_cores=8 precision='bf16-true'", false},
           {"v=1.6 tpu_cores=8 devices=4 precision='8'", false},
           {"v=1.9 tpu_cores=8 num_nodes='x'", false},
           {"v=1.8 tpu_cores=8 devices=4 num_nodes=[1]", false},
           {"v=1.9 tpu_cores=8 precision=64", true},
       }) {
    const base::Result<Resolution> r = resolve(Settings(row.settings), Pool("v3-8"));
    ASSERT_EQ(1u, base::field_errors(r).size()) << row.settings;
    EXPECT_EQ(row.warned, !resolution_warnings(r).empty())
        << row.settings << ": " << Join(resolution_warnings(r));
  }
}

// 1.6.0 checks `strategy` against an accelerator that names a strategy as
// written (1.6.0 accelerator_connector.py:265-269): strategy='DDP' beside
// accelerator='ddp' conflicts, before the deprecation of the accelerator
// string; 1.6.1 on lower-case it first and take both as 'ddp'.
TEST(ResolveTest, Lightning160ComparesTheStrategyAsWrittenWithTheAccelerator) {
  const std::string conflict =
      "trainer.accelerator: strategy DDP already set through `strategy` flag, but have also "
      "passed ddp in through the accelerator flag.";
  const base::Result<Resolution> v160 =
      resolve(Settings("v=1.6.0 accelerator=ddp strategy=DDP tpu_cores=8"), Pool("v3-8"));
  ASSERT_FALSE(v160.ok());
  EXPECT_EQ(conflict, v160.error().fields[0].field + ": " + v160.error().fields[0].message);
  EXPECT_TRUE(resolution_warnings(v160).empty()) << Join(resolution_warnings(v160));
  const base::Result<Resolution> v161 =
      resolve(Settings("v=1.6.1 accelerator=ddp strategy=DDP tpu_cores=8"), Pool("v3-8"));
  ASSERT_FALSE(v161.ok());
  EXPECT_NE(conflict, v161.error().fields[0].field + ": " + v161.error().fields[0].message);
  EXPECT_TRUE(
      Join(resolution_warnings(v161)).starts_with("Passing `Trainer(accelerator='ddp')` has been"))
      << Join(resolution_warnings(v161));
}

// The devices data-type texts are `_check_data_type`'s, which 1.8 on keep in
// the device parser module, not in the TPU accelerator's tpu.py / xla.py.
TEST(ResolveTest, DeviceDataTypeTextsCiteTheDeviceParser) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"v=1.6 accelerator=tpu devices=8.0",
       "1.6.5:pytorch_lightning/utilities/device_parser.py:243 (_check_data_type)"},
      {"v=1.7 accelerator=tpu devices=[1.0]",
       "1.7.7:src/pytorch_lightning/utilities/device_parser.py:291 (_check_data_type)"},
      {"v=1.8 accelerator=tpu devices=8.0",
       "1.8.6:src/lightning_lite/utilities/device_parser.py:201 (_check_data_type)"},
      {"v=1.8 tpu_cores=[1.0]",
       "1.8.6:src/lightning_lite/utilities/device_parser.py:199 (_check_data_type)"},
      {"v=1.9 accelerator=tpu devices=8.0",
       "1.9.5:src/lightning_fabric/utilities/device_parser.py:201 (_check_data_type)"},
      {"v=2.0 devices=[1.0]",
       "2.0.9:src/lightning/fabric/utilities/device_parser.py:199 (_check_data_type)"},
      {"v=2.1 devices=8.0",
       "2.1.4:src/lightning/fabric/utilities/device_parser.py:205 (_check_data_type)"},
      {"v=2.4 devices=[1.0]",
       "2.1.4:src/lightning/fabric/utilities/device_parser.py:203 (_check_data_type)"},
      {"v=2.5 devices=True",
       "2.5.6:src/lightning/fabric/utilities/device_parser.py:206 (_check_data_type)"},
      {"v=2.5.0 devices=[1.0]",
       "2.5.6:src/lightning/fabric/utilities/device_parser.py:204 (_check_data_type)"},
  };
  for (const auto& [settings, source] : rows) {
    const base::Result<Resolution> resolution = resolve(Settings(settings), Pool("v3-8"));
    ASSERT_EQ(1u, base::field_errors(resolution).size()) << settings;
    EXPECT_TRUE(resolution.error().fields[0].message.starts_with("Device ID")) << settings;
    EXPECT_EQ(source, resolution.error().fields[0].source) << settings;
  }
}

// The torch_xla whose metric names apply: environment.torch_xla, else the
// newest one the release's torch requirement allows.
TEST(ResolveTest, TorchXlaVersionFollowsTheEnvironmentOrTheRelease) {
  const std::vector<std::pair<std::string, int>> rows = {
      {"v=1.6", 113},
      {"v=1.9", 200},
      {"v=2.0", 200},
      {"v=2.1", 201},
      {"v=2.2", 202},
      {"v=2.3", 203},
      {"v=2.4", 204},
      {"v=2.5", 205},
      {"pl=2.1.3 torch=2.1.0 xla=2.1.0", 201},
      {"pl=2.5.0 torch=2.5.0 xla=2.5.0", 205},
  };
  for (const auto& [settings, version] : rows) {
    EXPECT_EQ(version, resolve(Settings(settings), Pool("v3-8"))->torch_xla_version) << settings;
  }
}

// PT_XLA_DEBUG: the xla_debug strategy sets it; `env` may too.
TEST(ResolveTest, PtXlaDebugFromTheStrategyOrTheEnvironment) {
  EXPECT_TRUE(resolve(Settings("strategy=xla_debug"), Pool("v3-8"))->pt_xla_debug);
  EXPECT_TRUE(
      resolve(Settings("v=1.9 accelerator=tpu devices=8 strategy=tpu_spawn_debug"), Pool("v3-8"))
          ->pt_xla_debug);
  EXPECT_TRUE(resolve(Settings("env.PT_XLA_DEBUG=1"), Pool("v3-8"))->pt_xla_debug);
  EXPECT_FALSE(resolve(Settings("env.PT_XLA_DEBUG=0"), Pool("v3-8"))->pt_xla_debug);
  EXPECT_FALSE(resolve(Settings(""), Pool("v3-8"))->pt_xla_debug);
  EXPECT_EQ("STDOUT",
            resolve(Settings("env.XLA_METRICS_FILE=STDOUT"), Pool("v3-8"))->xla_metrics_file);
}

TEST(ResolveTest, TableIsLargeAndNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : Cases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  EXPECT_GE(Cases().size(), 80u);
}

std::vector<std::string> Fields(const base::Result<Resolution>& resolution) {
  std::vector<std::string> fields;
  for (const base::FieldError& problem : base::field_errors(resolution))
    fields.push_back(problem.field);
  return fields;
}

TEST(ResolveTest, ReportsEveryProblemAtOnce) {
  const base::Result<Resolution> resolution =
      resolve(Settings("devices=3 precision='8' strategy=ddp runtime=xrt"), Pool("v3-32"));
  EXPECT_EQ((std::vector<std::string>{"trainer.devices", "trainer.precision", "trainer.strategy",
                                      "runtime"}),
            Fields(resolution));
  EXPECT_EQ(S(kDevicesV3, "3"), "trainer.devices: " + resolution.error().fields[0].message);
}

TEST(ResolveTest, ReportsSliceAndSettingProblemsTogether) {
  const base::Result<Resolution> resolution = resolve(
      Settings("v=1.x accelerator=tpu type=v4-8 num_nodes=0 precision=bf16-mixed strategy=xla"),
      Pool("v3-32"));
  EXPECT_EQ((std::vector<std::string>{"resources.accelerator_type", "trainer.num_nodes",
                                      "trainer.precision", "trainer.strategy"}),
            Fields(resolution))
      << Summary(resolution);
}

TEST(ResolveTest, InvalidAcceleratorStillChecksTheRest) {
  const base::Result<Resolution> resolution =
      resolve(Settings("accelerator=gpu precision='8' strategy=foo"), Pool("v4-8"));
  EXPECT_EQ(
      (std::vector<std::string>{"trainer.accelerator", "trainer.precision", "trainer.strategy"}),
      Fields(resolution));
}

TEST(ResolveTest, SameSpecDiffersBetweenLightningVersions) {
  const char* spec = "accelerator=tpu devices=8 precision=16";
  const base::Result<Resolution> v2 = resolve(Settings(spec), Pool("v3-8"));
  const base::Result<Resolution> v1 = resolve(Settings(std::string(spec) + " v=1.x"), Pool("v3-8"));
  EXPECT_EQ((std::vector<std::string>{"trainer.precision"}), Fields(v2));
  ASSERT_TRUE(v1.ok()) << Summary(v1);
  EXPECT_EQ(Precision::kBf16True, v1->precision);
  EXPECT_TRUE(v1->lightning_v1);
}

TEST(ResolveTest, SliceRequestCarriesEverythingPlacementNeeds) {
  const base::Result<Resolution> resolution =
      resolve(Settings("num_nodes=16 precision=bf16-true"), Pool("v3-128"));
  ASSERT_TRUE(resolution.ok()) << Summary(resolution);
  const DeviceRequest& request = resolution->device;
  EXPECT_EQ(DeviceRequest::Kind::kSlice, request.kind);
  EXPECT_EQ("v3", request.generation);
  EXPECT_EQ(8, request.devices_per_host);
  EXPECT_EQ(16, request.hosts);
  EXPECT_EQ(128, request.cores());
  EXPECT_EQ("v3-128", request.accelerator_type);
  EXPECT_FALSE(request.pinned_core);
  EXPECT_EQ(128, resolution->world_size);
  EXPECT_EQ("tpu", resolution->accelerator);
  EXPECT_EQ("xla", resolution->strategy);
  EXPECT_EQ("bf16-true", precision_name(resolution->precision));
}

TEST(ResolveTest, GenerationsWithoutHostsCountAsAbsent) {
  std::map<scheduler::Generation, int> hosts;
  hosts[scheduler::Generation::kV3] = 0;
  hosts[scheduler::Generation::kV4] = 2;
  EXPECT_EQ("tpu host v4 4x1 v4-8 world=4 32-true xla",
            Summary(resolve(Settings(""), View(hosts))));
  hosts[scheduler::Generation::kV4] = 0;
  EXPECT_EQ(
      "trainer.accelerator: `XLAAccelerator` can not run on your system since the accelerator is "
      "not "
      "available. The following accelerator(s) is available and can be passed into `accelerator` "
      "argument of `Trainer`: ['cpu'].",
      Summary(resolve(Settings("accelerator=tpu"), View(hosts))));
}

TEST(ResolveTest, HintsSayWhatToChange) {
  const base::Result<Resolution> xrt =
      resolve(Settings("v=1.x accelerator=tpu runtime=xrt"), Pool("v3-8"));
  ASSERT_EQ(1u, base::field_errors(xrt).size());
  EXPECT_NE(std::string::npos, xrt.error().fields[0].hint.find(
                                   "export XRT_TPU_CONFIG=\"localservice;0;localhost:51011\""));

  const base::Result<Resolution> devices = resolve(Settings("devices=3"), Pool("v3-8,v4-8"));
  ASSERT_EQ(1u, base::field_errors(devices).size());
  EXPECT_NE(std::string::npos, devices.error().fields[0].hint.find("8 on v3 hosts, 4 on v4 hosts"))
      << devices.error().fields[0].hint;

  const base::Result<Resolution> slice = resolve(Settings("num_nodes=8"), Pool("v3-32"));
  ASSERT_EQ(1u, base::field_errors(slice).size());
  EXPECT_NE(std::string::npos, slice.error().fields[0].hint.find("v3-32 (`num_nodes: 4`)"))
      << slice.error().fields[0].hint;
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
                const base::Result<Resolution> r = resolve(Settings(text), pool);
                if (!r.ok()) {
                  ++invalid;
                  for (const base::FieldError& p : base::field_errors(r)) {
                    ASSERT_FALSE(p.hint.empty()) << text << " on " << pool_text;
                    ASSERT_FALSE(p.message.empty()) << text << " on " << pool_text;
                  }
                  continue;
                }
                ++valid;
                const DeviceRequest& q = r->device;
                if (r->accelerator == "cpu") {
                  ASSERT_EQ(DeviceRequest::Kind::kCpu, q.kind) << text;
                  ASSERT_EQ(1, r->world_size) << text;
                  continue;
                }
                ASSERT_EQ("tpu", r->accelerator) << text;
                ASSERT_EQ(q.cores(), r->world_size) << text;
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

// A refusal is a kInvalid error listing every problem, its message the
// first one's "field: message", carrying the warnings Lightning gave before
// it refused (1.9 warns of tpu_cores, then refuses 'ddp' on the TPU).
TEST(ResolveTest, ARefusalIsAnInvalidFieldsErrorWithItsWarnings) {
  const base::Result<Resolution> r =
      resolve(Settings("v=1.9 tpu_cores=8 strategy=ddp devices=3 num_nodes=0"), Pool("v3-8"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(base::ErrorCode::kInvalid, r.code());
  ASSERT_LE(2u, r.error().fields.size()) << Summary(r);
  const base::FieldError& first = r.error().fields.front();
  EXPECT_EQ(first.field + ": " + first.message, r.error().message);
  EXPECT_EQ(first.hint, r.error().hint);
  ASSERT_FALSE(r.error().warnings.empty());
  EXPECT_TRUE(
      r.error().warnings.front().starts_with("Setting `Trainer(tpu_cores=8)` is deprecated"))
      << r.error().warnings.front();
  EXPECT_EQ(r.error().warnings, resolution_warnings(r));
  // Settings that resolve keep their warnings in the Resolution.
  const base::Result<Resolution> ok = resolve(Settings("v=1.9 tpu_cores=8"), Pool("v3-8"));
  ASSERT_TRUE(ok.ok()) << Summary(ok);
  EXPECT_FALSE(ok->warnings.empty());
  EXPECT_EQ(ok->warnings, resolution_warnings(ok));
}

// rules_release() names the release resolve() applies, valid or not:
// environment.lightning's, else lightning_version's, else the last.
TEST(ResolveTest, RulesReleaseIsTheReleaseResolveApplies) {
  for (const std::string settings : {
           "",
           "v=1.7",
           "v=1.x",
           "v=2.0.1",
           "v=3.x",
           "pl=2.0.9 torch=2.0.1 xla=2.0",
           "pl=2.1.3 torch=2.1.0 xla=2.1.0 v=1.9",
           "pl=9.9 torch=2.1.0 xla=2.1.0",
           "v=1.7 accelerator=tpu devices=3",
           "pl=1.8.2 torch=1.8.1 py=3.8",
       }) {
    const base::Result<Resolution> r = resolve(Settings(settings), Pool("v3-8"));
    const std::string release = rules_release(Settings(settings));
    EXPECT_FALSE(release.empty()) << settings;
    if (r.ok()) {
      EXPECT_EQ(r->lightning_version, release) << settings;
    }
  }
  EXPECT_EQ("2.5", rules_release(Settings("")));
  EXPECT_EQ("1.7", rules_release(Settings("v=1.7 accelerator=tpu devices=3")));
  EXPECT_EQ("2.5", rules_release(Settings("v=3.x")));  // refused: the default's rules
  EXPECT_EQ("2.0", rules_release(Settings("pl=2.0.9 torch=2.0.1 xla=2.0")));
  // environment.lightning wins over a lightning_version that disagrees.
  EXPECT_EQ("2.1", rules_release(Settings("pl=2.1.3 torch=2.1.0 xla=2.1.0 v=1.9")));
}

}  // namespace
}  // namespace tpujobs::lightning
