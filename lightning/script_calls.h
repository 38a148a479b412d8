// Internal to the script check: the Trainer / Fabric calls of a module and
// what their arguments are, as far as the text tells (script_calls.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lightning/python_syntax.h"

namespace tpujobs::lightning {

// A Python constant the check can know statically.
struct PyValue {
  enum class Type { kInt, kFloat, kStr, kBool, kNone, kList, kTuple } type = Type::kNone;
  std::int64_t integer = 0;    // kInt; kBool: 0 or 1
  double real = 0;             // kFloat
  std::string text;            // kStr; kFloat: the literal as Python's repr() prints it
  std::vector<PyValue> items;  // kList, kTuple
};

// Python's type name: "int", "float", "str", "bool", "NoneType", "list", "tuple".
std::string py_type_name(const PyValue& value);
// Python's repr(), for the types above.
std::string py_value_repr(const PyValue& value);
// repr() of a float: the shortest text that reads back ("8.0", "0.1", "1e+16").
std::string float_repr(double value);

struct CallArgument {
  std::string name;  // the keyword; "" for a positional argument, "**" / "*" for splats
  int line = 1;
  int column = 1;
  std::optional<PyValue> value;  // nullopt: not known statically
  std::string unknown_reason;    // why, when value is nullopt: "`args.devices` is ..."
};

// A Trainer(...) / Fabric(...) call, or torch_xla's xmp.spawn(...)
// (torch_xla.distributed.xla_multiprocessing.spawn), whose positional
// arguments are evaluated too (its nprocs may be the third).
struct LightningCall {
  enum class Kind { kTrainer, kFabric, kXlaSpawn } kind = Kind::kTrainer;
  // The import it comes from: "lightning", "pytorch_lightning", "lightning_fabric", "torch_xla".
  std::string package;
  std::string callee;  // as written: "L.Trainer", "T"
  int line = 1;
  int column = 1;
  std::vector<CallArgument> arguments;
};

// Every Trainer(...) / Fabric(...) / xmp.spawn(...) call of `module`, in source order.
std::vector<LightningCall> find_lightning_calls(const SyntaxNode& module);

}  // namespace tpujobs::lightning
