#include "client/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/job_state.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;

// What a command accepts. Options not listed are usage errors, so a typo
// such as `--wiat` fails the pipeline instead of silently not waiting.
struct CommandSpec {
  std::string_view name;
  std::string_view positional;  // "SPEC.json", "ID" or "" for none
  std::vector<std::string_view> options;
  std::string_view summary;
  std::string_view details;
};

constexpr std::string_view kCommonOptions = R"(
common options:
  --server URL           the service (default $TPUJOBS_URL, else http://127.0.0.1:8080)
  --token TOKEN          sent as `Authorization: Bearer TOKEN` (default $TPUJOBS_TOKEN)
  --json                 print JSON for scripts instead of text
  -h, --help             this text

exit codes: 0 succeeded/valid, 1 job failed (including a missed expect gate),
2 spec rejected or usage error, 3 cancelled, 4 server unreachable or 5xx,
124 --timeout elapsed.
)";

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs = {
      {"submit",
       "SPEC.json",
       {"--wait", "--follow", "--timeout", "--idempotency-key", "--junit", "--set"},
       "submit a job (and wait for it, follow its log, gate CI on it)",
       R"(Submits the job in SPEC.json ("-" reads stdin) and prints its id. With --wait
the command ends when the job does, and its exit code says how it ended.

options:
  --wait                 wait until the job ends; survives restarts of the service and
                         network errors (reconnects with backoff)
  --follow               stream the job's log to stdout while waiting (implies --wait)
  --timeout DUR          stop waiting after DUR (30s, 10m, 1h30m) and exit 124; the job
                         keeps running (implies --wait)
  --idempotency-key K    a retried submit with the same key and spec attaches to the job
                         the first one started instead of starting another
  --junit FILE           write a JUnit XML report: the job's outcome and one test case
                         per expect gate (implies --wait)
  --set PATH=VALUE       override a spec field, e.g. --set trainer.devices=1
                         --set model.layers[0].out=256 --set trainer.precision=32-true;
                         VALUE is JSON when it parses as JSON, else a string; repeatable
)"},
      {"validate",
       "SPEC.json",
       {"--set"},
       "check a spec without running it",
       R"(Asks the service to resolve SPEC.json as it would at submit time: the trainer
settings, the HBM estimate and warnings. Exit 0 when it is valid, 2 when not.

options:
  --set PATH=VALUE       override a spec field (see `tpujobs submit --help`); repeatable
)"},
      {"check",
       "PATH...",
       {},
       "check training scripts for TPU misconfigurations, offline (no server)",
       "See `tpujobs check --help`.\n"},
      {"status",
       "ID",
       {},
       "show a job: state, progress, metrics, error",
       R"(Prints the job's state, why it waits, its progress, latest metrics and error.
)"},
      {"logs",
       "ID",
       {"--follow"},
       "print a job's log",
       R"(Prints the job's log lines.

options:
  --follow               keep printing new lines until the job ends (reconnects when
                         the connection drops)
)"},
      {"wait",
       "ID",
       {"--timeout", "--junit"},
       "wait for a job to end; the exit code says how",
       R"(Waits until the job ends and exits with its outcome. Survives restarts of the
service and network errors: only an answer from the service ends the wait.

options:
  --timeout DUR          stop waiting after DUR and exit 124 (the job keeps running)
  --junit FILE           write a JUnit XML report of the outcome and the expect gates
)"},
      {"cancel",
       "ID",
       {},
       "cancel a job",
       R"(Asks the service to cancel the job; it stops within one training step.
A job that has already ended is left as it is (exit 0, with a note).
)"},
      {"list",
       "",
       {"--state", "--label", "--limit", "--array"},
       "list jobs, newest first",
       R"(options:
  --state S              only jobs in state S (QUEUED, RUNNING, SUCCEEDED, ...)
  --label K=V            only jobs with this label; repeatable (all must match)
  --limit N              at most N jobs (1-500, default 50)
  --array ID             only the children of job array ID (a sweep), with the values each was given
)"},
      {"pool",
       "",
       {},
       "show the TPU pool: hosts, cores in use, health",
       R"(Prints every host of the emulated pool with its health and the jobs on its cores.
)"},
      {"usage",
       "",
       {"--from", "--to", "--group-by", "--csv"},
       "show TPU core-seconds used, per tenant or label",
       R"(Sums the core-seconds jobs held TPU cores over a window, by generation (as
Slurm's sreport). A tenant sees its own; an admin token sees every tenant's.

options:
  --from T               window start: a UTC time (2026-11-23T10:00:00Z) or an age (24h, 7d); default 24h
  --to T                 window end, the same way; default now
  --group-by G           tenant (default), label (each key=value), or label:KEY (one key's values)
  --csv                  print the CSV the service sends (GET /v1/usage?format=csv)
)"},
      {"notifications",
       "ID",
       {},
       "show a job's notification deliveries and their attempts",
       R"(Lists the POSTs the job's "notify" asked for (one per event), with every attempt:
when, how long, the receiver's status code or the error, and which replica sent it.
)"},
      {"upload",
       "FILE.csv",
       {"--name", "--idempotency-key"},
       "upload a CSV dataset for jobs to train on",
       R"(Uploads FILE.csv ("-" reads stdin) as a dataset of your tenant and prints its id.
It has a header row, numeric feature columns and a `label` column (an integer class,
or any number for a regression job). A job trains on it
with "data": {"dataset": {"upload": "ID"}}, e.g.
  tpujobs submit job.json --set 'data.dataset={"upload":"ID"}' --wait

options:
  --name NAME            the dataset's name (default: the file's name without .csv)
  --idempotency-key K    an upload repeated with the same key, name and file prints
                         the dataset the first one stored (default: a new key, which
                         makes the client's own retries safe)
)"},
      {"notify-secret",
       "",
       {"--rotate"},
       "show or rotate the tenant's notification signing secret",
       R"(Without --rotate, says whether your tenant has a secret and since when. With
--rotate, makes a new one (replacing the old one for every later delivery) and prints
it: the only time it is shown. Receivers check X-Tpujobs-Signature: sha256=<hex
HMAC-SHA256 of the body keyed with it>, e.g. `openssl dgst -sha256 -hmac SECRET`.

options:
  --rotate               make a new secret and print it
)"},
      {"notify-allow",
       "ENTRY...",
       {"--remove"},
       "show or edit where notifications may go (admin)",
       R"(Without arguments, prints the allow-list. With entries, adds them (--remove:
takes them off); editing needs an admin token. An entry is a host (ci.example: any
port), host:port (127.0.0.1:9000) or an http:// URL prefix
(http://hooks.example/tpujobs/). A job's notify.url must match one.

options:
  --remove               remove the entries instead of adding them
)"},
  };
  return specs;
}

