#include "service/serve.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "api/job_spec.h"
#include "api/jobs_api.h"
#include "api/notify.h"
#include "base/free_memory.h"
#include "base/thread_priority.h"
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
#include "service/serve_options.h"
#include "service/standalone_restart.h"
#include "service/web_assets.h"

namespace tpujobs::service {
namespace {

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

// The command line read: the options to run with, or the exit code after
// --help (0) or a usage error (2), both printed.
struct CommandLine {
  std::optional<ServeOptions> options;
  int exit_code = 0;
};

CommandLine read_command_line(ServeCommand command, const std::vector<std::string>& args) {
  const char* prefix = command == ServeCommand::kServe ? "tpujobs serve: " : "tpujobs agent: ";
  base::Result<ServeLine> line = parse_serve_line(command, args);
  if (!line.ok()) {
    std::cerr << prefix << line.error().message << "\n\n" << serve_usage(command);
    return {std::nullopt, 2};
  }
  if (line->help) {
    std::cout << serve_usage(command);
    return {std::nullopt, 0};
  }
  for (const std::string& ignored : line->options.ignored) std::cerr << prefix << ignored << "\n";
  return {std::move(line->options), 0};
}

int default_workers(const ServeOptions& options) {
  return options.workers > 0 ? options.workers
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

AgentOptions agent_options(const ServeOptions& options, const std::string& conninfo,
                           const scheduler::PoolLayout& layout) {
  AgentOptions agent;
  agent.name = options.name;
  agent.conninfo = conninfo;
  agent.layout = layout;
  agent.workers = default_workers(options);
  agent.training_nice = options.training_nice;
  agent.output_per_second = options.job_output_rate;
  agent.collective_host = options.collective_address;
  agent.collective_timeout = std::chrono::seconds(options.collective_timeout_seconds);
  return agent;
}

}  // namespace

int run_agent(const std::vector<std::string>& args) {
  CommandLine line = read_command_line(ServeCommand::kAgent, args);
  if (!line.options) return line.exit_code;
  const ServeOptions& options = *line.options;
  if (options.database_url.empty() || options.name.empty() || options.pool == "none") {
    std::cerr << "tpujobs agent: --database-url, --pool and --name are required\n\n"
              << serve_usage(ServeCommand::kAgent);
    return 2;
  }
  base::Result<scheduler::PoolLayout> layout = agent_layout(options);
  if (!layout.ok()) {
    std::cerr << "tpujobs agent: --pool: " << layout.error().message << "\n";
    return 2;
  }
  sigset_t signals = block_stop_signals();
  (void)base::purge_in_background();  // see ServeProcess::run
  auto pool = db::ConnectionPool::create(options.database_url, 6);
  if (!pool.ok()) {
    std::cerr << "tpujobs agent: database: " << pool.error().message << "\n";
    return 1;
  }
  // A member of the cluster: refused beside a standalone service (serve.cc).
  db::LeaderLock membership(options.database_url, db::LeaderLock::kStandaloneKey,
                            db::LeaderLock::Mode::kShared);
  const base::Result<bool> member = membership.hold();
  if (!member.ok()) {
    std::cerr << "tpujobs agent: database: " << member.error().message << "\n";
    return 1;
  }
  if (!*member) {
    std::cerr << "tpujobs agent: a tpujobs serve without --name runs on this database; an agent "
                 "beside it would run the same jobs.\n  Stop it first, or give it --name NAME so "
                 "that it joins the cluster (docs/deploy.md).\n";
    return 2;
  }
  if (base::Status migrated = db::migrate(**pool); !migrated.ok()) {
    std::cerr << "tpujobs agent: migrations: " << migrated.error().message << "\n";
    return 1;
  }
  Agent agent(**pool, agent_options(options, options.database_url, *layout));
  if (base::Status started = agent.start(); !started.ok()) {
    std::cerr << "tpujobs agent: " << started.error().message << "\n";
    return 1;
  }
  // One write of the whole line (see ServeProcess's "listening" line).
  const std::string running = "tpujobs agent " + options.name + " running " +
                              std::to_string(layout->hosts.size()) + " host(s) (pool " +
                              options.pool + ")\n";
  std::cout << std::flush << running << std::flush;
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "tpujobs agent: stopping (checkpointing and requeueing running jobs)\n";
  agent.stop();
  std::cerr << "tpujobs agent: stopped\n";
  return 0;
}

namespace {

// One `tpujobs serve` from start to graceful stop, in the order its parts
// start (and, reversed, stop). Each step prints why it failed and answers
// the exit code, or nullopt to go on.
class ServeProcess {
 public:
  explicit ServeProcess(ServeOptions options) : options_(std::move(options)) {}

