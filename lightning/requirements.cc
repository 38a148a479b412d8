// Requirements files as pip reads them (requirements.txt, `pip freeze`) and
// pyproject.toml's PEP 621 dependency arrays, for the script check.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "lightning/python.h"
#include "lightning/script_check.h"

namespace tpujobs::lightning {
namespace {

// PEP 503's normalized name: lower case, runs of - _ . as one "-".
std::string normalize(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!out.empty() && out.back() != '-') out.push_back('-');
    } else {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return out;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// One PEP 508 requirement ("torch_xla[tpu]==2.1.0 ; python_version>'3.8'"),
// starting at `column` of `line`; false when it names no package.
bool read_requirement(std::string_view text, std::string_view path, int line, int column,
                      Requirement* out) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const std::size_t start = i;
  while (i < text.size() && name_char(text[i])) ++i;
  if (i == start) return false;
  out->package = normalize(text.substr(start, i - start));
  out->path = std::string(path);
  out->line = line;
  out->column = column + static_cast<int>(start);
  out->version.clear();
  std::string_view rest = text.substr(i);
  if (const std::size_t marker = rest.find(';'); marker != std::string_view::npos)
    rest = rest.substr(0, marker);
  rest = strip(rest);
  if (rest.starts_with('[')) {  // extras
    const std::size_t close = rest.find(']');
    rest = close == std::string_view::npos ? std::string_view{} : strip(rest.substr(close + 1));
  }
  if (rest.starts_with('(') && rest.ends_with(')')) rest = strip(rest.substr(1, rest.size() - 2));
  // Pinned: exactly one `==` (or `===`) specifier, without a wildcard.
  if (rest.find(',') != std::string_view::npos) return true;
  std::size_t equals = 0;
  while (equals < rest.size() && rest[equals] == '=') ++equals;
  if (equals < 2 || equals > 3) return true;
  const std::string_view version = strip(rest.substr(equals));
  if (version.empty() || version.find('*') != std::string_view::npos) return true;
  out->version = std::string(version);
  return true;
}

void parse_requirements_txt(std::string_view text, std::string_view path,
                            std::vector<Requirement>* out, std::vector<Finding>* findings) {
  int line_number = 0;
  std::size_t position = 0;
  while (position <= text.size()) {
    std::size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (const std::size_t comment = line.find('#');
        comment != std::string_view::npos &&
        (comment == 0 || std::isspace(static_cast<unsigned char>(line[comment - 1]))))
      line = line.substr(0, comment);
    const std::string_view stripped = strip(line);
    if (stripped.empty()) {
      if (end == text.size()) break;
      continue;
    }
    const int column = static_cast<int>(stripped.data() - line.data()) + 1;
    if (stripped.starts_with('-')) {
      if (stripped.starts_with("-r") || stripped.starts_with("-c") ||
          stripped.starts_with("--requirement") || stripped.starts_with("--constraint"))
        findings->push_back({std::string(path), line_number, column, "not-checked", Severity::kNote,
                             "`" + std::string(stripped) +
                                 "` is not followed: pass that file with --requirements too",
                             "", ""});
      if (end == text.size()) break;
      continue;
    }
    Requirement requirement;
    if (read_requirement(stripped, path, line_number, column, &requirement)) {
      out->push_back(std::move(requirement));
    }
    if (end == text.size()) break;
  }
}

// The quoted strings of the TOML arrays that hold dependencies: `dependencies
// = [...]` in [project], and every array in [project.optional-dependencies].
void parse_pyproject(std::string_view text, std::string_view path, std::vector<Requirement>* out) {
  std::string table;
  bool in_array = false;
  int line_number = 0;
  std::size_t position = 0;
  while (position < text.size()) {
    std::size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    const std::string_view stripped = strip(line);
    if (!in_array && stripped.starts_with('[')) {
      table = std::string(strip(stripped.substr(1, stripped.find(']') - 1)));
      continue;
    }
    std::size_t i = 0;
    if (!in_array) {
      const bool dependencies = (table == "project" && stripped.starts_with("dependencies")) ||
                                table == "project.optional-dependencies";
      const std::size_t open = line.find('[');
      if (!dependencies || open == std::string_view::npos || line.find('=') > open) continue;
      in_array = true;
      i = open + 1;
    }
    while (i < line.size()) {
      const char c = line[i];
      if (c == '#') break;
      if (c == ']') {
        in_array = false;
        break;
      }
      if (c == '"' || c == '\'') {
        const std::size_t close = line.find(c, i + 1);
        if (close == std::string_view::npos) break;
        Requirement requirement;
        if (read_requirement(line.substr(i + 1, close - i - 1), path, line_number,
                             static_cast<int>(i) + 2, &requirement))
          out->push_back(std::move(requirement));
        i = close + 1;
        continue;
      }
      ++i;
    }
  }
}

}  // namespace

std::vector<Requirement> parse_requirements(std::string_view text, std::string_view path,
                                            std::vector<Finding>* findings) {
  std::vector<Requirement> out;
  if (path.ends_with(".toml")) {
    parse_pyproject(text, path, &out);
  } else {
    parse_requirements_txt(text, path, &out, findings);
  }
  return out;
}

}  // namespace tpujobs::lightning