const CommandSpec* find_spec(std::string_view command) {
  for (const CommandSpec& spec : command_specs()) {
    if (spec.name == command) return &spec;
  }
  return nullptr;
}

bool takes_value(std::string_view option) {
  return option == "--timeout" || option == "--idempotency-key" || option == "--junit" ||
         option == "--set" || option == "--state" || option == "--label" || option == "--limit" ||
         option == "--server" || option == "--token" || option == "--from" || option == "--to" ||
         option == "--group-by" || option == "--array" || option == "--name";
}

std::optional<std::int64_t> parse_positive(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

// One step of an override path: an object key or an array index.
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};

std::optional<std::vector<PathStep>> parse_path(std::string_view path) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) return std::nullopt;
      std::optional<std::int64_t> n = parse_positive(path.substr(i + 1, close - i - 1));
      if (path.substr(i + 1, close - i - 1) == "0") n = 0;
      if (!n) return std::nullopt;
      steps.push_back({"", static_cast<std::size_t>(*n)});
      i = close + 1;
      if (i < path.size() && path[i] == '.') {
        ++i;
        if (i == path.size()) return std::nullopt;
      }
      continue;
    }
    std::size_t end = i;
    while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
    if (end == i) return std::nullopt;  // "a..b", ".a", "a."
    steps.push_back({std::string(path.substr(i, end - i)), std::nullopt});
    i = end;
    if (i < path.size() && path[i] == '.') {
      ++i;
      if (i == path.size()) return std::nullopt;
    }
  }
  if (steps.empty() || steps.front().index) return std::nullopt;
  return steps;
}

}  // namespace

const std::vector<std::string>& client_commands() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const CommandSpec& spec : command_specs()) out.emplace_back(spec.name);
    return out;
  }();
  return names;
}

bool is_client_command(std::string_view command) { return find_spec(command) != nullptr; }

