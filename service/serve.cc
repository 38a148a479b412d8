#include "service/serve.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "api/job_spec.h"
#include "api/jobs_api.h"
#include "api/notify.h"
#include "db/cluster_repository.h"
#include "db/connection_pool.h"
#include "db/embedded_postgres.h"
#include "db/migrate.h"
#include "db/notification_repository.h"
#include "db/tenant_limits_repository.h"
#include "db/token_repository.h"
#include "service/agent.h"
#include "service/http_server.h"
#include "service/job_manager.h"
#include "service/notifier.h"
#include "service/pool_config.h"
#include "service/retention.h"
#include "service/scheduler_leader.h"
#include "service/standalone_restart.h"
#include "service/web_assets.h"

namespace tpujobs::service {
namespace {

constexpr const char* kServeUsage = R"(usage: tpujobs serve [options]

Runs the tpujobs service: the REST API, the scheduler and the executor.

options:
  --listen ADDR:PORT     where to listen (default 127.0.0.1:8080; port 0 picks a free one)
  --pool SPEC            the emulated TPU pool: a slice (v3-32), a list (v3-8,v3-8,v4-16)
                         or @FILE.json (default v3-32)
  --database-url URL     use this PostgreSQL (also TPUJOBS_DATABASE_URL); without it an
                         embedded PostgreSQL runs in STATE_DIR/pgdata (started again
                         if it dies)
  --state-dir DIR        where the embedded database lives (default ./state, or TPUJOBS_STATE_DIR)
  --db-timeout SECS      a request's statement that the database does not answer within SECS
                         fails with 503 and its connection is closed and opened again
                         (a stopped or cut-off PostgreSQL); /readyz turns 503 within
                         about 2.5 s (default 10)
  --io-threads N         HTTP I/O threads (default 2)
  --workers N            training worker threads shared by all jobs (default: CPU count)
  --max-body BYTES       request body cap (default 1048576)
  --lease-timeout SECS   reclaim cores of a job that stopped heartbeating (default 30)
  --name NAME            with --database-url: join a cluster (docs/deploy.md) as NAME: any
                         number of replicas share the database, one of them is the
                         scheduler leader, and --pool runs an in-process agent NAME
                         whose hosts are NAME-h0, NAME-h1, ...; --pool none serves
                         the API only (no --name needed)
  --agent-silence SECS   cluster: an agent silent this long is lost (default 10)
  --retention DUR        purge the log lines and metric points of jobs finished longer
                         ago than DUR (30d, 12h, ...; the job rows stay); default: keep all
  --notify-allow ENTRY   adds ENTRY to the notification allow-list stored in the database
                         (repeatable): a host, host:port or http:// URL prefix that a
                         job's notify.url may name (the admin edits the list at
                         PUT /v1/notifications/allowlist)
  --fair-share-half-life DUR
                         how fast a tenant's past use stops lowering its jobs' place
                         among equal priorities (default 1h; README "Fair share")
  --collective-address HOST, --collective-timeout SECS
                         cluster: as for `tpujobs agent`
  --first-byte-timeout SECS
                         close a new connection that sends nothing for SECS (default 5)
  --stream-buffer-limit BYTES
                         cut off a log follower whose unsent lines pass BYTES (default 4194304)
  --max-followers N, --max-followers-per-tenant N
                         open log streams (SSE) in all and per tenant (default 1024, 16);
                         over them 503 / 429 with Retry-After (0: no bound)
  --max-waiters N, --max-waiters-per-tenant N
                         open GET .../wait long-polls in all and per tenant (default 4096, 64)
  --default-max-queued N, --default-max-array-size N
                         per-tenant limits for tenants without their own (POST
                         /v1/tenants/{tenant}/limits): jobs queued at once (default 10000)
                         and a sweep's size (default 256); 0: no bound
  --default-submits-per-second R, --default-submit-burst N,
  --default-requests-per-second R, --default-request-burst N
                         per-tenant token buckets (default 0: no bound); over a limit 429
  -h, --help             this text

At start, serve raises its soft limit of open files to the hard limit.
)";

constexpr const char* kAgentUsage =
    R"(usage: tpujobs agent --database-url URL --pool SPEC --name NAME [options]

