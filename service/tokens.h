// API tokens: made from the kernel's random source, stored only as their
// SHA-256; the `tpujobs token create` command that prints one once, and
// `token list` and `token revoke`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::service {

// `prefix` + 43 characters of base64url (256 random bits): API tokens
// ("tpj_") and notification secrets ("tpjn_").
std::string generate_token(std::string_view prefix = "tpj_");

// Hex SHA-256 of the token: what api_tokens.token_hash holds.
std::string hash_token(std::string_view token);

// `tpujobs token create --tenant T [--role user|admin]`, `tpujobs token list`
// and `tpujobs token revoke ID`, each with [--state-dir DIR | --database-url URL].
// Exit codes: 0 done, 1 no such token, 2 bad arguments, 4 database error.
int run_token_command(const std::vector<std::string>& args);

}  // namespace tpujobs::service
