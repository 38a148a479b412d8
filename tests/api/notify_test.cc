#include "api/notify.h"

#include <gtest/gtest.h>

#include "api/job_spec.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

// "host:port target" of a URL, or "error: ..." when it is refused.
std::string parsed(std::string_view text) {
  base::Result<HttpUrl> p = parse_notify_url(text);
  if (!p.ok()) return "error: " + p.error().message;
  return p->host + ":" + std::to_string(p->port) + " " + p->target;
}

TEST(NotifyUrl, TakesHttpUrlsApart) {
  EXPECT_EQ(parsed("http://127.0.0.1:9000/hooks/a?x=1"), "127.0.0.1:9000 /hooks/a?x=1");
  EXPECT_EQ(parsed("HTTP://CI.Example"), "ci.example:80 /");
  EXPECT_EQ(parsed("http://ci.example?x"), "ci.example:80 /?x");
  EXPECT_EQ(parsed("http://[::1]:8080/h"), "::1:8080 /h");
}

TEST(NotifyUrl, RefusesWhatItCannotDeliverTo) {
  EXPECT_EQ(parsed("https://ci.example/h"),
            "error: https is not supported for notifications: the notifier speaks plain HTTP");
  EXPECT_EQ(parsed("ftp://ci.example/h"), "error: must be an http:// URL");
  EXPECT_EQ(parsed("ci.example/h"), "error: must be an http:// URL");
  EXPECT_EQ(parsed("http://user:pw@ci.example/h"), "error: must not carry a user name or password");
  EXPECT_EQ(parsed("http://ci.example/h#top"), "error: must not have a #fragment");
  EXPECT_EQ(parsed("http://ci.example:0/"), "error: has a port outside 1-65535");
  EXPECT_EQ(parsed("http://ci.example:99999/"), "error: has a port outside 1-65535");
  EXPECT_EQ(parsed("http://:80/"), "error: has no host");
  EXPECT_EQ(parsed("http://ci.example/a b"), "error: has a space or a control character");
  EXPECT_EQ(parsed("http://ci_example/"), "error: has a character a host name cannot have ('_')");
}

bool allowed(std::string_view url, const std::vector<std::string>& allowlist) {
  base::Result<HttpUrl> p = parse_notify_url(url);
  return p.ok() && notify_url_allowed(*p, allowlist);
}

TEST(NotifyAllowlist, HostHostPortAndUrlPrefixEntries) {
  EXPECT_TRUE(allowed("http://ci.example:8080/h", {"ci.example"}));  // any port
  EXPECT_TRUE(allowed("http://CI.EXAMPLE/h", {"ci.example"}));
  EXPECT_TRUE(allowed("http://127.0.0.1:9000/h", {"127.0.0.1:9000"}));
  EXPECT_FALSE(allowed("http://127.0.0.1:9001/h", {"127.0.0.1:9000"}));
  EXPECT_TRUE(allowed("http://hooks.example/tpujobs/job", {"http://hooks.example/tpujobs/"}));
  EXPECT_FALSE(allowed("http://hooks.example/other", {"http://hooks.example/tpujobs/"}));
  EXPECT_FALSE(allowed("http://hooks.example:81/tpujobs/", {"http://hooks.example/tpujobs/"}));
  EXPECT_TRUE(allowed("http://[::1]:5000/", {"[::1]:5000"}));
  EXPECT_FALSE(allowed("http://ci.example/h", {}));
}

TEST(NotifyAllowlist, HostsCompareExactlyNotAsSuffixesOrPrefixes) {
  EXPECT_FALSE(allowed("http://evil-ci.example/h", {"ci.example"}));
  EXPECT_FALSE(allowed("http://ci.example.evil.org/h", {"ci.example"}));
  EXPECT_FALSE(allowed("http://ci.example.evil.org/h", {"http://ci.example"}));
  EXPECT_FALSE(allowed("http://127.0.0.10/h", {"127.0.0.1"}));
}

