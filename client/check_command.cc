#include "client/check_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "client/check_report.h"
#include "client/command_table.h"
#include "client/options.h"
#include "lightning/script_check.h"
#include "lightning/script_report.h"
#include "lightning/versions.h"
#include "pyparse/tree_sitter_python.h"

namespace tpujobs::client {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAbout = R"(usage: tpujobs check [options] PATH...

Checks training scripts for TPU misconfigurations where they are written: the
Trainer(...) / Fabric(...) calls of each PATH (a .py file, or a directory searched
for *.py, skipping virtualenvs and .git) and torch_xla's xmp.spawn(...), with the
exact texts of the Lightning and torch_xla versions in play. Offline: no server.
)";

constexpr std::string_view kExitCodes =
    "\nexit codes: 0 no error finding, 2 an error finding or a usage error.\n";

struct CheckLine {
  std::optional<std::string> accelerator_type;
  std::optional<std::string> lightning;
  std::optional<std::string> python;
  std::optional<std::string> runtime;
  std::vector<std::string> requirements;
  std::string format = "text";
  std::optional<std::string> output;
  unsigned jobs = 0;  // --jobs; 0: one per hardware thread
  std::vector<std::string> paths;
  bool help = false;
};

// Stores an option's value; an empty one is a usage error.
std::function<void(const std::string&)> into(std::optional<std::string>& target,
                                             const std::string& option) {
  return [&target, option](const std::string& value) {
    if (value.empty()) throw UsageError(option + " needs a value");
    target = value;
  };
}

// The check's options, declared once with CLI11 as every client command's
// are (client/command_table.h): they fill *line, and --help lists them.
std::unique_ptr<CLI::App> check_app(CheckLine& line) {
  auto app = std::make_unique<CLI::App>("check training scripts", "tpujobs check");
  app->set_help_flag();  // -h / --help is looked for before the parse
  app->allow_extras();   // the PATHs, and unknown options, are ours to name
  valued(*app, "--accelerator-type", "TYPE",
         "the TPU the job runs on (v3-8, v4-8, v3-32, ...); default:\n"
         "the default pool of `tpujobs serve` (v3-32)",
         into(line.accelerator_type, "--accelerator-type"));
  valued(*app, "--lightning", "VERSION",
         "the Lightning whose rules apply (1.6 ... 2.5, 1.x, 2.x, 2.1.3)",
         [&line](const std::string& value) {
           if (!lightning::find_release(value))
             throw UsageError("--lightning '" + value + "' is not a release tpujobs reproduces (" +
                              lightning::release_names() + ", or a full version such as 2.1.3)");
           line.lightning = value;
         });
  valued(*app, "--python", "VERSION", "the Python of the TPU VM (3.8 ... 3.11); default 3.10",
         into(line.python, "--python"));
  valued(*app, "--runtime", "R",
         "the torch_xla runtime: pjrt (PJRT_DEVICE set) or xrt\n"
         "(XRT_TPU_CONFIG set); default: what the pinned torch_xla\n"
         "picks by itself (XRT up to 1.13, PJRT from 2.0)",
         [&line](const std::string& value) {
           if (value != "pjrt" && value != "xrt")
             throw UsageError("--runtime must be pjrt or xrt, not '" + value + "'");
           line.runtime = value;
         });
  valued(*app, "--requirements", "FILE",
         "a requirements.txt, `pip freeze` output or pyproject.toml whose\n"
         "pins (torch, torch_xla, lightning / pytorch-lightning) are the\n"
         "versions in play; repeatable",
         [&line](const std::string& value) {
           if (value.empty()) throw UsageError("--requirements needs a file name");
           line.requirements.push_back(value);
         });
  valued(*app, "--format", "F", "text (default), json, sarif or junit",
         [&line](const std::string& value) {
           if (value != "text" && value != "json" && value != "sarif" && value != "junit")
             throw UsageError("--format must be text, json, sarif or junit, not '" + value + "'");
           line.format = value;
         });
  valued(*app, "--output", "FILE", "write the report to FILE instead of stdout",
         into(line.output, "--output"));
  valued(*app, "--jobs", "N",
         "check N files at a time (default: one per hardware thread);\n"
         "the report is the same whatever N",
         [&line](const std::string& value) {
           const bool digits =
               !value.empty() && value.size() <= 4 &&
               std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
           if (!digits || std::stoi(value) < 1)
             throw UsageError("--jobs must be a whole number from 1 to 9999, not '" + value + "'");
           line.jobs = static_cast<unsigned>(std::stoi(value));
         });
  app->add_flag("-h,--help", line.help, "this text");
  return app;
}

