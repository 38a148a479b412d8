// The script check (DESIGN §10): finds the Trainer(...) / Fabric(...) calls
// of a Lightning script, evaluates the arguments it can know statically, and
// answers what job validation would, through the same rule tables
// (resolve()), at the file, line and column where each setting is written.
// Pure: the caller parses (lightning::PythonParser), reads the files and
// supplies the pool; no I/O, no globals.
//
// What is known: literals (numbers, strings, lists, tuples, None, booleans)
// and names bound exactly once in their module to such a literal. What is
// not (a parameter, an attribute such as args.devices, a call, **kwargs,
// a name bound twice) is a note that says so, and the call's settings that
// could depend on it are not checked: the check never guesses a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lightning/python_syntax.h"
#include "lightning/resolve.h"

namespace tpujobs::lightning {

enum class Severity { kError, kWarning, kNote };

// "error", "warning", "note".
std::string_view severity_name(Severity severity);

struct Finding {
  std::string path;
  int line = 1;    // 1-based
  int column = 1;  // 1-based, bytes of the line
  // The setting it is about, as job validation names it ("trainer.devices",
  // "environment.torch"), or the script check's own: "syntax-error",
  // "not-checked", "unpinned", "file-skipped", "lightning-warning".
  std::string rule;
  Severity severity = Severity::kError;
  std::string message;  // upstream's text where the rule tables have one
  std::string hint;     // what to change; may be empty for notes
  std::string source;   // the rule table's citation ("2.5.6:src/..."), or ""
};

// One line of a requirements file that names a package.
struct Requirement {
  std::string package;  // normalized: lower case, runs of -_. as "-" ("torch-xla")
  std::string version;  // the `==` pin ("2.1.0", "2.1.0+cpu"); "" when not pinned
  std::string path;
  int line = 1;
  int column = 1;
};

// Reads a requirements.txt, `pip freeze` output, or (when `path` ends in
// .toml) a pyproject.toml's [project] dependencies and optional
// dependencies. Lines it cannot read are notes in *findings.
std::vector<Requirement> parse_requirements(std::string_view text, std::string_view path,
                                            std::vector<Finding>* findings);

struct ScriptCheckOptions {
  std::optional<std::string> lightning_version;  // --lightning: "2.1", "2.1.3", "1.x"
  std::optional<std::string> accelerator_type;   // --accelerator-type: "v3-8"
  // --python: "3.10"; the environment check assumes 3.10 (a Cloud TPU VM's) without it.
  std::optional<std::string> python;
  // --runtime: "pjrt" (PJRT_DEVICE is set) or "xrt" (XRT_TPU_CONFIG is set,
  // PJRT_DEVICE is not), torch_xla's own switch. nullopt: what the pinned
  // torch_xla does by itself (script_xla.cc: XRT up to 1.13, PJRT from 2.0).
  // "xrt" also reaches the Trainer's rules (runtime, with XRT_TPU_CONFIG set).
  std::optional<std::string> runtime;
  std::vector<Requirement> requirements;  // from every --requirements file
  PoolView pool;                          // the generations the type names
};

// The findings of one parsed script (`tree` of the text at `path`). Adds
// to *packages (when given) the Lightning packages its calls come from.
std::vector<Finding> check_script(const SyntaxTree& tree, std::string_view path,
                                  const ScriptCheckOptions& options,
                                  std::vector<std::string>* packages = nullptr);

// The findings about the versions in play (the environment check, pins
// missing), at the requirement lines; `packages` are the Lightning packages
// the scripts import ("lightning", "pytorch_lightning"), which select the
// pin that chooses the rules.
std::vector<Finding> check_environment_pins(const ScriptCheckOptions& options,
                                            const std::vector<std::string>& packages);

// A file given to the check. `size` is its size in bytes, which may be more
// than text.size() when the caller did not read a file it knew too large.
struct SourceFile {
  std::string path;
  std::string text;
  std::uint64_t size = 0;
};

// The largest script or requirements file the check reads (50 MB).
inline constexpr std::uint64_t kMaxSourceBytes = 50ull * 1024 * 1024;

struct CheckReport {
  std::vector<Finding> findings;     // by file, then by line and column
  std::vector<std::string> checked;  // the scripts parsed and checked
  std::vector<std::string> skipped;  // the files skipped (binary, not UTF-8, too large)
  int count(Severity severity) const;
  int errors() const { return count(Severity::kError); }
  bool has_errors() const { return errors() > 0; }
};

// Runs work(0), ..., work(count - 1), each exactly once, in any order and
// on any threads, and returns when every call has returned. The check hands
// it one call per script; scripts are independent, so a caller may run them
// concurrently (`tpujobs check` does, client/check_command.cc).
using ForEachScript =
    std::function<void(std::size_t count, const std::function<void(std::size_t)>& work)>;

// The whole check: reads `requirement_files` into options.requirements (its
// own are kept), skips files that are too large (an error), binary or not
// UTF-8 (a note), parses and checks each script, and adds the environment
// check of the pins. Scripts are checked through `for_each` (one after the
// other when it is empty); the report is the same, byte for byte, whatever
// order or threads it uses. @warning With a concurrent `for_each`,
// parser.parse() is called from several threads at once (pyparse's parser
// allows it).
CheckReport check_sources(const std::vector<SourceFile>& scripts,
                          const std::vector<SourceFile>& requirement_files,
                          ScriptCheckOptions options, const PythonParser& parser,
                          const ForEachScript& for_each = {});

}  // namespace tpujobs::lightning