Runs the jobs placed on this machine's emulated hosts (docs/deploy.md): registers
the hosts NAME-h0, NAME-h1, ... (or the names of a @FILE pool), heartbeats,
trains what the scheduler leader places on them and writes state, logs,
metrics and checkpoints to the database.

options:
  --database-url URL     the cluster's PostgreSQL (also TPUJOBS_DATABASE_URL)
  --pool SPEC            this machine's hosts: a slice (v3-32), a list or @FILE.json
  --name NAME            this agent's name, unique in the cluster
  --workers N            training worker threads (default: CPU count)
  --collective-address HOST
                         the address other agents reach this one's collectives at,
                         for slices spanning agents (default: this machine's host name)
  --collective-timeout SECS
                         bounds a slice's rendezvous and every collective (default 30)
  -h, --help             this text
)";

struct ServeOptions {
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string pool = "v3-32";
  std::string database_url;
  std::string state_dir = "state";
  int io_threads = 2;
  int db_timeout_seconds = 10;
  int workers = 0;
  std::size_t max_body = 1 << 20;
  int lease_timeout_seconds = 30;
  std::string name;
  int agent_silence_seconds = 10;
  std::optional<std::chrono::seconds> retention;  // none: keep every job's outputs
  std::chrono::seconds fair_share_half_life{3600};
  std::string collective_address;
  int collective_timeout_seconds = 30;
  std::vector<std::string> notify_allow;  // added to the stored allow-list at start
  int first_byte_timeout_seconds = 5;
  int stream_buffer_limit = 4 << 20;
  api::StreamLimits followers{16, 1024};
  api::StreamLimits waiters{64, 4096};
  // Per-tenant limits' defaults; 0: no bound.
  int default_max_queued = 10000;
  int default_max_array_size = 256;
  int default_submits_per_second = 0;
  int default_submit_burst = 0;
  int default_requests_per_second = 0;
  int default_request_burst = 0;
};

// The field a --default-... limit flag sets; nullptr for another name.
int* default_limit(const std::string& name, ServeOptions* options) {
  if (name == "--default-max-queued") return &options->default_max_queued;
  if (name == "--default-max-array-size") return &options->default_max_array_size;
  if (name == "--default-submits-per-second") return &options->default_submits_per_second;
  if (name == "--default-submit-burst") return &options->default_submit_burst;
  if (name == "--default-requests-per-second") return &options->default_requests_per_second;
  if (name == "--default-request-burst") return &options->default_request_burst;
  return nullptr;
}

// The tenant limiter's defaults and its storage (db/tenant_limits_repository).
api::TenantLimits default_limits(const ServeOptions& o) {
  auto bound = [](int v) { return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt; };
  auto rate = [](int v) { return v > 0 ? std::optional<double>(v) : std::nullopt; };
  return {bound(o.default_max_queued),    rate(o.default_submits_per_second),
          bound(o.default_submit_burst),  rate(o.default_requests_per_second),
          bound(o.default_request_burst), bound(o.default_max_array_size)};
}

api::LimitsBackend limits_backend(db::ConnectionPool& pool) {
  auto repo = std::make_shared<db::TenantLimitsRepository>(pool);
  api::LimitsBackend backend;
  backend.load = [repo]() -> base::Result<std::map<std::string, api::TenantLimits>> {
    auto rows = repo->load_all();
    if (!rows.ok()) return rows.error();
    std::map<std::string, api::TenantLimits> out;
    for (const auto& [tenant, r] : *rows) {
      out[tenant] = {r.max_queued,          r.submits_per_second, r.submit_burst,
                     r.requests_per_second, r.request_burst,      r.max_array_size};
    }
    return out;
  };
  backend.save = [repo](const std::string& tenant, const api::TenantLimits& l) {
    return repo->set(tenant, {l.max_queued, l.submits_per_second, l.submit_burst,
                              l.requests_per_second, l.request_burst, l.max_array_size});
  };
  backend.queued = [repo](const std::string& tenant, std::int64_t at_most) {
    return repo->count_queued(tenant, at_most);
  };
  return backend;
}

