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

// The node types and fields the conversion reads, looked up once in the
// grammar: a node's type is then one table read of its symbol, not a chain
// of string comparisons, and a field child one ts_node_child_by_field_id.
enum class Type : std::uint8_t {
  kOther,
  kModule,
  kParenthesized,
  kExpressionStatement,
  kDecorated,
  kIdentifier,
  kInteger,
  kFloat,
  kTrue,
  kFalse,
  kNone,
  kString,
  kConcatenated,
  kList,
  kTuple,
  kSubscript,
  kDictionary,
  kUnary,
  kAttribute,
  kCall,
  kKeywordArgument,
  kListSplat,
  kDictionarySplat,
  kImport,
  kImportFrom,
  kFutureImport,
  kAssignment,
  kAugmentedAssignment,
  kGlobal,
  kFunction,
  kLambda,
  kClass,
  kFor,
  kNamedExpression,
  kAsPattern,
  kDelete,
  kComment,
  kArgumentList,
  kAliasedImport,
  kWildcardImport,
  kListSplatPattern,
  kDictionarySplatPattern,
};

constexpr std::pair<const char*, Type> kTypeNames[] = {
    {"module", Type::kModule},
    {"parenthesized_expression", Type::kParenthesized},
    {"expression_statement", Type::kExpressionStatement},
    {"decorated_definition", Type::kDecorated},
    {"identifier", Type::kIdentifier},
    {"integer", Type::kInteger},
    {"float", Type::kFloat},
    {"true", Type::kTrue},
    {"false", Type::kFalse},
    {"none", Type::kNone},
    {"string", Type::kString},
    {"concatenated_string", Type::kConcatenated},
    {"list", Type::kList},
    {"list_pattern", Type::kList},
    {"tuple", Type::kTuple},
    {"tuple_pattern", Type::kTuple},
    {"pattern_list", Type::kTuple},
    {"expression_list", Type::kTuple},
    {"subscript", Type::kSubscript},
    {"dictionary", Type::kDictionary},
    {"unary_operator", Type::kUnary},
    {"attribute", Type::kAttribute},
    {"call", Type::kCall},
    {"keyword_argument", Type::kKeywordArgument},
    {"list_splat", Type::kListSplat},
    {"dictionary_splat", Type::kDictionarySplat},
    {"import_statement", Type::kImport},
    {"import_from_statement", Type::kImportFrom},
    {"future_import_statement", Type::kFutureImport},
    {"assignment", Type::kAssignment},
    {"augmented_assignment", Type::kAugmentedAssignment},
    {"global_statement", Type::kGlobal},
    {"function_definition", Type::kFunction},
    {"lambda", Type::kLambda},
    {"class_definition", Type::kClass},
    {"for_statement", Type::kFor},
    {"for_in_clause", Type::kFor},
    {"named_expression", Type::kNamedExpression},
    {"as_pattern", Type::kAsPattern},
    {"delete_statement", Type::kDelete},
    {"comment", Type::kComment},
    {"argument_list", Type::kArgumentList},
    {"aliased_import", Type::kAliasedImport},
    {"wildcard_import", Type::kWildcardImport},
    {"list_splat_pattern", Type::kListSplatPattern},
    {"dictionary_splat_pattern", Type::kDictionarySplatPattern},
};

struct Grammar {
  const TSLanguage* language = tree_sitter_python();
  std::vector<Type> types;  // by symbol; named symbols only
  TSFieldId function = 0, arguments = 0, object = 0, attribute = 0, name = 0, value = 0, alias = 0,
            left = 0, right = 0, argument = 0, operator_ = 0, module_name = 0, parameters = 0,
            type = 0;

  Grammar() {
    const std::uint32_t count = ts_language_symbol_count(language);
    types.assign(count, Type::kOther);
    for (std::uint32_t symbol = 0; symbol < count; ++symbol) {
      const auto s = static_cast<TSSymbol>(symbol);
      if (ts_language_symbol_type(language, s) != TSSymbolTypeRegular) continue;
      const char* symbol_name = ts_language_symbol_name(language, s);
      for (const auto& [text, t] : kTypeNames)
        if (std::strcmp(symbol_name, text) == 0) types[symbol] = t;
    }
    const std::pair<TSFieldId*, const char*> fields[] = {{&function, "function"},
                                                         {&arguments, "arguments"},
                                                         {&object, "object"},
                                                         {&attribute, "attribute"},
                                                         {&name, "name"},
                                                         {&value, "value"},
                                                         {&alias, "alias"},
                                                         {&left, "left"},
                                                         {&right, "right"},
                                                         {&argument, "argument"},
                                                         {&operator_, "operator"},
                                                         {&module_name, "module_name"},
                                                         {&parameters, "parameters"},
                                                         {&type, "type"}};
    for (const auto& [id, text] : fields)
      *id = ts_language_field_id_for_name(language, text,
                                          static_cast<std::uint32_t>(std::strlen(text)));
  }
  Type type_of(TSNode node) const {
    const TSSymbol symbol = ts_node_symbol(node);
    return symbol < types.size() ? types[symbol] : Type::kOther;
  }
};

