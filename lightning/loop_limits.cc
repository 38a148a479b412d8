// When the fit loop stops: `max_time`, and what `max_epochs` becomes when the
// spec does not give it. Sources: the Timer callback that
// `Trainer(max_time=...)` adds (trainer/connectors/callback_connector.py,
// _configure_timer_callback: `Timer(duration=max_time, interval="step")`),
// which parses the duration (callbacks/timer.py, Timer.__init__), and
// _parse_loop_limits (loops/utilities.py), which sets max_epochs to 1000 with
// a warning when neither max_steps nor a Timer bounds the run, and to -1
// (no epoch limit) otherwise. `max_epochs=-1` trains until another limit or
// a stop: _FitLoop.done (loops/fit_loop.py) checks max_epochs only through
// _is_max_limit_reached, which is False for -1. Every release 1.6-2.5 has
// max_time; 2.3.0 replaced the string's split(":") and int() by a regular
// expression with its own MisconfigurationException.
#include <cmath>
#include <cstdio>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// How a release reads a "DD:HH:MM:SS" string.
enum class DurationParser {
  kSplitInt,  // 1.6-2.2: [int(i) for i in duration.strip().split(":")], then dhms[0..3]
  kPattern,   // 2.3+: re.fullmatch(r"(\d+):(\d\d):(\d\d):(\d\d)", duration.strip())
};

struct LoopLimitRules {
  Versions versions;
  DurationParser parser;
  std::string_view timer_source;   // callbacks/timer.py
  std::string_view limits_source;  // loops/utilities.py (_parse_loop_limits)
};

constexpr LoopLimitRules kLoopLimitRules[] = {
    {{106, 106},
     DurationParser::kSplitInt,
     "1.6.5:pytorch_lightning/callbacks/timer.py",
     "1.6.5:pytorch_lightning/loops/utilities.py"},
    {{107, 109},
     DurationParser::kSplitInt,
     "1.9.5:src/pytorch_lightning/callbacks/timer.py",
     "1.9.5:src/pytorch_lightning/loops/utilities.py"},
    {{200, 202},
     DurationParser::kSplitInt,
     "2.2.5:src/lightning/pytorch/callbacks/timer.py",
     "2.2.5:src/lightning/pytorch/loops/utilities.py"},
    {{203, 299},
     DurationParser::kPattern,
     "2.5.6:src/lightning/pytorch/callbacks/timer.py",
     "2.5.6:src/lightning/pytorch/loops/utilities.py"},
};

// 2.3+: the string does not match the pattern ({duration!r}: the string as
// given, before strip()).
constexpr std::string_view kNotADuration =
    "`Timer(duration={duration})` is not a valid duration. Expected a string in the format "
    "DD:HH:MM:SS.";
// _parse_loop_limits, max_epochs not given, max_steps -1, no Timer (a
// PossibleUserWarning); the same text in every release.
constexpr std::string_view kMaxEpochsNotSet =
    "`max_epochs` was not set. Setting it to 1000 epochs. To train without an epoch limit, set "
    "`max_epochs=-1`.";

// Python's own texts on the way (CPython: int() in Objects/longobject.c; the
// list index in Objects/listobject.c; timedelta in Modules/_datetimemodule.c,
// accum() and microseconds_to_delta_ex(); the attribute lookup in
// Objects/object.c). `duration.total_seconds()` is what fails on a value
// that is neither a str nor a dict.
constexpr std::string_view kIntLiteral = "invalid literal for int() with base 10: {value}";
constexpr std::string_view kIndexOutOfRange = "list index out of range";
constexpr std::string_view kUnsupportedComponent =
    "unsupported type for timedelta {component} component: {type}";
constexpr std::string_view kDaysMagnitude = "days={days}; must have magnitude <= 999999999";
constexpr std::string_view kNoTotalSeconds = "'{type}' object has no attribute 'total_seconds'";
constexpr std::string_view kPythonSource =
    "CPython Objects/longobject.c (int()), Objects/listobject.c, Modules/_datetimemodule.c "
    "(timedelta), Objects/object.c (attribute lookup)";

constexpr std::string_view kHint =
    "Give trainer.max_time as \"DD:HH:MM:SS\" (\"00:12:00:00\" is 12 hours) or as an object of "
    "timedelta's keyword arguments ({\"days\": 1, \"hours\": 5}).";

constexpr double kMaxDays = 999999999;

// What the Timer makes of the value: the duration in microseconds, or the
// error it raises.
struct Parsed {
  std::optional<long double> microseconds;
  std::string error = {};
  std::string_view source = {};
};

Parsed refuse(std::string error, std::string_view source) {
  return Parsed{std::nullopt, std::move(error), source};
}

// timedelta(...) of a total in microseconds: Python normalises it into days,
// which must stay within 999,999,999.
Parsed timedelta_of(long double microseconds) {
  const long double days = std::floor(microseconds / (86400.0L * 1e6L));
  if (std::fabs(days) > kMaxDays) {
    char text[64];
    std::snprintf(text, sizeof text, "%.0Lf", days);
    return refuse(fill(kDaysMagnitude, {{"days", text}}), kPythonSource);
  }
  return Parsed{microseconds};
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// str.split(":").
std::vector<std::string_view> split_colons(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    pieces.push_back(text.substr(start, colon - start));
    if (colon == std::string_view::npos) return pieces;
    start = colon + 1;
  }
}