// Returns an error message, or "" with *options filled.
std::string parse_options(const std::vector<std::string>& args, ServeOptions* options, bool* help) {
  if (const char* url = std::getenv("TPUJOBS_DATABASE_URL"); url && *url)
    options->database_url = url;
  if (const char* dir = std::getenv("TPUJOBS_STATE_DIR"); dir && *dir) options->state_dir = dir;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return {};
    }
    std::string name = arg;
    std::optional<std::string> value;
    if (const std::size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    auto next = [&]() -> std::optional<std::string> {
      if (value) return value;
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto number = [&](int min, int max, int* out) -> std::string {
      std::optional<std::string> v = next();
      if (!v) return name + " needs a value";
      try {
        std::size_t used = 0;
        const long n = std::stol(*v, &used);
        if (used != v->size() || n < min || n > max) throw std::out_of_range("range");
        *out = static_cast<int>(n);
      } catch (const std::exception&) {
        return name + " must be an integer from " + std::to_string(min) + " to " +
               std::to_string(max);
      }
      return {};
    };
    if (name == "--listen") {
      std::optional<std::string> v = next();
      if (!v) return "--listen needs ADDR:PORT";
      const std::size_t colon = v->rfind(':');
      if (colon == std::string::npos) return "--listen needs ADDR:PORT, got '" + *v + "'";
      options->address = v->substr(0, colon);
      if (options->address.size() > 2 && options->address.front() == '[') {
        options->address = options->address.substr(1, options->address.size() - 2);
      }
      try {
        std::size_t used = 0;
        options->port = std::stoi(v->substr(colon + 1), &used);
        if (used != v->size() - colon - 1 || options->port < 0 || options->port > 65535)
          throw std::out_of_range("");
      } catch (const std::exception&) {
        return "--listen: bad port in '" + *v + "'";
      }
    } else if (name == "--pool") {
      std::optional<std::string> v = next();
      if (!v) return "--pool needs a value such as v3-32";
      options->pool = *v;
    } else if (name == "--database-url") {
      std::optional<std::string> v = next();
      if (!v) return "--database-url needs a URL";
      options->database_url = *v;
    } else if (name == "--state-dir") {
      std::optional<std::string> v = next();
      if (!v) return "--state-dir needs a directory";
      options->state_dir = *v;
    } else if (name == "--db-timeout") {
      if (std::string e = number(1, 3600, &options->db_timeout_seconds); !e.empty()) return e;
    } else if (name == "--io-threads") {
      if (std::string e = number(1, 64, &options->io_threads); !e.empty()) return e;
    } else if (name == "--workers") {
      if (std::string e = number(1, 256, &options->workers); !e.empty()) return e;
    } else if (name == "--lease-timeout") {
      if (std::string e = number(1, 86400, &options->lease_timeout_seconds); !e.empty()) return e;
    } else if (name == "--name") {
      std::optional<std::string> v = next();
      if (!v || v->empty() || v->size() > 64 || v->find_first_of(" \t\n/") != std::string::npos) {
        return "--name needs a name of 1 to 64 characters without spaces or '/'";
      }
      options->name = *v;
    } else if (name == "--collective-address") {
      std::optional<std::string> v = next();
      if (!v || v->empty()) return "--collective-address needs a host name or address";
      options->collective_address = *v;
    } else if (name == "--collective-timeout") {
      if (std::string e = number(1, 3600, &options->collective_timeout_seconds); !e.empty())
        return e;
    } else if (name == "--agent-silence") {
      if (std::string e = number(1, 3600, &options->agent_silence_seconds); !e.empty()) return e;
    } else if (name == "--retention") {
      std::optional<std::string> v = next();
      std::optional<std::chrono::milliseconds> keep = v ? api::parse_duration(*v) : std::nullopt;
      if (!keep || *keep < std::chrono::seconds(1)) {
        return "--retention needs a duration of at least 1s such as 30d or 12h";
      }
      options->retention = std::chrono::duration_cast<std::chrono::seconds>(*keep);
    } else if (name == "--notify-allow") {
      std::optional<std::string> v = next();
      if (!v) return "--notify-allow needs a host, host:port or http:// URL prefix";
      if (base::Status checked = api::check_allowlist_entry(*v); !checked.ok())
        return "--notify-allow '" + *v + "' " + checked.error().message;
      options->notify_allow.push_back(*v);
    } else if (name == "--fair-share-half-life") {
      std::optional<std::string> v = next();
      std::optional<std::chrono::milliseconds> half_life =
          v ? api::parse_duration(*v) : std::nullopt;
      if (!half_life || *half_life < std::chrono::seconds(1)) {
        return "--fair-share-half-life needs a duration of at least 1s such as 1h or 7d";
      }
      options->fair_share_half_life = std::chrono::duration_cast<std::chrono::seconds>(*half_life);
    } else if (name == "--first-byte-timeout") {
      if (std::string e = number(1, 3600, &options->first_byte_timeout_seconds); !e.empty())
        return e;
    } else if (name == "--stream-buffer-limit") {
      if (std::string e = number(64 << 10, 1 << 30, &options->stream_buffer_limit); !e.empty())
        return e;
    } else if (name == "--max-followers" || name == "--max-waiters") {
      auto& limits = name == "--max-followers" ? options->followers : options->waiters;
      if (std::string e = number(0, 1 << 20, &limits.total); !e.empty()) return e;
    } else if (name == "--max-followers-per-tenant" || name == "--max-waiters-per-tenant") {
      auto& limits = name == "--max-followers-per-tenant" ? options->followers : options->waiters;
      if (std::string e = number(0, 1 << 20, &limits.per_tenant); !e.empty()) return e;
    } else if (name.rfind("--default-", 0) == 0 && default_limit(name, options)) {
      if (std::string e = number(0, 1 << 30, default_limit(name, options)); !e.empty()) return e;
    } else if (name == "--max-body") {
      int bytes = 0;
      if (std::string e = number(1024, 64 << 20, &bytes); !e.empty()) return e;
      options->max_body = static_cast<std::size_t>(bytes);
    } else {
      return "unknown option '" + arg + "'";
    }
  }
  return {};
}

