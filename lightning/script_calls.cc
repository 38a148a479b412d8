#include "lightning/script_calls.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "lightning/python.h"

namespace tpujobs::lightning {
namespace {

// The qualified names Trainer and Fabric are importable as: each package's
// top level and the modules that define them.
const std::set<std::string, std::less<>>& trainer_names() {
  static const std::set<std::string, std::less<>> names = {
      "lightning.Trainer",
      "lightning.pytorch.Trainer",
      "lightning.pytorch.trainer.Trainer",
      "lightning.pytorch.trainer.trainer.Trainer",
      "pytorch_lightning.Trainer",
      "pytorch_lightning.trainer.Trainer",
      "pytorch_lightning.trainer.trainer.Trainer"};
  return names;
}
const std::set<std::string, std::less<>>& fabric_names() {
  static const std::set<std::string, std::less<>> names = {
      "lightning.Fabric", "lightning.fabric.Fabric", "lightning.fabric.fabric.Fabric",
      "lightning_fabric.Fabric", "lightning_fabric.fabric.Fabric"};
  return names;
}

// torch_xla's spawn, under every import of its module
// (`import torch_xla.distributed.xla_multiprocessing as xmp`, `from
// torch_xla.distributed import xla_multiprocessing`, `from ... import spawn`).
const std::set<std::string, std::less<>>& spawn_names() {
  static const std::set<std::string, std::less<>> names = {
      "torch_xla.distributed.xla_multiprocessing.spawn"};
  return names;
}

// What a name is bound to in one scope.
struct Binding {
  enum class Kind { kQualified, kConstant, kUnknown } kind = Kind::kUnknown;
  std::string qualified;              // kQualified: "lightning.pytorch", "lightning.Trainer"
  const SyntaxNode* value = nullptr;  // kConstant: the expression bound (once)
  std::string reason;                 // kUnknown: why its value is not known
};

struct Scope {
  std::map<std::string, Binding, std::less<>> names;
  const Scope* parent = nullptr;  // the module scope for a function; nullptr for the module
  bool module = false;
  std::string function;  // the def's name, for notes
};

std::string dotted(const SyntaxNode& node) {
  if (node.kind == SyntaxKind::kName) return node.text;
  if (node.kind == SyntaxKind::kAttribute && !node.children.empty()) {
    const std::string object = dotted(node.children[0]);
    return object.empty() ? "" : object + "." + node.text;
  }
  return "";
}

// How a note names an expression it could not evaluate.
std::string describe(const SyntaxNode& node) {
  const std::string name = dotted(node);
  if (!name.empty()) return "`" + name + "`";
  if (node.kind == SyntaxKind::kCall && !node.children.empty()) {
    const std::string callee = dotted(node.children[0]);
    if (!callee.empty()) return "`" + callee + "(...)`";
    return "a call";
  }
  if (node.kind == SyntaxKind::kFormatted) return "an f-string";
  if (node.kind == SyntaxKind::kDict) return "a dict";
  if (node.kind == SyntaxKind::kBytes) return "a bytes literal";
  return "an expression";
}

class Analyzer {
 public:
  std::vector<LightningCall> run(const SyntaxNode& module) {
    Scope scope;
    scope.module = true;
    module_ = &scope;
    collect(module, &scope);
    for (const std::string& name : globals_) {
      scope.names[name] = {Binding::Kind::kUnknown, "", nullptr,
                           "`" + name + "` is assigned in a function (`global`)"};
    }
    walk(module, scope);
    return std::move(calls_);
  }

 private:
  // ------------------------------------------------------------- bindings