  int run() {
    raise_descriptor_limit();
    if (std::optional<int> refused = read_layout()) return *refused;
    // Signals are taken by sigwait() below; every thread started from here
    // on inherits the mask.
    sigset_t signals = block_stop_signals();
    // Freed pages go back to the system from the allocator's own threads,
    // not from the requests' (bench/RESULTS.md, session 31); they inherit
    // the mask.
    (void)base::purge_in_background();
    for (auto step : {&ServeProcess::open_database, &ServeProcess::check_exposure,
                      &ServeProcess::hold_membership, &ServeProcess::start_control_plane,
                      &ServeProcess::start_api}) {
      if (std::optional<int> failed = (this->*step)()) {
        // The leader's thread first: its passes hand placements to the
        // agent, which goes before it.
        if (leader_) leader_->stop();
        if (manager_) manager_->shutdown();
        return *failed;
      }
    }
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    std::cerr << "tpujobs: " << (signal_number == SIGINT ? "SIGINT" : "SIGTERM")
              << ": stopping (finishing requests, checkpointing running jobs)\n";
    stop();
    return 0;
  }

 private:
  // DESIGN §9: with a database URL, --name or --pool none joins a cluster;
  // without one, serve is a one-member cluster on the embedded PostgreSQL:
  // the same API service, scheduler leader and agent, woken in-process.
  // (A serve without --name on a database URL is standalone too.)
  std::optional<int> read_layout() {
    standalone_ = options_.name.empty() && options_.pool != "none";
    if (options_.pool == "none" && options_.database_url.empty()) {
      std::cerr
          << "tpujobs serve: --pool none serves the API of a cluster: it needs --database-url\n";
      return 2;
    }
    if (!options_.name.empty() && options_.database_url.empty()) {
      std::cerr << "tpujobs serve: --name joins a cluster: it needs --database-url\n";
      return 2;
    }
    base::Result<scheduler::PoolLayout> layout =
        options_.pool == "none" ? base::Result<scheduler::PoolLayout>(scheduler::PoolLayout{})
        : standalone_           ? load_pool(options_.pool)
                                : agent_layout(options_);
    if (!layout.ok()) {
      std::cerr << "tpujobs serve: --pool: " << layout.error().message << "\n";
      return 2;
    }
    layout_ = std::move(*layout);
    if (standalone_) options_.name = "local";
    return std::nullopt;
  }

  // The embedded PostgreSQL (without a URL), the API's connections, the
  // migrations.
  std::optional<int> open_database() {
    conninfo_ = options_.database_url;
    if (conninfo_.empty()) {
      db::EmbeddedPostgres::Options pg;
      pg.state_dir = std::filesystem::absolute(options_.state_dir);
      std::cerr << "tpujobs: starting embedded PostgreSQL in " << pg.state_dir.string() << "\n";
      auto started = db::EmbeddedPostgres::start(pg);
      if (!started.ok()) {
        std::cerr << "tpujobs serve: embedded PostgreSQL: " << started.error().message << "\n";
        return 1;
      }
      embedded_ = std::move(*started);
      if (const std::string note = db::EmbeddedPostgres::scheduling_note(); !note.empty())
        std::cerr << "tpujobs: note: " << note << "\n";
      // A postmaster that dies (killed, out of memory) is started again; the
      // connection pool and the job manager's retries carry the service over
      // the gap. stop() ends this before the normal shutdown.
      embedded_->supervise(
          [](const std::string& line) { std::cerr << "tpujobs: " << line << std::endl; });
      conninfo_ = embedded_->conninfo();
    }
    auto pool = db::ConnectionPool::create(conninfo_, 12);
    if (!pool.ok()) {
      std::cerr << "tpujobs serve: database: " << pool.error().message << "\n";
      return 1;
    }
    pool_ = std::move(*pool);
    if (base::Status migrated = db::migrate(*pool_); !migrated.ok()) {
      std::cerr << "tpujobs serve: migrations: " << migrated.error().message << "\n";
      return 1;
    }
    // From here on no statement of the API's pool waits longer than this
    // for its answer (the migrations above may rightly run long). The
    // scheduler leader's pool and the LISTEN connections keep their own.
    pool_->set_answer_timeout(std::chrono::seconds(options_.db_timeout_seconds));
    return std::nullopt;
  }

