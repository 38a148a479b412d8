#include "api/notify.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tpujobs::api {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxUrlLength = 2048;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && lower(text.substr(0, prefix.size())) == prefix;
}

base::Error invalid(std::string message) {
  return base::make_error(base::ErrorCode::kInvalid, std::move(message));
}

struct Authority {
  std::string host;
  int port = 0;  // 0: none given
};

// "host", "host:port" or "[v6]:port"; kInvalid saying what is wrong with it.
base::Result<Authority> parse_authority(std::string_view authority) {
  Authority out;
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid("has an unclosed '[' in its host");
    out.host = lower(authority.substr(1, close - 1));
    rest = authority.substr(close + 1);
    if (out.host.empty() || out.host.find_first_not_of("0123456789abcdef:.") != std::string::npos)
      return invalid("has a malformed IPv6 address");
  } else {
    const std::size_t colon = authority.find(':');
    out.host = lower(authority.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
    if (out.host.empty()) return invalid("has no host");
    for (char c : out.host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
        return invalid("has a character a host name cannot have ('" + std::string(1, c) + "')");
    }
  }
  if (rest.empty()) return out;
  if (rest.front() != ':' || rest.size() == 1) return invalid("has a malformed port");
  const std::string_view digits = rest.substr(1);
  int value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 1 || value > 65535)
    return invalid("has a port outside 1-65535");
  out.port = value;
  return out;
}

struct Entry {
  std::string host;
  int port = 0;  // 0: any
  std::optional<std::string> path_prefix;
};

// An allow-list entry; kInvalid saying why it is malformed.
base::Result<Entry> parse_entry(std::string_view text) {
  Entry entry;
  std::string_view authority = text;
  if (text.find("://") != std::string_view::npos) {
    base::Result<HttpUrl> parsed = parse_notify_url(text);
    if (!parsed.ok()) return invalid(parsed.error().message);
    // The prefix keeps the port written in the entry only: "http://h/" allows port 80.
    entry.host = parsed->host;
    entry.port = parsed->port;
    entry.path_prefix = parsed->target;
    return entry;
  }
  if (authority.empty()) return invalid("is empty");
  if (authority.find_first_of("/?#@ ") != std::string_view::npos)
    return invalid("must be a host, host:port or an http:// URL prefix");
  base::Result<Authority> parsed = parse_authority(authority);
  if (!parsed.ok()) return parsed.error();
  entry.host = std::move(parsed->host);
  entry.port = parsed->port;
  return entry;
}

}  // namespace

base::Result<HttpUrl> parse_notify_url(std::string_view text) {
  auto fail = [](std::string error, std::string hint = {}) {
    base::Error e = base::make_error(base::ErrorCode::kInvalid, std::move(error));
    e.hint = std::move(hint);
    return e;
  };
  const std::string example = "e.g. \"http://ci.example:8080/hooks/tpujobs\"";
  if (text.size() > kMaxUrlLength)
    return fail("is longer than " + std::to_string(kMaxUrlLength) + " characters");
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return fail("has a space or a control character", "percent-encode it (%20)");
  }
  if (starts_with_ci(text, "https://")) {
    return fail("https is not supported for notifications: the notifier speaks plain HTTP",
                "deliveries are signed (X-Tpujobs-Signature), so a plain http:// receiver can "
                "verify them; or point it at a TLS-terminating proxy you run");
  }
  if (!starts_with_ci(text, "http://")) return fail("must be an http:// URL", example);
  std::string_view rest = text.substr(7);
  if (rest.find('#') != std::string_view::npos) return fail("must not have a #fragment");
  const std::size_t end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, end);
  if (authority.find('@') != std::string_view::npos) {
    return fail("must not carry a user name or password",
                "the receiver checks X-Tpujobs-Signature instead");
  }
  base::Result<Authority> parsed = parse_authority(authority);
  if (!parsed.ok()) return fail(parsed.error().message, example);
  HttpUrl url;
  url.host = std::move(parsed->host);
  url.port = parsed->port == 0 ? 80 : parsed->port;
  if (end != std::string_view::npos) {
    url.target = std::string(rest.substr(end));
    if (url.target.front() == '?') url.target.insert(0, "/");
  }
  return url;
}

base::Status check_allowlist_entry(std::string_view entry) {
  base::Result<Entry> parsed = parse_entry(entry);
  if (!parsed.ok()) return parsed.error();
  return base::Status::Ok();
}

bool notify_url_allowed(const HttpUrl& url, const std::vector<std::string>& allowlist) {
  for (const std::string& text : allowlist) {
    base::Result<Entry> entry = parse_entry(text);
    if (!entry.ok() || entry->host != url.host) continue;
    if (entry->port != 0 && entry->port != url.port) continue;
    if (entry->path_prefix && !url.target.starts_with(*entry->path_prefix)) continue;
    return true;
  }
  return false;
}

base::Result<NotifySpec> parse_notify(const json& value) {
  std::vector<base::FieldError> errors;
  if (!value.is_object()) {
    errors.push_back({"notify", "must be an object",
                      "e.g. {\"url\": \"http://ci.example:8080/hooks/tpujobs\", \"events\": "
                      "[\"finished\"]}"});
    return base::invalid_fields(std::move(errors));
  }
  NotifySpec spec;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key() != "url" && it.key() != "events")
      errors.push_back(
          {"notify." + it.key().substr(0, 64), "unknown field", "known fields here: url, events"});
  }
  auto url = value.find("url");
  if (url == value.end() || url->is_null()) {
    errors.push_back({"notify.url", "is required", "the http:// URL to POST the job's view to"});
  } else if (!url->is_string()) {
    errors.push_back({"notify.url", "must be a string", ""});
  } else {
    base::Result<HttpUrl> parsed = parse_notify_url(url->get<std::string>());
    if (parsed.ok())
      spec.url = url->get<std::string>();
    else
      errors.push_back({"notify.url", parsed.error().message, parsed.error().hint});
  }
  std::string known;
  for (const std::string& e : notify_events()) known += (known.empty() ? "'" : ", '") + e + "'";
  auto events = value.find("events");
  if (events == value.end() || events->is_null()) {
    spec.events = {"finished"};
  } else if (!events->is_array() || events->empty() || events->size() > notify_events().size()) {
    errors.push_back({"notify.events", "must be a non-empty array of events",
                      "events: " + known + " (finished: any of the last three)"});
  } else {
    for (std::size_t i = 0; i < events->size(); ++i) {
      const json& event = (*events)[i];
      const std::string path = "notify.events[" + std::to_string(i) + "]";
      const auto& all = notify_events();
      if (!event.is_string() ||
          std::find(all.begin(), all.end(), event.get<std::string>()) == all.end()) {
        errors.push_back({path, "must be one of " + known + ", got " + event.dump().substr(0, 64),
                          "finished: any of succeeded, failed, cancelled"});
      } else if (std::find(spec.events.begin(), spec.events.end(), event.get<std::string>()) !=
                 spec.events.end()) {
        errors.push_back({path, "repeats '" + event.get<std::string>() + "'", ""});
      } else {
        spec.events.push_back(event.get<std::string>());
      }
    }
  }
  if (!errors.empty()) return base::invalid_fields(std::move(errors));
  return spec;
}

}  // namespace tpujobs::api
