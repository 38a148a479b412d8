// Python string literals as the interpreter reads them: prefixes (r, b, u,
// f and their combinations), the four quote forms, and escape sequences.
#pragma once

#include <string>
#include <string_view>

namespace tpujobs::pyparse {

struct DecodedString {
  enum class Kind {
    kText,         // a str constant: `text` is its value, UTF-8
    kBytes,        // a bytes literal
    kNotConstant,  // an f-string with replacement fields, or an escape not decoded (\N{...})
  } kind = Kind::kText;
  std::string text;
};

// `literal` is one string literal as written, prefix and quotes included
// ("'tpu'", "r'\\d'", "f'{x}'"). Text that is not a well-formed literal
// yields kNotConstant.
DecodedString decode_python_string(std::string_view literal);

}  // namespace tpujobs::pyparse