std::string usage_text() {
  CheckLine unused;
  return std::string(kAbout) + "\noptions:\n" + describe_options(*check_app(unused), "Options") +
         std::string(kExitCodes);
}

base::Error usage_error(std::string message) {
  return base::make_error(base::ErrorCode::kInvalid, std::move(message));
}

// The command line, or kInvalid with the usage error.
base::Result<CheckLine> parse(const std::vector<std::string>& args) {
  CheckLine line;
  if (std::any_of(args.begin(), args.end(),
                  [](const std::string& a) { return a == "-h" || a == "--help"; })) {
    line.help = true;
    return line;
  }
  const std::unique_ptr<CLI::App> app = check_app(line);
  try {
    app->parse(std::vector<std::string>(args.rbegin(), args.rend()));  // as CLI11 takes them
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();
    return usage_error(what.substr(0, what.find(':')) + " needs a value");
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  }
  bool options_ended = false;  // after "--", everything is a PATH
  for (const std::string& extra : app->remaining()) {
    if (!options_ended && extra == "--") {
      options_ended = true;
    } else if (!options_ended && extra.size() >= 2 && extra[0] == '-') {
      return usage_error("unknown option '" + extra.substr(0, extra.find('=')) + "'");
    } else {
      line.paths.push_back(extra);
    }
  }
  if (line.paths.empty()) return usage_error("give at least one PATH (a .py file or a directory)");
  return line;
}

bool skipped_directory(const fs::path& directory) {
  const std::string name = directory.filename().string();
  if (name == ".git" || name == "__pycache__" || name == "node_modules" || name == ".tox" ||
      name == "site-packages")
    return true;
  std::error_code error;
  return fs::exists(directory / "pyvenv.cfg", error);  // a virtualenv (venv, virtualenv, uv)
}

// The *.py files under `root`, sorted, or `root` itself when it is a file.
base::Result<std::vector<std::string>> python_files(const std::string& root) {
  std::error_code error;
  const fs::file_status status = fs::status(root, error);
  if (error || !fs::exists(status)) {
    return base::make_error(base::ErrorCode::kNotFound, root + ": no such file or directory");
  }
  if (!fs::is_directory(status)) return std::vector<std::string>{root};
  std::vector<std::string> out;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_directory(error)) {
      if (skipped_directory(it->path())) it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == ".py" && it->is_regular_file(error))
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The file's text, unless it is larger than the check reads (then only its size).
base::Result<lightning::SourceFile> read_source(const std::string& path) {
  lightning::SourceFile file;
  file.path = path;
  std::error_code error;
  file.size = fs::file_size(path, error);
  if (error) return base::make_error(base::ErrorCode::kNotFound, path + ": " + error.message());
  if (file.size > lightning::kMaxSourceBytes) return file;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof())
    return base::make_error(base::ErrorCode::kInternal, path + ": cannot be read");
  file.text = text.str();
  return file;
}

struct Sources {
  std::vector<lightning::SourceFile> requirements;
  std::vector<lightning::SourceFile> scripts;
};

