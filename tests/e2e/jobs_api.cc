#include "jobs_api.h"

#include <gtest/gtest.h>

#include <thread>

namespace tpujobs::testing {

using nlohmann::json;

std::int64_t submit(const ServiceProcess& service, const json& spec, const Headers& headers) {
  const HttpResponse r = service.post("/v1/jobs", spec.dump(), headers);
  EXPECT_EQ(r.status, 201) << r.body;
  return r.status == 201 ? r.json()["id"].get<std::int64_t>() : 0;
}

json job_view(const ServiceProcess& service, std::int64_t id, const Headers& headers) {
  return http(service.port(), "GET", "/v1/jobs/" + std::to_string(id), "", headers).json();
}

json job_events(const ServiceProcess& service, std::int64_t id) {
  const json body = service.get("/v1/jobs/" + std::to_string(id) + "/events").json();
  return body.is_object() ? body.value("events", json()) : json();
}

std::string event_reasons(const ServiceProcess& service, std::int64_t id) {
  std::string out;
  for (const nlohmann::json& e : job_events(service, id)) out += e.value("reason", "") + "\n";
  return out;
}

json poll_until(const std::function<json()>& read, const std::function<bool(const json&)>& done,
                std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  json last;
  while (std::chrono::steady_clock::now() < deadline) {
    json read_now = read();
    // A read left unanswered (a busy machine, a restart) is tried again,
    // and never replaces the last object read.
    if (!read_now.is_object()) {
      if (!last.is_object()) last = std::move(read_now);
    } else {
      last = std::move(read_now);
      if (done(last)) return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return last;
}

json wait_until(const ServiceProcess& service, std::int64_t id,
                const std::function<bool(const json&)>& done, std::chrono::seconds timeout,
                const Headers& headers) {
  return poll_until([&] { return job_view(service, id, headers); }, done, timeout);
}

}  // namespace tpujobs::testing