Parsed parse_split_int(std::string_view text) {
  const std::vector<std::string_view> pieces = split_colons(strip(text));
  std::vector<std::int64_t> values;
  for (std::string_view piece : pieces) {
    const std::optional<std::int64_t> value = py_int(piece);
    if (!value) return refuse(fill(kIntLiteral, {{"value", py_repr(piece)}}), kPythonSource);
    values.push_back(*value);
  }
  if (values.size() < 4) return refuse(std::string(kIndexOutOfRange), kPythonSource);
  const long double seconds = values[0] * 86400.0L + values[1] * 3600.0L + values[2] * 60.0L +
                              static_cast<long double>(values[3]);
  return timedelta_of(seconds * 1e6L);
}

Parsed parse_pattern(std::string_view text, std::string_view source) {
  const std::vector<std::string_view> pieces = split_colons(strip(text));
  bool match = pieces.size() == 4 && all_digits(pieces[0]);
  for (std::size_t i = 1; match && i < 4; ++i)
    match = pieces[i].size() == 2 && all_digits(pieces[i]);
  if (!match) return refuse(fill(kNotADuration, {{"duration", py_repr(text)}}), source);
  std::string_view days = pieces[0];
  while (days.size() > 1 && days.front() == '0') days.remove_prefix(1);
  if (days.size() > 12) {  // past any long double's exact range: certainly too many days
    return refuse(fill(kDaysMagnitude, {{"days", std::string(days)}}), kPythonSource);
  }
  const long double seconds =
      std::stoll(std::string(days)) * 86400.0L + std::stoi(std::string(pieces[1])) * 3600.0L +
      std::stoi(std::string(pieces[2])) * 60.0L + std::stoi(std::string(pieces[3]));
  return timedelta_of(seconds * 1e6L);
}

// timedelta(**duration): keywords are matched first (an unknown one is a
// TypeError whose wording depends on the Python release: tpujobs refuses it
// in its own words), then each component is added in delta_new's order.
Parsed parse_object(const DurationValue& value) {
  static constexpr std::pair<std::string_view, long double> kComponents[] = {
      {"microseconds", 1.0L}, {"milliseconds", 1e3L}, {"seconds", 1e6L},   {"minutes", 60e6L},
      {"hours", 3600e6L},     {"days", 86400e6L},     {"weeks", 604800e6L}};
  for (const DurationValue::Part& part : value.parts) {
    bool known = false;
    for (const auto& [name, scale] : kComponents) known = known || part.key == name;
    if (!known) {
      return refuse("'" + part.key +
                        "' is not an argument of datetime.timedelta (days, seconds, "
                        "microseconds, milliseconds, minutes, hours, weeks)",
                    {});
    }
  }
  long double microseconds = 0;
  for (const auto& [name, scale] : kComponents) {
    for (const DurationValue::Part& part : value.parts) {
      if (part.key != name) continue;
      if (!part.number) {
        return refuse(fill(kUnsupportedComponent,
                           {{"component", std::string(name)}, {"type", part.python_type}}),
                      kPythonSource);
      }
      microseconds += static_cast<long double>(*part.number) * scale;
    }
  }
  return timedelta_of(microseconds);
}

Parsed parse_duration(const DurationValue& value, const LoopLimitRules& rules) {
  switch (value.kind) {
    case DurationValue::Kind::kString:
      return rules.parser == DurationParser::kPattern
                 ? parse_pattern(value.text, rules.timer_source)
                 : parse_split_int(value.text);
    case DurationValue::Kind::kObject:
      return parse_object(value);
    case DurationValue::Kind::kOther:
      return refuse(fill(kNoTotalSeconds, {{"type", value.python_type}}), kPythonSource);
    case DurationValue::Kind::kAbsent:
      break;
  }
  return {};
}

}  // namespace

std::vector<RuleText> loop_limit_rule_texts() {
  std::vector<RuleText> out;
  for (const LoopLimitRules& rules : kLoopLimitRules) {
    if (rules.parser == DurationParser::kPattern)
      out.push_back({kFieldMaxTime, kNotADuration, rules.timer_source});
    out.push_back({kFieldMaxEpochs, kMaxEpochsNotSet, rules.limits_source});
  }
  for (std::string_view text :
       {kIntLiteral, kIndexOutOfRange, kUnsupportedComponent, kDaysMagnitude, kNoTotalSeconds}) {
    out.push_back({kFieldMaxTime, text, kPythonSource});
  }
  return out;
}

void check_loop_limits(Context& c) {
  const LoopLimitRules& rules = *row_for<LoopLimitRules>(kLoopLimitRules, c.version);
  const DurationValue& max_time = c.settings.max_time;
  if (max_time.kind != DurationValue::Kind::kAbsent) {
    Parsed parsed = parse_duration(max_time, rules);
    if (!parsed.microseconds) {
      c.error(kFieldMaxTime, std::move(parsed.error), std::string(kHint), parsed.source);
      return;
    }
    c.out.max_time_ms = static_cast<std::int64_t>(std::floor(*parsed.microseconds / 1000.0L));
  }
  const bool timer = max_time.kind != DurationValue::Kind::kAbsent;
  if (c.settings.max_steps == -1 && !timer) {
    c.out.default_max_epochs = 1000;
    if (!c.settings.max_epochs_given) c.out.fit_start_lines.emplace_back(kMaxEpochsNotSet);
  } else {
    c.out.default_max_epochs = -1;
  }
}

}  // namespace tpujobs::lightning