  // Off loopback, only with API tokens: anyone who can reach it could
  // submit, cancel and drain.
  std::optional<int> check_exposure() {
    const std::string& address = options_.address;
    if (address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0)
      return std::nullopt;
    auto count = db::TokenRepository(*pool_).count_active_tokens();
    if (count.ok() && *count > 0) return std::nullopt;
    std::cerr << "tpujobs serve: refusing to listen on " << address
              << " without API tokens: anyone who can reach it could submit, cancel and drain.\n"
              << "  Create one first: tpujobs token create --tenant NAME --role admin"
              << (options_.database_url.empty() ? " --state-dir " + options_.state_dir
                                                : std::string())
              << "\n  or listen on a loopback address (--listen 127.0.0.1:PORT).\n";
    return 2;
  }

  // One standalone service per database, and none beside a cluster: either
  // would run jobs another runs (DESIGN §9 is the way to run several).
  std::optional<int> hold_membership() {
    if (options_.database_url.empty()) return std::nullopt;
    membership_.emplace(
        conninfo_, db::LeaderLock::kStandaloneKey,
        standalone_ ? db::LeaderLock::Mode::kExclusive : db::LeaderLock::Mode::kShared);
    const base::Result<bool> member = membership_->hold();
    if (!member.ok()) {
      std::cerr << "tpujobs serve: database: " << member.error().message << "\n";
      return 1;
    }
    if (*member) return std::nullopt;
    std::cerr << "tpujobs serve: "
              << (standalone_ ? "another tpujobs serve without --name, or a cluster (replicas "
                                "with --name or --pool none, agents), runs on this database; "
                                "either would run the same jobs.\n  To run several, give each "
                                "--name NAME (or --pool none) and run `tpujobs agent` on the "
                                "workers (docs/deploy.md).\n"
                              : "a tpujobs serve without --name runs on this database; a cluster "
                                "beside it would run the same jobs.\n  Stop it first, or give it "
                                "--name NAME so that it joins the cluster (docs/deploy.md).\n");
    return 2;
  }

