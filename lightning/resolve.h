// Resolution and validation of a job's trainer settings (DESIGN §3, §4, §8):
// turns what the user wrote (`devices`, `precision`, `strategy`, ...) into a
// DeviceRequest for the pool, reporting every problem at once with
// PyTorch Lightning's own message texts. Pure: no I/O, no globals.
//
// Lightning version. The rules and texts are those of one release, 1.6 ...
// 2.5 (lightning_version, or environment.lightning; default 2.5), each a row
// of a cited table per concern (lightning/checks.h lists the files;
// docs/lightning-rules.md every text). So one spec can be valid under one
// release and refused under another: 1.x defaults to the CPU and counts TPU
// cores from 1, 2.0 still counts from 1, 2.1 counts from 0; tpu_cores is
// deprecated in 1.7-1.9 and a TypeError from 2.0; each release has its own
// precision values and strategy registry; XRT is refused from 2.2.
// `environment` is checked against the torch / torch_xla / Python facts first.
//
// Mixed pools. A job runs on one generation; which ones it may run on:
//   - `devices: 1`: any generation. `[k]`: any generation whose hosts have
//     core k. When several generations fit, request.generation is nullopt
//     and placement must pick a host of a generation whose
//     devices_per_host > pinned_core.
//   - `devices: N` (N > 1): generations whose hosts have exactly N devices
//     (8: v2 and v3; 4: v4); generation is nullopt when several do.
//   - `devices: 'auto'` (or absent): every device of a host of the largest
//     kind in the pool (8 if there are v2 or v3 hosts, else 4).
//   - `num_nodes > 1`: the newest generation whose hosts fit, of which
//     devices x num_nodes is a valid slice and of which the pool has enough
//     hosts; `resources.accelerator_type` picks one explicitly.
//   - `resources.accelerator_type` fixes the generation. Without `devices`
//     and `num_nodes` it asks for the whole slice. A one-host type ("v3-8")
//     also allows a single core of that host (`devices: 1` or `[k]`).
//   Lightning's devices message quotes the device count of the first
//   generation in the pool (v2 < v3 < v4), or of the named one; the hint
//   lists the counts of every generation present.
//
// Requests that can never run are errors here, never left pending: num_nodes
// > 1 with fewer than all devices of a host, a slice size the generation
// does not have, accelerator_type disagreeing with devices x num_nodes, a
// generation the pool lacks, more hosts than the pool has (healthy or not).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tpujobs::lightning {

// A value of `devices` / `tpu_cores` as the user wrote it, with the Python
// type Lightning would see (JSON 8.0 is a float, true a bool).
struct DeviceValue {
  enum class Kind { kAbsent, kInt, kString, kList, kOther } kind = Kind::kAbsent;
  std::int64_t number = 0;         // kInt
  std::string text;                // kString ("auto", or anything the user wrote, e.g. "8", "-1")
  std::vector<std::int64_t> list;  // kList: its int elements
  // kList: the Python type of the first element that is not an int
  // ("float", "str", "bool", ...); empty when every element is an int.
  std::string list_other_type;
  // kList: how many elements it has (ints or not), the Python type of the
  // first one (empty for []), and its value when that is an int, a float or
  // a bool (1.6 compares it with 1 and 8 whatever it is).
  std::size_t list_length = 0;
  std::string list_first_type;
  double list_first_number = 0;
  // kOther: Python's type name and repr of the value ("float", "8.0";
  // "bool", "True"; "dict", "{}") and whether it equals 0 (0.0, False).
  std::string python_type;
  std::string python_repr;
  bool equals_zero = false;
};

// What `pip freeze` shows on the TPU VM (the spec's `environment`), as
// written: "3.10", "2.1.0", "2.1.0+cpu", "2.1.3".
struct Environment {
  std::optional<std::string> python;
  std::optional<std::string> torch;
  std::optional<std::string> torch_xla;
  std::optional<std::string> lightning;
};

// `trainer.max_time` as written: Lightning's Timer takes a "DD:HH:MM:SS"
// string, a timedelta or a dict of timedelta's keyword arguments.
struct DurationValue {
  enum class Kind { kAbsent, kString, kObject, kOther } kind = Kind::kAbsent;
  std::string text;  // kString
  // kObject: each key as written, with its number (JSON numbers and
  // booleans, as Python ints and floats) or the Python type of a value that
  // is none ("str", "NoneType", "list", "dict").
  struct Part {
    std::string key;
    std::optional<double> number;
    std::string python_type;
  };
  std::vector<Part> parts;
  std::string python_type;  // kOther: "int", "float", "bool", "list"
};

