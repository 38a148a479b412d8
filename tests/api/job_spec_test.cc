#include "api/job_spec.h"

#include <gtest/gtest.h>

#include "api/resolution.h"
#include "executor/hbm.h"
#include "executor/model_shape.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

std::vector<base::FieldError> errors_of(const std::string& text) {
  base::Result<JobSpec> parsed = parse_job_spec(json::parse(text));
  return parsed.ok() ? std::vector<base::FieldError>{} : parsed.error().fields;
}

std::string fields(const std::vector<base::FieldError>& errors) {
  std::string out;
  for (const base::FieldError& e : errors) out += (out.empty() ? "" : " ") + e.field;
  return out;
}

constexpr const char* kMinimal =
    R"({"model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})";

TEST(JobSpec, ParsesTheDesignExample) {
  const char* text = R"({
    "name": "digits-mlp", "labels": {"pipeline": "ci-1234"}, "priority": 0,
    "trainer": {"accelerator": "tpu", "devices": 8, "num_nodes": 1, "precision": "bf16-true", "strategy": "auto",
                "max_epochs": 20, "max_steps": -1, "accumulate_grad_batches": 1, "gradient_clip_val": null,
                "log_every_n_steps": 10, "check_val_every_n_epoch": 1, "checkpoint_every_n_steps": 100, "seed": 42},
    "model": {"layers": [{"type": "linear", "out": 128}, {"type": "relu"}, {"type": "linear", "out": 10}],
              "loss": "cross_entropy"},
    "data": {"dataset": "digits", "batch_size": 64, "val_fraction": 0.2, "shuffle": true, "drop_last": false},
    "optimizer": {"type": "adam", "lr": 0.001, "weight_decay": 0.0},
    "expect": {"val_accuracy": {"min": 0.95}},
    "max_retries": 1, "timeout": "30m"})";
  auto spec = parse_job_spec(json::parse(text));
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  EXPECT_EQ(spec->name, "digits-mlp");
  EXPECT_EQ(spec->labels.at("pipeline"), "ci-1234");
  EXPECT_EQ(spec->max_retries, 1);
  EXPECT_EQ(spec->trainer.devices.kind, lightning::DeviceValue::Kind::kInt);
  EXPECT_EQ(spec->trainer.devices.number, 8);
  EXPECT_EQ(spec->trainer.precision, "bf16-true");
  EXPECT_EQ(spec->training.model.layers.size(), 3u);
  EXPECT_EQ(spec->training.model.layers[0].out, 128);
  EXPECT_EQ(spec->training.model.layers[1].type, executor::LayerType::kRelu);
  EXPECT_EQ(spec->training.data.batch_size, 64);
  EXPECT_FALSE(spec->training.gradient_clip_val);
  EXPECT_EQ(spec->training.checkpoint_every_n_steps, 100);
  EXPECT_EQ(spec->training.expect.at("val_accuracy").min, 0.95);
  EXPECT_EQ(spec->training.timeout, std::chrono::minutes(30));
}

TEST(JobSpec, UnknownFieldsAreErrorsWithPathAndSuggestion) {
  auto errors = errors_of(R"({"model": {"layers": [{"type": "linear", "out": 10, "ouy": 3}]},
                              "data": {"dataset": "digits", "batchsize": 4}, "trainer": {"devcies": 8}, "colour": 1})");
  EXPECT_EQ(fields(errors), "trainer.devcies model.layers[0].ouy data.batchsize colour")
      << fields(errors);
  for (const base::FieldError& e : errors) EXPECT_EQ(e.message, "unknown field");
  EXPECT_EQ(errors[0].hint, "did you mean 'devices'?");
  EXPECT_EQ(errors[1].hint, "did you mean 'out'?");
  EXPECT_EQ(errors[2].hint, "did you mean 'batch_size'?");
  EXPECT_EQ(errors[3].hint.rfind("known fields here: name, labels", 0), 0u);
}

