// The trainer's part of the job spec: the Trainer's arguments as Lightning
// receives them, and what the job runs on (versions, runtime, resources).
#include <limits>

#include "api/job_spec.h"
#include "api/spec_reader.h"

namespace tpujobs::api::spec_parsing {
namespace {

// `devices` / `tpu_cores` as Python would see it: Lightning itself judges
// the value, so every JSON type reaches it (8.0 is a float, true a bool).
// Errors go to `r`'s list.
lightning::DeviceValue device_value(ObjectReader& r, const json& value, const std::string& path) {
  lightning::DeviceValue out;
  if (value.is_number_integer() || value.is_number_unsigned()) {
    std::optional<std::int64_t> n = r.integer_value(value, path, -1'000'000, 1'000'000);
    if (n) {
      out.kind = lightning::DeviceValue::Kind::kInt;
      out.number = *n;
    }
  } else if (value.is_string()) {
    out.kind = lightning::DeviceValue::Kind::kString;
    out.text = value.get<std::string>().substr(0, 64);
  } else if (value.is_array()) {
    out.kind = lightning::DeviceValue::Kind::kList;
    if (value.size() > 64) {
      r.add({path, "lists more than 64 devices", ""});
      return {};
    }
    out.list_length = value.size();
    if (!value.empty()) {
      out.list_first_type = python_type(value[0]);
      if (value[0].is_number()) out.list_first_number = value[0].get<double>();
      if (value[0].is_boolean()) out.list_first_number = value[0].get<bool>() ? 1 : 0;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      const json& item = value[i];
      if (item.is_number_integer() || item.is_number_unsigned()) {
        std::optional<std::int64_t> n =
            r.integer_value(item, path + "[" + std::to_string(i) + "]", -1'000'000, 1'000'000);
        if (n) out.list.push_back(*n);
      } else if (out.list_other_type.empty()) {
        out.list_other_type = python_type(item);
      }
    }
  } else {
    out.kind = lightning::DeviceValue::Kind::kOther;
    out.python_type = python_type(value);
    out.python_repr = python_repr(value);
    out.equals_zero = (value.is_number() && value.get<double>() == 0.0) ||
                      (value.is_boolean() && !value.get<bool>());
  }
  return out;
}

// `trainer.max_time` as Lightning's Timer receives it; null is None (no
// Timer). What it means is the rule table's (lightning/loop_limits.cc).
lightning::DurationValue duration_value(const json& value) {
  lightning::DurationValue out;
  if (value.is_string()) {
    out.kind = lightning::DurationValue::Kind::kString;
    out.text = value.get<std::string>().substr(0, 64);
  } else if (value.is_object()) {
    out.kind = lightning::DurationValue::Kind::kObject;
    for (auto it = value.begin(); it != value.end() && out.parts.size() < 16; ++it) {
      lightning::DurationValue::Part part{it.key().substr(0, 64), std::nullopt, python_type(*it)};
      if (it->is_number()) part.number = it->get<double>();
      if (it->is_boolean()) part.number = it->get<bool>() ? 1 : 0;
      out.parts.push_back(std::move(part));
    }
  } else {
    out.kind = lightning::DurationValue::Kind::kOther;
    out.python_type = python_type(value);
  }
  return out;
}

void parse_trainer(ObjectReader& r, JobSpec* spec) {
  lightning::TrainerSettings& t = spec->trainer;
  executor::TrainingSpec& training = spec->training;
  t.accelerator = r.string("accelerator", 32);
  if (const json* v = r.raw("precision")) {
    if (v->is_string()) {
      t.precision = v->get<std::string>().substr(0, 32);
    } else if (v->is_number_integer() || v->is_number_unsigned()) {
      t.precision = std::to_string(v->get<std::int64_t>());
      t.precision_is_number = true;
    } else {
      r.error("precision",
              "must be a string such as 'bf16-true' or an integer, got " + type_name(*v),
              "on TPUs use precision: '32-true', '16-true' or 'bf16-true'");
    }
  }
  t.strategy = r.string("strategy", 64);
  t.max_epochs_given = r.raw("max_epochs") != nullptr;
  if (auto v = r.integer("max_epochs", -1, 100000)) training.max_epochs = static_cast<int>(*v);
  if (auto v = r.integer("max_steps", -1, 100'000'000)) training.max_steps = *v;
  t.max_steps = training.max_steps;
  if (const json* v = r.raw("max_time")) t.max_time = duration_value(*v);
  if (auto v = r.integer("accumulate_grad_batches", 1, 1024))
    training.accumulate_grad_batches = static_cast<int>(*v);
  if (auto v = r.number("gradient_clip_val", 0.0, 1e9)) training.gradient_clip_val = *v;
  if (auto v = r.integer("log_every_n_steps", 1, 1'000'000))
    training.log_every_n_steps = static_cast<int>(*v);
  if (auto v = r.integer("check_val_every_n_epoch", 1, 100000))
    training.check_val_every_n_epoch = static_cast<int>(*v);
  if (auto v = r.integer("checkpoint_every_n_steps", 0, 100'000'000))
    training.checkpoint_every_n_steps = static_cast<int>(*v);
  if (auto v = r.integer("seed", 0, std::numeric_limits<std::int64_t>::max()))
    training.seed = static_cast<std::uint64_t>(*v);
}

}  // namespace

void parse_environment_fields(ObjectReader& top, JobSpec* spec) {
  // Which versions exist is Lightning's rule (lightning/versions.h).
  spec->trainer.lightning_version = top.string("lightning_version", 32);
  if (const json* environment = top.raw("environment");
      top.expect_object(environment, "environment")) {
    ObjectReader r(top, *environment, "environment", "environment");
    lightning::Environment& env = spec->trainer.environment.emplace();
    for (auto [key, target] :
         {std::pair{"python", &env.python}, std::pair{"torch", &env.torch},
          std::pair{"torch_xla", &env.torch_xla}, std::pair{"lightning", &env.lightning}}) {
      const json* value = r.raw(key);
      if (value && !value->is_string()) {
        r.error(key, "must be a version string as `pip freeze` prints it, got " + type_name(*value),
                "quote it: \"3.10\" (the JSON number 3.10 is 3.1)");
        continue;
      }
      *target = r.string(key, 32);
    }
  }
  spec->trainer.runtime = top.string("runtime", 32);
  if (const json* env = top.raw("env"); top.expect_object(env, "env")) {
    for (auto it = env->begin(); it != env->end(); ++it) {
      if (!it->is_string())
        top.add({"env." + it.key(), "must be a string, got " + type_name(*it), ""});
      else
        spec->trainer.env[it.key()] = it->get<std::string>();
    }
  }
  if (const json* resources = top.raw("resources"); top.expect_object(resources, "resources")) {
    ObjectReader r(top, *resources, "resources", "resources");
    spec->trainer.accelerator_type = r.string("accelerator_type", 32);
    spec->trainer.topology = r.string("topology", 16);
    if (const json* workers = r.raw("workers")) {
      base::Result<std::optional<std::vector<std::int64_t>>> parsed = parse_workers(*workers);
      if (parsed.ok())
        spec->trainer.workers = std::move(*parsed);
      else
        r.add_all(parsed.error().fields);
    }
  }
}

void parse_trainer_section(ObjectReader& top, JobSpec* spec) {
  if (const json* trainer = top.raw("trainer"); top.expect_object(trainer, "trainer")) {
    ObjectReader r(top, *trainer, "trainer", "trainer");
    parse_trainer(r, spec);
    // An explicit null is Python's None, which Lightning tells apart from
    // the default where the default is not None: `devices` defaults to
    // 'auto' from 2.0 on, and 2.x has no `tpu_cores` keyword at all. In 1.x
    // both default to None, and the rules treat None and absent alike.
    if (const json* v = r.raw("devices", /*allow_null=*/true))
      spec->trainer.devices = device_value(r, *v, "trainer.devices");
    if (const json* v = r.raw("tpu_cores", /*allow_null=*/true))
      spec->trainer.tpu_cores = device_value(r, *v, "trainer.tpu_cores");
    // Lightning judges num_nodes of any JSON type ("`num_nodes` must be a
    // positive integer, but got 2.0.", or int("2") in 2.0 and older).
    if (const json* v = r.raw("num_nodes", /*allow_null=*/true))
      spec->trainer.num_nodes = device_value(r, *v, "trainer.num_nodes");
    // Lightning 2.0 removed these Trainer arguments; the rules judge them
    // by version (lightning/devices.cc, check_removed_arguments).
    for (auto [name, value] :
         {std::pair{"gpus", &spec->trainer.gpus}, std::pair{"ipus", &spec->trainer.ipus},
          std::pair{"num_processes", &spec->trainer.num_processes}}) {
      if (const json* v = r.raw(name, /*allow_null=*/true)) {
        spec->trainer.removed_arguments.push_back(name);
        *value = device_value(r, *v, std::string("trainer.") + name);  // 1.x maps them
      }
    }
  }
}

}  // namespace tpujobs::api::spec_parsing
