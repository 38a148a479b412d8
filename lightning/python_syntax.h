// A Python module as the script check sees it (DESIGN §10): a small syntax
// tree of its own, so lightning/ never sees the parser that built it
// (pyparse/ fills it with tree-sitter; tests may build one by hand). Only
// what the check reads has a kind of its own; every other construct is a
// kOther node that keeps its children, so calls nested anywhere are found.
// Pure data: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::lightning {

enum class SyntaxKind {
  kModule,        // children: the statements
  kImport,        // `import a.b as c`: children kAlias
  kImportFrom,    // `from a.b import c as d`: text "a.b" (leading dots kept), children kAlias
  kAlias,         // text: the dotted name ("*" for a wildcard), name: the `as` name or ""
  kAssign,        // `a = b = value`: children the targets, then the value (last)
  kBinding,       // any other binding (for/with/except targets, +=, walrus, del):
                  // children[0] the target(s), then the rest of the construct
  kGlobal,        // `global a, b`: children kName
  kCall,          // children[0] the callee, then the arguments in order
  kKeyword,       // `name=value`: name, children[0] the value
  kStarArgs,      // `*args`: children[0]
  kStarStarArgs,  // `**kwargs`: children[0]
  kName,          // an identifier: text
  kAttribute,     // `object.text`: children[0] the object
  kSubscript,     // `object[index]`: children the object and the index
  kString,        // text: the decoded value
  kBytes,         // text: the literal as written
  kFormatted,     // an f-string with replacement fields: not a constant
  kInteger,       // text: the literal as written ("0x10", "1_000")
  kFloat,         // text: the literal as written ("8.0", "1e3")
  kTrue,
  kFalse,
  kNone,
  kList,        // children: the elements
  kTuple,       // children: the elements
  kDict,        // children: kOther pairs (not evaluated)
  kNegative,    // `-operand`: children[0]
  kFunction,    // def: text the name, children[0] kParameters, then the body
  kLambda,      // children[0] kParameters, then the body
  kParameters,  // children kName: every parameter name
  kClass,       // text the name, children: bases and body
  kOther,
};

struct SyntaxNode {
  SyntaxKind kind = SyntaxKind::kOther;
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes of the line's UTF-8
  std::string text;
  std::string name;  // kKeyword: the argument's name; kAlias: the `as` name
  std::vector<SyntaxNode> children;
};

// Where the parser could not make sense of the text: the first place Python
// would stop with a SyntaxError.
struct SyntaxProblem {
  int line = 1;
  int column = 1;
  std::string message;  // the parser's own words, e.g. "unexpected `)`"
};

struct SyntaxTree {
  SyntaxNode module;
  std::vector<SyntaxProblem> problems;  // empty when the text parsed
  // The text nests deeper than the parser follows: constructs below that
  // depth are kOther without children.
  bool truncated = false;
};

// Parses Python 3 source text. Implementations are stateless and safe to
// call from several threads at once.
class PythonParser {
 public:
  virtual ~PythonParser() = default;
  // Never fails: text that does not parse yields a tree of what did, and
  // `problems` says where the first error is.
  virtual SyntaxTree parse(std::string_view source) const = 0;
};

}  // namespace tpujobs::lightning