TEST(JobSpec, WrongTypesNameTheTypeAndThePath) {
  auto errors =
      errors_of(R"({"priority": "high", "model": {"layers": [{"type": "linear", "out": "10"}]},
                              "data": {"dataset": "digits", "shuffle": "yes"}, "optimizer": {"lr": [1]}})");
  ASSERT_EQ(errors.size(), 4u) << fields(errors);
  EXPECT_EQ(errors[0].field, "priority");
  EXPECT_EQ(errors[0].message, "must be an integer, got a string");
  EXPECT_EQ(errors[1].field, "model.layers[0].out");
  EXPECT_EQ(errors[2].field, "data.shuffle");
  EXPECT_EQ(errors[2].message, "must be true or false, got a string");
  EXPECT_EQ(errors[3].field, "optimizer.lr");
}

TEST(JobSpec, NumbersOutOfRangeAreRejected) {
  auto errors = errors_of(
      R"({"priority": 5000, "max_retries": -1, "model": {"layers": [{"type": "dropout", "p": 1.5}]},
                              "data": {"dataset": "digits", "batch_size": 0, "val_fraction": 0.95}})");
  EXPECT_EQ(fields(errors),
            "priority max_retries model.layers[0].p data.batch_size data.val_fraction");
}

TEST(JobSpec, RequiredPartsAreNamed) {
  EXPECT_EQ(fields(errors_of("{}")), "model data");
  EXPECT_EQ(fields(errors_of(R"({"model": {}, "data": {}})")), "model.layers");
  EXPECT_EQ(fields(errors_of(R"({"model": {"layers": [{"type": "linear"}]}, "data": {}})")),
            "model.layers[0].out");
  EXPECT_EQ(fields(errors_of("[1, 2]")), "");
  EXPECT_EQ(errors_of("[1, 2]").size(), 1u);
}

TEST(JobSpec, DatasetsBuiltinSyntheticUploadAndUnknown) {
  auto spec = parse_job_spec(json::parse(R"({"model": {"layers": [{"type": "linear", "out": 4}]},
      "data": {"dataset": {"synthetic": "spirals", "n": 500, "features": 2, "classes": 3}}})"));
  ASSERT_TRUE(spec);
  const auto& synthetic = std::get<executor::SyntheticData>(spec->training.data.source);
  EXPECT_EQ(synthetic.kind, executor::SyntheticKind::kSpirals);
  EXPECT_EQ(synthetic.n, 500);
  spec = parse_job_spec(json::parse(R"({"model": {"layers": [{"type": "linear", "out": 4}]},
      "data": {"dataset": {"upload": "ds_abc"}}})"));
  ASSERT_TRUE(spec);
  EXPECT_EQ(std::get<executor::UploadedData>(spec->training.data.source).id, "ds_abc");
  auto bad = errors_of(
      R"({"model": {"layers": [{"type": "linear", "out": 4}]}, "data": {"dataset": "mnist"}})");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].field, "data.dataset");
  EXPECT_EQ(bad[0].message, "unknown dataset 'mnist'");
}

TEST(JobSpec, TieMustNameAnEarlierLinearLayer) {
  auto spec = parse_job_spec(
      json::parse(R"({"model": {"layers": [{"type": "linear", "out": 32}, {"type": "tanh"},
      {"type": "linear", "tie": "0"}]}, "data": {"dataset": "digits"}})"));
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  EXPECT_EQ(spec->training.model.layers[2].tie, 0);
  EXPECT_EQ(
      fields(errors_of(R"({"model": {"layers": [{"type": "linear", "out": 32}, {"type": "tanh"},
      {"type": "linear", "tie": "1"}]}, "data": {"dataset": "digits"}})")),
      "model.layers[2].tie");
  EXPECT_EQ(
      fields(errors_of(
          R"({"model": {"layers": [{"type": "linear", "tie": 0}]}, "data": {"dataset": "digits"}})")),
      "model.layers[0].tie");
}

TEST(JobSpec, TieToAMalformedEarlierLayerIsAnErrorNotACrash) {
  // Found by fuzz/job_spec_fuzzer.cc: the earlier layer's own problem (a numeric
  // type, not an object) is reported, and the tie to it is refused.
  EXPECT_EQ(fields(errors_of(R"({"model": {"layers": [{"type": 1}, {"type": "linear", "tie": "0"}]},
      "data": {"dataset": "digits"}})")),
            "model.layers[0].type model.layers[1].tie");
  EXPECT_EQ(fields(errors_of(R"({"model": {"layers": [5, {"type": "linear", "tie": 0}]},
      "data": {"dataset": "digits"}})")),
            "model.layers[0] model.layers[1].tie");
}

