// API tokens: made from the kernel's random source, stored only as their
// SHA-256, and the `tpujobs token create` command that prints one once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::service {

// "tpj_" + 43 characters of base64url (256 random bits).
std::string generate_token();

// Hex SHA-256 of the token: what api_tokens.token_hash holds.
std::string hash_token(std::string_view token);

// `tpujobs token create --tenant T [--role user|admin] [--state-dir DIR | --database-url URL]`.
int run_token_command(const std::vector<std::string>& args);

}  // namespace tpujobs::service