struct TrainerSettings {                   // absent optionals mean "not given"
  std::optional<std::string> accelerator;  // "tpu" | "cpu" | "auto" | "gpu" | ...
  DeviceValue devices;
  DeviceValue tpu_cores;
  // `num_nodes` as Python would see it (JSON "2" is a str, 2.0 a float):
  // Lightning 2.0 and older take int(num_nodes), 2.1+ only an int.
  DeviceValue num_nodes;
  // `gpus`, `ipus`, `num_processes` as given (null too), in that order:
  // Trainer arguments Lightning 2.0 removed.
  std::vector<std::string> removed_arguments;
  // Their values, which Lightning 1.x maps onto the accelerator and devices
  // as it does `tpu_cores` (lightning/device_flags.cc).
  DeviceValue gpus;
  DeviceValue ipus;
  DeviceValue num_processes;
  std::optional<std::string> precision;  // as written; a JSON number 16 becomes "16"
  bool precision_is_number = false;      // the JSON value was a number (Python int)
  std::optional<std::string> strategy;
  std::optional<std::string> runtime;  // "pjrt" | "xrt"
  std::map<std::string, std::string> env;
  std::optional<std::string> accelerator_type;  // resources.accelerator_type, e.g. "v3-32"
  // resources.topology, e.g. "4x4" or "2x2x4": names the slice of the one
  // generation in the pool that has that shape; with accelerator_type the
  // two must name the same slice.
  std::optional<std::string> topology;
  // resources.workers: the slice's workers (hosts, 0-based) the job is
  // launched on, as `gcloud compute tpus tpu-vm ssh --worker=0,1` names
  // them; nullopt: every worker ("all", or not given).
  std::optional<std::vector<std::int64_t>> workers;
  std::optional<std::string> lightning_version;  // "1.6" ... "2.5", "1.x", "2.x" (default)
  // `environment`; nullopt when the spec has none (then torch_xla is
  // assumed present and matching, as on a fresh Cloud TPU VM).
  std::optional<Environment> environment;
  // The loop limits (lightning/loop_limits.cc): whether `max_epochs` was
  // given, `max_steps` (-1 when not), and `max_time`.
  bool max_epochs_given = false;
  std::int64_t max_steps = -1;
  DurationValue max_time;
};

// One TPU generation as the rules see it: the facts Lightning's checks and
// messages depend on, and how many of its hosts the pool has. The service
// fills these from its own generation facts (scheduler/generation.h), so the
// rules never keep a second copy of them.
struct TpuGeneration {
  std::string name;              // "v2", "v3", "v4"
  int devices_per_host = 0;      // 8, 8, 4
  int units_per_device = 1;      // accelerator-type units per device: v4-8 is 4 chips
  std::vector<int> slice_sizes;  // valid accelerator-type sizes, ascending
  int hosts = 0;                 // hosts in the pool, healthy or not; 0 = absent
  // What its accelerator types start with when it is not `name`: "v5litepod"
  // for v5e ("v5litepod-16"); empty = name.
  std::string type_prefix{};
  // Its slice shapes, each with dimensions ascending ("2x4", "2x2x4") and
  // the slice size it names; empty for generations without topology names.
  std::vector<std::pair<std::string, int>> topologies{};
  // The number in a type counts chips (v5e, v6e), not TensorCores.
  bool type_counts_chips = false;
};

// Every generation the service emulates, oldest first (v2, v3, v4).
struct PoolView {
  std::vector<TpuGeneration> generations;
};

// What a job asks of the pool, once its settings are resolved; api/ maps it
// onto the scheduler's ResourceRequest.
struct DeviceRequest {
  enum class Kind {
    kCpu,         // accelerator "cpu": takes no TPU core
    kSingleCore,  // devices: 1 or [k]
    kHost,        // all devices of one host
    kSlice,       // num_nodes > 1 whole hosts forming a pod slice
  } kind = Kind::kCpu;
  // A TpuGeneration::name; nullopt: any generation whose host fits.
  std::optional<std::string> generation;
  int devices_per_host = 0;        // cores used on each host (1 for a single core)
  int hosts = 0;                   // 0 for cpu, 1 for a single core or a host
  std::optional<int> pinned_core;  // devices: [k] -> core k of a host (0-based)
  std::string accelerator_type;    // "v3-32" for a slice or a whole host, "" otherwise

  int cores() const { return devices_per_host * hosts; }
};

enum class Precision { k32True, k16True, kBf16True };

// How a job launched on fewer than all workers of its multi-host slice fails
// when it starts (lightning/workers.cc): what its processes' log shows and
// the job's error. tpujobs' own texts: torch_xla and Lightning have none.
struct LaunchFailure {
  std::vector<std::string> log_lines;
  std::string type;  // "UNAVAILABLE"
  std::string message;
  std::string hint;
};