TEST(JobSpec, PrecisionNumbersBecomeStringsForTheResolver) {
  json body = json::parse(kMinimal);
  body["trainer"] = {{"precision", 16}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.precision, "16");
}

TEST(JobSpec, DevicesFormsReachTheResolverAsWritten) {
  json body = json::parse(kMinimal);
  body["trainer"] = {{"devices", json::array({5})}, {"tpu_cores", "auto"}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.devices.kind, lightning::DeviceValue::Kind::kList);
  EXPECT_EQ(spec->trainer.devices.list, std::vector<std::int64_t>{5});
  EXPECT_EQ(spec->trainer.tpu_cores.kind, lightning::DeviceValue::Kind::kString);
  // Every JSON type reaches Lightning's own type check, with Python's view of it.
  body["trainer"] = {{"devices", true}, {"tpu_cores", json::array({1, 2.5})}};
  spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.devices.kind, lightning::DeviceValue::Kind::kOther);
  EXPECT_EQ(spec->trainer.devices.python_type, "bool");
  EXPECT_EQ(spec->trainer.devices.python_repr, "True");
  EXPECT_EQ(spec->trainer.tpu_cores.list_other_type, "float");
  body["trainer"] = {{"devices", 0.0}};
  spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.devices.python_repr, "0.0");
  EXPECT_TRUE(spec->trainer.devices.equals_zero);
}

// num_nodes too: Lightning 2.0 takes int(num_nodes), 2.1+ refuses
// anything but an int with str(value) in its message, so the type must
// survive parsing ("4", 4.0, null).
TEST(JobSpec, NumNodesReachesTheResolverAsWritten) {
  json body = json::parse(kMinimal);
  body["trainer"] = {{"num_nodes", "4"}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << spec.error().fields.front().message;
  EXPECT_EQ(spec->trainer.num_nodes.kind, lightning::DeviceValue::Kind::kString);
  EXPECT_EQ(spec->trainer.num_nodes.text, "4");
  body["trainer"] = {{"num_nodes", 4.0}};
  spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.num_nodes.python_type, "float");
  EXPECT_EQ(spec->trainer.num_nodes.python_repr, "4.0");
  body["trainer"] = {{"num_nodes", nullptr}};
  spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.num_nodes.python_type, "NoneType");
  body["trainer"] = {{"num_nodes", 2}};
  spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->trainer.num_nodes.kind, lightning::DeviceValue::Kind::kInt);
  EXPECT_EQ(spec->trainer.num_nodes.number, 2);
}

