// The Python parser of the script check: tree-sitter (Debian's
// libtree-sitter-dev) with the Python grammar's generated C parser from the
// tree-sitter-python npm package (pinned in web/package.json), built into
// the binary. Why tree-sitter and not CPython's `ast`: docs/script-check.md.
#pragma once

#include <memory>

#include "lightning/python_syntax.h"

namespace tpujobs::pyparse {

// A parser that is stateless between calls (each parse makes its own
// TSParser), so one instance serves any number of threads.
std::unique_ptr<lightning::PythonParser> make_tree_sitter_parser();

}  // namespace tpujobs::pyparse
