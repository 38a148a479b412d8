#include "client/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include "client/command_table.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;

// The parsers below build their usage errors as text; at the boundary, ""
// is success and anything else is kInvalid.
base::Status status_of(std::string error) {
  if (error.empty()) return base::Status::Ok();
  return base::make_error(base::ErrorCode::kInvalid, std::move(error));
}

// One step of an override path: an object key or an array index.
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};

std::optional<std::vector<PathStep>> parse_path(std::string_view path) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      std::optional<std::int64_t> n = parse_positive(path.substr(i + 1, close - i - 1));
      if (path.substr(i + 1, close - i - 1) == "0") n = 0;
      if (!n) return std::nullopt;
      steps.push_back({"", static_cast<std::size_t>(*n)});
      i = close + 1;
      if (i < path.size() && path[i] == '.') {
        ++i;
        if (i == path.size()) return std::nullopt;
      }
      continue;
    }
    std::size_t end = i;
    while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
    if (end == i) return std::nullopt;  // "a..b", ".a", "a."
    steps.push_back({std::string(path.substr(i, end - i)), std::nullopt});
    i = end;
    if (i < path.size() && path[i] == '.') {
      ++i;
      if (i == path.size()) return std::nullopt;
    }
  }
  if (steps.empty() || steps.front().index) return std::nullopt;
  return steps;
}

}  // namespace

const std::vector<std::string>& client_commands() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const CommandDeclaration& command : command_declarations()) out.emplace_back(command.name);
    return out;
  }();
  return names;
}

bool is_client_command(std::string_view command) { return find_command(command) != nullptr; }

namespace {

constexpr std::string_view kExitCodes = R"(
exit codes: 0 succeeded/valid, 1 job failed (including a missed expect gate),
2 spec rejected or usage error, 3 cancelled, 4 server unreachable or 5xx,
124 --timeout elapsed.
)";

// The parser of one command, its options bound to *out.
std::unique_ptr<CLI::App> command_app(const CommandDeclaration& command, CommandLine& out) {
  auto app = std::make_unique<CLI::App>(std::string(command.summary),
                                        "tpujobs " + std::string(command.name));
  app->allow_extras();  // unknown options and arguments are ours to name
  command.declare(*app, out);
  declare_common_options(*app, out);
  app->add_option("arguments", out.positionals)->expected(0, -1);
  return app;
}

// The usage error CLI11 reports for an option given a value it does not
// take, or none when it needs one, said as the client always said it.
std::string mismatch_text(const CLI::App& app, const std::string& what) {
  std::string name = what.substr(0, what.find_first_of(": "));
  name.erase(0, name.find_first_not_of('-'));
  if (app.get_option_no_throw("--" + name) == nullptr) return what;
  const bool flag = what.find("flag override") != std::string::npos;
  return "--" + name + (flag ? " takes no value" : " needs a value");
}

// The parse, its error as text ("" when none).
std::string parse_command_line_text(std::string_view command, const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& environment,
                                    CommandLine* out) {
  const CommandDeclaration* declaration = find_command(command);
  if (!declaration) return "unknown command '" + std::string(command) + "'";
  *out = CommandLine{};
  out->command = std::string(command);
  if (auto it = environment.find("TPUJOBS_URL"); it != environment.end() && !it->second.empty()) {
    out->server = it->second;
  }
  if (auto it = environment.find("TPUJOBS_TOKEN"); it != environment.end()) out->token = it->second;
  if (std::any_of(args.begin(), args.end(),
                  [](const std::string& a) { return a == "-h" || a == "--help"; })) {
    out->help = true;
    return {};
  }

  std::unique_ptr<CLI::App> app = command_app(*declaration, *out);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // as CLI11 takes them
    app->parse(reversed);
  } catch (const UsageError& e) {
    return e.what();
  } catch (const CLI::ArgumentMismatch& e) {
    return mismatch_text(*app, e.what());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  // Left to us: unknown options, and with allow_extras the "--" that ends
  // the options, with what follows it.
  bool options_ended = false;
  for (const std::string& extra : app->remaining()) {
    if (!options_ended && extra == "--") {
      options_ended = true;
    } else if (!options_ended && extra.size() >= 2 && extra[0] == '-') {
      return "unknown option '" + extra.substr(0, extra.find('=')) + "' for `tpujobs " +
             std::string(command) + "`";
    } else {
      out->positionals.push_back(extra);
    }
  }

  if (out->follow || out->timeout || !out->junit_path.empty()) out->wait = true;
  const std::string_view positional = declaration->positional;
  if (positional.ends_with("...")) {
    // Any number, none included.
  } else if (positional.empty()) {
    if (!out->positionals.empty()) return "unexpected argument '" + out->positionals.front() + "'";
  } else {
    if (out->positionals.empty()) return std::string(positional) + " is missing";
    if (out->positionals.size() > 1) return "unexpected argument '" + out->positionals[1] + "'";
    if (positional == "ID" && !parse_positive(out->positionals.front())) {
      return "a job ID is a positive integer, got '" + out->positionals.front() + "'";
    }
  }
  return {};
}

}  // namespace

