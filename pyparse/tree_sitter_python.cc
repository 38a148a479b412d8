#include "pyparse/tree_sitter_python.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "pyparse/python_string.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace tpujobs::pyparse {
namespace {

using lightning::SyntaxKind;
using lightning::SyntaxNode;

// Deeper than CPython's own parser goes (it stops at 200 nested brackets):
// below this, nodes are kept without children, so the conversion's
// recursion stays bounded whatever the input.
constexpr int kMaxDepth = 400;

struct Child {
  TSNode node;
  const char* field;  // nullptr when the child has no field name
};

// The named children of `node` with their field names, in order. A cursor
// walks them in linear time (ts_node_named_child(i) restarts from the first).
std::vector<Child> named_children(TSNode node) {
  std::vector<Child> out;
  TSTreeCursor cursor = ts_tree_cursor_new(node);
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode child = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(child))
        out.push_back({child, ts_tree_cursor_current_field_name(&cursor)});
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
  return out;
}

bool is(TSNode node, const char* type) { return std::strcmp(ts_node_type(node), type) == 0; }
bool field_is(const Child& child, const char* field) {
  return child.field && std::strcmp(child.field, field) == 0;
}

class Converter {
 public:
  explicit Converter(std::string_view source) : source_(source) {}

  bool truncated() const { return truncated_; }