// Lightning 1.6 compares the first item of a `devices` list with 1 and 8
// whatever its type, so the parser keeps its type, value and the length.
TEST(JobSpec, DeviceListsKeepTheirFirstItemAndLength) {
  json body = json::parse(kMinimal);
  body["trainer"] = {{"devices", json::array({1.0})}, {"tpu_cores", json::array({"a", 1})}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  EXPECT_EQ(spec->trainer.devices.list_length, 1u);
  EXPECT_EQ(spec->trainer.devices.list_first_type, "float");
  EXPECT_EQ(spec->trainer.devices.list_first_number, 1.0);
  EXPECT_EQ(spec->trainer.tpu_cores.list_length, 2u);
  EXPECT_EQ(spec->trainer.tpu_cores.list_first_type, "str");
  EXPECT_EQ(spec->trainer.tpu_cores.list, std::vector<std::int64_t>{1});
}

// An explicit null is Python's None: Lightning 2.0 defaults `devices` to
// 'auto' and fails on None, 2.1+ refuses None, 1.x takes None as its own
// default; 2.x has no `tpu_cores` keyword at all, null or not.
TEST(JobSpec, NullDevicesReachTheResolverAsNone) {
  scheduler::PoolCapacity v3_8;
  v3_8.hosts[scheduler::Generation::kV3] = 1;
  auto resolved = [&](const std::string& version, const json& trainer) -> base::Result<Resolution> {
    json body = json::parse(kMinimal);
    body["lightning_version"] = version;
    body["trainer"] = trainer;
    auto spec = parse_job_spec(body);
    if (!spec) return spec.error();
    return resolve(spec->trainer, v3_8);
  };
  // A refusal's message is its first problem's "field: message".
  auto first_error = [](const base::Result<Resolution>& resolution) {
    return resolution.ok() ? std::string("no error") : resolution.error().message;
  };
  json body = json::parse(kMinimal);
  body["trainer"] = {{"devices", nullptr}, {"tpu_cores", nullptr}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  EXPECT_EQ(spec->trainer.devices.python_type, "NoneType");
  EXPECT_EQ(spec->trainer.tpu_cores.python_type, "NoneType");

  EXPECT_EQ(first_error(resolved("2.0", {{"devices", nullptr}})),
            "trainer.devices: TypeError: 'NoneType' object is not subscriptable");
  EXPECT_EQ(first_error(resolved("2.0", json::object())), "no error");
  EXPECT_EQ(first_error(resolved("2.5", {{"devices", nullptr}})),
            "trainer.devices: Device IDs (GPU/TPU) must be an int, a string, a sequence of ints, "
            "but you passed None");
  EXPECT_EQ(first_error(resolved("2.5", {{"tpu_cores", nullptr}})),
            "trainer.tpu_cores: Trainer.__init__() got an unexpected keyword argument 'tpu_cores'");
  const base::Result<Resolution> v19 = resolved("1.9", {{"devices", nullptr}, {"tpu_cores", 8}});
  EXPECT_EQ(first_error(v19), "no error");
  EXPECT_EQ(v19->world_size, 8);
  ASSERT_EQ(v19->warnings.size(), 1u) << "no `devices=None will be ignored` warning";
  EXPECT_TRUE(v19->warnings[0].starts_with("Setting `Trainer(tpu_cores=8)` is deprecated"));
}

TEST(JobSpec, EnvironmentIsReadAsPipFreezeShowsIt) {
  json body = json::parse(kMinimal);
  body["environment"] = {
      {"python", "3.10"}, {"torch", "2.1.0"}, {"torch_xla", "2.1.0"}, {"lightning", "2.1.3"}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  ASSERT_TRUE(spec->trainer.environment);
  EXPECT_EQ(spec->trainer.environment->python, "3.10");
  EXPECT_EQ(spec->trainer.environment->torch_xla, "2.1.0");
  EXPECT_EQ(spec->trainer.environment->lightning, "2.1.3");
  // 3.10 as a JSON number is 3.1: refused with a hint to quote it.
  body["environment"] = {{"python", 3.10}, {"jax", "0.4"}};
  EXPECT_EQ(fields(errors_of(body.dump())), "environment.python environment.jax");
}

TEST(JobSpec, Durations) {
  EXPECT_EQ(parse_duration("30m"), std::chrono::minutes(30));
  EXPECT_EQ(parse_duration("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(parse_duration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(parse_duration("90"), std::chrono::seconds(90));
  EXPECT_EQ(parse_duration(""), std::nullopt);
  EXPECT_EQ(parse_duration("10 minutes"), std::nullopt);
  EXPECT_EQ(parse_duration("-5s"), std::nullopt);
  EXPECT_EQ(parse_duration("40d"), std::nullopt);
  EXPECT_EQ(fields(errors_of(
                R"({"timeout": "soon", "model": {"layers": [{"type": "relu"}]}, "data": {}})")),
            "timeout");
}

// Lightning's max_epochs=-1 with max_steps=-1 trains until stopped.
TEST(JobSpec, BothLimitsUnboundedTrainUntilStopped) {
  json body = json::parse(kMinimal);
  body["trainer"] = {{"max_epochs", -1}, {"max_steps", -1}};
  EXPECT_EQ(fields(errors_of(body.dump())), "");
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->training.max_epochs, -1);
  EXPECT_EQ(spec->training.max_steps, -1);
}

// trainer.max_time reaches Lightning's Timer as written; each release reads
// it as its callbacks/timer.py does (2.3 replaced split(":") and int() by a
// pattern), and a missing max_epochs becomes -1 beside it (_parse_loop_limits),
// 1000 with the warning at fit start without it.
TEST(JobSpec, MaxTimeIsReadAsLightningsTimerReadsIt) {
  scheduler::PoolCapacity v3_8;
  v3_8.hosts[scheduler::Generation::kV3] = 1;
  struct Outcome {
    std::string error;  // "field: message", or "" when valid
    std::optional<std::int64_t> max_time_ms;
    int max_epochs = 0;
    std::vector<std::string> fit_start;
  };
  auto run = [&](const std::string& version, const json& trainer) {
    json body = json::parse(kMinimal);
    body["lightning_version"] = version;
    body["trainer"] = trainer;
    auto spec = parse_job_spec(body);
    if (!spec) return Outcome{fields(spec.error().fields), std::nullopt, 0, {}};
    const base::Result<Resolution> resolution = resolve(spec->trainer, v3_8);
    if (!resolution.ok()) {
      return Outcome{resolution.error().fields.front().field + ": " +
                         resolution.error().fields.front().message,
                     std::nullopt,
                     0,
                     {}};
    }
    *spec = apply_resolution(*resolution, std::move(*spec));
    std::optional<std::int64_t> ms;
    if (spec->training.max_time) ms = spec->training.max_time->count();
    return Outcome{"", ms, spec->training.max_epochs, resolution->fit_start_lines};
  };
  Outcome o = run("2.5", {{"max_time", "01:02:03:04"}});
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.max_time_ms, ((24 + 2) * 3600 + 3 * 60 + 4) * std::int64_t{1000});
  EXPECT_EQ(o.max_epochs, -1);
  EXPECT_TRUE(o.fit_start.empty());
  o = run("2.5", {{"max_time", {{"days", 1}, {"hours", 5}, {"milliseconds", 250.5}}}});
  EXPECT_EQ(o.max_time_ms, (29 * 3600) * std::int64_t{1000} + 250);
  EXPECT_EQ(run("2.5", {{"max_time", " 00:00:01:30 "}}).max_time_ms, 90'000);

  EXPECT_EQ(run("2.5", {{"max_time", "1:2:3"}}).error,
            "trainer.max_time: `Timer(duration='1:2:3')` is not a valid duration. Expected a "
            "string in the format DD:HH:MM:SS.");
  EXPECT_EQ(run("2.3", {{"max_time", "00:1:00:00"}}).error,
            "trainer.max_time: `Timer(duration='00:1:00:00')` is not a valid duration. Expected "
            "a string in the format DD:HH:MM:SS.");
  // 2.2 and older: int() of each piece, then dhms[0..3].
  EXPECT_EQ(run("2.2", {{"max_time", "00:1:00:00"}}).max_time_ms, 3'600'000);
  EXPECT_EQ(run("2.2", {{"max_time", "1:2:3"}}).error, "trainer.max_time: list index out of range");
  EXPECT_EQ(run("1.6", {{"max_time", "1:x:3:4"}}).error,
            "trainer.max_time: invalid literal for int() with base 10: 'x'");
  EXPECT_EQ(run("2.5", {{"max_time", {{"hours", "5"}}}}).error,
            "trainer.max_time: unsupported type for timedelta hours component: str");
  EXPECT_EQ(run("2.5", {{"max_time", {{"days", 1000000000}}}}).error,
            "trainer.max_time: days=1000000000; must have magnitude <= 999999999");
  EXPECT_EQ(run("2.5", {{"max_time", 3600}}).error,
            "trainer.max_time: 'int' object has no attribute 'total_seconds'");
  EXPECT_EQ(run("2.5", {{"max_time", {{"hour", 1}}}}).error,
            "trainer.max_time: 'hour' is not an argument of datetime.timedelta (days, seconds, "
            "microseconds, milliseconds, minutes, hours, weeks)");
  EXPECT_EQ(run("2.5", {{"max_time", nullptr}}).max_time_ms, std::nullopt);  // None: no Timer

  // max_epochs not given: 1000 with the fit-start warning, -1 beside
  // max_steps or max_time; given, as given.
  o = run("2.5", json::object());
  EXPECT_EQ(o.max_epochs, 1000);
  EXPECT_EQ(o.fit_start, std::vector<std::string>{
                             "`max_epochs` was not set. Setting it to 1000 epochs. To train "
                             "without an epoch limit, set `max_epochs=-1`."});
  EXPECT_EQ(run("1.6", {{"max_steps", 50}}).max_epochs, -1);
  EXPECT_EQ(run("2.5", {{"max_epochs", 3}}).max_epochs, 3);
  EXPECT_TRUE(run("2.5", {{"max_epochs", 3}}).fit_start.empty());
}

TEST(JobSpec, ExpectGatesNeedAKnownMetricAndABound) {
  json body = json::parse(kMinimal);
  body["expect"] = {{"val_acc", {{"min", 0.9}}}, {"val_loss", json::object()}};
  EXPECT_EQ(fields(errors_of(body.dump())), "expect.val_acc expect.val_loss");
}

TEST(JobSpec, TrainingKeyIgnoresNameLabelsAndPriority) {
  json a = json::parse(kMinimal);
  json b = a;
  b["name"] = "other";
  b["priority"] = 5;
  auto sa = parse_job_spec(a);
  auto sb = parse_job_spec(b);
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(sa->training_key, sb->training_key);
  b["data"]["batch_size"] = 7;
  EXPECT_NE(parse_job_spec(b)->training_key, sa->training_key);
}

}  // namespace
}  // namespace tpujobs::api

namespace tpujobs::api {
namespace {

// Lightning 2.1+ on a TPU: precision '16-true' trains in float32 (lightning/
// precision.cc), so the executor computes and sizes the job in float32, and
// the job's log carries tpujobs' notice saying why.
TEST(ApplyResolution, SixteenTrueOnATpuRunsAndIsSizedInFloat32) {
  scheduler::PoolCapacity v3_8;
  v3_8.hosts[scheduler::Generation::kV3] = 1;
  auto resolved_spec = [&](std::string_view precision) {
    auto spec =
        parse_job_spec(json::parse(R"({"lightning_version": "2.5", "trainer": {"precision": ")" +
                                   std::string(precision) + R"("},
          "model": {"layers": [{"type": "linear", "out": 512}, {"type": "relu"},
                               {"type": "linear", "out": 10}]},
          "data": {"dataset": "digits", "batch_size": 64}})"));
    EXPECT_TRUE(spec) << fields(spec.error().fields);
    const base::Result<Resolution> resolution = resolve(spec->trainer, v3_8);
    if (!resolution.ok()) {
      ADD_FAILURE() << resolution.error().message;
      return *spec;
    }
    *spec = apply_resolution(*resolution, std::move(*spec));
    return *spec;
  };
  const JobSpec sixteen = resolved_spec("16-true");
  const JobSpec fp32 = resolved_spec("32-true");
  const JobSpec bf16 = resolved_spec("bf16-true");
  EXPECT_EQ(sixteen.training.precision, executor::Precision::kFp32);
  ASSERT_EQ(sixteen.training.notices.size(), 1u);
  EXPECT_TRUE(sixteen.training.notices[0].starts_with("tpujobs: precision='16-true'"))
      << sixteen.training.notices[0];
  EXPECT_TRUE(fp32.training.notices.empty());

  const executor::DeviceFacts v3;
  auto hbm = [&](const JobSpec& spec) {
    const auto shape = executor::infer_shape(spec.training.model, 64);
    EXPECT_TRUE(shape.ok());
    return executor::estimate_hbm(spec.training, *shape, v3);
  };
  EXPECT_EQ(hbm(sixteen).total, hbm(fp32).total);
  EXPECT_GT(hbm(sixteen).total, hbm(bf16).total);
  EXPECT_EQ(hbm(sixteen).precision, executor::Precision::kFp32);
}

// A user's XLA_USE_FP16 under torch_xla 2.4 makes every float tensor on the
// TPU fp16 (lightning/precision.cc): the executor computes in fp16, and the
// job's log says why.
TEST(ApplyResolution, UsersXlaUseFp16TrainsInFloat16) {
  scheduler::PoolCapacity v3_8;
  v3_8.hosts[scheduler::Generation::kV3] = 1;
  json body = json::parse(kMinimal);
  body["environment"] = {{"lightning", "2.4.0"}, {"torch", "2.4.0"}, {"torch_xla", "2.4.0"}};
  body["env"] = {{"XLA_USE_FP16", "1"}};
  body["trainer"] = {{"precision", "32-true"}};
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  const base::Result<Resolution> resolution = resolve(spec->trainer, v3_8);
  ASSERT_TRUE(resolution.ok()) << resolution.error().message;
  *spec = apply_resolution(*resolution, std::move(*spec));
  EXPECT_EQ(spec->training.precision, executor::Precision::kFp16);
  ASSERT_EQ(spec->training.notices.size(), 1u);
  EXPECT_TRUE(spec->training.notices[0].starts_with("tpujobs: env XLA_USE_FP16 makes"))
      << spec->training.notices[0];
}

// torch_xla's own lines in the job's log: the import warning before
// Lightning's device lines, the dtype notice after them once per process of
// the host (8 for a v3-8 host, 1 for a single core).
TEST(ApplyResolution, TorchXlaDtypeLinesFrameTheDeviceLines) {
  scheduler::PoolCapacity v3_8;
  v3_8.hosts[scheduler::Generation::kV3] = 1;
  auto log_lines = [&](const std::string& torch_xla, const json& env, const json& trainer) {
    json body = json::parse(kMinimal);
    body["environment"] = {{"lightning", "2.5.6"}, {"torch", torch_xla}, {"torch_xla", torch_xla}};
    body["env"] = env;
    body["trainer"] = trainer;
    body["trainer"]["max_epochs"] = 1;  // no _parse_loop_limits warning among the lines
    auto spec = parse_job_spec(body);
    EXPECT_TRUE(spec) << fields(spec.error().fields);
    if (!spec) return std::vector<std::string>{};
    const base::Result<Resolution> resolution = resolve(spec->trainer, v3_8);
    if (!resolution.ok()) {
      ADD_FAILURE() << resolution.error().message;
      return std::vector<std::string>{};
    }
    *spec = apply_resolution(*resolution, std::move(*spec));
    return spec->training.device_info;
  };
  const std::string bf16_24 =
      "XLA_USE_BF16 will be deprecated after the 2.4 release, please convert your model to bf16 "
      "directly";
  const std::vector<std::string> host =
      log_lines("2.4.0", json::object(), {{"precision", "bf16-true"}});
  ASSERT_EQ(host.size(), 2u + 8u);
  EXPECT_EQ(host[0], "GPU available: False, used: False");
  EXPECT_EQ(host[1], "TPU available: True, using: 8 TPU cores");
  for (std::size_t i = 2; i < host.size(); ++i) EXPECT_EQ(host[i], bf16_24);

  const std::vector<std::string> single =
      log_lines("2.4.0", {{"XLA_USE_BF16", "1"}}, {{"devices", 1}});
  ASSERT_EQ(single.size(), 3u);
  EXPECT_EQ(single[2], bf16_24);

  const std::vector<std::string> v25 =
      log_lines("2.5.0", {{"XLA_USE_FP16", "1"}}, {{"precision", "32-true"}});
  ASSERT_EQ(v25.size(), 3u);
  EXPECT_EQ(v25[0],
            "The environment variable 'XLA_USE_FP16' is deprecated Please update your code to "
            "avoid using it.");
  EXPECT_EQ(v25[1], "GPU available: False, used: False");
}

// What the executor's device log line needs: Lightning's trainer.num_devices
// (the cores of one host) and whether the pool has TPUs.
TEST(ApplyResolution, PassesTheDevicesOfOneHostAndTpuAvailability) {
  scheduler::PoolCapacity v3_32;
  v3_32.hosts[scheduler::Generation::kV3] = 4;
  auto spec = parse_job_spec(json::parse(R"({"trainer": {"devices": 8, "num_nodes": 4},
                      "model": {"layers": [{"type": "linear", "out": 10}]}, "data": {"dataset": "digits"}})"));
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  base::Result<Resolution> slice = resolve(spec->trainer, v3_32);
  ASSERT_TRUE(slice.ok()) << slice.error().message;
  *spec = apply_resolution(*slice, std::move(*spec));
  EXPECT_EQ(spec->training.world_size, 32);
  EXPECT_EQ(spec->training.devices_per_host, 8);
  EXPECT_TRUE(spec->training.tpu_available);

  spec->trainer.accelerator = "cpu";
  spec->trainer.devices = lightning::DeviceValue{};
  spec->trainer.num_nodes.kind = lightning::DeviceValue::Kind::kInt;
  spec->trainer.num_nodes.number = 1;
  base::Result<Resolution> cpu = resolve(spec->trainer, v3_32);
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  *spec = apply_resolution(*cpu, std::move(*spec));
  EXPECT_FALSE(spec->training.on_tpu);
  EXPECT_EQ(spec->training.devices_per_host, 0);
  EXPECT_TRUE(spec->training.tpu_available)
      << "a TPU pool: \"TPU available: True, using: 0 TPU cores\"";
}

TEST(JobSpec, DependsOnAndStartByAreParsed) {
  json body = json::parse(kMinimal);
  body["depends_on"] = json::parse(R"([{"job": 12}, {"job": 13, "condition": "failed"},
                                       {"job": 14, "condition": "finished"}])");
  body["start_by"] = "30m";
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  const std::vector<scheduler::Dependency> expected = {
      {12, scheduler::DependencyCondition::kSucceeded},
      {13, scheduler::DependencyCondition::kFailed},
      {14, scheduler::DependencyCondition::kFinished}};
  EXPECT_EQ(expected, spec->depends_on);
  EXPECT_EQ(std::chrono::minutes(30), spec->start_by);
  // Neither changes how the job trains.
  auto plain = parse_job_spec(json::parse(kMinimal));
  EXPECT_EQ(plain->training_key, spec->training_key);
}

TEST(JobSpec, BadDependenciesNameTheirFieldWithAHint) {
  auto spec_with = [](const char* depends_on) {
    json body = json::parse(kMinimal);
    body["depends_on"] = json::parse(depends_on);
    return errors_of(body.dump());
  };
  EXPECT_EQ("depends_on", fields(spec_with(R"({"job": 3})")));
  EXPECT_EQ("depends_on[0].job", fields(spec_with(R"([{"job": 0}])")));
  EXPECT_EQ("depends_on[0].job", fields(spec_with(R"([{"job": "12"}])")));
  EXPECT_EQ("depends_on[1].condition",
            fields(spec_with(R"([{"job": 1}, {"job": 2, "condition": "afterok"}])")));
  EXPECT_EQ("depends_on[0].cond", fields(spec_with(R"([{"job": 1, "cond": "failed"}])")));
  auto missing = spec_with(R"([{"condition": "failed"}])");
  ASSERT_EQ("depends_on[0].job", fields(missing));
  EXPECT_NE(std::string::npos, missing[0].hint.find("earlier job"));
  EXPECT_EQ("depends_on[0]", fields(spec_with(R"([7])")));
  std::string many = "[";
  for (int i = 1; i <= 65; ++i)
    many += (i > 1 ? "," : "") + std::string(R"({"job": )") + std::to_string(i) + "}";
  EXPECT_EQ("depends_on", fields(spec_with((many + "]").c_str())));
}

TEST(JobSpec, StartByIsADuration) {
  for (const char* bad : {R"("soon")", "-5", R"("0s")", R"("31d")"}) {
    json body = json::parse(kMinimal);
    body["start_by"] = json::parse(bad);
    EXPECT_EQ("start_by", fields(errors_of(body.dump()))) << bad;
  }
}

TEST(JobSpec, PreemptibleIsABooleanDefaultingToTrue) {
  EXPECT_TRUE(parse_job_spec(json::parse(kMinimal))->preemptible);
  json body = json::parse(kMinimal);
  body["preemptible"] = false;
  auto spec = parse_job_spec(body);
  ASSERT_TRUE(spec) << fields(spec.error().fields);
  EXPECT_FALSE(spec->preemptible);
  // It does not change how the job trains.
  EXPECT_EQ(parse_job_spec(json::parse(kMinimal))->training_key, spec->training_key);
  body["preemptible"] = "no";
  EXPECT_EQ("preemptible", fields(errors_of(body.dump())));
}

}  // namespace
}  // namespace tpujobs::api