std::string command_usage(std::string_view command) {
  const CommandDeclaration* declaration = find_command(command);
  if (!declaration) return {};
  CommandLine unused;
  std::unique_ptr<CLI::App> app = command_app(*declaration, unused);
  std::string text = "usage: tpujobs " + std::string(declaration->name);
  if (!declaration->positional.empty()) text += " " + std::string(declaration->positional);
  text += " [options]\n\n" + std::string(declaration->summary) + ".\n";
  if (!declaration->about.empty()) text += "\n" + std::string(declaration->about);
  if (const std::string own = describe_options(*app, "Options"); !own.empty()) {
    text += "\noptions:\n" + own;
  }
  text += "\ncommon options:\n" + describe_options(*app, "common options");
  text += kExitCodes;
  return text;
}

std::string client_commands_summary() {
  std::string text;
  for (const CommandDeclaration& declaration : command_declarations()) {
    std::string name(declaration.name);
    name.resize(std::max<std::size_t>(name.size(), 12), ' ');
    text += "  " + name + " " + std::string(declaration.summary) + "\n";
  }
  return text;
}

base::Result<CommandLine> parse_command_line(
    std::string_view command, const std::vector<std::string>& args,
    const std::map<std::string, std::string>& environment) {
  CommandLine line;
  if (std::string error = parse_command_line_text(command, args, environment, &line);
      !error.empty()) {
    return base::make_error(base::ErrorCode::kInvalid, std::move(error));
  }
  return line;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  // A bare number is seconds, as in `timeout 90`.
  bool bare = std::all_of(text.begin(), text.end(),
                          [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    const std::string number(text.substr(start, i - start));
    if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
        number.back() == '.') {
      return std::nullopt;
    }
    const double value = std::strtod(number.c_str(), nullptr);
    const std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (bare || unit == "s")
      scale = 1000;
    else if (unit == "ms")
      scale = 1;
    else if (unit == "m")
      scale = 60e3;
    else if (unit == "h")
      scale = 3600e3;
    else if (unit == "d")
      scale = 86400e3;
    else
      return std::nullopt;
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds duration) {
  const std::int64_t seconds = duration.count() / 1000;
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds / 60 % 60));
  }
  return text;
}

namespace {

// The override, its error as text ("" when none).
std::string apply_override_text(json* spec, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos)
    return "--set needs PATH=VALUE, got '" + std::string(assignment) + "'";
  const std::string_view path = assignment.substr(0, eq);
  const std::string raw(assignment.substr(eq + 1));
  std::optional<std::vector<PathStep>> steps = parse_path(path);
  if (!steps) {
    return "--set " + std::string(assignment) + ": bad path '" + std::string(path) +
           "' (use keys and indices, e.g. model.layers[0].out)";
  }
  json value = json::parse(raw, nullptr, false);
  if (value.is_discarded()) value = raw;

  json copy = spec->is_object() ? *spec : json::object();
  json* node = &copy;
  std::string walked;
  for (std::size_t s = 0; s < steps->size(); ++s) {
    const PathStep& step = (*steps)[s];
    const bool last = s + 1 == steps->size();
    if (step.index) {
      walked += "[" + std::to_string(*step.index) + "]";
      if (node->is_null()) *node = json::array();
      if (!node->is_array())
        return "--set " + std::string(assignment) + ": " + walked + " indexes a non-array";
      if (*step.index > node->size()) {
        return "--set " + std::string(assignment) + ": index " + std::to_string(*step.index) +
               " is past the end of " + walked.substr(0, walked.rfind('[')) + " (size " +
               std::to_string(node->size()) + ")";
      }
      if (*step.index == node->size()) node->push_back(nullptr);
      node = &(*node)[*step.index];
    } else {
      walked += (walked.empty() ? "" : ".") + step.key;
      if (node->is_null()) *node = json::object();
      if (!node->is_object()) {
        return "--set " + std::string(assignment) + ": cannot set '" + step.key + "' inside a " +
               node->type_name();
      }
      node = &(*node)[step.key];
    }
    if (last) *node = value;
  }
  *spec = std::move(copy);
  return {};
}

}  // namespace

base::Status apply_override(json* spec, std::string_view assignment) {
  return status_of(apply_override_text(spec, assignment));
}

}  // namespace tpujobs::client