  SyntaxNode convert(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kOther);
    if (depth > kMaxDepth) {
      truncated_ = true;
      return out;
    }
    const std::string_view type = ts_node_type(node);
    if (type == "module") return with_children(SyntaxKind::kModule, node, depth);
    if (type == "parenthesized_expression" || type == "expression_statement" ||
        type == "decorated_definition") {
      std::vector<Child> children = named_children(node);
      if (type == "parenthesized_expression" && children.size() == 1)
        return convert(children[0].node, depth + 1);
      if (type == "expression_statement" && children.size() == 1)
        return convert(children[0].node, depth + 1);
    }
    if (type == "identifier") return leaf(node, SyntaxKind::kName);
    if (type == "integer") return leaf(node, SyntaxKind::kInteger);
    if (type == "float") return leaf(node, SyntaxKind::kFloat);
    if (type == "true") return at(node, SyntaxKind::kTrue);
    if (type == "false") return at(node, SyntaxKind::kFalse);
    if (type == "none") return at(node, SyntaxKind::kNone);
    if (type == "string") return string(node);
    if (type == "concatenated_string") return concatenated(node, depth);
    if (type == "list" || type == "list_pattern")
      return with_children(SyntaxKind::kList, node, depth);
    if (type == "tuple" || type == "tuple_pattern" || type == "pattern_list" ||
        type == "expression_list")
      return with_children(SyntaxKind::kTuple, node, depth);
    if (type == "subscript") return with_children(SyntaxKind::kSubscript, node, depth);
    if (type == "dictionary") return with_children(SyntaxKind::kDict, node, depth);
    if (type == "unary_operator") return unary(node, depth);
    if (type == "attribute") return attribute(node, depth);
    if (type == "call") return call(node, depth);
    if (type == "keyword_argument") return keyword(node, depth);
    if (type == "list_splat") return with_children(SyntaxKind::kStarArgs, node, depth);
    if (type == "dictionary_splat") return with_children(SyntaxKind::kStarStarArgs, node, depth);
    if (type == "import_statement") return import(node, SyntaxKind::kImport);
    if (type == "import_from_statement" || type == "future_import_statement")
      return import(node, SyntaxKind::kImportFrom);
    if (type == "assignment") return assignment(node, depth);
    if (type == "global_statement") return with_children(SyntaxKind::kGlobal, node, depth);
    if (type == "function_definition") return function(node, depth);
    if (type == "lambda") return function(node, depth);
    if (type == "class_definition") return class_definition(node, depth);
    if (type == "augmented_assignment" || type == "for_statement" || type == "for_in_clause")
      return binding(node, "left", depth);
    if (type == "named_expression") return binding(node, "name", depth);
    if (type == "as_pattern") return binding(node, "alias", depth);
    if (type == "delete_statement") {
      SyntaxNode targets = with_children(SyntaxKind::kTuple, node, depth);
      SyntaxNode out = at(node, SyntaxKind::kBinding);
      out.children.push_back(std::move(targets));
      return out;
    }
    return with_children(SyntaxKind::kOther, node, depth);
  }

 private:
  SyntaxNode at(TSNode node, SyntaxKind kind) const {
    SyntaxNode out;
    out.kind = kind;
    const TSPoint start = ts_node_start_point(node);
    out.line = static_cast<int>(start.row) + 1;
    out.column = static_cast<int>(start.column) + 1;
    return out;
  }
  std::string_view text(TSNode node) const {
    const std::uint32_t begin = ts_node_start_byte(node);
    const std::uint32_t end = ts_node_end_byte(node);
    if (begin > source_.size() || end > source_.size() || end < begin) return {};
    return source_.substr(begin, end - begin);
  }
  SyntaxNode leaf(TSNode node, SyntaxKind kind) const {
    SyntaxNode out = at(node, kind);
    out.text = text(node);
    return out;
  }
  SyntaxNode with_children(SyntaxKind kind, TSNode node, int depth) {
    SyntaxNode out = at(node, kind);
    for (const Child& child : named_children(node)) {
      if (is(child.node, "comment")) continue;
      out.children.push_back(convert(child.node, depth + 1));
    }
    return out;
  }

  SyntaxNode string(TSNode node) const {
    DecodedString decoded = decode_python_string(text(node));
    SyntaxNode out = at(node, SyntaxKind::kString);
    switch (decoded.kind) {
      case DecodedString::Kind::kText:
        out.text = std::move(decoded.text);
        break;
      case DecodedString::Kind::kBytes:
        out.kind = SyntaxKind::kBytes;
        out.text = text(node);
        break;
      case DecodedString::Kind::kNotConstant:
        out.kind = SyntaxKind::kFormatted;
        out.text = text(node);
        break;
    }
    return out;
  }
  // "a" "b" is one constant; with an f-string or bytes among them, it is not a str.
  SyntaxNode concatenated(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kString);
    for (const Child& child : named_children(node)) {
      SyntaxNode part = convert(child.node, depth + 1);
      if (part.kind != SyntaxKind::kString) {
        out.kind = SyntaxKind::kFormatted;
        out.text = text(node);
        return out;
      }
      out.text += part.text;
    }
    return out;
  }
  SyntaxNode unary(TSNode node, int depth) {
    const TSNode operand = ts_node_child_by_field_name(node, "argument", 8);
    const TSNode op = ts_node_child_by_field_name(node, "operator", 8);
    if (!ts_node_is_null(op) && text(op) == "-" && !ts_node_is_null(operand)) {
      SyntaxNode out = at(node, SyntaxKind::kNegative);
      out.children.push_back(convert(operand, depth + 1));
      return out;
    }
    return with_children(SyntaxKind::kOther, node, depth);
  }
  SyntaxNode attribute(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kAttribute);
    const TSNode object = ts_node_child_by_field_name(node, "object", 6);
    const TSNode name = ts_node_child_by_field_name(node, "attribute", 9);
    if (ts_node_is_null(object) || ts_node_is_null(name))
      return with_children(SyntaxKind::kOther, node, depth);
    out.text = text(name);
    out.children.push_back(convert(object, depth + 1));
    return out;
  }
  SyntaxNode call(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kCall);
    const TSNode function = ts_node_child_by_field_name(node, "function", 8);
    const TSNode arguments = ts_node_child_by_field_name(node, "arguments", 9);
    if (ts_node_is_null(function)) return with_children(SyntaxKind::kOther, node, depth);
    out.children.push_back(convert(function, depth + 1));
    if (ts_node_is_null(arguments)) return out;
    if (!is(arguments, "argument_list")) {  // f(x for x in y): one positional argument
      out.children.push_back(convert(arguments, depth + 1));
      return out;
    }
    for (const Child& child : named_children(arguments)) {
      if (is(child.node, "comment")) continue;
      out.children.push_back(convert(child.node, depth + 1));
    }
    return out;
  }
  SyntaxNode keyword(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kKeyword);
    const TSNode name = ts_node_child_by_field_name(node, "name", 4);
    const TSNode value = ts_node_child_by_field_name(node, "value", 5);
    if (ts_node_is_null(name) || ts_node_is_null(value))
      return with_children(SyntaxKind::kOther, node, depth);
    out.name = text(name);
    out.children.push_back(convert(value, depth + 1));
    return out;
  }
  SyntaxNode alias(TSNode node) const {
    SyntaxNode out = at(node, SyntaxKind::kAlias);
    if (is(node, "aliased_import")) {
      const TSNode name = ts_node_child_by_field_name(node, "name", 4);
      const TSNode as = ts_node_child_by_field_name(node, "alias", 5);
      if (!ts_node_is_null(name)) out.text = text(name);
      if (!ts_node_is_null(as)) out.name = text(as);
    } else if (is(node, "wildcard_import")) {
      out.text = "*";
    } else {
      out.text = text(node);
    }
    return out;
  }
  SyntaxNode import(TSNode node, SyntaxKind kind) const {
    SyntaxNode out = at(node, kind);
    if (is(node, "future_import_statement")) out.text = "__future__";
    for (const Child& child : named_children(node)) {
      if (field_is(child, "module_name")) {
        out.text = text(child.node);
      } else if (!is(child.node, "comment")) {
        out.children.push_back(alias(child.node));
      }
    }
    return out;
  }
  // a = b = value: tree-sitter nests the second assignment on the right.
  SyntaxNode assignment(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kAssign);
    TSNode current = node;
    for (int links = 0; links < kMaxDepth; ++links) {
      const TSNode left = ts_node_child_by_field_name(current, "left", 4);
      const TSNode right = ts_node_child_by_field_name(current, "right", 5);
      if (!ts_node_is_null(left)) out.children.push_back(convert(left, depth + 1));
      if (ts_node_is_null(right)) {  // `x: int` declares and binds nothing
        out.kind = SyntaxKind::kOther;
        return out;
      }
      if (!is(right, "assignment")) {
        if (is(right, "augmented_assignment")) out.kind = SyntaxKind::kBinding;
        out.children.push_back(convert(right, depth + 1));
        return out;
      }
      current = right;
    }
    truncated_ = true;
    out.kind = SyntaxKind::kBinding;
    return out;
  }
  // children[0] the target (the `field` child), then the rest in order.
  SyntaxNode binding(TSNode node, const char* field, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kBinding);
    SyntaxNode target = at(node, SyntaxKind::kTuple);
    std::vector<SyntaxNode> rest;
    for (const Child& child : named_children(node)) {
      if (is(child.node, "comment")) continue;
      if (field_is(child, field)) {
        target = convert(child.node, depth + 1);
      } else {
        rest.push_back(convert(child.node, depth + 1));
      }
    }
    out.children.push_back(std::move(target));
    for (SyntaxNode& part : rest) out.children.push_back(std::move(part));
    return out;
  }
  SyntaxNode function(TSNode node, int depth) {
    const bool lambda = is(node, "lambda");
    SyntaxNode out = at(node, lambda ? SyntaxKind::kLambda : SyntaxKind::kFunction);
    SyntaxNode parameters = at(node, SyntaxKind::kParameters);
    std::vector<SyntaxNode> rest;
    for (const Child& child : named_children(node)) {
      if (field_is(child, "name")) {
        out.text = text(child.node);
      } else if (field_is(child, "parameters")) {
        parameters.line = static_cast<int>(ts_node_start_point(child.node).row) + 1;
        collect_parameters(child.node, &parameters, &rest, depth);
      } else if (!is(child.node, "comment")) {
        rest.push_back(convert(child.node, depth + 1));
      }
    }
    out.children.push_back(std::move(parameters));
    for (SyntaxNode& node_out : rest) out.children.push_back(std::move(node_out));
    return out;
  }
  // The names a def binds in its own scope; default values and annotations
  // are evaluated outside it, so they go with the rest of the def.
  void collect_parameters(TSNode parameters, SyntaxNode* names, std::vector<SyntaxNode>* rest,
                          int depth) {
    for (const Child& child : named_children(parameters)) {
      const TSNode parameter = child.node;
      if (is(parameter, "identifier")) {
        names->children.push_back(leaf(parameter, SyntaxKind::kName));
        continue;
      }
      for (const Child& part : named_children(parameter)) {
        if (is(part.node, "identifier") && (!part.field || field_is(part, "name"))) {
          names->children.push_back(leaf(part.node, SyntaxKind::kName));
        } else if (is(part.node, "list_splat_pattern") ||
                   is(part.node, "dictionary_splat_pattern")) {
          for (const Child& inner : named_children(part.node))
            if (is(inner.node, "identifier"))
              names->children.push_back(leaf(inner.node, SyntaxKind::kName));
        } else if (field_is(part, "value") || field_is(part, "type")) {
          rest->push_back(convert(part.node, depth + 1));
        } else {  // a tuple parameter or something the grammar recovered: binds names
          SyntaxNode bound = convert(part.node, depth + 1);
          bound.kind = SyntaxKind::kBinding;
          rest->push_back(std::move(bound));
        }
      }
    }
  }
  SyntaxNode class_definition(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kClass);
    for (const Child& child : named_children(node)) {
      if (field_is(child, "name")) {
        out.text = text(child.node);
      } else if (!is(child.node, "comment")) {
        out.children.push_back(convert(child.node, depth + 1));
      }
    }
    return out;
  }

  std::string_view source_;
  bool truncated_ = false;
};

