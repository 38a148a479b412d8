// Job notifications (issue 17): the spec's "notify" field, the URLs it may
// name, and the admin's allow-list. Pure functions; the service checks the
// allow-list and the tenant's secret at submit and delivers
// (service/notifier.h).
//
//   "notify": {"url": "http://ci.example:8080/hooks/tpujobs", "events": ["finished"]}
//
// Events: "started" (the job first enters RUNNING), "succeeded", "failed",
// "cancelled", and "finished" (any of the three terminal states). Without
// "events": ["finished"].
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/problem.h"
#include "base/result.h"

namespace tpujobs::api {

inline const std::vector<std::string>& notify_events() {
  static const std::vector<std::string> events = {"started", "succeeded", "failed", "cancelled",
                                                  "finished"};
  return events;
}

struct NotifySpec {
  std::string url;
  std::vector<std::string> events;  // distinct, from notify_events()
};

// An http:// URL taken apart. host is lower-cased, without brackets for an
// IPv6 literal; port defaults to 80; target is the path and query ("/" when
// the URL has none).
struct HttpUrl {
  std::string host;
  int port = 80;
  std::string target = "/";
};

// The URL, or why it is not one this service can deliver to (not http://,
// https, user info, a fragment, no host, a bad port, control characters or
// spaces): kInvalid with the message and a hint, for the caller to name the
// field.
base::Result<HttpUrl> parse_notify_url(std::string_view text);

// An allow-list entry: "host", "host:port", or a URL prefix
// "http://host[:port]/path" (the URL's path must start with that path).
// Hosts compare case-insensitively and exactly (no suffix matching, so
// "example.com" does not allow "evil-example.com"); an entry without a port
// allows any port. kInvalid, with why, when an entry is malformed.
base::Status check_allowlist_entry(std::string_view entry);

// True when some entry of `allowlist` allows `url`. Malformed entries allow
// nothing.
bool notify_url_allowed(const HttpUrl& url, const std::vector<std::string>& allowlist);

// Parses the spec's "notify" object: the NotifySpec, or kInvalid with a
// field error (path "notify...") for each problem (base::invalid_fields).
base::Result<NotifySpec> parse_notify(const nlohmann::json& value);

}  // namespace tpujobs::api