std::string command_usage(std::string_view command) {
  const CommandSpec* spec = find_spec(command);
  if (!spec) return {};
  std::string text = "usage: tpujobs " + std::string(spec->name);
  if (!spec->positional.empty()) text += " " + std::string(spec->positional);
  text += " [options]\n\n" + std::string(spec->summary) + ".\n";
  if (!spec->details.empty()) text += "\n" + std::string(spec->details);
  text += kCommonOptions;
  return text;
}

std::string client_commands_summary() {
  std::string text;
  for (const CommandSpec& spec : command_specs()) {
    std::string name(spec.name);
    name.resize(std::max<std::size_t>(name.size(), 12), ' ');
    text += "  " + name + " " + std::string(spec.summary) + "\n";
  }
  return text;
}

namespace {

// The parsers below build their usage errors as text; at the boundary, ""
// is success and anything else is kInvalid.
base::Status status_of(std::string error) {
  if (error.empty()) return base::Status::Ok();
  return base::make_error(base::ErrorCode::kInvalid, std::move(error));
}

// The parse, its error as text ("" when none).
std::string parse_command_line_text(std::string_view command, const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& environment,
                                    CommandLine* out) {
  const CommandSpec* spec = find_spec(command);
  if (!spec) return "unknown command '" + std::string(command) + "'";
  *out = CommandLine{};
  out->command = std::string(command);
  if (auto it = environment.find("TPUJOBS_URL"); it != environment.end() && !it->second.empty()) {
    out->server = it->second;
  }
  if (auto it = environment.find("TPUJOBS_TOKEN"); it != environment.end()) out->token = it->second;
  if (std::any_of(args.begin(), args.end(),
                  [](const std::string& a) { return a == "-h" || a == "--help"; })) {
    out->help = true;
    return {};
  }

  bool options_done = false;  // after "--" everything is positional
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      out->positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    std::string name = arg;
    std::optional<std::string> value;
    if (const std::size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const bool common = name == "--server" || name == "--token" || name == "--json";
    if (!common &&
        std::find(spec->options.begin(), spec->options.end(), name) == spec->options.end()) {
      return "unknown option '" + name + "' for `tpujobs " + std::string(command) + "`";
    }
    if (takes_value(name)) {
      if (!value) {
        if (i + 1 >= args.size()) return name + " needs a value";
        value = args[++i];
      }
    } else if (value) {
      return name + " takes no value";
    }

    if (name == "--server") {
      out->server = *value;
    } else if (name == "--token") {
      out->token = *value;
    } else if (name == "--json") {
      out->json = true;
    } else if (name == "--wait") {
      out->wait = true;
    } else if (name == "--follow") {
      out->follow = true;
    } else if (name == "--timeout") {
      out->timeout = parse_duration(*value);
      if (!out->timeout)
        return "--timeout: '" + *value + "' is not a duration (try 90s, 10m or 1h30m)";
    } else if (name == "--idempotency-key") {
      if (value->empty() || value->size() > 255)
        return "--idempotency-key must be 1 to 255 characters";
      out->idempotency_key = *value;
    } else if (name == "--junit") {
      if (value->empty()) return "--junit needs a file name";
      out->junit_path = *value;
    } else if (name == "--set") {
      const std::size_t eq = value->find('=');
      if (eq == std::string::npos || eq == 0) return "--set needs PATH=VALUE, got '" + *value + "'";
      out->overrides.push_back(*value);
    } else if (name == "--state") {
      std::string state = *value;
      for (char& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (!base::parse_job_state(state)) {
        return "--state must be one of QUEUED, STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED; "
               "got '" +
               *value + "'";
      }
      out->state = state;
    } else if (name == "--label") {
      const std::size_t eq = value->find('=');
      if (eq == std::string::npos || eq == 0)
        return "--label needs KEY=VALUE, got '" + *value + "'";
      out->labels.push_back(*value);
    } else if (name == "--array") {
      std::optional<std::int64_t> id = parse_positive(*value);
      if (!id) return "--array needs a job array ID (a positive integer), got '" + *value + "'";
      out->array = *id;
    } else if (name == "--from") {
      out->from = *value;
    } else if (name == "--to") {
      out->to = *value;
    } else if (name == "--csv") {
      out->csv = true;
    } else if (name == "--name") {
      if (value->empty()) return "--name needs a dataset name";
      out->dataset_name = *value;
    } else if (name == "--rotate") {
      out->rotate = true;
    } else if (name == "--remove") {
      out->remove = true;
    } else if (name == "--group-by") {
      if (*value != "tenant" && *value != "label" && value->rfind("label:", 0) != 0)
        return "--group-by must be tenant, label or label:KEY, got '" + *value + "'";
      out->group_by = *value;
    } else if (name == "--limit") {
      std::optional<std::int64_t> n = parse_positive(*value);
      if (!n || *n > 500) return "--limit must be an integer from 1 to 500";
      out->limit = static_cast<int>(*n);
    }
  }

  if (out->follow || out->timeout || !out->junit_path.empty()) out->wait = true;
  if (spec->positional.ends_with("...")) {
    // Any number, none included.
  } else if (spec->positional.empty()) {
    if (!out->positionals.empty()) return "unexpected argument '" + out->positionals.front() + "'";
  } else {
    if (out->positionals.empty()) return std::string(spec->positional) + " is missing";
    if (out->positionals.size() > 1) return "unexpected argument '" + out->positionals[1] + "'";
    if (spec->positional == "ID" && !parse_positive(out->positionals.front())) {
      return "a job ID is a positive integer, got '" + out->positionals.front() + "'";
    }
  }
  return {};
}

}  // namespace

base::Status parse_command_line(std::string_view command, const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& environment,
                                CommandLine* out) {
  return status_of(parse_command_line_text(command, args, environment, out));
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  // A bare number is seconds, as in `timeout 90`.
  bool bare = std::all_of(text.begin(), text.end(),
                          [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    const std::string number(text.substr(start, i - start));
    if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
        number.back() == '.') {
      return std::nullopt;
    }
    const double value = std::strtod(number.c_str(), nullptr);
    const std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (bare || unit == "s")
      scale = 1000;
    else if (unit == "ms")
      scale = 1;
    else if (unit == "m")
      scale = 60e3;
    else if (unit == "h")
      scale = 3600e3;
    else if (unit == "d")
      scale = 86400e3;
    else
      return std::nullopt;
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds duration) {
  const std::int64_t seconds = duration.count() / 1000;
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds / 60 % 60));
  }
  return text;
}