// The first ERROR or MISSING node in source order, found with one cursor
// (no recursion: the text may nest as deep as it likes).
bool find_problem(TSNode root, std::string_view source, lightning::SyntaxProblem* out) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  bool found = false;
  for (;;) {
    const TSNode node = ts_tree_cursor_current_node(&cursor);
    const TSPoint start = ts_node_start_point(node);
    const int line = static_cast<int>(start.row) + 1;
    const int column = static_cast<int>(start.column) + 1;
    if (ts_node_is_missing(node)) {
      *out = {line, column, "missing `" + std::string(ts_node_type(node)) + "`"};
      found = true;
      break;
    }
    if (ts_node_symbol(node) == static_cast<TSSymbol>(-1)) {  // an ERROR node
      const std::uint32_t begin = std::min<std::uint32_t>(ts_node_start_byte(node), source.size());
      std::string token(source.substr(begin, 20));
      // Never end inside a UTF-8 sequence: the reports are JSON.
      while (!token.empty() && (static_cast<unsigned char>(token.back()) & 0xC0) == 0x80)
        token.pop_back();
      if (!token.empty() && (static_cast<unsigned char>(token.back()) & 0x80)) token.pop_back();
      if (const auto newline = token.find_first_of("\r\n"); newline != std::string::npos)
        token.resize(newline);
      *out = {line, column, token.empty() ? "invalid syntax" : "invalid syntax at `" + token + "`"};
      found = true;
      break;
    }
    if (ts_node_has_error(node) && ts_tree_cursor_goto_first_child(&cursor)) continue;
    bool moved = false;
    while (!(moved = ts_tree_cursor_goto_next_sibling(&cursor))) {
      if (!ts_tree_cursor_goto_parent(&cursor)) break;
    }
    if (!moved) break;
  }
  ts_tree_cursor_delete(&cursor);
  return found;
}

class TreeSitterParser final : public lightning::PythonParser {
 public:
  lightning::SyntaxTree parse(std::string_view source) const override {
    lightning::SyntaxTree out;
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, tree_sitter_python());
    TSTree* tree = ts_parser_parse_string(parser, nullptr, source.data(),
                                          static_cast<std::uint32_t>(source.size()));
    ts_parser_delete(parser);
    if (!tree) {
      out.problems.push_back({1, 1, "the parser gave up on this text"});
      return out;
    }
    const TSNode root = ts_tree_root_node(tree);
    Converter converter(source);
    out.module = converter.convert(root, 0);
    out.module.kind = SyntaxKind::kModule;
    out.truncated = converter.truncated();
    lightning::SyntaxProblem problem;
    if (find_problem(root, source, &problem)) out.problems.push_back(std::move(problem));
    ts_tree_delete(tree);
    return out;
  }
};

}  // namespace

std::unique_ptr<lightning::PythonParser> make_tree_sitter_parser() {
  return std::make_unique<TreeSitterParser>();
}

}  // namespace tpujobs::pyparse
