// Rows of text as left-aligned columns, two spaces apart: how the command
// line prints lists (`tpujobs list`, `tpujobs token list`).
#pragma once

#include <string>
#include <vector>

namespace tpujobs::base {

// One line per row, each ending in '\n'; a column is as wide as its widest
// cell, and the last cell of a row is not padded. Rows may differ in length.
std::string text_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace tpujobs::base