namespace {

// The override, its error as text ("" when none).
std::string apply_override_text(json* spec, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos)
    return "--set needs PATH=VALUE, got '" + std::string(assignment) + "'";
  const std::string_view path = assignment.substr(0, eq);
  const std::string raw(assignment.substr(eq + 1));
  std::optional<std::vector<PathStep>> steps = parse_path(path);
  if (!steps) {
    return "--set " + std::string(assignment) + ": bad path '" + std::string(path) +
           "' (use keys and indices, e.g. model.layers[0].out)";
  }
  json value = json::parse(raw, nullptr, false);
  if (value.is_discarded()) value = raw;

  json copy = spec->is_object() ? *spec : json::object();
  json* node = &copy;
  std::string walked;
  for (std::size_t s = 0; s < steps->size(); ++s) {
    const PathStep& step = (*steps)[s];
    const bool last = s + 1 == steps->size();
    if (step.index) {
      walked += "[" + std::to_string(*step.index) + "]";
      if (node->is_null()) *node = json::array();
      if (!node->is_array())
        return "--set " + std::string(assignment) + ": " + walked + " indexes a non-array";
      if (*step.index > node->size()) {
        return "--set " + std::string(assignment) + ": index " + std::to_string(*step.index) +
               " is past the end of " + walked.substr(0, walked.rfind('[')) + " (size " +
               std::to_string(node->size()) + ")";
      }
      if (*step.index == node->size()) node->push_back(nullptr);
      node = &(*node)[*step.index];
    } else {
      walked += (walked.empty() ? "" : ".") + step.key;
      if (node->is_null()) *node = json::object();
      if (!node->is_object()) {
        return "--set " + std::string(assignment) + ": cannot set '" + step.key + "' inside a " +
               node->type_name();
      }
      node = &(*node)[step.key];
    }
    if (last) *node = value;
  }
  *spec = std::move(copy);
  return {};
}

}  // namespace

base::Status apply_override(json* spec, std::string_view assignment) {
  return status_of(apply_override_text(spec, assignment));
}

}  // namespace tpujobs::client
