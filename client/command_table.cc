#include "client/command_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>

#include "base/job_state.h"

namespace tpujobs::client {

std::optional<std::int64_t> parse_positive(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

namespace {

// An option that takes no value: `--wait=yes` is a usage error.
CLI::Option* flag(CLI::App& app, const std::string& name, bool& target,
                  const std::string& description) {
  return app.add_flag(name, target, description)->disable_flag_override();
}

}  // namespace

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

namespace {

// "K=V" options: `--set` and `--label`.
void key_value(const std::string& option, const std::string& shape, const std::string& value,
               std::vector<std::string>& into) {
  const std::size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError(option + " needs " + shape + ", got '" + value + "'");
  }
  into.push_back(value);
}

// The options more than one command takes, each declared once.
void add_timeout(CLI::App& app, CommandLine& out, const std::string& description) {
  valued(app, "--timeout", "DUR", description, [&out](const std::string& value) {
    out.timeout = parse_duration(value);
    if (!out.timeout) {
      throw UsageError("--timeout: '" + value + "' is not a duration (try 90s, 10m or 1h30m)");
    }
  });
}

void add_junit(CLI::App& app, CommandLine& out, const std::string& description) {
  valued(app, "--junit", "FILE", description, [&out](const std::string& value) {
    if (value.empty()) throw UsageError("--junit needs a file name");
    out.junit_path = value;
  });
}

void add_set(CLI::App& app, CommandLine& out, const std::string& description) {
  valued(app, "--set", "PATH=VALUE", description, [&out](const std::string& value) {
    key_value("--set", "PATH=VALUE", value, out.overrides);
  });
}

void add_idempotency_key(CLI::App& app, CommandLine& out, const std::string& description) {
  valued(app, "--idempotency-key", "K", description, [&out](const std::string& value) {
    if (value.empty() || value.size() > 255) {
      throw UsageError("--idempotency-key must be 1 to 255 characters");
    }
    out.idempotency_key = value;
  });
}

void declare_submit(CLI::App& app, CommandLine& out) {
  flag(app, "--wait", out.wait,
       "wait until the job ends; survives restarts of the service and\n"
       "network errors (reconnects with backoff)");
  flag(app, "--follow", out.follow,
       "stream the job's log to stdout while waiting (implies --wait)");
  add_timeout(app, out,
              "stop waiting after DUR (30s, 10m, 1h30m) and exit 124; the job\n"
              "keeps running (implies --wait)");
  add_idempotency_key(app, out,
                      "a retried submit with the same key and spec attaches to the job\n"
                      "the first one started instead of starting another");
  add_junit(app, out,
            "write a JUnit XML report: the job's outcome and one test case\n"
            "per expect gate (implies --wait)");
  add_set(app, out,
          "override a spec field, e.g. --set trainer.devices=1\n"
          "--set model.layers[0].out=256 --set trainer.precision=32-true;\n"
          "VALUE is JSON when it parses as JSON, else a string; repeatable");
}

void declare_validate(CLI::App& app, CommandLine& out) {
  add_set(app, out, "override a spec field (see `tpujobs submit --help`); repeatable");
}

void declare_logs(CLI::App& app, CommandLine& out) {
  flag(app, "--follow", out.follow,
       "keep printing new lines until the job ends (reconnects when\n"
       "the connection drops)");
}

void declare_wait(CLI::App& app, CommandLine& out) {
  add_timeout(app, out, "stop waiting after DUR and exit 124 (the job keeps running)");
  add_junit(app, out, "write a JUnit XML report of the outcome and the expect gates");
}

void declare_list(CLI::App& app, CommandLine& out) {
  valued(app, "--state", "S", "only jobs in state S (QUEUED, RUNNING, SUCCEEDED, ...)",
         [&out](const std::string& value) {
           std::string state = value;
           for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
           if (!base::parse_job_state(state)) {
             throw UsageError(
                 "--state must be one of QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, "
                 "CANCELLED; got '" +
                 value + "'");
           }
           out.state = state;
         });
  valued(
      app, "--label", "K=V", "only jobs with this label; repeatable (all must match)",
      [&out](const std::string& value) { key_value("--label", "KEY=VALUE", value, out.labels); });
  valued(app, "--limit", "N", "at most N jobs (1-500, default 50)",
         [&out](const std::string& value) {
           const std::optional<std::int64_t> n = parse_positive(value);
           if (!n || *n > 500) throw UsageError("--limit must be an integer from 1 to 500");
           out.limit = static_cast<int>(*n);
         });
  valued(app, "--array", "ID",
         "only the children of job array ID (a sweep), with the values each was given",
         [&out](const std::string& value) {
           const std::optional<std::int64_t> id = parse_positive(value);
           if (!id) {
             throw UsageError("--array needs a job array ID (a positive integer), got '" + value +
                              "'");
           }
           out.array = *id;
         });
}

void declare_usage(CLI::App& app, CommandLine& out) {
  valued(app, "--from", "T",
         "window start: a UTC time (2026-11-23T10:00:00Z) or an age (24h, 7d); default 24h",
         [&out](const std::string& value) { out.from = value; });
  valued(app, "--to", "T", "window end, the same way; default now",
         [&out](const std::string& value) { out.to = value; });
  valued(app, "--group-by", "G",
         "tenant (default), label (each key=value), or label:KEY (one key's values)",
         [&out](const std::string& value) {
           if (value != "tenant" && value != "label" && value.rfind("label:", 0) != 0) {
             throw UsageError("--group-by must be tenant, label or label:KEY, got '" + value + "'");
           }
           out.group_by = value;
         });
  flag(app, "--csv", out.csv, "print the CSV the service sends (GET /v1/usage?format=csv)");
}

void declare_upload(CLI::App& app, CommandLine& out) {
  valued(app, "--name", "NAME", "the dataset's name (default: the file's name without .csv)",
         [&out](const std::string& value) {
           if (value.empty()) throw UsageError("--name needs a dataset name");
           out.dataset_name = value;
         });
  add_idempotency_key(app, out,
                      "an upload repeated with the same key, name and file prints\n"
                      "the dataset the first one stored (default: a new key, which\n"
                      "makes the client's own retries safe)");
}

void declare_notify_secret(CLI::App& app, CommandLine& out) {
  flag(app, "--rotate", out.rotate, "make a new secret and print it");
}

void declare_notify_allow(CLI::App& app, CommandLine& out) {
  flag(app, "--remove", out.remove, "remove the entries instead of adding them");
}

void declare_nothing(CLI::App&, CommandLine&) {}

}  // namespace

const std::vector<CommandDeclaration>& command_declarations() {
  static const std::vector<CommandDeclaration> declarations = {
      {"submit", "SPEC.json", "submit a job (and wait for it, follow its log, gate CI on it)",
       R"(Submits the job in SPEC.json ("-" reads stdin) and prints its id. With --wait
the command ends when the job does, and its exit code says how it ended.
)",
       declare_submit},
      {"validate", "SPEC.json", "check a spec without running it",
       R"(Asks the service to resolve SPEC.json as it would at submit time: the trainer
settings, the HBM estimate and warnings. Exit 0 when it is valid, 2 when not.
)",
       declare_validate},
      // `check` parses its own options (client/check_command.h): listed here
      // for `tpujobs --help`.
      {"check", "PATH...", "check training scripts for TPU misconfigurations, offline (no server)",
       "See `tpujobs check --help`.\n", declare_nothing},
      {"status", "ID", "show a job: state, progress, metrics, error",
       R"(Prints the job's state, why it waits, its progress, latest metrics and error.
)",
       declare_nothing},
      {"logs", "ID", "print a job's log", "Prints the job's log lines.\n", declare_logs},
      {"wait", "ID", "wait for a job to end; the exit code says how",
       R"(Waits until the job ends and exits with its outcome. Survives restarts of the
service and network errors: only an answer from the service ends the wait.
)",
       declare_wait},
      {"cancel", "ID", "cancel a job",
       R"(Asks the service to cancel the job; it stops within one training step.
A job that has already ended is left as it is (exit 0, with a note).
)",
       declare_nothing},
      {"list", "", "list jobs, newest first", "", declare_list},
      {"pool", "", "show the TPU pool: hosts, cores in use, health",
       R"(Prints every host of the emulated pool with its health and the jobs on its cores.
)",
       declare_nothing},
      {"usage", "", "show TPU core-seconds used, per tenant or label",
       R"(Sums the core-seconds jobs held TPU cores over a window, by generation (as
Slurm's sreport). A tenant sees its own; an admin token sees every tenant's.
)",
       declare_usage},
      {"notifications", "ID", "show a job's notification deliveries and their attempts",
       R"(Lists the POSTs the job's "notify" asked for (one per event), with every attempt:
when, how long, the receiver's status code or the error, and which replica sent it.
)",
       declare_nothing},
      {"upload", "FILE.csv", "upload a CSV dataset for jobs to train on",
       R"(Uploads FILE.csv ("-" reads stdin) as a dataset of your tenant and prints its id.
It has a header row, numeric feature columns and a `label` column (an integer class,
or any number for a regression job). A job trains on it
with "data": {"dataset": {"upload": "ID"}}, e.g.
  tpujobs submit job.json --set 'data.dataset={"upload":"ID"}' --wait
)",
       declare_upload},
      {"notify-secret", "", "show or rotate the tenant's notification signing secret",
       R"(Without --rotate, says whether your tenant has a secret and since when. With
--rotate, makes a new one (replacing the old one for every later delivery) and prints
it: the only time it is shown. Receivers check X-Tpujobs-Signature: sha256=<hex
HMAC-SHA256 of the body keyed with it>, e.g. `openssl dgst -sha256 -hmac SECRET`.
)",
       declare_notify_secret},
      {"notify-allow", "ENTRY...", "show or edit where notifications may go (admin)",
       R"(Without arguments, prints the allow-list. With entries, adds them (--remove:
takes them off); editing needs an admin token. An entry is a host (ci.example: any
port), host:port (127.0.0.1:9000) or an http:// URL prefix
(http://hooks.example/tpujobs/). A job's notify.url must match one.
)",
       declare_notify_allow},
      {"limits", "TENANT...", "show or set a tenant's limits (admin)",
       R"(tpujobs limits TENANT prints the tenant's limits in effect (its own, else the
service's defaults). tpujobs limits TENANT LIMIT=VALUE ... sets some (admin token):
max_queued, submits_per_second, submit_burst, requests_per_second, request_burst,
max_array_size; VALUE "default" gives one back to the service's default. Over a
limit requests are answered 429 with Retry-After (README "Limits").
)",
       declare_nothing},
  };
  return declarations;
}