  void bind(Scope* scope, const std::string& name, Binding binding) {
    auto [it, inserted] = scope->names.try_emplace(name, binding);
    if (inserted) return;
    Binding& existing = it->second;
    const bool same_import = existing.kind == Binding::Kind::kQualified &&
                             binding.kind == Binding::Kind::kQualified &&
                             existing.qualified == binding.qualified;
    if (!same_import)
      existing = {Binding::Kind::kUnknown, "", nullptr, "`" + name + "` is bound more than once"};
  }
  void bind_unknown(Scope* scope, const std::string& name, std::string reason) {
    bind(scope, name, {Binding::Kind::kUnknown, "", nullptr, std::move(reason)});
  }
  // Names a target binds: `a`, `a, b`, `[a, *b]`; not `a.b` or `a[0]`.
  void bind_target(Scope* scope, const SyntaxNode& target, const SyntaxNode* value) {
    switch (target.kind) {
      case SyntaxKind::kName:
        if (value && !scope->module) {
          bind_unknown(scope, target.text,
                       "`" + target.text + "` is a local variable of `" + scope->function + "`");
        } else if (value) {
          bind(scope, target.text, {Binding::Kind::kConstant, "", value, ""});
        } else {
          bind_unknown(scope, target.text, "`" + target.text + "` is bound at run time");
        }
        return;
      case SyntaxKind::kAttribute:
      case SyntaxKind::kSubscript:
        return;
      default:
        for (const SyntaxNode& child : target.children) bind_target(scope, child, nullptr);
    }
  }
  void bind_import(Scope* scope, const SyntaxNode& node) {
    for (const SyntaxNode& alias : node.children) {
      if (alias.kind != SyntaxKind::kAlias) continue;
      if (node.kind == SyntaxKind::kImport) {
        if (!alias.name.empty()) {
          bind(scope, alias.name, {Binding::Kind::kQualified, alias.text, nullptr, ""});
        } else {
          const std::string top = alias.text.substr(0, alias.text.find('.'));
          bind(scope, top, {Binding::Kind::kQualified, top, nullptr, ""});
        }
      } else if (alias.text == "*") {
        for (const auto* names : {&trainer_names(), &fabric_names(), &spawn_names()}) {
          for (const std::string& qualified : *names) {
            const std::size_t dot = qualified.rfind('.');
            if (qualified.substr(0, dot) == node.text)
              bind(scope, qualified.substr(dot + 1),
                   {Binding::Kind::kQualified, qualified, nullptr, ""});
          }
        }
      } else {
        const std::string& local = alias.name.empty() ? alias.text : alias.name;
        bind(scope, local, {Binding::Kind::kQualified, node.text + "." + alias.text, nullptr, ""});
      }
    }
  }
  // The names `node` binds in `scope`, not descending into nested scopes.
  void collect(const SyntaxNode& node, Scope* scope) {
    for (const SyntaxNode& child : node.children) collect_statement(child, scope);
  }
  void collect_statement(const SyntaxNode& node, Scope* scope) {
    switch (node.kind) {
      case SyntaxKind::kImport:
      case SyntaxKind::kImportFrom:
        bind_import(scope, node);
        return;
      case SyntaxKind::kAssign: {  // a = b = value binds each name once to the value
        const SyntaxNode& value = node.children.back();
        for (std::size_t i = 0; i + 1 < node.children.size(); ++i)
          bind_target(scope, node.children[i], &value);
        collect_statement(value, scope);
        return;
      }
      case SyntaxKind::kBinding:
        if (!node.children.empty()) bind_target(scope, node.children[0], nullptr);
        for (std::size_t i = 1; i < node.children.size(); ++i)
          collect_statement(node.children[i], scope);
        return;
      case SyntaxKind::kGlobal:
        for (const SyntaxNode& name : node.children)
          if (name.kind == SyntaxKind::kName) globals_.insert(name.text);
        return;
      case SyntaxKind::kFunction:
      case SyntaxKind::kClass:
        if (!node.text.empty())
          bind_unknown(scope, node.text,
                       "`" + node.text + "` is a " +
                           (node.kind == SyntaxKind::kClass ? "class" : "function"));
        return;
      case SyntaxKind::kLambda:
        return;
      default:
        for (const SyntaxNode& child : node.children) collect_statement(child, scope);
    }
  }

  // ----------------------------------------------------------- resolution

  const Binding* lookup(const Scope& scope, std::string_view name) const {
    for (const Scope* s = &scope; s; s = s->parent) {
      if (auto it = s->names.find(name); it != s->names.end()) return &it->second;
    }
    return nullptr;
  }
  std::string qualified(const SyntaxNode& node, const Scope& scope) const {
    if (node.kind == SyntaxKind::kName) {
      const Binding* binding = lookup(scope, node.text);
      return binding && binding->kind == Binding::Kind::kQualified ? binding->qualified : "";
    }
    if (node.kind == SyntaxKind::kAttribute && !node.children.empty()) {
      const std::string object = qualified(node.children[0], scope);
      return object.empty() ? "" : object + "." + node.text;
    }
    return "";
  }

  // ------------------------------------------------------------ the walk

