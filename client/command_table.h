// The client commands declared once, with CLI11: each command's options bound
// to the CommandLine they fill, and the text its --help shows, generated from
// the same declarations. Internal to client/ (options.h is the interface).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "client/options.h"

namespace tpujobs::client {

// A value that does not convert (`--timeout soon`), thrown from an option's
// callback while CLI11 parses; what() is the whole message for the user.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandDeclaration {
  std::string_view name;
  std::string_view positional;  // "SPEC.json", "ID", "ENTRY..." (any number) or "" for none
  std::string_view summary;     // one line, for `tpujobs --help`
  std::string_view about;       // the prose of its --help, before its options
  // Adds the command's own options to `app`, bound to `out`, which must
  // outlive the parse.
  void (*declare)(CLI::App& app, CommandLine& out);
};

// An option that takes one value, which may be given again (the callback
// sees each, in order); `convert` stores it or throws UsageError.
CLI::Option* valued(CLI::App& app, const std::string& name, const std::string& type,
                    const std::string& description,
                    std::function<void(const std::string&)> convert);

// "12" -> 12; nullopt for anything but a whole number above zero.
std::optional<std::int64_t> parse_positive(std::string_view text);

// Every client command, in the order `tpujobs --help` lists them.
const std::vector<CommandDeclaration>& command_declarations();

// nullptr when `name` is not a client command.
const CommandDeclaration* find_command(std::string_view name);

// The options every command takes, in the group "common options": --server,
// --token, --json and -h/--help.
void declare_common_options(CLI::App& app, CommandLine& out);

// The options of `app` in `group` ("Options", CLI11's default, for a
// command's own) as --help lists them, in the order they were declared:
// "  --timeout DUR          stop waiting after DUR ...", a description's
// later lines indented under its first.
std::string describe_options(const CLI::App& app, const std::string& group);

}  // namespace tpujobs::client
