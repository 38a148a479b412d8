// The view a submit's 201 answer carries, made two ways on the committer's
// thread: built as a JSON object from the request's parsed members and
// serialised (render_row, then response_body), and made of the texts the
// submit stored (submitted_body), which only serialises the small members.
// The view is of digits-mlp's answer: its spec (examples/digits-mlp.json),
// three warnings of the advisor's length, the resolution and the estimate.
// Each iteration also copies the spec and the resolution, then drops them:
// a submit parses and frees them either way, so both sides pay it alike.
#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service/job_views.h"

namespace {

using nlohmann::json;
namespace views = tpujobs::service::views;

struct Submit {
  tpujobs::db::JobRow row;
  json spec;
  json request;
  json estimate;
  std::map<std::string, std::string> labels;
  std::vector<std::string> warnings;
};

const Submit& digits_mlp() {
  static const Submit submit = [] {
    Submit s;
    std::ifstream in(TPUJOBS_SOURCE_DIR "/examples/digits-mlp.json");
    s.spec = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    s.labels = s.spec.at("labels").get<std::map<std::string, std::string>>();
    s.request = {{"accelerator", "tpu"},      {"devices", 8},    {"precision", "bf16-true"},
                 {"strategy", "xla"},         {"world_size", 8}, {"lightning_version", "2.1"},
                 {"torch_xla_version", "2.5"}};
    s.estimate = {{"classes", 10},
                  {"device", "v3"},
                  {"estimated_step_seconds", 0.00139799057502439},
                  {"hbm_per_core", {{"activations", 8192}, {"capacity", 16624123904}}},
                  {"note", "step time and MXU utilisation are estimates for a real v3 device"},
                  {"total_steps", 440}};
    for (int i = 0; i < 3; ++i) {
      s.warnings.push_back("ADVICE_" + std::to_string(i) + ": " + std::string(400, 'x'));
    }
    s.row.id = 46810;
    s.row.tenant = "default";
    s.row.name = s.spec.at("name").get<std::string>();
    s.row.created_at = std::chrono::system_clock::now();
    s.row.pending_json = R"({"reason":"Resources","queue_position":1})";
    return s;
  }();
  return submit;
}

// What a submit parses and later frees either way: its spec and resolution.
struct Parsed {
  json spec;
  json resolved;
};
Parsed parsed(const Submit& s) {
  return {s.spec, {{"request", s.request}, {"estimate", s.estimate}}};
}

void BM_RenderedAndSerialised(benchmark::State& state) {
  const Submit& s = digits_mlp();
  for (auto _ : state) {
    Parsed p = parsed(s);
    std::string body = views::response_body(views::render_row(
        s.row, std::move(p.spec), std::move(p.resolved), json(s.labels), json(s.warnings)));
    benchmark::DoNotOptimize(body);
  }
}
BENCHMARK(BM_RenderedAndSerialised);

void BM_MadeOfTheStoredTexts(benchmark::State& state) {
  const Submit& s = digits_mlp();
  // Serialised once per submit either way, for the insert.
  const std::string spec_text = s.spec.dump(), labels_text = json(s.labels).dump(),
                    warnings_text = json(s.warnings).dump(), request_text = s.request.dump(),
                    estimate_text = s.estimate.dump();
  for (auto _ : state) {
    Parsed p = parsed(s);
    std::string body = views::submitted_body(
        s.row, p.spec, {spec_text, labels_text, warnings_text, request_text, estimate_text});
    benchmark::DoNotOptimize(body);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_MadeOfTheStoredTexts);

// The copies alone, which both of the above pay: their difference is the view's.
void BM_TheCopiesAlone(benchmark::State& state) {
  const Submit& s = digits_mlp();
  for (auto _ : state) {
    Parsed p = parsed(s);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_TheCopiesAlone);

}  // namespace

BENCHMARK_MAIN();
