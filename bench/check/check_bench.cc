// The script check's figures (issue 31): a 10,000-line file checked in under
// 100 ms, and a tree of 1,000 files in under 5 s. Each benchmark runs the
// whole command, `tpujobs check --format json --output /dev/null PATH`, as a
// user or CI does: walking the tree, reading, parsing with tree-sitter, the
// call analysis, the rule tables and the report. The scripts are generated:
// realistic Lightning modules (imports, a LightningModule, helpers, data
// code) with a Trainer call every 100 lines, some of them wrong.
#include <benchmark/benchmark.h>
#include <tree_sitter/api.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "api/checks_api.h"
#include "client/check_command.h"
#include "lightning/script_check.h"
#include "pyparse/tree_sitter_python.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace {

namespace fs = std::filesystem;

// `blocks` blocks of 100 lines each.
std::string script(int blocks, int seed) {
  std::string out =
      "import argparse\nimport os\n\nimport lightning as L\nimport torch\nfrom torch import nn\n"
      "from lightning.pytorch import Trainer as T\n\nNUM_CORES = 8\nPRECISION = \"bf16-true\"\n";
  for (int b = 0; b < blocks; ++b) {
    std::ostringstream block;
    block << "\n\nclass Model" << b << "(L.LightningModule):\n"
          << "    def __init__(self, hidden=128, lr=1e-3):\n"
          << "        super().__init__()\n"
          << "        self.layers = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), "
             "nn.Linear(hidden, 10))\n"
          << "        self.lr = lr\n\n"
          << "    def forward(self, x):\n        return self.layers(x)\n\n";
    for (int m = 0; m < 8; ++m) {
      block << "    def step_" << m << "(self, batch, batch_idx):\n"
            << "        x, y = batch\n"
            << "        logits = self(x)\n"
            << "        loss = nn.functional.cross_entropy(logits, y)\n"
            << "        self.log(\"loss_" << m << "\", loss, prog_bar=True)\n"
            << "        if batch_idx % 10 == 0:\n"
            << "            print(f\"step {batch_idx}: {loss.item():.4f}\")\n"
            << "        return {\"loss\": loss, \"n\": len(x), \"extra\": [1, 2, 3]}\n\n";
    }
    block << "def train_" << b << "(args):\n"
          << "    model = Model" << b << "()\n"
          << "    trainer = L.Trainer(accelerator=\"tpu\", devices="
          << ((b + seed) % 7 == 0 ? "3" : "NUM_CORES") << ", precision=PRECISION, max_epochs=3)\n"
          << "    t = T(accelerator=\"tpu\", devices=args.devices)\n"
          << "    trainer.fit(model)\n";
    std::string text = block.str();
    // Pad to exactly 100 lines with comments and statements.
    int lines = 0;
    for (char c : text) lines += c == '\n';
    for (; lines < 100; ++lines)
      text += (lines % 2 ? "    # a comment line\n"
                         : "value_" + std::to_string(b) + " = [i * 2 for i in range(10)]\n");
    out += text;
  }
  return out;
}

// Removes a scratch folder, and the run's folder above it once empty.
void remove_scratch(const fs::path& dir) {
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  fs::remove(dir.parent_path(), ignored);  // only when empty: another benchmark may use it
}

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("tpujobs_check_bench_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  return dir;
}

int run_check(const std::string& path) {
  std::ostringstream out, err;
  return tpujobs::client::run_check_command({"--format", "json", "--output", "/dev/null", path},
                                            out, err, tpujobs::api::check_pool);
}

void BM_CheckTenThousandLineFile(benchmark::State& state) {
  const fs::path file = scratch("one") / "train.py";
  std::ofstream(file) << script(100, 0);
  for (auto _ : state) benchmark::DoNotOptimize(run_check(file.string()));
  state.counters["lines"] = 100 * 100 + 10;
  remove_scratch(file.parent_path());
}
BENCHMARK(BM_CheckTenThousandLineFile)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Where the time of one file goes: tree-sitter's parse with the conversion
// to lightning's syntax tree, then the analysis and the rule tables.
void BM_ParseTenThousandLineFile(benchmark::State& state) {
  const std::string text = script(100, 0);
  const auto parser = tpujobs::pyparse::make_tree_sitter_parser();
  for (auto _ : state) benchmark::DoNotOptimize(parser->parse(text));
}
BENCHMARK(BM_ParseTenThousandLineFile)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// tree-sitter alone: ts_parser_parse_string and ts_tree_delete on one
// parser kept between runs, as pyparse keeps one per thread. The floor of
// BM_ParseTenThousandLineFile; the difference is the conversion.
void BM_TreeSitterParseOnly(benchmark::State& state) {
  const std::string text = script(100, 0);
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  for (auto _ : state) {
    TSTree* tree = ts_parser_parse_string(parser, nullptr, text.data(),
                                          static_cast<std::uint32_t>(text.size()));
    benchmark::DoNotOptimize(tree);
    ts_tree_delete(tree);
  }
  ts_parser_delete(parser);
}
BENCHMARK(BM_TreeSitterParseOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_AnalyzeTenThousandLineFile(benchmark::State& state) {
  const auto parser = tpujobs::pyparse::make_tree_sitter_parser();
  const tpujobs::lightning::SyntaxTree tree = parser->parse(script(100, 0));
  tpujobs::lightning::ScriptCheckOptions options;
  options.pool = *tpujobs::api::check_pool("v3-32");
  for (auto _ : state)
    benchmark::DoNotOptimize(tpujobs::lightning::check_script(tree, "train.py", options));
}
BENCHMARK(BM_AnalyzeTenThousandLineFile)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// 1,000 files of 210 lines in 100 folders under `root`.
void write_tree(const fs::path& root) {
  for (int i = 0; i < 1000; ++i) {
    const fs::path dir =
        root / ("package_" + std::to_string(i / 50)) / ("module_" + std::to_string(i % 5));
    fs::create_directories(dir);
    std::ofstream(dir / ("file_" + std::to_string(i) + ".py")) << script(2, i);
  }
}

void BM_CheckTreeOfThousandFiles(benchmark::State& state) {
  const fs::path root = scratch("tree");
  write_tree(root);
  for (auto _ : state) benchmark::DoNotOptimize(run_check(root.string()));
  state.counters["files"] = 1000;
  remove_scratch(root);
}
BENCHMARK(BM_CheckTreeOfThousandFiles)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

// `check_bench --write-corpus DIR` writes the benchmarks' inputs and exits:
// DIR/train.py (the 10,010-line file) and DIR/tree/ (the 1,000 files), for
// bench/check/compare.py, which times the `tpujobs check` process against
// CPython's own parser on the same files.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-corpus") {
    const fs::path dir = argv[2];
    fs::create_directories(dir);
    std::ofstream(dir / "train.py") << script(100, 0);
    write_tree(dir / "tree");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
