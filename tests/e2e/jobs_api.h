// The jobs API as the end-to-end tests use it: submit a spec, read a job's
// view and events, and wait until a view shows a state or a step. Every
// wait polls with a generous deadline and returns what it read last, so a
// test asserts on that and its message shows where the job was.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "service_process.h"

namespace tpujobs::testing {

// Request headers, such as a tenant's Authorization; none by default.
using Headers = std::map<std::string, std::string>;

// POST /v1/jobs: the new job's id. Adds a gtest failure and returns 0 when
// the answer is not 201.
std::int64_t submit(const ServiceProcess& service, const nlohmann::json& spec,
                    const Headers& headers = {});

// GET /v1/jobs/{id}: the job's view (a discarded value when the body is not
// JSON).
nlohmann::json job_view(const ServiceProcess& service, std::int64_t id,
                        const Headers& headers = {});

// GET /v1/jobs/{id}/events: the "events" array (null when there is none).
nlohmann::json job_events(const ServiceProcess& service, std::int64_t id);
// The reasons of its events, one a line (for finding a text, and for a
// failure message).
std::string event_reasons(const ServiceProcess& service, std::int64_t id);

// Calls `read` every 20 ms until it returns a JSON object for which `done`
// holds, or `timeout` passes; returns the last object read either way (a
// read that is not one only when no read ever was).
nlohmann::json poll_until(const std::function<nlohmann::json()>& read,
                          const std::function<bool(const nlohmann::json&)>& done,
                          std::chrono::seconds timeout = std::chrono::seconds(120));

// Polls the job's view until `done(view)` holds or `timeout` passes; returns
// the last view either way.
nlohmann::json wait_until(const ServiceProcess& service, std::int64_t id,
                          const std::function<bool(const nlohmann::json&)>& done,
                          std::chrono::seconds timeout = std::chrono::seconds(120),
                          const Headers& headers = {});

}  // namespace tpujobs::testing