// The hosts of agent `name`: NAME-h0, NAME-h1, ... for a slice spec; the
// file's own names for @FILE.
base::Result<scheduler::PoolLayout> agent_layout(const ServeOptions& options) {
  base::Result<scheduler::PoolLayout> layout = load_pool(options.pool);
  if (!layout.ok() || options.pool.rfind('@', 0) == 0) return layout;
  for (std::size_t i = 0; i < layout->hosts.size(); ++i) {
    layout->hosts[i].name = options.name + "-h" + std::to_string(i);
  }
  return layout;
}

// The common soft limit of 1,024 open files is reached by 1,000 idle
// connections; the hard limit is what the administrator meant to allow.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t was = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    std::cerr << "tpujobs serve: could not raise the open-file limit above " << was << "\n";
  }
}

sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return signals;
}

}  // namespace

int run_agent(const std::vector<std::string>& args) {
  ServeOptions options;
  bool help = false;
  if (std::string error = parse_options(args, &options, &help); !error.empty()) {
    std::cerr << "tpujobs agent: " << error << "\n\n" << kAgentUsage;
    return 2;
  }
  if (help) {
    std::cout << kAgentUsage;
    return 0;
  }
  if (options.database_url.empty() || options.name.empty() || options.pool == "none") {
    std::cerr << "tpujobs agent: --database-url, --pool and --name are required\n\n" << kAgentUsage;
    return 2;
  }
  base::Result<scheduler::PoolLayout> layout = agent_layout(options);
  if (!layout.ok()) {
    std::cerr << "tpujobs agent: --pool: " << layout.error().message << "\n";
    return 2;
  }
  sigset_t signals = block_stop_signals();
  auto pool = db::ConnectionPool::create(options.database_url, 6);
  if (!pool.ok()) {
    std::cerr << "tpujobs agent: database: " << pool.error().message << "\n";
    return 1;
  }
  // A member of the cluster: refused beside a standalone service (serve.cc).
  db::LeaderLock membership(options.database_url, db::LeaderLock::kStandaloneKey,
                            db::LeaderLock::Mode::kShared);
  if (!membership.hold()) {
    std::cerr << "tpujobs agent: a tpujobs serve without --name runs on this database; an agent "
                 "beside it would run the same jobs.\n  Stop it first, or give it --name NAME so "
                 "that it joins the cluster (docs/deploy.md).\n";
    return 2;
  }
  if (db::Status migrated = db::migrate(**pool); !migrated.ok()) {
    std::cerr << "tpujobs agent: migrations: " << migrated.error().message << "\n";
    return 1;
  }
  AgentOptions agent_options;
  agent_options.name = options.name;
  agent_options.conninfo = options.database_url;
  agent_options.layout = *layout;
  agent_options.workers = options.workers > 0
                              ? options.workers
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  agent_options.collective_host = options.collective_address;
  agent_options.collective_timeout = std::chrono::seconds(options.collective_timeout_seconds);
  Agent agent(**pool, agent_options);
  if (db::Status started = agent.start(); !started.ok()) {
    std::cerr << "tpujobs agent: " << started.error().message << "\n";
    return 1;
  }
  std::cout << "tpujobs agent " << options.name << " running " << layout->hosts.size()
            << " host(s) (pool " << options.pool << ")" << std::endl;
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "tpujobs agent: stopping (checkpointing and requeueing running jobs)\n";
  agent.stop();
  std::cerr << "tpujobs agent: stopped\n";
  return 0;
}

