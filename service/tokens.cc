#include "service/tokens.h"

#include <openssl/evp.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "api/job_spec.h"
#include "base/bytes.h"
#include "base/text_table.h"
#include "db/connection_pool.h"
#include "db/embedded_postgres.h"
#include "db/migrate.h"
#include "db/token_repository.h"
#include "service/job_views.h"
#include "service/token_cache.h"

namespace tpujobs::service {
namespace {

constexpr const char* kUsage =
    R"(usage: tpujobs token create --tenant TENANT [--role user|admin] [DATABASE]
       tpujobs token list [DATABASE]
       tpujobs token revoke ID [DATABASE]
DATABASE: --state-dir DIR | --database-url URL

create  makes an API token bound to TENANT and prints it once; only its
        SHA-256 is stored. Once any token exists, the service requires
        `Authorization: Bearer <token>` on every API request; a tenant sees
        only its own jobs, and pool operations need the admin role.
list    shows every token's id, tenant, role, and when it was created and
        revoked (never the token or its hash).
revoke  ends token ID: every replica refuses it within the time it keeps a
        token's answer (5 s). Revoking the last token leaves a running
        service closed; restarted without tokens, it runs open on loopback
        only.

The database is the service's: the embedded one in DIR (default ./state, or
TPUJOBS_STATE_DIR; started for the moment if the service is not running) or
the one at URL (or TPUJOBS_DATABASE_URL).
)";

// The command's database: the embedded PostgreSQL in a state directory, or
// one named by URL.
struct Database {
  std::unique_ptr<db::EmbeddedPostgres> embedded;  // when started for the moment
  std::unique_ptr<db::ConnectionPool> pool;
};

// Opens (and migrates) the database; nullopt, having said why on stderr,
// when it cannot.
std::optional<Database> open_database(const std::string& command, const std::string& state_dir,
                                      const std::string& database_url) {
  Database database;
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
        std::cerr << command << ": database: " << started.error().message << "\n";
        return std::nullopt;
      }
      database.embedded = std::move(*started);
      conninfo = database.embedded->conninfo();
    }
  }
  auto pool = db::ConnectionPool::create(conninfo, 1);
  if (!pool.ok()) {
    std::cerr << command << ": database: " << pool.error().message << "\n";
    return std::nullopt;
  }
  if (base::Status migrated = db::migrate(**pool); !migrated.ok()) {
    std::cerr << command << ": migrations: " << migrated.error().message << "\n";
    return std::nullopt;
  }
  database.pool = std::move(*pool);
  return database;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

int create(db::TokenRepository& tokens, const std::string& tenant, const std::string& role) {
  const std::string token = generate_token();
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

int list(db::TokenRepository& tokens) {
  auto rows = tokens.list_tokens();
  if (!rows.ok()) {
    std::cerr << "tpujobs token list: " << rows.error().message << "\n";
    return 4;
  }
  std::vector<std::vector<std::string>> table = {{"ID", "TENANT", "ROLE", "CREATED", "REVOKED"}};
  for (const db::TokenRow& row : *rows) {
    table.push_back({std::to_string(row.id), row.tenant, row.role, views::iso_time(row.created_at),
                     row.revoked_at ? views::iso_time(*row.revoked_at) : "-"});
  }
  std::cout << base::text_table(table);
  return 0;
}

int revoke(db::TokenRepository& tokens, std::int64_t id) {
  if (base::Status revoked = tokens.revoke_token(id); !revoked.ok()) {
    std::cerr << "tpujobs token revoke: " << revoked.error().message << "\n";
    return revoked.error().code == base::ErrorCode::kNotFound ? 1 : 4;
  }
  std::cout << "token " << id << " revoked: every replica refuses it within "
            << seconds_text(kTokenCacheTtl) << "\n";
  if (auto active = tokens.count_active_tokens(); active.ok() && *active == 0) {
    std::cerr << "no active token is left: running services stay closed, but one restarted "
                 "without tokens runs open on loopback (and refuses other addresses)\n";
  }
  return 0;
}

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
  const std::string& subcommand = args[0];
  if (subcommand != "create" && subcommand != "list" && subcommand != "revoke") {
    std::cerr << "tpujobs token: unknown subcommand '" << subcommand << "'\n\n" << kUsage;
    return 2;
  }
  const std::string command = "tpujobs token " + subcommand;
  std::string tenant;
  std::string role = "user";
  std::optional<std::int64_t> id;
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
    } else if (subcommand == "create" && args[i] == "--tenant" && (v = value())) {
      tenant = *v;
    } else if (subcommand == "create" && args[i] == "--role" && (v = value())) {
      role = *v;
    } else if (args[i] == "--state-dir" && (v = value())) {
      state_dir = *v;
    } else if (args[i] == "--database-url" && (v = value())) {
      database_url = *v;
    } else if (subcommand == "revoke" && !id && !args[i].empty() && args[i][0] != '-') {
      std::int64_t n = 0;
      const char* end = args[i].data() + args[i].size();
      const auto parsed = std::from_chars(args[i].data(), end, n);
      if (parsed.ec != std::errc() || parsed.ptr != end || n <= 0) {
        std::cerr << command << ": ID must be a token id as `tpujobs token list` shows it, got '"
                  << args[i] << "'\n";
        return 2;
      }
      id = n;
    } else {
      std::cerr << command << ": bad argument '" << args[i] << "'\n\n" << kUsage;
      return 2;
    }
  }
  if (subcommand == "create") {
    if (tenant.empty() || tenant.size() > 64 || api::control_character(tenant)) {
      std::cerr << command
                << ": --tenant is required (1-64 characters of printable text, no control "
                   "characters)\n";
      return 2;
    }
    if (role != "user" && role != "admin") {
      std::cerr << command << ": --role must be user or admin\n";
      return 2;
    }
  }
  if (subcommand == "revoke" && !id) {
    std::cerr << command << ": which token? `tpujobs token list` shows their ids\n\n" << kUsage;
    return 2;
  }
  std::optional<Database> database = open_database(command, state_dir, database_url);
  if (!database) return 4;
  db::TokenRepository tokens(*database->pool);
  if (subcommand == "create") return create(tokens, tenant, role);
  if (subcommand == "list") return list(tokens);
  return revoke(tokens, *id);
}

}  // namespace tpujobs::service