const CommandDeclaration* find_command(std::string_view name) {
  for (const CommandDeclaration& declaration : command_declarations()) {
    if (declaration.name == name) return &declaration;
  }
  return nullptr;
}

void declare_common_options(CLI::App& app, CommandLine& out) {
  valued(app, "--server", "URL", "the service (default $TPUJOBS_URL, else http://127.0.0.1:8080)",
         [&out](const std::string& value) { out.server = value; })
      ->group("common options");
  valued(app, "--token", "TOKEN", "sent as `Authorization: Bearer TOKEN` (default $TPUJOBS_TOKEN)",
         [&out](const std::string& value) { out.token = value; })
      ->group("common options");
  flag(app, "--json", out.json, "print JSON for scripts instead of text")->group("common options");
  app.set_help_flag("-h,--help", "this text")->group("common options");
}

std::string describe_options(const CLI::App& app, const std::string& group) {
  constexpr std::size_t kDescriptionColumn = 25;
  std::string text;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_positional() || option->get_group() != group) continue;
    std::string names;
    for (const std::string& name : option->get_snames()) names += "-" + name + ", ";
    for (const std::string& name : option->get_lnames()) names += "--" + name + ", ";
    names.resize(names.size() - 2);
    if (!option->get_type_name().empty() && option->get_type_size_max() > 0) {
      names += " " + option->get_type_name();
    }
    std::string line = "  " + names;
    line.resize(std::max(line.size() + 1, kDescriptionColumn), ' ');
    const std::string& description = option->get_description();
    std::size_t start = 0;
    while (start < description.size()) {
      const std::size_t end = std::min(description.find('\n', start), description.size());
      if (start > 0) line += std::string(kDescriptionColumn, ' ');
      line += description.substr(start, end - start) + "\n";
      start = end + 1;
    }
    text += line;
  }
  return text;
}

}  // namespace tpujobs::client
