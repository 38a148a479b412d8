#include "service/tokens.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/bytes.h"
#include "db/connection_pool.h"
#include "db/embedded_postgres.h"
#include "db/migrate.h"
#include "db/token_repository.h"

namespace tpujobs::service {
namespace {

constexpr const char* kUsage = R"(usage: tpujobs token create --tenant TENANT [--role user|admin]
                            [--state-dir DIR | --database-url URL]

Creates an API token bound to TENANT and prints it once; only its SHA-256 is
stored. Once any token exists, the service requires `Authorization: Bearer
<token>` on every API request; a tenant sees only its own jobs, and pool
operations need the admin role. The database is the service's: the embedded
one in DIR (default ./state, or TPUJOBS_STATE_DIR; started for the moment if
the service is not running) or the one at URL (or TPUJOBS_DATABASE_URL).
)";

}  // namespace

std::string generate_token(std::string_view prefix) {
  unsigned char bytes[32];
  base::fill_random(bytes);
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string token(prefix);
  unsigned int buffer = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      token.push_back(kAlphabet[(buffer >> bits) & 63]);
    }
  }
  if (bits > 0) token.push_back(kAlphabet[(buffer << (6 - bits)) & 63]);
  return token;
}

std::string hash_token(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(token.data(), token.size(), digest, &length, EVP_sha256(), nullptr);
  return base::lower_hex({digest, length});
}

int run_token_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "create") {
    std::cerr << "tpujobs token: unknown subcommand '" << args[0] << "'\n\n" << kUsage;
    return 2;
  }
  std::string tenant;
  std::string role = "user";
  std::string state_dir = "state";
  std::string database_url;
  if (const char* url = std::getenv("TPUJOBS_DATABASE_URL"); url && *url) database_url = url;
  if (const char* dir = std::getenv("TPUJOBS_STATE_DIR"); dir && *dir) state_dir = dir;
  for (std::size_t i = 1; i < args.size(); ++i) {
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    std::optional<std::string> v;
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (args[i] == "--tenant" && (v = value())) {
      tenant = *v;
    } else if (args[i] == "--role" && (v = value())) {
      role = *v;
    } else if (args[i] == "--state-dir" && (v = value())) {
      state_dir = *v;
    } else if (args[i] == "--database-url" && (v = value())) {
      database_url = *v;
    } else {
      std::cerr << "tpujobs token create: bad argument '" << args[i] << "'\n\n" << kUsage;
      return 2;
    }
  }
  if (tenant.empty() || tenant.size() > 64) {
    std::cerr << "tpujobs token create: --tenant is required (1-64 characters)\n";
    return 2;
  }
  if (role != "user" && role != "admin") {
    std::cerr << "tpujobs token create: --role must be user or admin\n";
    return 2;
  }
  std::unique_ptr<db::EmbeddedPostgres> embedded;
  std::string conninfo = database_url;
  if (conninfo.empty()) {
    const std::filesystem::path dir = std::filesystem::absolute(state_dir);
    conninfo = "host=" + dir.string() + " dbname=tpujobs user=tpujobs connect_timeout=5";
    auto probe = db::ConnectionPool::create(conninfo, 1);
    if (!probe.ok() || !(*probe)->ping()) {
      db::EmbeddedPostgres::Options options;
      options.state_dir = dir;
      auto started = db::EmbeddedPostgres::start(options);
      if (!started.ok()) {
        std::cerr << "tpujobs token create: database: " << started.error().message << "\n";
        return 4;
      }
      embedded = std::move(*started);
      conninfo = embedded->conninfo();
    }
  }
  auto pool = db::ConnectionPool::create(conninfo, 1);
  if (!pool.ok()) {
    std::cerr << "tpujobs token create: database: " << pool.error().message << "\n";
    return 4;
  }
  if (db::Status migrated = db::migrate(**pool); !migrated.ok()) {
    std::cerr << "tpujobs token create: migrations: " << migrated.error().message << "\n";
    return 4;
  }
  const std::string token = generate_token();
  db::TokenRepository tokens(**pool);
  auto created = tokens.create_token(hash_token(token), tenant, role);
  if (!created.ok()) {
    std::cerr << "tpujobs token create: " << created.error().message << "\n";
    return 4;
  }
  std::cout << token << "\n";
  std::cerr << "token " << created->id << " for tenant '" << tenant << "' (" << role
            << "); it is shown only now: keep it, e.g. export TPUJOBS_TOKEN=...\n";
  return 0;
}

}  // namespace tpujobs::service
