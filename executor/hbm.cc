#include "executor/hbm.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>

namespace tpujobs::executor {
namespace {

// XLA's TPU layout tiles the two minor dimensions of an array by (8, 128).
constexpr std::int64_t kMinorTile = 128;
constexpr std::int64_t kSecondMinorTile = 8;

// The slices of each generation, for hints that name only slices that exist:
// accelerator-type sizes (TensorCores; a v4 device is a two-core chip), as
// scheduler/generation.cc lists them for the pool (this library may not use
// the scheduler's).
// v5e/v6e types count chips and v5e's are spelt "v5litepod-N"; their
// devices are chips, as on v4/v5p. The v5p list stops at 8192 (the hint
// names the smallest slice that fits, never the largest).
struct SliceFamily {
  std::string_view generation;
  std::int64_t units_per_device;
  std::int64_t devices_per_host;
  std::array<std::int64_t, 20> sizes;  // ascending, 0-padded
  std::string_view type_prefix = {};   // empty: the generation's name
  bool devices_are_chips = false;
};
constexpr SliceFamily kSliceFamilies[] = {
    {"v2", 1, 8, {8, 32, 128, 256, 512}},
    {"v3", 1, 8, {8, 32, 64, 128, 256, 512, 1024, 2048}},
    {"v4",
     2,
     4,
     {8,    16,   32,   64,   128,  256,  384,  512,  768,  1024,
      1152, 1536, 2048, 2304, 3072, 3456, 4096, 4608, 6144, 8192},
     "v4",
     true},
    {"v5e", 1, 8, {8, 16, 32, 64, 128, 256}, "v5litepod", true},
    {"v5p",
     2,
     4,
     {8,    16,   32,   64,   128,  256,  384,  512,  640,  768,
      1024, 1152, 1280, 1536, 1920, 2048, 2304, 2560, 3072, 3456},
     "v5p",
     true},
    {"v6e", 1, 8, {8, 16, 32, 64, 128, 256}, "v6e", true},
};

const SliceFamily* slice_family(std::string_view generation) {
  for (const SliceFamily& family : kSliceFamilies) {
    if (family.generation == generation) return &family;
  }
  return nullptr;
}

// XLA's HumanReadableNumBytes: "0B", "512B", "530.00M", "21.95G".
std::string xla_bytes(std::int64_t bytes) {
  if (bytes < 1024) return std::to_string(std::max<std::int64_t>(bytes, 0)) + "B";
  static constexpr char kUnits[] = "KMGTPE";
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%c", value, kUnits[unit]);
  return text;
}

// "    reserved        530.00M": the label, then the value right-aligned so
// that every line of a block ends in the same column, as XLA prints them.
std::string breakdown_line(std::string_view label, const std::string& value) {
  const std::size_t width = 23;
  const std::size_t used = label.size() + value.size();
  return "    " + std::string(label) + std::string(used < width ? width - used : 1, ' ') + value;
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int bytes_per_element(Precision precision) { return precision == Precision::kFp32 ? 4 : 2; }

int optimizer_slots(const OptimizerSpec& optimizer) {
  switch (optimizer.type) {
    case OptimizerType::kSgd:
      return optimizer.momentum != 0.0 ? 1 : 0;
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW:
      return 2;
  }
  return 0;
}

// Elements of a [rows, columns] array, with or without tile padding.
std::int64_t matrix_elements(std::int64_t rows, std::int64_t columns, bool padded) {
  if (!padded) return rows * columns;
  return round_up(rows, kSecondMinorTile) * round_up(columns, kMinorTile);
}

std::int64_t vector_elements(std::int64_t size, bool padded) {
  return padded ? round_up(size, kMinorTile) : size;
}

// Parameter elements of the whole model (a tied weight counted once).
std::int64_t parameter_elements(const ModelSpec& model, const ModelShape& shape, bool padded) {
  std::int64_t elements = 0;
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& layer = shape.layers[i];
    const bool bias = i < model.layers.size() ? model.layers[i].bias : true;
    switch (layer.type) {
      case LayerType::kLinear:
        // PyTorch's weight is [out, in]: `in` is the minor dimension.
        if (!layer.tied) elements += matrix_elements(layer.out, layer.in, padded);
        if (bias) elements += vector_elements(layer.out, padded);
        break;
      case LayerType::kLayerNorm:
        elements += 2 * vector_elements(layer.out, padded);
        break;
      default:
        break;
    }
  }
  return elements;
}

// Activation elements kept for backward per `rows` of batch: the input and
// every layer's output, each a [batch, width] array.
std::int64_t activation_elements(const ModelShape& shape, std::int64_t batch, bool padded) {
  std::int64_t elements = matrix_elements(batch, shape.input_features, padded);
  for (const LayerShape& layer : shape.layers)
    elements += matrix_elements(batch, layer.out, padded);
  return elements;
}

struct Breakdown {
  std::int64_t parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;
  std::int64_t total() const { return parameters + gradients + optimizer_state + activations; }
};

Breakdown breakdown(const TrainingSpec& spec, const ModelShape& shape, Precision precision,
                    std::int64_t batch, bool padded) {
  const std::int64_t width = bytes_per_element(precision);
  Breakdown bytes;
  bytes.parameters = parameter_elements(spec.model, shape, padded) * width;
  bytes.gradients = bytes.parameters;
  bytes.optimizer_state = bytes.parameters * optimizer_slots(spec.optimizer);
  bytes.activations = activation_elements(shape, batch, padded) * width;
  return bytes;
}

// The largest per-core batch whose padded total fits `capacity`; 0 if none.
int max_fitting_batch(const TrainingSpec& spec, const ModelShape& shape, std::int64_t capacity) {
  const Breakdown empty = breakdown(spec, shape, spec.precision, 0, true);
  const std::int64_t per_tile_rows =
      breakdown(spec, shape, spec.precision, kSecondMinorTile, true).activations;
  const std::int64_t room = capacity - empty.total();
  if (room < per_tile_rows || per_tile_rows <= 0) return 0;
  const std::int64_t batch = room / per_tile_rows * kSecondMinorTile;
  return static_cast<int>(std::min<std::int64_t>(batch, std::numeric_limits<int>::max()));
}

}  // namespace

std::string format_gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fG", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// GiB, MiB or KiB with two decimals, whichever keeps the number readable.
std::string format_readable(std::int64_t bytes) {
  if (bytes >= (std::int64_t{1} << 30)) return format_gib(bytes);
  char text[32];
  const bool mebibytes = bytes >= (1 << 20);
  std::snprintf(text, sizeof text, "%.2f%s",
                static_cast<double>(bytes) / (mebibytes ? 1 << 20 : 1 << 10),
                mebibytes ? "M" : "K");
  return text;
}

std::string HbmUsage::message() const {
  if (fits) return {};
  // torch_xla aliases the updated parameters and optimizer state with its
  // inputs: they are the program's arguments (and its output, sharing their
  // buffers); gradients and activations are its HLO temporaries.
  const std::int64_t arguments = parameters + optimizer_state;
  const std::int64_t program = gradients + activations;
  const std::int64_t unpadded_program = std::max<std::int64_t>(lower_bound - arguments, 0);
  char utilization[96];
  std::snprintf(utilization, sizeof utilization, " (%.1f%% utilization: Unpadded (",
                program > 0 ? 100.0 * static_cast<double>(std::min(unpadded_program, program)) /
                                  static_cast<double>(program)
                            : 100.0);
  return "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
         "space hbm. Used " +
         format_gib(total) + " of " + format_gib(capacity) + " hbm. Exceeded hbm capacity by " +
         xla_bytes(total - capacity) + ".\n\nTotal hbm usage >= " + xla_bytes(total + reserved) +
         ":\n" + breakdown_line("reserved", xla_bytes(reserved)) + "\n" +
         breakdown_line("program", xla_bytes(program)) + "\n" +
         breakdown_line("arguments", xla_bytes(arguments)) + "\n\nOutput size " +
         xla_bytes(arguments) + "; shares " + xla_bytes(arguments) +
         " with arguments.\n\nProgram hbm requirement " + xla_bytes(program) + ":\n" +
         breakdown_line("global", "0B") + "\n" + breakdown_line("scoped", "0B") + "\n" +
         breakdown_line("HLO temp", xla_bytes(program)) + utilization +
         xla_bytes(unpadded_program) + ") Padded (" + xla_bytes(program) +
         "), 0.0% fragmentation (0B))";
}

std::string HbmUsage::summary() const {
  return "HBM per core: " + format_readable(total) + " of " + format_gib(capacity) +
         " (parameters " + format_readable(parameters) + ", gradients " +
         format_readable(gradients) + ", optimizer state " + format_readable(optimizer_state) +
         ", activations for batch_size " + std::to_string(per_core_batch) + " " +
         format_readable(activations) + ")";
}

std::string HbmUsage::hint() const {
  if (fits) return {};
  const std::int64_t model_state = parameters + gradients + optimizer_state;
  std::string hint = "Each core holds the whole model and its own batch: " + summary() + ". ";
  if (max_fitting_batch == 0) {
    hint += "Parameters, gradients and optimizer state alone need " + format_gib(model_state) +
            ", so no batch size fits and more cores do not help (data parallelism copies the "
            "model to every core).";
    if (precision == Precision::kFp32) {
      hint += " precision \"bf16-true\" halves every tensor (" + format_gib(total_in_bf16) +
              " in total" + (total_in_bf16 <= capacity ? ", which fits" : ", still too much") +
              "); otherwise make the model smaller";
    } else {
      hint += " Make the model smaller";
    }
    return hint + (optimizer_state > 0 ? " or use an optimizer with less state (sgd)." : ".");
  }
  hint += "The largest per-core batch that fits is " + std::to_string(max_fitting_batch) +
          ": set data.batch_size to " + std::to_string(max_fitting_batch) + " or less";
  const std::int64_t global_batch = std::int64_t{per_core_batch} * world_size;
  if (const SliceFamily* family = slice_family(generation)) {
    for (std::int64_t size : family->sizes) {
      const std::int64_t devices = size / family->units_per_device;
      if (size == 0 || devices <= world_size) continue;
      const std::int64_t per_core = (global_batch + devices - 1) / devices;
      if (per_core > max_fitting_batch) continue;
      const std::int64_t hosts = devices / family->devices_per_host;
      hint +=
          "; or keep the global batch of " + std::to_string(global_batch) + " on " +
          std::to_string(devices) + (family->devices_are_chips ? " chips" : " cores") + " (a " +
          std::string(family->type_prefix.empty() ? family->generation : family->type_prefix) +
          "-" + std::to_string(size) +
          (hosts == 1 ? std::string(" host") : " slice of " + std::to_string(hosts) + " hosts") +
          ") with batch_size " + std::to_string(per_core);
      break;
    }
  }
  if (precision == Precision::kFp32 && total_in_bf16 > 0) {
    hint += "; or precision \"bf16-true\", which needs " + format_gib(total_in_bf16) +
            (total_in_bf16 <= capacity ? " and fits" : ", still too much on its own");
  }
  return hint + ".";
}

HbmUsage estimate_hbm(const TrainingSpec& spec, const ModelShape& shape,
                      const DeviceFacts& device) {
  HbmUsage usage;
  const std::int64_t batch = std::max(spec.data.batch_size, 1);
  const Breakdown padded = breakdown(spec, shape, spec.precision, batch, true);
  usage.parameters = padded.parameters;
  usage.gradients = padded.gradients;
  usage.optimizer_state = padded.optimizer_state;
  usage.activations = padded.activations;
  usage.total = padded.total();
  usage.lower_bound = breakdown(spec, shape, spec.precision, batch, false).total();
  usage.reserved =
      device.hbm_capacity_bytes > 0
          ? std::max<std::int64_t>(device.hbm_bytes - device.hbm_capacity_bytes, 0)
          : (device.generation == "v4" ? kHbmRuntimeReservedBytesV4 : kHbmRuntimeReservedBytes);
  usage.capacity = std::max<std::int64_t>(device.hbm_bytes - usage.reserved, 0);
  usage.fits = usage.total <= usage.capacity;
  usage.certain = usage.lower_bound > usage.capacity;

  usage.generation = device.generation;
  usage.per_core_batch = static_cast<int>(batch);
  usage.world_size = std::max(spec.world_size, 1);
  usage.precision = spec.precision;
  usage.max_fitting_batch = max_fitting_batch(spec, shape, usage.capacity);
  if (spec.precision == Precision::kFp32) {
    usage.total_in_bf16 = breakdown(spec, shape, Precision::kBf16, batch, true).total();
  }
  return usage;
}

}  // namespace tpujobs::executor
