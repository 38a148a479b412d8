// py_repr against what CPython 3.11's repr() prints for the same str (each
// expected text was printed by python3 -c 'print(repr(...))').
#include "lightning/python.h"

#include <gtest/gtest.h>

#include <string>

namespace tpujobs::lightning {
namespace {

TEST(PyReprTest, QuotesAsPythonChoosesThem) {
  EXPECT_EQ("'auto'", py_repr("auto"));
  EXPECT_EQ("''", py_repr(""));
  // A single quote and no double quote: double quotes, nothing escaped.
  EXPECT_EQ("\"it's\"", py_repr("it's"));
  EXPECT_EQ("'say \"hi\"'", py_repr("say \"hi\""));
  // Both: single quotes, the single quote escaped.
  EXPECT_EQ("'say \"it\\'s\"'", py_repr("say \"it's\""));
}

TEST(PyReprTest, EscapesBackslashAndControlCharacters) {
  EXPECT_EQ("'a\\\\b'", py_repr("a\\b"));
  EXPECT_EQ("'tab\\there'", py_repr("tab\there"));
  EXPECT_EQ("'line\\nbreak\\r'", py_repr("line\nbreak\r"));
  EXPECT_EQ("'\\x00\\x1f\\x7f'", py_repr(std::string("\x00\x1f\x7f", 3)));
}

TEST(PyReprTest, PrintableUnicodePassesOthersAreEscaped) {
  EXPECT_EQ("'café 日本 😀'", py_repr("café 日本 😀"));
  // U+00A0 (Zs) and U+00AD (Cf) are not printable: \xNN.
  EXPECT_EQ("'nbsp\\xa0soft\\xadhyphen'", py_repr("nbsp\u00a0soft\u00adhyphen"));
  // Line separator, zero-width space, BOM: \uNNNN.
  EXPECT_EQ("'\\u2028\\u200b\\ufeff'", py_repr("\u2028\u200b\ufeff"));
  // A tag character (Cf) beyond the BMP, a private-use and an unassigned one.
  EXPECT_EQ("'\\U000e0001'", py_repr("\U000e0001"));
  EXPECT_EQ("'\\ue000'", py_repr("\ue000"));
  EXPECT_EQ("'\\u0378'", py_repr("\xcd\xb8"));
}

TEST(PyReprTest, BytesThatAreNotUtf8ShowAsSurrogateEscapes) {
  // What repr(b"\xff".decode("utf-8", "surrogateescape")) prints.
  EXPECT_EQ("'a\\udcffb'", py_repr("a\xff"
                                   "b"));
  // An overlong "/" is no UTF-8 either.
  EXPECT_EQ("'\\udcc0\\udcaf'", py_repr("\xc0\xaf"));
}

TEST(PyReprTest, PrintableMatchesStrIsprintable) {
  EXPECT_TRUE(py_printable(U' '));
  EXPECT_TRUE(py_printable(U'~'));
  EXPECT_FALSE(py_printable(U'\x7f'));
  EXPECT_TRUE(py_printable(U'\u00e9'));
  EXPECT_FALSE(py_printable(U'\u3000'));  // ideographic space (Zs)
  EXPECT_TRUE(py_printable(U'\U0001F600'));
  EXPECT_FALSE(py_printable(U'\U0010FFFF'));
}

}  // namespace
}  // namespace tpujobs::lightning