  // The API service over the tables, the scheduler leader and this
  // process's agent (a standalone serve's wake each other directly).
  std::optional<int> start_control_plane() {
    JobManagerOptions manager_options;
    if (standalone_) manager_options.wake_bus = &wake_bus_;
    manager_options.submitted_specs = &submitted_specs_;
    if (!options_.name.empty()) manager_options.instance = options_.name;
    manager_options.readiness_probe.timeout = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(options_.db_timeout_seconds), std::chrono::seconds(2));
    manager_options.readiness_probe.write_probe = true;  // /readyz: writes too (migration 034)
    if (standalone_) {
      if (base::Status requeued = requeue_left_placed(*pool_); !requeued.ok()) {
        std::cerr << "tpujobs serve: " << requeued.error().message << "\n";
        return 1;
      }
    }
    manager_ = std::make_unique<JobManager>(*pool_, layout_, manager_options);
    if (base::Status started = manager_->start(); !started.ok()) {
      std::cerr << "tpujobs serve: " << started.error().message << "\n";
      return 1;
    }
    // The leader's connections of its own: a pass that waited for one behind
    // the API's requests would fail, and a leader whose passes fail judges no
    // agent's silence (SchedulerLeader::run_pass).
    auto leader_pool =
        db::ConnectionPool::create(conninfo_, 2, base::real_clock(), leader_backends_priority());
    if (!leader_pool.ok()) {
      std::cerr << "tpujobs serve: database: " << leader_pool.error().message << "\n";
      return 1;
    }
    leader_pool_ = std::move(*leader_pool);
    SchedulerLeaderOptions leader_options;
    leader_options.conninfo = conninfo_;
    leader_options.instance = options_.name.empty() ? "replica" : options_.name;
    leader_options.agent_silence = std::chrono::seconds(options_.agent_silence_seconds);
    leader_options.thread_nice = options_.leader_nice;
    leader_options.fair_share.half_life = options_.fair_share_half_life;
    if (standalone_) leader_options.wake_bus = &wake_bus_;
    leader_options.submitted_specs = &submitted_specs_;
    // The agent registers before the leader's first pass, which would
    // otherwise find no host alive and tell the waiting jobs so.
    if (!layout_.hosts.empty()) {
      AgentOptions agent = agent_options(options_, conninfo_, layout_);
      if (standalone_) {
        agent.wake_bus = &wake_bus_;
        agent.written_views = manager_.get();
      }
      agent_ = std::make_unique<Agent>(*pool_, agent);
      Agent* runs_here = agent_.get();
      manager_->set_live_view([runs_here](std::int64_t id) { return runs_here->live_view(id); });
      if (base::Status started = agent_->start(); !started.ok()) {
        std::cerr << "tpujobs serve: agent: " << started.error().message << "\n";
        return 1;
      }
      leader_options.local_agent = runs_here;
    }
    leader_ = std::make_unique<SchedulerLeader>(*leader_pool_, leader_options);
    leader_->start();
    return std::nullopt;
  }

  // The embedded server's backends that answer the scheduler leader run at
  // its priority too (docs/deploy.md, "The scheduler leader's priority"):
  // each is a session, so with Linux's autogroup a group, of its own, and
  // a pass that waited for one took up to 0.7 s while requests filled the
  // cores (bench/RESULTS.md, session 58). Nothing for a server elsewhere,
  // whose processes are not this machine's.
  db::ConnectionPool::OnOpen leader_backends_priority() const {
    if (!embedded_ || options_.leader_nice >= 0) return nullptr;
    auto said = std::make_shared<std::atomic<bool>>(false);
    return [nice = options_.leader_nice, said](const db::Connection& connection) {
      const int pid = connection.server_process().pid;
      base::Status set = base::set_process_nice(pid, nice);
      if (!set.ok() && !said->exchange(true)) {
        std::cerr << "tpujobs: note: the scheduler leader's PostgreSQL backends run at the "
                     "database's priority ("
                  << set.error().message
                  << "); see docs/deploy.md, \"The scheduler leader's "
                     "priority\""
                  << std::endl;
      }
    };
  }

  // Retention and notifications (every replica runs both: a batch or a
  // delivery is claimed by one), then the HTTP API.
  std::optional<int> start_api() {
    if (options_.retention) {
      RetentionOptions retention;
      retention.keep = *options_.retention;
      purger_ = std::make_unique<RetentionPurger>(*pool_, retention);
      purger_->start();
    }
    if (!options_.notify_allow.empty()) {
      if (base::Status added =
              db::NotificationRepository(*pool_).add_to_allowlist(options_.notify_allow);
          !added.ok()) {
        std::cerr << "tpujobs serve: --notify-allow: " << added.error().message << "\n";
        return 1;
      }
    }
    NotifierOptions notifier_options;
    notifier_options.instance = options_.name.empty() ? "tpujobs" : options_.name;
    JobManager& manager = *manager_;
    notifier_ = std::make_unique<Notifier>(
        *pool_,
        [&manager](std::int64_t id, const std::string& tenant) {
          return manager.stored_job_text(id, tenant);
        },
        notifier_options);
    notifier_->start();
    limiter_ =
        std::make_unique<api::TenantLimiter>(limits_backend(*pool_), default_limits(options_));
    limiter_->start_refresher();  // no request waits on the database for the limits
    api_ = std::make_unique<api::JobsApi>(*manager_, api_options());
    server_ = std::make_unique<HttpServer>(http_options(), *api_);
    if (base::Status started = server_->start(); !started.ok()) {
      std::cerr << "tpujobs serve: " << started.error().message << "\n";
      return 1;
    }
    // The tests wait for this line. It is one insertion into an emptied
    // buffer, so no other thread's output (the leader's and the agent's
    // lines on stderr, a flush of stdout) lands inside it: a clean-clone
    // ASan run once read "http://127.0.0.1:", the leader's line, the port.
    const std::string host = options_.address.find(':') != std::string::npos
                                 ? "[" + options_.address + "]"
                                 : options_.address;
    const std::string listening = "tpujobs listening on http://" + host + ":" +
                                  std::to_string(server_->port()) + " (pool " + options_.pool +
                                  ")\n";
    std::cout << std::flush << listening << std::flush;
    return std::nullopt;
  }