// The requirements files and the scripts under the PATHs; the first file
// that cannot be read ends it.
base::Result<Sources> read_sources(const CheckLine& line) {
  Sources sources;
  for (const std::string& path : line.requirements) {
    base::Result<lightning::SourceFile> file = read_source(path);
    if (!file.ok()) return file.error();
    sources.requirements.push_back(std::move(*file));
  }
  for (const std::string& root : line.paths) {
    base::Result<std::vector<std::string>> paths = python_files(root);
    if (!paths.ok()) return paths.error();
    for (const std::string& path : *paths) {
      base::Result<lightning::SourceFile> file = read_source(path);
      if (!file.ok()) return file.error();
      sources.scripts.push_back(std::move(*file));
    }
  }
  return sources;
}

// Runs work(0), ..., work(count - 1) on up to `threads` threads, this one
// among them, each taking the next index until none is left. A call that
// throws stops the others taking more, and the first exception is rethrown
// here once every thread has stopped. When a thread cannot be started, the
// ones that did (and this one) do its share.
void on_threads(unsigned threads, std::size_t count, const std::function<void(std::size_t)>& work) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failures(std::max(1u, threads));
  const auto drain = [&](std::size_t slot) {
    try {
      for (std::size_t i = next++; i < count; i = next++) work(i);
    } catch (...) {
      failures[slot] = std::current_exception();
      next = count;
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned slot = 1; slot < threads && slot < count; ++slot) {
    try {
      helpers.emplace_back(drain, slot);
    } catch (const std::system_error&) {
      break;
    }
  }
  drain(0);
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

// The scripts, `jobs` at a time (0: one per hardware thread), each thread
// with its own tree-sitter parser (pyparse keeps one per thread).
lightning::ForEachScript for_each_script(unsigned jobs) {
  const unsigned threads = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  if (threads == 1) return {};
  return [threads](std::size_t count, const std::function<void(std::size_t)>& work) {
    on_threads(threads, count, work);
  };
}

std::string render(const lightning::CheckReport& report, const std::string& format) {
  if (format == "json") return lightning::check_report_json(report).dump(2) + "\n";
  if (format == "sarif") return check_report_sarif(report).dump(2) + "\n";
  if (format == "junit") return check_report_junit(report);
  return check_report_text(report);
}

}  // namespace

int run_check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                      const CheckPoolSource& pool_for) {
  const base::Result<CheckLine> parsed = parse(args);
  if (!parsed.ok()) {
    err << "tpujobs check: " << parsed.error().message << "\n\n" << usage_text();
    return kExitRejected;
  }
  const CheckLine& line = *parsed;
  if (line.help) {
    out << usage_text();
    return kExitSucceeded;
  }
  const std::optional<lightning::PoolView> pool = pool_for(line.accelerator_type.value_or("v3-32"));
  if (!pool) {
    err << "tpujobs check: --accelerator-type '" << *line.accelerator_type
        << "' is not a TPU type the pool knows (a type such as v3-8, v4-8 or v3-32)\n";
    return kExitRejected;
  }
  lightning::ScriptCheckOptions options;
  options.lightning_version = line.lightning;
  options.accelerator_type = line.accelerator_type;
  options.python = line.python;
  options.runtime = line.runtime;
  options.pool = *pool;
  const base::Result<Sources> sources = read_sources(line);
  if (!sources.ok()) {
    err << "tpujobs check: " << sources.error().message << "\n";
    return kExitRejected;
  }
  const std::unique_ptr<lightning::PythonParser> parser = pyparse::make_tree_sitter_parser();
  const lightning::CheckReport report = lightning::check_sources(
      sources->scripts, sources->requirements, options, *parser, for_each_script(line.jobs));
  const std::string text = render(report, line.format);
  if (line.output) {
    std::ofstream file(*line.output, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file.flush()) {
      err << "tpujobs check: --output " << *line.output << ": cannot be written\n";
      return kExitRejected;
    }
  } else {
    out << text;
  }
  return report.has_errors() ? kExitRejected : kExitSucceeded;
}

}  // namespace tpujobs::client
