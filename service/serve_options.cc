#include "service/serve_options.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>

#include "api/job_spec.h"
#include "api/notify.h"

namespace tpujobs::service {
namespace {

// A value that does not convert, thrown from an option's callback while
// CLI11 parses; what() is the whole message for the user.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr const char* kServeAbout =
    "Runs the tpujobs service: the REST API, the scheduler and the executor.";

constexpr const char* kAgentAbout =
    "Runs the jobs placed on this machine's emulated hosts (docs/deploy.md): registers\n"
    "the hosts NAME-h0, NAME-h1, ... (or the names of a @FILE pool), heartbeats,\n"
    "trains what the scheduler leader places on them and writes state, logs,\n"
    "metrics and checkpoints to the database.";

// An option that takes one value, each time it is given; `convert` stores
// it or throws UsageError.
CLI::Option* valued(CLI::App& app, const std::string& name, const std::string& type,
                    const std::string& description,
                    std::function<void(const std::string&)> convert) {
  return app.add_option(name, CLI::callback_t{}, description)
      ->type_name(type)
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->each(std::move(convert));
}

// A whole number from `min` to `max` into `target`.
template <typename Target>
void integer(CLI::App& app, const std::string& name, const std::string& type, long min, long max,
             Target& target, const std::string& description) {
  valued(app, name, type, description, [&target, name, min, max](const std::string& value) {
    try {
      std::size_t used = 0;
      const long n = std::stol(value, &used);
      if (used != value.size() || n < min || n > max) throw std::out_of_range("range");
      target = static_cast<Target>(n);
    } catch (const std::exception&) {
      throw UsageError(name + " must be an integer from " + std::to_string(min) + " to " +
                       std::to_string(max));
    }
  });
}

// A duration of at least a second ("30d", "12h") into `target`.
template <typename Target>
void duration(CLI::App& app, const std::string& name, const std::string& description,
              const std::string& examples, Target& target) {
  valued(app, name, "DUR", description, [&target, name, examples](const std::string& value) {
    const std::optional<std::chrono::milliseconds> parsed = api::parse_duration(value);
    if (!parsed || *parsed < std::chrono::seconds(1))
      throw UsageError(name + " needs a duration of at least 1s such as " + examples);
    target = std::chrono::duration_cast<std::chrono::seconds>(*parsed);
  });
}

// Any text but an empty one into `target`.
void text(CLI::App& app, const std::string& name, const std::string& type, const std::string& needs,
          std::string& target, const std::string& description) {
  valued(app, name, type, description, [&target, name, needs](const std::string& value) {
    if (value.empty()) throw UsageError(name + " needs " + needs);
    target = value;
  });
}

void declare_listen(CLI::App& app, ServeOptions& o) {
  valued(app, "--listen", "ADDR:PORT",
         "where to listen (default 127.0.0.1:8080; port 0 picks a free one)",
         [&o](const std::string& value) {
           const std::size_t colon = value.rfind(':');
           if (colon == std::string::npos)
             throw UsageError("--listen needs ADDR:PORT, got '" + value + "'");
           o.address = value.substr(0, colon);
           if (o.address.size() > 2 && o.address.front() == '[')
             o.address = o.address.substr(1, o.address.size() - 2);
           try {
             std::size_t used = 0;
             o.port = std::stoi(value.substr(colon + 1), &used);
             if (used != value.size() - colon - 1 || o.port < 0 || o.port > 65535)
               throw std::out_of_range("port");
           } catch (const std::exception&) {
             throw UsageError("--listen: bad port in '" + value + "'");
           }
         });
}

// What `serve` and `agent` both take: where the database is, the hosts of
// this process's agent, and how that agent trains.
void declare_agent_options(CLI::App& app, ServeCommand command, ServeOptions& o) {
  const bool serve = command == ServeCommand::kServe;
  text(app, "--database-url", "URL", "a URL", o.database_url,
       serve ? "use this PostgreSQL (also TPUJOBS_DATABASE_URL); without it an\n"
               "embedded PostgreSQL runs in STATE_DIR/pgdata (started again\n"
               "if it dies)"
             : "the cluster's PostgreSQL (also TPUJOBS_DATABASE_URL)");
  text(app, "--pool", "SPEC", "a value such as v3-32", o.pool,
       serve ? "the emulated TPU pool: a slice (v3-32), a list (v3-8,v3-8,v4-16)\n"
               "or @FILE.json (default v3-32)"
             : "this machine's hosts: a slice (v3-32), a list or @FILE.json");
  valued(app, "--name", "NAME",
         serve ? "with --database-url: join a cluster (docs/deploy.md) as NAME: any\n"
                 "number of replicas share the database, one of them is the\n"
                 "scheduler leader, and --pool runs an in-process agent NAME\n"
                 "whose hosts are NAME-h0, NAME-h1, ...; --pool none serves\n"
                 "the API only (no --name needed)"
               : "this agent's name, unique in the cluster",
         [&o](const std::string& value) {
           if (value.empty() || value.size() > 64 ||
               value.find_first_of(" \t\n/") != std::string::npos)
             throw UsageError("--name needs a name of 1 to 64 characters without spaces or '/'");
           o.name = value;
         });
  integer(app, "--workers", "N", 1, 256, o.workers,
          serve ? "training worker threads shared by all jobs (default: CPU count)"
                : "training worker threads (default: CPU count)");
  integer(app, "--training-nice", "N", 0, 19, o.training_nice,
          "the nice value of the threads that train (default 10): requests\n"
          "and the scheduler keep a core while training fills the machine;\n"
          "0 trains at the service's own priority");
  integer(app, "--job-output-rate", "N", 0, 1 << 20, o.job_output_rate,
          "log lines, and apart metric points, one job stores a second\n"
          "(default 2000, with a burst of ten seconds' worth); past it they\n"
          "are dropped, and the job's log says how many (0: no bound)");
  text(app, "--collective-address", "HOST", "a host name or address", o.collective_address,
       "the address other agents reach this one's collectives at,\n"
       "for slices spanning agents (default: this machine's host name)");
  integer(app, "--collective-timeout", "SECS", 1, 3600, o.collective_timeout_seconds,
          "bounds a slice's rendezvous and every collective (default 30)");
}

// The service's own: the database's handling, the HTTP server's bounds.
void declare_service_options(CLI::App& app, ServeOptions& o) {
  text(app, "--state-dir", "DIR", "a directory", o.state_dir,
       "where the embedded database lives (default ./state, or TPUJOBS_STATE_DIR)");
  integer(app, "--db-timeout", "SECS", 1, 3600, o.db_timeout_seconds,
          "a request's statement that the database does not answer within SECS\n"
          "fails with 503 and its connection is closed and opened again\n"
          "(a stopped or cut-off PostgreSQL); /readyz turns 503 within\n"
          "about 2.5 s (default 10)");
  integer(app, "--io-threads", "N", 1, 64, o.io_threads, "HTTP I/O threads (default 2)");
  integer(app, "--max-body", "BYTES", 1024, 64 << 20, o.max_body,
          "request body cap (default 1048576)");
  integer(app, "--leader-nice", "N", -20, 0, o.leader_nice,
          "the nice value of the scheduler leader's thread (default -10),\n"
          "and of the embedded PostgreSQL's backends that answer it:\n"
          "a burst of requests does not hold its passes up; below 0 it\n"
          "needs CAP_SYS_NICE or a nice limit (docs/deploy.md), else the\n"
          "passes run at the service's priority; 0 leaves them there");
  integer(app, "--agent-silence", "SECS", 1, 3600, o.agent_silence_seconds,
          "an agent silent this long is lost: its jobs resume elsewhere\n"
          "(default 10)");
  valued(app, "--lease-timeout", "SECS",
         "no effect: an agent silent for --agent-silence is lost, and its\n"
         "jobs' cores with it",
         [&o](const std::string&) {
           o.ignored.push_back(
               "--lease-timeout has no effect: a job's cores are taken back when its agent "
               "is silent for --agent-silence");
         });
  duration(app, "--retention",
           "purge the log lines and metric points of jobs finished longer\n"
           "ago than DUR (30d, 12h, ...; the job rows stay); default: keep all",
           "30d or 12h", o.retention);
  valued(app, "--notify-allow", "ENTRY",
         "adds ENTRY to the notification allow-list stored in the database\n"
         "(repeatable): a host, host:port or http:// URL prefix that a\n"
         "job's notify.url may name (the admin edits the list at\n"
         "PUT /v1/notifications/allowlist)",
         [&o](const std::string& value) {
           if (base::Status checked = api::check_allowlist_entry(value); !checked.ok())
             throw UsageError("--notify-allow '" + value + "' " + checked.error().message);
           o.notify_allow.push_back(value);
         });
  duration(app, "--fair-share-half-life",
           "how fast a tenant's past use stops lowering its jobs' place\n"
           "among equal priorities (default 1h; README \"Fair share\")",
           "1h or 7d", o.fair_share_half_life);
  integer(app, "--first-byte-timeout", "SECS", 1, 3600, o.first_byte_timeout_seconds,
          "close a new connection that sends nothing for SECS (default 5)");
  integer(app, "--stream-buffer-limit", "BYTES", 64 << 10, 1 << 30, o.stream_buffer_limit,
          "cut off a log follower whose unsent lines pass BYTES (default 4194304)");
}

// Bounds on what clients hold open, and the tenants' default limits.
void declare_limits(CLI::App& app, ServeOptions& o) {
  integer(app, "--max-followers", "N", 0, 1 << 20, o.followers.total,
          "open log streams (SSE) in all (default 1024); over it 503 with\n"
          "Retry-After (0: no bound)");
  integer(app, "--max-followers-per-tenant", "N", 0, 1 << 20, o.followers.per_tenant,
          "open log streams of one tenant (default 16); over it 429");
  integer(app, "--max-waiters", "N", 0, 1 << 20, o.waiters.total,
          "open GET .../wait long-polls in all (default 4096)");
  integer(app, "--max-waiters-per-tenant", "N", 0, 1 << 20, o.waiters.per_tenant,
          "open GET .../wait long-polls of one tenant (default 64)");
  integer(app, "--max-wide-requests", "N", 0, 1 << 20, o.wide_requests.total,
          "lists of more than 50 jobs waiting or being answered, in all\n"
          "(default 64; they run on a thread of their own, tenants in turn);\n"
          "over it 503 with Retry-After (0: no bound)");
  integer(app, "--max-wide-requests-per-tenant", "N", 0, 1 << 20, o.wide_requests.per_tenant,
          "lists of more than 50 jobs of one tenant waiting or being answered\n"
          "(default 4); over it 429");
  // Their footer says what they apply to.
  integer(app, "--default-max-queued", "N", 0, 1 << 30, o.default_max_queued,
          "jobs a tenant has queued at once (default 10000)");
  integer(app, "--default-max-array-size", "N", 0, 1 << 30, o.default_max_array_size,
          "a sweep's size (default 256)");
  integer(app, "--default-submits-per-second", "R", 0, 1 << 30, o.default_submits_per_second,
          "a tenant's submits per second (default 0)");
  integer(app, "--default-submit-burst", "N", 0, 1 << 30, o.default_submit_burst,
          "the burst of that token bucket (default 0)");
  integer(app, "--default-requests-per-second", "R", 0, 1 << 30, o.default_requests_per_second,
          "a tenant's requests per second (default 0)");
  integer(app, "--default-request-burst", "N", 0, 1 << 30, o.default_request_burst,
          "the burst of that token bucket (default 0)");
  app.footer(
      "The --default-... limits apply to tenants without limits of their own\n"
      "(POST /v1/tenants/{tenant}/limits); 0: no bound. Over a limit: 429.\n"
      "At start, serve raises its soft limit of open files to the hard limit.");
}

std::unique_ptr<CLI::App> declare(ServeCommand command, ServeOptions& o, bool& help) {
  const bool serve = command == ServeCommand::kServe;
  auto app = std::make_unique<CLI::App>(serve ? kServeAbout : kAgentAbout,
                                        serve ? "tpujobs serve" : "tpujobs agent");
  app->set_help_flag();  // -h / --help is looked for before the parse
  app->allow_extras();   // unknown options are ours to name
  app->get_formatter()->column_width(26);
  if (serve) declare_listen(*app, o);
  declare_agent_options(*app, command, o);
  if (serve) {
    declare_service_options(*app, o);
    declare_limits(*app, o);
  }
  app->add_flag("-h,--help", help, "this text");
  return app;
}

}  // namespace

base::Result<ServeLine> parse_serve_line(ServeCommand command,
                                         const std::vector<std::string>& args) {
  ServeLine line;
  if (const char* url = std::getenv("TPUJOBS_DATABASE_URL"); url && *url)
    line.options.database_url = url;
  if (const char* dir = std::getenv("TPUJOBS_STATE_DIR"); dir && *dir) line.options.state_dir = dir;
  for (const std::string& arg : args) {
    if (arg == "-h" || arg == "--help") {
      line.help = true;
      return line;
    }
  }
  const std::unique_ptr<CLI::App> app = declare(command, line.options, line.help);
  auto invalid = [](std::string message) {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  try {
    app->parse(std::vector<std::string>(args.rbegin(), args.rend()));  // as CLI11 takes them
  } catch (const UsageError& e) {
    return invalid(e.what());
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();
    return invalid(what.substr(0, what.find(':')) + " needs a value");
  } catch (const CLI::ParseError& e) {
    return invalid(e.what());
  }
  for (const std::string& extra : app->remaining())
    return invalid("unknown option '" + extra.substr(0, extra.find('=')) + "'");
  return line;
}

std::string serve_usage(ServeCommand command) {
  ServeLine unused;
  return declare(command, unused.options, unused.help)->help();
}

}  // namespace tpujobs::service