TEST(NotifyAllowlist, EntriesAreChecked) {
  EXPECT_TRUE(check_allowlist_entry("ci.example").ok());
  EXPECT_TRUE(check_allowlist_entry("127.0.0.1:9000").ok());
  EXPECT_TRUE(check_allowlist_entry("http://hooks.example/tpujobs/").ok());
  auto why = [](std::string_view entry) {
    base::Status checked = check_allowlist_entry(entry);
    EXPECT_FALSE(checked.ok()) << entry;
    if (checked.ok()) return std::string();
    EXPECT_EQ(checked.code(), base::ErrorCode::kInvalid) << entry;
    return checked.error().message;
  };
  EXPECT_EQ(why(""), "is empty");
  EXPECT_EQ(why("ci.example/path"), "must be a host, host:port or an http:// URL prefix");
  EXPECT_EQ(why("ci.example:http"), "has a port outside 1-65535");
  EXPECT_NE(why("https://ci.example/"), "");
  // A malformed entry allows nothing.
  EXPECT_FALSE(allowed("http://ci.example/h", {"ci.example/path"}));
}

// "field: message" of each error.
std::string errors_of(const json& notify) {
  base::Result<NotifySpec> parsed = parse_notify(notify);
  if (parsed.ok()) return "";
  std::string out;
  for (const base::FieldError& e : parsed.error().fields)
    out += (out.empty() ? "" : "; ") + e.field + ": " + e.message;
  return out;
}

TEST(NotifySpec, EventsDefaultToFinished) {
  base::Result<NotifySpec> spec = parse_notify(json{{"url", "http://ci.example/h"}});
  ASSERT_TRUE(spec.ok()) << errors_of(json{{"url", "http://ci.example/h"}});
  EXPECT_EQ(spec->url, "http://ci.example/h");
  EXPECT_EQ(spec->events, std::vector<std::string>{"finished"});
}

TEST(NotifySpec, EveryProblemNamesItsField) {
  EXPECT_EQ(errors_of(json::array()), "notify: must be an object");
  EXPECT_EQ(errors_of(json::object()), "notify.url: is required");
  EXPECT_EQ(errors_of(json{{"url", 5}}), "notify.url: must be a string");
  EXPECT_EQ(errors_of(json{{"url", "https://x/"}}),
            "notify.url: https is not supported for notifications: the notifier speaks plain HTTP");
  EXPECT_EQ(errors_of(json{{"url", "http://x/"}, {"events", json::array({"done"})}}),
            "notify.events[0]: must be one of 'started', 'succeeded', 'failed', 'cancelled', "
            "'finished', got \"done\"");
  EXPECT_EQ(errors_of(json{{"url", "http://x/"}, {"events", json::array({"failed", "failed"})}}),
            "notify.events[1]: repeats 'failed'");
  EXPECT_EQ(errors_of(json{{"url", "http://x/"}, {"events", json::array()}}),
            "notify.events: must be a non-empty array of events");
  EXPECT_EQ(errors_of(json{{"url", "http://x/"}, {"headers", json::object()}}),
            "notify.headers: unknown field");
}

TEST(NotifySpec, IsAFieldOfTheJobSpec) {
  auto spec = parse_job_spec(json::parse(R"({"model": {"layers": [{"type": "linear", "out": 10}]},
                      "data": {"dataset": "digits"},
                      "notify": {"url": "http://127.0.0.1:9000/h", "events": ["started", "failed"]}})"));
  ASSERT_TRUE(spec);
  ASSERT_TRUE(spec->notify);
  EXPECT_EQ(spec->notify->events, (std::vector<std::string>{"started", "failed"}));
  auto misspelt =
      parse_job_spec(json::parse(R"({"model": {"layers": [{"type": "linear", "out": 10}]},
                                 "data": {"dataset": "digits"}, "notfy": {}})"));
  ASSERT_FALSE(misspelt);
  ASSERT_EQ(misspelt.error().fields.size(), 1u);
  EXPECT_EQ(misspelt.error().fields[0].hint, "did you mean 'notify'?");
}

}  // namespace
}  // namespace tpujobs::api