  api::ApiOptions api_options() {
    api::ApiOptions api;
    api.static_file = [](std::string_view path) { return web_asset(path); };
    api.notifications = notifier_.get();
    api.limits = limiter_.get();
    api.followers = options_.followers;
    api.waiters = options_.waiters;
    api.wide_request_threads = 1;
    api.wide_request_nice = 10;  // below the short requests, with the training
    api.wide_requests = options_.wide_requests;
    // /metrics: the HTTP server's (once it exists), the leader's and the
    // agent's (created before the server starts).
    api.more_metrics = [this] {
      return (server_ ? server_->prometheus_metrics() : std::string()) +
             leader_->prometheus_metrics() +
             (agent_ ? agent_->prometheus_metrics() : std::string()) + allocator_metric();
    };
    return api;
  }

  // Which allocator the process runs on (service/CMakeLists.txt).
  static std::string allocator_metric() {
    return std::string(
               "# HELP tpujobs_allocator_info The memory allocator the service runs on.\n"
               "# TYPE tpujobs_allocator_info gauge\n"
               "tpujobs_allocator_info{allocator=\"") +
           base::allocator_name() + "\"} 1\n";
  }

  HttpServerOptions http_options() const {
    HttpServerOptions http;
    http.address = options_.address;
    http.port = static_cast<std::uint16_t>(options_.port);
    http.io_threads = options_.io_threads;
    http.body_limit = options_.max_body;
    // Requests that wait on a database that hangs (each up to --db-timeout)
    // hold their I/O threads: spare ones then read and answer the rest, the
    // health probes first among them, which never wait.
    http.spare_io_threads = 32;
    http.first_byte_timeout = std::chrono::seconds(options_.first_byte_timeout_seconds);
    http.stream_buffer_limit = static_cast<std::size_t>(options_.stream_buffer_limit);
    return http;
  }

  void stop() {
    server_->stop_accepting();
    // Running jobs first: each step trained from here is one the next start
    // does not resume from. Standalone, the leader stops first: a pass after
    // its own agent left would tell every waiting job that no host is alive,
    // and store that.
    if (standalone_) leader_->stop();
    if (agent_) agent_->stop();
    leader_->stop();
    manager_->shutdown();
    notifier_->stop();
    if (purger_) purger_->stop();
    server_->shutdown(std::chrono::seconds(5));
    manager_->close();
    if (embedded_) {
      if (base::Status stopped = embedded_->stop(); !stopped.ok())
        std::cerr << "tpujobs: stopping PostgreSQL: " << stopped.error().message << "\n";
    }
    std::cerr << "tpujobs: stopped\n";
  }

  ServeOptions options_;
  bool standalone_ = true;
  scheduler::PoolLayout layout_;
  std::unique_ptr<db::EmbeddedPostgres> embedded_;
  std::string conninfo_;
  std::unique_ptr<db::ConnectionPool> pool_;
  std::optional<db::LeaderLock> membership_;
  WakeBus wake_bus_;
  SubmittedSpecs submitted_specs_;  // from the API service to the leader
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<db::ConnectionPool> leader_pool_;
  std::unique_ptr<SchedulerLeader> leader_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<RetentionPurger> purger_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<api::TenantLimiter> limiter_;
  std::unique_ptr<api::JobsApi> api_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  CommandLine line = read_command_line(ServeCommand::kServe, args);
  if (!line.options) return line.exit_code;
  return ServeProcess(std::move(*line.options)).run();
}

}  // namespace tpujobs::service
