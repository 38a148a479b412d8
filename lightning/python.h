// Python-style rendering and parsing, so that messages read exactly as
// Lightning's do ({value!r}, {value}) and strings are read as Python's int()
// reads them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "lightning/resolve.h"

namespace tpujobs::lightning {

// repr() of a str, as Python 3 writes it: 'text'; "it's"; and for
// say "it's", which holds both quotes, 'say "it\'s"'. Backslashes, \t \n \r
// and non-printable code points are escaped. `text` is UTF-8.
std::string py_repr(std::string_view text);
// Python's str.isprintable() for one code point (printable.cc).
bool py_printable(char32_t code_point);
// repr() of a list of ints: [0, 1].
std::string py_list(const std::vector<std::int64_t>& list);
// repr(value) as Lightning prints it with {value!r}.
std::string py_repr(const DeviceValue& value);
// str(value) as Lightning prints it with {value}.
std::string py_str(const DeviceValue& value);

// str.strip().
std::string_view strip(std::string_view text);

// Python's int(text) for the texts users write: optional sign, digits,
// surrounding whitespace. nullopt when Python would raise (or overflow).
std::optional<std::int64_t> py_int(std::string_view text);

// Splits "0, 1," like Lightning: empty pieces are skipped. The error is the
// first piece Python's int() refuses, stripped.
base::Result<std::vector<std::int64_t>, std::string> py_int_list(std::string_view text);

std::string join(const std::vector<std::string>& parts, std::string_view separator);

// `text` with each "{name}" of `values` replaced by its value, as Python's
// str.format fills Lightning's f-strings.
std::string fill(std::string_view text,
                 std::initializer_list<std::pair<std::string_view, std::string>> values);

}  // namespace tpujobs::lightning
