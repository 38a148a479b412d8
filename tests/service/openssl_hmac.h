// What `openssl dgst -sha256 -hmac KEY` prints for a body: the tests check
// the notifier's signatures against the command line, not against its own
// code.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace tpujobs::testing {

// The lower-case hex HMAC-SHA256 of `body` keyed with `key` ("" when the
// openssl command is not there). `key` must not contain a single quote.
inline std::string openssl_hmac(const std::string& key, const std::string& body) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tpujobs-hmac-" + std::to_string(getpid()));
  std::ofstream(file, std::ios::binary) << body;
  const std::string command = "openssl dgst -sha256 -hmac '" + key + "' < " + file.string();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 256> chunk{};
  while (pipe && fgets(chunk.data(), chunk.size(), pipe.get())) out += chunk.data();
  std::filesystem::remove(file);
  // "SHA2-256(stdin)= <hex>" (OpenSSL 3) or "(stdin)= <hex>".
  const std::size_t at = out.find("= ");
  return at == std::string::npos ? std::string() : out.substr(at + 2, 64);
}

}  // namespace tpujobs::testing