const Grammar& grammar() {
  static const Grammar instance;
  return instance;
}

struct Child {
  TSNode node;
  TSFieldId field;  // 0 when the child has no field name
  Type type;
};

bool is(TSNode node, Type type) { return grammar().type_of(node) == type; }

class Converter {
 public:
  Converter(std::string_view source, TSNode root)
      : source_(source), cursor_(ts_tree_cursor_new(root)) {}
  ~Converter() { ts_tree_cursor_delete(&cursor_); }
  Converter(const Converter&) = delete;
  Converter& operator=(const Converter&) = delete;

  bool truncated() const { return truncated_; }

  SyntaxNode convert(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kOther);
    if (depth > kMaxDepth) {
      truncated_ = true;
      return out;
    }
    switch (grammar().type_of(node)) {
      case Type::kModule:
        return with_children(SyntaxKind::kModule, node, depth);
      case Type::kParenthesized:
      case Type::kExpressionStatement: {
        const Children children = named_children(node, false);
        if (children.size() == 1) return convert(children[0].node, depth + 1);
        break;
      }
      case Type::kIdentifier:
        return leaf(node, SyntaxKind::kName);
      case Type::kInteger:
        return leaf(node, SyntaxKind::kInteger);
      case Type::kFloat:
        return leaf(node, SyntaxKind::kFloat);
      case Type::kTrue:
        return at(node, SyntaxKind::kTrue);
      case Type::kFalse:
        return at(node, SyntaxKind::kFalse);
      case Type::kNone:
        return at(node, SyntaxKind::kNone);
      case Type::kString:
        return string(node);
      case Type::kConcatenated:
        return concatenated(node, depth);
      case Type::kList:
        return with_children(SyntaxKind::kList, node, depth);
      case Type::kTuple:
        return with_children(SyntaxKind::kTuple, node, depth);
      case Type::kSubscript:
        return with_children(SyntaxKind::kSubscript, node, depth);
      case Type::kDictionary:
        return with_children(SyntaxKind::kDict, node, depth);
      case Type::kUnary:
        return unary(node, depth);
      case Type::kAttribute:
        return attribute(node, depth);
      case Type::kCall:
        return call(node, depth);
      case Type::kKeywordArgument:
        return keyword(node, depth);
      case Type::kListSplat:
        return with_children(SyntaxKind::kStarArgs, node, depth);
      case Type::kDictionarySplat:
        return with_children(SyntaxKind::kStarStarArgs, node, depth);
      case Type::kImport:
        return import(node, SyntaxKind::kImport);
      case Type::kImportFrom:
      case Type::kFutureImport:
        return import(node, SyntaxKind::kImportFrom);
      case Type::kAssignment:
        return assignment(node, depth);
      case Type::kGlobal:
        return with_children(SyntaxKind::kGlobal, node, depth);
      case Type::kFunction:
      case Type::kLambda:
        return function(node, depth);
      case Type::kClass:
        return class_definition(node, depth);
      case Type::kAugmentedAssignment:
      case Type::kFor:
        return binding(node, grammar().left, depth);
      case Type::kNamedExpression:
        return binding(node, grammar().name, depth);
      case Type::kAsPattern:
        return binding(node, grammar().alias, depth);
      case Type::kDelete:
        return deletion(node, depth);
      default:
        break;
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
    const Children children = named_children(node, false);
    out.children.reserve(children.size());
    for (const Child& child : children) {
      if (child.type == Type::kComment) continue;
      out.children.push_back(convert(child.node, depth + 1));
    }
    return out;
  }

