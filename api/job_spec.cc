#include "api/job_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "api/spec_reader.h"

namespace tpujobs::api {
namespace {

using namespace spec_parsing;  // NOLINT: the parts of this parser

using nlohmann::json;

// A duration field: "30m", "90s", "1h30m" or a number of seconds, at most
// 30 days. nullopt when absent or malformed (an error then).
std::optional<std::chrono::milliseconds> duration_field(ObjectReader& r, std::string_view key) {
  const json* value = r.raw(key);
  if (!value) return std::nullopt;
  std::optional<std::chrono::milliseconds> parsed;
  if (value->is_string())
    parsed = parse_duration(value->get<std::string>());
  else if (value->is_number() && value->get<double>() > 0 && value->get<double>() <= 30.0 * 86400)
    parsed = std::chrono::milliseconds(static_cast<std::int64_t>(value->get<double>() * 1000));
  if (!parsed) {
    r.error(key,
            "must be a duration such as \"30m\", \"90s\" or \"1h30m\" (at most 30 days), got " +
                value->dump().substr(0, 64));
  } else if (*parsed < std::chrono::milliseconds(1)) {
    // The clock counts whole milliseconds: this would be a zero.
    r.error(key,
            "must be at least 1ms (the clock's resolution), got " + value->dump().substr(0, 64),
            "a duration below 1ms would be 0; give \"1ms\" or more, or leave the field out");
    return std::nullopt;
  }
  return parsed;
}

constexpr std::size_t kMaxDependencies = 64;

// [{"job": 12, "condition": "succeeded"}, ...]; the condition defaults to
// "succeeded" (Slurm's afterok). Errors go to `top`'s list.
std::vector<scheduler::Dependency> parse_depends_on(ObjectReader& top, const json& list) {
  std::vector<scheduler::Dependency> out;
  if (!list.is_array()) {
    top.add({"depends_on", "must be an array, got " + type_name(list),
             "e.g. [{\"job\": 12, \"condition\": \"succeeded\"}]"});
    return out;
  }
  if (list.size() > kMaxDependencies) {
    top.add(
        {"depends_on", "has more than " + std::to_string(kMaxDependencies) + " dependencies", ""});
    return out;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "depends_on[" + std::to_string(i) + "]";
    if (!top.expect_object(&list[i], path)) continue;
    ObjectReader r(top, list[i], path, "depends_on[]");
    scheduler::Dependency dependency;
    const json* job = r.raw("job");
    const bool has_condition = r.raw("condition") != nullptr;
    std::optional<std::string> condition =
        r.choice("condition", {"succeeded", "failed", "finished"});
    if (!job) {
      r.error("job", "is required", "the id of an earlier job, as POST /v1/jobs answered it");
      continue;
    }
    std::optional<std::int64_t> id =
        r.integer_value(*job, r.field("job"), 1, std::numeric_limits<std::int64_t>::max());
    if (!id || (has_condition && !condition)) continue;
    dependency.job = *id;
    if (condition) dependency.condition = *scheduler::parse_condition(*condition);
    out.push_back(dependency);
  }
  return out;
}

// "name" and "labels": one line of printable text each.
void parse_name_and_labels(ObjectReader& top, JobSpec* spec) {
  if (auto name = top.string("name", 128)) {
    if (name->empty()) {
      top.add(
          {"name", "is empty", "give the job a name such as \"digits-mlp\", or leave `name` out"});
    } else if (auto c = control_character(*name)) {
      top.add({"name", "contains the control character " + code_point(*c), kControlCharacterHint});
    } else {
      spec->name = *name;
    }
  }
  if (const json* labels = top.raw("labels"); top.expect_object(labels, "labels")) {
    if (labels->size() > 32) top.add({"labels", "has more than 32 labels", ""});
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (!it->is_string()) {
        top.add({"labels." + it.key(), "must be a string, got " + type_name(*it), ""});
      } else if (it.key().empty() || it.key().size() > 63 || it->get<std::string>().size() > 256) {
        top.add(
            {"labels." + it.key().substr(0, 64), "keys are 1-63 and values 0-256 characters", ""});
      } else if (auto c = control_character(it.key())) {
        top.add({"labels", "a key contains the control character " + code_point(*c),
                 kControlCharacterHint});
      } else if (auto c = control_character(it->get_ref<const std::string&>())) {
        top.add({"labels." + it.key(), "contains the control character " + code_point(*c),
                 kControlCharacterHint});
      } else {
        spec->labels[it.key()] = it->get<std::string>();
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& known_fields(std::string_view path) {
  static const std::vector<std::string> kNone;
  const auto& table = field_table();
  auto it = table.find(path);
  return it == table.end() ? kNone : it->second;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (start == i) return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data() + start, text.data() + i, value);
    if (ec != std::errc() || end != text.data() + i) return std::nullopt;
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s" || (unit.empty() && i == text.size() && start == 0))
      scale = 1000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else if (unit == "d")
      scale = 86'400'000;
    else
      return std::nullopt;
    total_ms += value * scale;
  }
  if (total_ms <= 0 || total_ms > 30.0 * 86'400'000) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(total_ms));
}

std::optional<unsigned char> control_character(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return byte;
  }
  return std::nullopt;
}

base::Result<JobSpec> parse_job_spec(const json& body) {
  if (!body.is_object()) {
    return base::invalid_fields(
        {{"", "the job spec must be a JSON object, got " + type_name(body), ""}});
  }
  JobSpec spec;
  ObjectReader top(body, "", "");
  parse_name_and_labels(top, &spec);
  if (auto v = top.integer("priority", -1000, 1000)) spec.priority = static_cast<int>(*v);
  if (auto v = top.integer("max_retries", 0, 10)) spec.max_retries = static_cast<int>(*v);
  spec.training.timeout = duration_field(top, "timeout");
  spec.start_by = duration_field(top, "start_by");
  if (auto v = top.boolean("preemptible")) spec.preemptible = *v;
  if (const json* depends_on = top.raw("depends_on"))
    spec.depends_on = parse_depends_on(top, *depends_on);
  if (const json* notify = top.raw("notify")) {
    base::Result<NotifySpec> parsed = parse_notify(*notify);
    if (parsed.ok()) {
      spec.notify = std::move(*parsed);
    } else {
      top.add_all(parsed.error().fields);
    }
  }
  parse_environment_fields(top, &spec);
  parse_trainer_section(top, &spec);
  parse_training_sections(top, body, &spec);
  if (std::vector<base::FieldError> errors = top.take_errors(); !errors.empty())
    return base::invalid_fields(std::move(errors));
  json key = json::object();
  for (const char* part : {"trainer", "model", "data", "optimizer", "expect", "lightning_version",
                           "environment", "runtime", "env", "resources", "timeout"}) {
    if (body.contains(part)) key[part] = body[part];
  }
  spec.training_key = key.dump();
  return spec;
}

JobSpec apply_resolution(const Resolution& resolution, JobSpec spec) {
  executor::TrainingSpec& t = spec.training;
  t.world_size = std::max(1, resolution.world_size);
  t.on_tpu = resolution.accelerator == "tpu";
  t.devices_per_host = t.on_tpu ? std::max(1, resolution.device.devices_per_host) : 0;
  t.tpu_available = resolution.tpu_available;
  t.xla_debug = resolution.pt_xla_debug;
  t.xla_metrics_file = resolution.xla_metrics_file;
  t.torch_xla_version = resolution.torch_xla_version;
  // The executor logs device_info first, then the notices: torch_xla's
  // import warnings come before Lightning's device lines, and what it prints
  // when the processes first place a tensor on the TPU after them.
  t.device_info = resolution.torch_xla_import_lines;
  t.device_info.insert(t.device_info.end(), resolution.device_info.begin(),
                       resolution.device_info.end());
  // Fit's _run starts with _parse_loop_limits, before the strategy moves the model.
  t.device_info.insert(t.device_info.end(), resolution.fit_start_lines.begin(),
                       resolution.fit_start_lines.end());
  t.device_info.insert(t.device_info.end(), resolution.torch_xla_first_tensor_lines.begin(),
                       resolution.torch_xla_first_tensor_lines.end());
  t.notices = resolution.notices;
  t.lightning_v1 = resolution.lightning_v1;
  if (resolution.launch_failure) t.launch_failure = launch_failure(*resolution.launch_failure);
  // Lightning's loop limits: max_epochs when not given, and max_time's Timer.
  if (!spec.trainer.max_epochs_given) t.max_epochs = resolution.default_max_epochs;
  if (resolution.max_time_ms) t.max_time = std::chrono::milliseconds(*resolution.max_time_ms);
  switch (resolution.precision) {
    case lightning::Precision::k32True:
      t.precision = executor::Precision::kFp32;
      break;
    // 16-true computes in fp16 only where it does upstream: the CPU (HalfPrecision),
    // or a TPU whose torch_xla reads the user's XLA_USE_FP16 (lightning/precision.cc).
    case lightning::Precision::k16True:
      t.precision = executor::Precision::kFp16;
      break;
    case lightning::Precision::kBf16True:
      t.precision = executor::Precision::kBf16;
      break;
  }
  return spec;
}

}  // namespace tpujobs::api