int run_serve(const std::vector<std::string>& args) {
  ServeOptions options;
  bool help = false;
  if (std::string error = parse_options(args, &options, &help); !error.empty()) {
    std::cerr << "tpujobs serve: " << error << "\n\n" << kServeUsage;
    return 2;
  }
  if (help) {
    std::cout << kServeUsage;
    return 0;
  }
  raise_descriptor_limit();
  // DESIGN §9: with a database URL, --name or --pool none joins a cluster;
  // without one, serve is a one-member cluster on the embedded PostgreSQL:
  // the same API service, scheduler leader and agent, woken in-process.
  // (A serve without --name on a database URL is standalone too.)
  const bool standalone = options.name.empty() && options.pool != "none";
  const bool cluster = !standalone;  // joins a cluster of several processes
  if (options.pool == "none" && options.database_url.empty()) {
    std::cerr
        << "tpujobs serve: --pool none serves the API of a cluster: it needs --database-url\n";
    return 2;
  }
  if (!options.name.empty() && options.database_url.empty()) {
    std::cerr << "tpujobs serve: --name joins a cluster: it needs --database-url\n";
    return 2;
  }
  base::Result<scheduler::PoolLayout> layout =
      options.pool == "none" ? base::Result<scheduler::PoolLayout>(scheduler::PoolLayout{})
      : cluster              ? agent_layout(options)
                             : load_pool(options.pool);
  if (standalone && options.name.empty()) options.name = "local";
  if (!layout.ok()) {
    std::cerr << "tpujobs serve: --pool: " << layout.error().message << "\n";
    return 2;
  }

  // Signals are taken by sigwait() below; every thread started from here on
  // inherits the mask.
  sigset_t signals = block_stop_signals();

  std::unique_ptr<db::EmbeddedPostgres> embedded;
  std::string conninfo = options.database_url;
  if (conninfo.empty()) {
    db::EmbeddedPostgres::Options pg;
    pg.state_dir = std::filesystem::absolute(options.state_dir);
    std::cerr << "tpujobs: starting embedded PostgreSQL in " << pg.state_dir.string() << "\n";
    auto started = db::EmbeddedPostgres::start(pg);
    if (!started.ok()) {
      std::cerr << "tpujobs serve: embedded PostgreSQL: " << started.error().message << "\n";
      return 1;
    }
    embedded = std::move(*started);
    // A postmaster that dies (killed, out of memory) is started again; the
    // connection pool and the job manager's retries carry the service over
    // the gap. stop() below ends this before the normal shutdown.
    embedded->supervise(
        [](const std::string& line) { std::cerr << "tpujobs: " << line << std::endl; });
    conninfo = embedded->conninfo();
  }
  auto pool = db::ConnectionPool::create(conninfo, 12);
  if (!pool.ok()) {
    std::cerr << "tpujobs serve: database: " << pool.error().message << "\n";
    return 1;
  }
  if (db::Status migrated = db::migrate(**pool); !migrated.ok()) {
    std::cerr << "tpujobs serve: migrations: " << migrated.error().message << "\n";
    return 1;
  }
  // From here on no statement of the API's pool waits longer than this for
  // its answer (the migrations above may rightly run long). The scheduler
  // leader's pool and the LISTEN connections keep their own bounds.
  const std::chrono::seconds db_timeout(options.db_timeout_seconds);
  (*pool)->set_answer_timeout(db_timeout);

  const bool loopback = options.address == "localhost" || options.address == "::1" ||
                        options.address.rfind("127.", 0) == 0;
  if (!loopback) {
    db::TokenRepository tokens(**pool);
    auto count = tokens.count_active_tokens();
    if (!count.ok() || *count == 0) {
      std::cerr << "tpujobs serve: refusing to listen on " << options.address
                << " without API tokens: anyone who can reach it could submit, cancel and drain.\n"
                << "  Create one first: tpujobs token create --tenant NAME --role admin"
                << (options.database_url.empty() ? " --state-dir " + options.state_dir
                                                 : std::string())
                << "\n  or listen on a loopback address (--listen 127.0.0.1:PORT).\n";
      return 2;
    }
  }

  // One standalone service per database, and none beside a cluster: either
  // would run jobs another runs (DESIGN §9 is the way to run several).
  std::optional<db::LeaderLock> membership;
  if (!options.database_url.empty()) {
    membership.emplace(conninfo, db::LeaderLock::kStandaloneKey,
                       cluster ? db::LeaderLock::Mode::kShared : db::LeaderLock::Mode::kExclusive);
    if (!membership->hold()) {
      std::cerr << "tpujobs serve: "
                << (cluster ? "a tpujobs serve without --name runs on this database; a cluster "
                              "beside it would run the same jobs.\n  Stop it first, or give it "
                              "--name NAME so that it joins the cluster (docs/deploy.md).\n"
                            : "another tpujobs serve without --name, or a cluster (replicas "
                              "with --name or --pool none, agents), runs on this database; "
                              "either would run the same jobs.\n  To run several, give each "
                              "--name NAME (or --pool none) and run `tpujobs agent` on the "
                              "workers (docs/deploy.md).\n");
      return 2;
    }
  }

  WakeBus wake_bus;  // a standalone serve's leader, agent and API wake each other directly
  const int workers = options.workers > 0
                          ? options.workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  JobManagerOptions manager_options;
  if (standalone) manager_options.wake_bus = &wake_bus;
  if (!options.name.empty()) manager_options.instance = options.name;
  manager_options.readiness_probe.timeout =
      std::min<std::chrono::milliseconds>(db_timeout, std::chrono::seconds(2));
  manager_options.readiness_probe.write_probe = true;  // /readyz: writes too (migration 034)
  if (standalone) {
    if (db::Status requeued = requeue_left_placed(**pool); !requeued.ok()) {
      std::cerr << "tpujobs serve: " << requeued.error().message << "\n";
      return 1;
    }
  }
  JobManager manager(**pool, *layout, manager_options);
  if (db::Status started = manager.start(); !started.ok()) {
    std::cerr << "tpujobs serve: " << started.error().message << "\n";
    return 1;
  }
  // The leader's connections of its own: a pass that waited for one behind
  // the API's requests would fail, and a leader whose passes fail judges no
  // agent's silence (SchedulerLeader::run_pass).
  std::unique_ptr<db::ConnectionPool> leader_pool;
  std::unique_ptr<SchedulerLeader> leader;
  std::unique_ptr<Agent> agent;
  {
    auto created = db::ConnectionPool::create(conninfo, 2);
    if (!created.ok()) {
      std::cerr << "tpujobs serve: database: " << created.error().message << "\n";
      return 1;
    }
    leader_pool = std::move(*created);
    SchedulerLeaderOptions leader_options;
    leader_options.conninfo = conninfo;
    leader_options.instance = options.name.empty() ? "replica" : options.name;
    leader_options.agent_silence = std::chrono::seconds(options.agent_silence_seconds);
    leader_options.fair_share.half_life = options.fair_share_half_life;
    if (standalone) leader_options.wake_bus = &wake_bus;
    leader = std::make_unique<SchedulerLeader>(*leader_pool, leader_options);
    // The agent registers before the leader's first pass, which would
    // otherwise find no host alive and tell the waiting jobs so.
    if (!layout->hosts.empty()) {
      AgentOptions agent_options;
      agent_options.name = options.name;
      agent_options.conninfo = conninfo;
      agent_options.layout = *layout;
      agent_options.workers = workers;
      agent_options.collective_host = options.collective_address;
      agent_options.collective_timeout = std::chrono::seconds(options.collective_timeout_seconds);
      if (standalone) agent_options.wake_bus = &wake_bus;
      agent = std::make_unique<Agent>(**pool, agent_options);
      Agent* runs_here = agent.get();
      manager.set_live_view([runs_here](std::int64_t id) { return runs_here->live_view(id); });
      if (db::Status started = agent->start(); !started.ok()) {
        std::cerr << "tpujobs serve: agent: " << started.error().message << "\n";
        manager.shutdown();
        return 1;
      }
    }
    leader->start();
  }

  // Every replica purges (batches skip what another holds).
  std::unique_ptr<RetentionPurger> purger;
  if (options.retention) {
    RetentionOptions retention;
    retention.keep = *options.retention;
    purger = std::make_unique<RetentionPurger>(**pool, retention);
    purger->start();
  }

  // Every replica sends notifications (each delivery is claimed by one).
  if (!options.notify_allow.empty()) {
    if (db::Status added =
            db::NotificationRepository(**pool).add_to_allowlist(options.notify_allow);
        !added.ok()) {
      std::cerr << "tpujobs serve: --notify-allow: " << added.error().message << "\n";
      manager.shutdown();
      return 1;
    }
  }
  NotifierOptions notifier_options;
  notifier_options.instance = manager_options.instance;
  Notifier notifier(
      **pool,
      [&manager](std::int64_t id, const std::string& tenant) {
        return manager.stored_job_text(id, tenant);
      },
      notifier_options);
  notifier.start();

  api::ApiOptions api_options;
  api_options.static_file = [](std::string_view path) { return web_asset(path); };
  api_options.notifications = &notifier;
  api::TenantLimiter limiter(limits_backend(**pool), default_limits(options));
  limiter.start_refresher();  // no request waits on the database for the limits
  api_options.limits = &limiter;
  api_options.followers = options.followers;
  api_options.waiters = options.waiters;
  const HttpServer* metrics_server = nullptr;  // set once it exists; read by /metrics
  api_options.more_metrics = [&metrics_server, &leader] {
    return (metrics_server ? metrics_server->prometheus_metrics() : std::string()) +
           leader->prometheus_metrics();
  };
  api::JobsApi api(manager, api_options);
  HttpServerOptions http;
  http.address = options.address;
  http.port = static_cast<std::uint16_t>(options.port);
  http.io_threads = options.io_threads;
  http.body_limit = options.max_body;
  // Requests that wait on a database that hangs (each up to --db-timeout)
  // hold their I/O threads: spare ones then read and answer the rest, the
  // health probes first among them, which never wait.
  http.spare_io_threads = 32;
  http.first_byte_timeout = std::chrono::seconds(options.first_byte_timeout_seconds);
  http.stream_buffer_limit = static_cast<std::size_t>(options.stream_buffer_limit);
  HttpServer server(http, api);
  metrics_server = &server;
  if (base::Status started = server.start(); !started.ok()) {
    std::cerr << "tpujobs serve: " << started.error().message << "\n";
    manager.shutdown();
    return 1;
  }
  std::cout << "tpujobs listening on http://"
            << (options.address.find(':') != std::string::npos ? "[" + options.address + "]"
                                                               : options.address)
            << ":" << server.port() << " (pool " << options.pool << ")" << std::endl;

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "tpujobs: " << (signal_number == SIGINT ? "SIGINT" : "SIGTERM")
            << ": stopping (finishing requests, checkpointing running jobs)\n";
  server.stop_accepting();
  // Running jobs first: each step trained from here is one the next start
  // does not resume from.
  // Standalone, the leader stops first: a pass after its own agent left
  // would tell every waiting job that no host is alive, and store that.
  if (standalone && leader) leader->stop();
  if (agent) agent->stop();
  if (leader) leader->stop();
  manager.shutdown();
  notifier.stop();
  if (purger) purger->stop();
  server.shutdown(std::chrono::seconds(5));
  manager.close();
  if (embedded) {
    if (db::Status stopped = embedded->stop(); !stopped.ok()) {
      std::cerr << "tpujobs: stopping PostgreSQL: " << stopped.error().message << "\n";
    }
  }
  std::cerr << "tpujobs: stopped\n";
  return 0;
}

}  // namespace tpujobs::service