  void walk(const SyntaxNode& node, const Scope& scope) {
    for (const SyntaxNode& child : node.children) visit(child, scope);
  }
  void visit(const SyntaxNode& node, const Scope& scope) {
    if (node.kind == SyntaxKind::kFunction || node.kind == SyntaxKind::kLambda ||
        node.kind == SyntaxKind::kClass) {
      Scope inner;
      inner.parent = module_;
      inner.function = node.text.empty() ? "lambda" : node.text;
      std::size_t first = 0;
      if (node.kind != SyntaxKind::kClass && !node.children.empty()) {
        for (const SyntaxNode& parameter : node.children[0].children) {
          bind_unknown(&inner, parameter.text,
                       "`" + parameter.text + "` is a parameter of `" + inner.function + "`");
        }
        first = 1;
      }
      for (std::size_t i = first; i < node.children.size(); ++i)
        collect_statement(node.children[i], &inner);
      for (std::size_t i = first; i < node.children.size(); ++i) visit(node.children[i], inner);
      return;
    }
    if (node.kind == SyntaxKind::kCall && !node.children.empty()) record_call(node, scope);
    walk(node, scope);
  }

  void record_call(const SyntaxNode& node, const Scope& scope) {
    const std::string name = qualified(node.children[0], scope);
    LightningCall call;
    if (trainer_names().contains(name)) {
      call.kind = LightningCall::Kind::kTrainer;
    } else if (fabric_names().contains(name)) {
      call.kind = LightningCall::Kind::kFabric;
    } else if (spawn_names().contains(name)) {
      call.kind = LightningCall::Kind::kXlaSpawn;
    } else {
      return;
    }
    call.package = name.substr(0, name.find('.'));
    call.callee = dotted(node.children[0]);
    call.line = node.line;
    call.column = node.column;
    const bool positional_values = call.kind == LightningCall::Kind::kXlaSpawn;
    for (std::size_t i = 1; i < node.children.size(); ++i)
      call.arguments.push_back(argument(node.children[i], scope, positional_values));
    calls_.push_back(std::move(call));
  }
  CallArgument argument(const SyntaxNode& node, const Scope& scope, bool positional_values) {
    CallArgument out;
    out.line = node.line;
    out.column = node.column;
    if (node.kind == SyntaxKind::kKeyword && !node.children.empty()) {
      out.name = node.name;
      std::string reason;
      out.value = evaluate(node.children[0], scope, 0, &reason);
      if (!out.value) out.unknown_reason = reason;
    } else if (node.kind == SyntaxKind::kStarStarArgs || node.kind == SyntaxKind::kStarArgs) {
      out.name = node.kind == SyntaxKind::kStarStarArgs ? "**" : "*";
      out.unknown_reason = node.children.empty() ? "" : describe(node.children[0]);
    } else if (positional_values) {
      out.value = evaluate(node, scope, 0, &out.unknown_reason);
    } else {
      out.unknown_reason = describe(node);
    }
    return out;
  }

  // ----------------------------------------------------------- evaluation