  SyntaxNode deletion(TSNode node, int depth) {
    SyntaxNode targets = with_children(SyntaxKind::kTuple, node, depth);
    SyntaxNode out = at(node, SyntaxKind::kBinding);
    out.children.push_back(std::move(targets));
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
    for (const Child& child : named_children(node, false)) {
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
    const TSNode operand = ts_node_child_by_field_id(node, grammar().argument);
    const TSNode op = ts_node_child_by_field_id(node, grammar().operator_);
    if (!ts_node_is_null(op) && text(op) == "-" && !ts_node_is_null(operand)) {
      SyntaxNode out = at(node, SyntaxKind::kNegative);
      out.children.push_back(convert(operand, depth + 1));
      return out;
    }
    return with_children(SyntaxKind::kOther, node, depth);
  }
  SyntaxNode attribute(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kAttribute);
    const TSNode object = ts_node_child_by_field_id(node, grammar().object);
    const TSNode name = ts_node_child_by_field_id(node, grammar().attribute);
    if (ts_node_is_null(object) || ts_node_is_null(name))
      return with_children(SyntaxKind::kOther, node, depth);
    out.text = text(name);
    out.children.push_back(convert(object, depth + 1));
    return out;
  }
  SyntaxNode call(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kCall);
    const TSNode function = ts_node_child_by_field_id(node, grammar().function);
    const TSNode arguments = ts_node_child_by_field_id(node, grammar().arguments);
    if (ts_node_is_null(function)) return with_children(SyntaxKind::kOther, node, depth);
    out.children.push_back(convert(function, depth + 1));
    if (ts_node_is_null(arguments)) return out;
    if (!is(arguments, Type::kArgumentList)) {  // f(x for x in y): one positional argument
      out.children.push_back(convert(arguments, depth + 1));
      return out;
    }
    for (const Child& child : named_children(arguments, false)) {
      if (child.type == Type::kComment) continue;
      out.children.push_back(convert(child.node, depth + 1));
    }
    return out;
  }
  SyntaxNode keyword(TSNode node, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kKeyword);
    const TSNode name = ts_node_child_by_field_id(node, grammar().name);
    const TSNode value = ts_node_child_by_field_id(node, grammar().value);
    if (ts_node_is_null(name) || ts_node_is_null(value))
      return with_children(SyntaxKind::kOther, node, depth);
    out.name = text(name);
    out.children.push_back(convert(value, depth + 1));
    return out;
  }
  SyntaxNode alias(TSNode node) const {
    SyntaxNode out = at(node, SyntaxKind::kAlias);
    if (is(node, Type::kAliasedImport)) {
      const TSNode name = ts_node_child_by_field_id(node, grammar().name);
      const TSNode as = ts_node_child_by_field_id(node, grammar().alias);
      if (!ts_node_is_null(name)) out.text = text(name);
      if (!ts_node_is_null(as)) out.name = text(as);
    } else if (is(node, Type::kWildcardImport)) {
      out.text = "*";
    } else {
      out.text = text(node);
    }
    return out;
  }
  SyntaxNode import(TSNode node, SyntaxKind kind) {
    SyntaxNode out = at(node, kind);
    if (is(node, Type::kFutureImport)) out.text = "__future__";
    for (const Child& child : named_children(node)) {
      if (child.field == grammar().module_name) {
        out.text = text(child.node);
      } else if (child.type != Type::kComment) {
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
      const TSNode left = ts_node_child_by_field_id(current, grammar().left);
      const TSNode right = ts_node_child_by_field_id(current, grammar().right);
      if (!ts_node_is_null(left)) out.children.push_back(convert(left, depth + 1));
      if (ts_node_is_null(right)) {  // `x: int` declares and binds nothing
        out.kind = SyntaxKind::kOther;
        return out;
      }
      if (!is(right, Type::kAssignment)) {
        if (is(right, Type::kAugmentedAssignment)) out.kind = SyntaxKind::kBinding;
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
  SyntaxNode binding(TSNode node, TSFieldId field, int depth) {
    SyntaxNode out = at(node, SyntaxKind::kBinding);
    SyntaxNode target = at(node, SyntaxKind::kTuple);
    std::vector<SyntaxNode> rest;
    for (const Child& child : named_children(node)) {
      if (child.type == Type::kComment) continue;
      if (child.field == field) {
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
    const bool lambda = is(node, Type::kLambda);
    SyntaxNode out = at(node, lambda ? SyntaxKind::kLambda : SyntaxKind::kFunction);
    SyntaxNode parameters = at(node, SyntaxKind::kParameters);
    std::vector<SyntaxNode> rest;
    for (const Child& child : named_children(node)) {
      if (child.field == grammar().name) {
        out.text = text(child.node);
      } else if (child.field == grammar().parameters) {
        parameters.line = static_cast<int>(ts_node_start_point(child.node).row) + 1;
        collect_parameters(child.node, &parameters, &rest, depth);
      } else if (child.type != Type::kComment) {
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
      if (is(parameter, Type::kIdentifier)) {
        names->children.push_back(leaf(parameter, SyntaxKind::kName));
        continue;
      }
      for (const Child& part : named_children(parameter)) {
        if (part.type == Type::kIdentifier && (!part.field || part.field == grammar().name)) {
          names->children.push_back(leaf(part.node, SyntaxKind::kName));
        } else if (part.type == Type::kListSplatPattern ||
                   part.type == Type::kDictionarySplatPattern) {
          for (const Child& inner : named_children(part.node))
            if (inner.type == Type::kIdentifier)
              names->children.push_back(leaf(inner.node, SyntaxKind::kName));
        } else if (part.field == grammar().value || part.field == grammar().type) {
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
      if (child.field == grammar().name) {
        out.text = text(child.node);
      } else if (child.type != Type::kComment) {
        out.children.push_back(convert(child.node, depth + 1));
      }
    }
    return out;
  }

  // The named children of a node, with their field names, in order: a view
  // of the converter's one buffer, which nested lists extend past its end
  // and give back when they go (stack order), so converting the tree
  // allocates no list nor cursor per node. Read by value: a nested list
  // may move the buffer.
  class Children {
   public:
    Children(std::vector<Child>& buffer, std::size_t begin)
        : buffer_(buffer), begin_(begin), end_(buffer.size()) {}
    ~Children() { buffer_.resize(begin_); }
    Children(const Children&) = delete;
    Children& operator=(const Children&) = delete;
    std::size_t size() const { return end_ - begin_; }
    Child operator[](std::size_t i) const { return buffer_[begin_ + i]; }
    struct Iterator {
      const Children* list;
      std::size_t i;
      Child operator*() const { return (*list)[i]; }
      Iterator& operator++() {
        ++i;
        return *this;
      }
      bool operator!=(const Iterator& other) const { return i != other.i; }
    };
    Iterator begin() const { return {this, 0}; }
    Iterator end() const { return {this, size()}; }

   private:
    std::vector<Child>& buffer_;
    std::size_t begin_;
    std::size_t end_;
  };
  // One cursor, reset on each node, walks its children in linear time
  // (ts_node_named_child(i) restarts from the first).
  Children named_children(TSNode node, bool fields = true) {
    const std::size_t begin = children_.size();
    ts_tree_cursor_reset(&cursor_, node);
    if (ts_tree_cursor_goto_first_child(&cursor_)) {
      do {
        const TSNode child = ts_tree_cursor_current_node(&cursor_);
        if (ts_node_is_named(child))
          children_.push_back({child,
                               fields ? ts_tree_cursor_current_field_id(&cursor_) : TSFieldId{0},
                               grammar().type_of(child)});
      } while (ts_tree_cursor_goto_next_sibling(&cursor_));
    }
    return Children(children_, begin);
  }

  std::string_view source_;
  TSTreeCursor cursor_;
  std::vector<Child> children_;
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

// One TSParser per thread, kept between files: a new one per file costs the
// allocation and release of its stack and lexer (a tree of 1,000 files
// parses 1,000 times). Each thread's is its own, so parse() stays safe to
// call from several threads at once.
TSParser* thread_parser() {
  struct Owned {
    TSParser* parser = ts_parser_new();
    Owned() { ts_parser_set_language(parser, grammar().language); }
    ~Owned() { ts_parser_delete(parser); }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
  };
  thread_local Owned owned;
  return owned.parser;
}

class TreeSitterParser final : public lightning::PythonParser {
 public:
  lightning::SyntaxTree parse(std::string_view source) const override {
    lightning::SyntaxTree out;
    TSParser* parser = thread_parser();
    ts_parser_reset(parser);
    TSTree* tree = ts_parser_parse_string(parser, nullptr, source.data(),
                                          static_cast<std::uint32_t>(source.size()));
    if (!tree) {
      out.problems.push_back({1, 1, "the parser gave up on this text"});
      return out;
    }
    const TSNode root = ts_tree_root_node(tree);
    Converter converter(source, root);
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
