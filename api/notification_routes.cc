// A job's notifications, the tenant's signing secret and the admins'
// allow-list (api/notify.h).
#include "api/jobs_api.h"
#include "api/notify.h"
#include "api/problem.h"
#include "api/request_reading.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

// PUT /v1/notifications/allowlist: the whole list replaced, each entry
// checked (api/notify.h); the list as stored is the answer.
void put_allowlist(NotificationService& n, Request& r, const PathParams&,
                   const ResponseWriterPtr& w) {
  std::optional<json> body = parse_body(r, w);
  if (!body) return;
  const std::string example =
      "{\"entries\": [\"127.0.0.1:9000\", \"ci.example\", "
      "\"http://hooks.example/tpujobs/\"]}";
  std::vector<base::FieldError> errors;
  std::vector<std::string> entries;
  const json* list = body->is_object() && body->contains("entries") ? &(*body)["entries"] : nullptr;
  if (!list || !list->is_array() || body->size() != 1 || list->size() > 1000) {
    errors.push_back(
        {"entries", "the body must be {\"entries\": [...]} (at most 1000)", "e.g. " + example});
  } else {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string field = "entries[" + std::to_string(i) + "]";
      const json& entry = (*list)[i];
      std::string error = !entry.is_string() ? "must be a string"
                          : entry.get<std::string>().size() > 2048
                              ? "is longer than 2048 characters"
                              : "";
      if (error.empty()) {
        base::Status checked = check_allowlist_entry(entry.get<std::string>());
        if (!checked.ok()) error = checked.error().message;
      }
      if (!error.empty())
        errors.push_back({field, error, "a host, host:port or http:// URL prefix"});
      else
        entries.push_back(entry.get<std::string>());
    }
  }
  if (!errors.empty()) {
    json list = json::array();
    for (const base::FieldError& e : errors) list.push_back(to_json(e));
    w->respond(problem(422,
                       errors.size() == 1
                           ? errors.front().message
                           : std::to_string(errors.size()) + " problems with the allow-list",
                       {{"errors", list}}));
    return;
  }
  if (base::Status stored = n.set_allowlist(entries); !stored.ok()) {
    w->respond(answer(base::Result<nlohmann::json>(stored.error())));
    return;
  }
  base::Result<std::vector<std::string>> now = n.allowlist();
  if (!now.ok()) {
    w->respond(answer(base::Result<nlohmann::json>(now.error())));
    return;
  }
  w->respond(json_response(200, {{"entries", *now}}));
}

}  // namespace

void JobsApi::add_notification_routes() {
  // Every route needs the notifier; a service without one answers 503.
  auto with_notifier = [this](auto body) {
    return [this, body](Request& r, const PathParams& p, ResponseWriterPtr w) {
      if (!options_.notifications) {
        w->respond(problem(503, "this service does not send notifications"));
        return;
      }
      body(*options_.notifications, r, p, w);
    };
  };
  router_.add("GET", "/v1/jobs/{id}/notifications", Access::kTenant,
              with_notifier([](NotificationService& n, Request& r, const PathParams& p,
                               const ResponseWriterPtr& w) {
                if (auto id = job_id(p, w)) w->respond(answer(n.job_notifications(*id, r.tenant)));
              }));
  router_.add("GET", "/v1/notifications/secret", Access::kTenant,
              with_notifier(
                  [](NotificationService& n, Request& r, const PathParams&,
                     const ResponseWriterPtr& w) { w->respond(answer(n.secret_info(r.tenant))); }));
  router_.add("POST", "/v1/notifications/secret", Access::kTenant,
              with_notifier([](NotificationService& n, Request& r, const PathParams&,
                               const ResponseWriterPtr& w) {
                w->respond(answer(n.rotate_secret(r.tenant), 201));
              }));
  router_.add("GET", "/v1/notifications/allowlist", Access::kTenant,
              with_notifier([](NotificationService& n, Request&, const PathParams&,
                               const ResponseWriterPtr& w) {
                base::Result<std::vector<std::string>> entries = n.allowlist();
                if (!entries.ok()) {
                  w->respond(answer(base::Result<nlohmann::json>(entries.error())));
                  return;
                }
                w->respond(json_response(200, {{"entries", *entries}}));
              }));
  router_.add("PUT", "/v1/notifications/allowlist", Access::kAdmin, with_notifier(put_allowlist));
}

}  // namespace tpujobs::api