  std::optional<PyValue> evaluate(const SyntaxNode& node, const Scope& scope, int depth,
                                  std::string* reason) const {
    if (depth > 32) {
      *reason = "the value is nested too deeply";
      return std::nullopt;
    }
    PyValue value;
    switch (node.kind) {
      case SyntaxKind::kInteger:
        return integer(node.text, reason);
      case SyntaxKind::kFloat:
        return real(node.text, reason);
      case SyntaxKind::kString:
        value.type = PyValue::Type::kStr;
        value.text = node.text;
        return value;
      case SyntaxKind::kTrue:
      case SyntaxKind::kFalse:
        value.type = PyValue::Type::kBool;
        value.integer = node.kind == SyntaxKind::kTrue;
        return value;
      case SyntaxKind::kNone:
        return value;
      case SyntaxKind::kNegative: {
        if (node.children.empty()) break;
        std::optional<PyValue> operand = evaluate(node.children[0], scope, depth + 1, reason);
        if (!operand) return std::nullopt;
        if (operand->type == PyValue::Type::kInt || operand->type == PyValue::Type::kBool) {
          operand->type = PyValue::Type::kInt;
          operand->integer = -operand->integer;
          return operand;
        }
        if (operand->type == PyValue::Type::kFloat) {
          operand->real = -operand->real;
          operand->text =
              operand->text.starts_with('-') ? operand->text.substr(1) : "-" + operand->text;
          return operand;
        }
        break;
      }
      case SyntaxKind::kList:
      case SyntaxKind::kTuple:
        value.type = node.kind == SyntaxKind::kList ? PyValue::Type::kList : PyValue::Type::kTuple;
        for (const SyntaxNode& item : node.children) {
          std::optional<PyValue> element = evaluate(item, scope, depth + 1, reason);
          if (!element) return std::nullopt;
          value.items.push_back(std::move(*element));
        }
        return value;
      case SyntaxKind::kName:
        return evaluate_name(node.text, scope, depth, reason);
      default:
        break;
    }
    *reason = describe(node) + " is known only when the script runs";
    return std::nullopt;
  }
  std::optional<PyValue> evaluate_name(const std::string& name, const Scope& scope, int depth,
                                       std::string* reason) const {
    const Binding* binding = lookup(scope, name);
    if (!binding) {
      *reason = "`" + name + "` is not bound in this file";
      return std::nullopt;
    }
    if (binding->kind == Binding::Kind::kUnknown) {
      *reason = binding->reason;
      return std::nullopt;
    }
    if (binding->kind == Binding::Kind::kQualified) {
      *reason = "`" + name + "` is imported";
      return std::nullopt;
    }
    std::string inner;
    std::optional<PyValue> value = evaluate(*binding->value, *module_, depth + 1, &inner);
    if (!value) *reason = "`" + name + "` is not bound to a literal (" + inner + ")";
    return value;
  }
  static std::optional<PyValue> integer(std::string_view text, std::string* reason) {
    std::string digits;
    for (char c : text)
      if (c != '_') digits.push_back(c);
    int base = 10;
    std::string_view body = digits;
    if (body.size() > 2 && body[0] == '0') {
      const char p = static_cast<char>(body[1] | 0x20);
      base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 10;
      if (base != 10) body.remove_prefix(2);
    }
    PyValue value;
    value.type = PyValue::Type::kInt;
    const auto [end, error] =
        std::from_chars(body.data(), body.data() + body.size(), value.integer, base);
    if (error != std::errc() || end != body.data() + body.size()) {
      *reason = "the number `" + std::string(text) + "` is not checked (too large, or imaginary)";
      return std::nullopt;
    }
    return value;
  }
  static std::optional<PyValue> real(std::string_view text, std::string* reason) {
    std::string digits;
    for (char c : text)
      if (c != '_') digits.push_back(c);
    if (digits.find_first_of("jJ") != std::string::npos) {
      *reason = "the number `" + std::string(text) + "` is imaginary";
      return std::nullopt;
    }
    PyValue value;
    value.type = PyValue::Type::kFloat;
    value.real = std::strtod(digits.c_str(), nullptr);
    value.text = float_repr(value.real);
    return value;
  }

  Scope* module_ = nullptr;
  std::set<std::string> globals_;
  std::vector<LightningCall> calls_;
};

}  // namespace

// repr() of a float as Python prints it: the shortest digits that read
// back, in fixed notation for exponents -4 ... 15 and scientific otherwise.
std::string float_repr(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);  // "-1.5e+16"
  const std::size_t e = text.find('e');
  const int exponent = std::stoi(text.substr(e + 1));
  std::string sign, digits;
  for (char c : text.substr(0, e)) {
    if (c == '-')
      sign = "-";
    else if (c != '.')
      digits.push_back(c);
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int magnitude = exponent < 0 ? -exponent : exponent;
    return out + (exponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") +
           std::to_string(magnitude);
  }
  if (exponent < 0)
    return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  const std::size_t point = static_cast<std::size_t>(exponent) + 1;
  if (digits.size() <= point) return sign + digits + std::string(point - digits.size(), '0') + ".0";
  return sign + digits.substr(0, point) + "." + digits.substr(point);
}

std::string py_type_name(const PyValue& value) {
  switch (value.type) {
    case PyValue::Type::kInt:
      return "int";
    case PyValue::Type::kFloat:
      return "float";
    case PyValue::Type::kStr:
      return "str";
    case PyValue::Type::kBool:
      return "bool";
    case PyValue::Type::kNone:
      return "NoneType";
    case PyValue::Type::kList:
      return "list";
    case PyValue::Type::kTuple:
      return "tuple";
  }
  return "object";
}

std::string py_value_repr(const PyValue& value) {
  switch (value.type) {
    case PyValue::Type::kInt:
      return std::to_string(value.integer);
    case PyValue::Type::kFloat:
      return value.text;
    case PyValue::Type::kStr:
      return py_repr(value.text);
    case PyValue::Type::kBool:
      return value.integer ? "True" : "False";
    case PyValue::Type::kNone:
      return "None";
    case PyValue::Type::kList:
    case PyValue::Type::kTuple: {
      std::vector<std::string> items;
      for (const PyValue& item : value.items) items.push_back(py_value_repr(item));
      if (value.type == PyValue::Type::kTuple)
        return "(" + join(items, ", ") + (items.size() == 1 ? ",)" : ")");
      return "[" + join(items, ", ") + "]";
    }
  }
  return "";
}

std::vector<LightningCall> find_lightning_calls(const SyntaxNode& module) {
  return Analyzer().run(module);
}

}  // namespace tpujobs::lightning