// Settings that resolve: what the job asks of the pool and how it runs.
struct Resolution {
  std::vector<std::string> warnings;  // Lightning's warning texts (deprecations, precision=16 ->
                                      // bf16 ...) and tpujobs' `notices`
  DeviceRequest device;
  // How the executor computes and sizes the job: '16-true' on a TPU under
  // 2.1+ is k32True, as torch_xla never sees the variable Lightning sets.
  Precision precision = Precision::k32True;
  // The precision flag Lightning ends up with, in its own spelling: "32"
  // and "bf16" in 1.x, "32-true", "bf16-mixed", "bf16-true" ... in 2.x
  // (e.g. 2.x turns '16-mixed' on the CPU into 'bf16-mixed'). `precision`
  // is how the executor runs it.
  std::string lightning_precision = "32-true";
  std::string strategy;        // resolved: "xla", "single_xla", "xla_debug" (or "auto" for cpu)
  std::string accelerator;     // resolved: "tpu" | "cpu"
  int world_size = 1;          // replicas = device.cores(), or 1 for cpu
  bool tpu_available = false;  // XLAAccelerator.is_available(): TPU hosts and torch_xla
  bool lightning_v1 = false;
  std::string lightning_version;  // the release whose rules were applied: "2.1"
  // The upstream tag its texts quote: the release's ("2.1.4"), or, when the
  // installed patch release's texts differ from it, the newest patch release
  // whose texts they all are ("2.5.1" -> "2.5.2").
  std::string lightning_tag;
  // The torch_xla whose metric names and report layout apply, major*100+minor
  // (2.5 -> 205): environment.torch_xla, else the newest one the release's
  // torch requirement allows.
  int torch_xla_version = 205;
  // torch_xla prints its performance analyses after every step
  // (PT_XLA_DEBUG: strategy 'xla_debug', or set in `env`).
  bool pt_xla_debug = false;
  // env XLA_METRICS_FILE ("STDOUT", "STDERR" or a path); empty when unset.
  std::string xla_metrics_file;
  // The lines Lightning's _log_device_info prints at fit start, this
  // release's set ("GPU available: ...", "TPU available: ...", and the IPU /
  // HPU lines of the releases that have them).
  std::vector<std::string> device_info;
  // What torch_xla itself prints in the job's log, when `environment` names
  // the torch_xla: at `import torch_xla`, before Lightning's device lines
  // (2.5's warning on a deprecated XLA_USE_FP16), and when the job's
  // processes on a host first place a float tensor on the TPU, after them
  // (2.4-2.5's XLA_USE_BF16 / XLA_USE_FP16 notices: once a process, so once
  // per core of a host, one line for a single-core job). Each is one of
  // `warnings` too, once.
  std::vector<std::string> torch_xla_import_lines;
  std::vector<std::string> torch_xla_first_tensor_lines;
  // tpujobs' own notices, each starting "tpujobs:", where the emulation
  // follows an upstream behaviour a user would not expect (precision
  // '16-true' on a TPU training in float32 under 2.1+). Each is one of
  // `warnings` too; the job's log prints them at fit start.
  std::vector<std::string> notices;
  // `max_time` as a duration (the Timer's), in milliseconds; may be zero or
  // negative (the Timer then stops the fit before its first step). nullopt:
  // no time limit.
  std::optional<std::int64_t> max_time_ms;
  // `max_epochs` when the spec does not give it: 1000 when neither
  // max_steps nor max_time bound the run, else -1.
  int default_max_epochs = 1000;
  // What Lightning prints when fit starts, after the device lines:
  // _parse_loop_limits' warning when it chose max_epochs=1000. Not among
  // `warnings` (Trainer(...) gives none of these: they come with fit).
  std::vector<std::string> fit_start_lines;
  // resources.workers names some of the slice's workers only: the job
  // fails when it is launched (executor), as the TPU runtime on the
  // launched workers never completes its rendezvous.
  std::optional<LaunchFailure> launch_failure;
};

// Validates `settings` against the rules above and the generations present
// in `pool`. Never throws on user input. Settings that do not resolve are a
// kInvalid base::invalid_fields error listing every problem at once, each
// check running on whatever the checks before it could resolve. Each field
// error's `field` is the JSON path of the setting to change
// ("trainer.devices", "trainer.precision", "runtime", "env",
// "resources.accelerator_type", "lightning_version", "environment.torch",
// ...), its `message` Lightning's text where Lightning has one, its `hint`
// what to change (never empty) and its `source` the upstream file the
// message quotes. The error's `warnings` are the ones Lightning gave before
// it refused, which a refusal shows beside its errors as a valid
// Resolution's `warnings` are.
base::Result<Resolution> resolve(const TrainerSettings& settings, const PoolView& pool);

// The warnings of resolve()'s answer, whether it resolved the settings or
// refused them.
const std::vector<std::string>& resolution_warnings(const base::Result<Resolution>& resolution);

// The release whose rules resolve() applies to `settings` ("2.1"), valid or
// not: environment.lightning's, else lightning_version's, else the last.
// What a refusal names as the rules it comes from.
std::string rules_release(const TrainerSettings& settings);

// "32-true", "16-true", "bf16-true".
std::string_view precision_name(Precision precision);

}  // namespace tpujobs::lightning
