#include "service/job_views.h"

#include <algorithm>
#include <array>
#include <utility>

#include "api/usage.h"

namespace tpujobs::service::views {

using nlohmann::json;

std::string iso_time(std::chrono::system_clock::time_point t) { return api::rfc3339(t); }

json time_or_null(const std::optional<std::chrono::system_clock::time_point>& t) {
  return t ? json(iso_time(*t)) : json(nullptr);
}

json parse_or_null(const std::optional<std::string>& text) {
  if (!text || text->empty()) return nullptr;
  json value = json::parse(*text, nullptr, false);
  return value.is_discarded() ? json(nullptr) : value;
}

std::string response_body(const json& view) {
  return view.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// An object's members as text, without the braces ("" for an empty object).
std::string members_text(const json& object) {
  std::string text = response_body(object);
  return text.substr(1, text.size() - 2);
}

int max_retries_of(const json& spec) { return spec.is_object() ? spec.value("max_retries", 0) : 0; }

}  // namespace

void put_result(json& view, json result) {
  if (result.is_object()) {
    result.erase("xla_report");
    if (result.contains("metrics") && result["metrics"].is_object() && !result["metrics"].empty()) {
      view["metrics"] = result["metrics"];
    }
  } else {
    result = nullptr;
  }
  view["result"] = std::move(result);
}

json render_row(const db::JobRow& row) {
  return render_row(row, parse_or_null(row.spec_json), parse_or_null(row.resolved_json),
                    parse_or_null(row.labels_json), parse_or_null(row.warnings_json));
}

json priority_parts(int priority, double fair_share) {
  return {{"base", priority}, {"fair_share", fair_share}, {"effective", priority + fair_share}};
}

json pending_members(int priority, const std::optional<std::string>& pending_json) {
  json members = {{"estimated_start", nullptr},
                  {"pending_reason", nullptr},
                  {"priority_parts", nullptr},
                  {"queue_position", nullptr}};
  json pending = parse_or_null(pending_json);
  if (!pending.is_object()) return members;
  members["pending_reason"] = pending.value("reason", "Resources");
  if (pending.contains("queue_position")) members["queue_position"] = pending["queue_position"];
  if (pending.contains("detail")) members["pending_detail"] = pending["detail"];
  if (pending.contains("estimated_start")) members["estimated_start"] = pending["estimated_start"];
  if (pending.contains("preempted_by")) members["preempted_by"] = pending["preempted_by"];
  if (pending.contains("fair_share") && pending["fair_share"].is_number()) {
    members["priority_parts"] = priority_parts(priority, pending["fair_share"].get<double>());
  }
  return members;
}

std::string job_body(const db::JobWithCheckpoint& job) {
  json view = render_row(job.row);
  if (!db::is_terminal(job.row.state) && job.row.started_at && job.last_checkpoint) {
    view["last_checkpoint"] = {{"step", job.last_checkpoint->first},
                               {"epoch", job.last_checkpoint->second}};
  }
  return response_body(view);
}

json render_row(const db::JobRow& row, json spec, json resolved, json labels, json warnings) {
  json estimate =
      resolved.is_object() && resolved.contains("estimate") ? resolved["estimate"] : json(nullptr);
  json result = parse_or_null(row.result_json);
  const int max_retries = max_retries_of(spec);
  json view = {
      {"id", row.id},
      {"name", row.name},
      {"tenant", row.tenant},
      {"labels", std::move(labels)},
      {"priority", row.priority},
      {"state", std::string(db::to_string(row.state))},
      {"spec", std::move(spec)},
      {"resolved",
       resolved.is_object() && resolved.contains("request") ? resolved["request"] : json(nullptr)},
      {"estimate", estimate},
      {"allocation", parse_or_null(row.allocation_json)},
      {"progress", parse_or_null(row.progress_json)},
      {"metrics", parse_or_null(row.latest_metrics_json)},
      {"created_at", iso_time(row.created_at)},
      {"started_at", time_or_null(row.started_at)},
      {"finished_at", time_or_null(row.finished_at)},
      {"error", parse_or_null(row.error_json)},
      {"warnings", std::move(warnings)},
      {"last_checkpoint", nullptr},
      {"attempt", row.attempt},
      {"max_retries", max_retries},
  };
  put_result(view, std::move(result));
  if (row.array_id) {
    view["array"] = {{"id", *row.array_id},
                     {"index", row.array_index.value_or(0)},
                     {"values", parse_or_null(row.array_values_json)}};
  }
  // The scheduler leader records why a queued job waits.
  view.update(pending_members(row.priority, row.state == db::JobState::kQueued
                                                ? row.pending_json
                                                : std::optional<std::string>()));
  return view;
}

std::string submitted_body(const db::JobRow& row, const json& spec, const SubmittedText& text) {
  // The view with the given members null, then serialised member by member
  // in its own (the object's sorted) order, each given one as its text.
  json view = render_row(row, nullptr, nullptr, nullptr, nullptr);
  view["max_retries"] = max_retries_of(spec);
  const std::array<std::pair<std::string_view, std::string_view>, 5> given = {{
      {"estimate", text.estimate},
      {"labels", text.labels},
      {"resolved", text.resolved_request},
      {"spec", text.spec},
      {"warnings", text.warnings},
  }};
  std::string body;
  body.reserve(text.spec.size() + text.labels.size() + text.warnings.size() +
               text.resolved_request.size() + text.estimate.size() + 768);
  body += '{';
  for (auto it = view.begin(); it != view.end(); ++it) {
    if (body.size() > 1) body += ',';
    body += '"';  // render_row's names, which need no escape
    body += it.key();
    body += "\":";
    const auto member = std::find_if(given.begin(), given.end(),
                                     [&it](const auto& g) { return g.first == it.key(); });
    if (member != given.end()) {
      body += member->second;
    } else {
      body += response_body(it.value());
    }
  }
  body += '}';
  return body;
}

SplitView split_view(json view, std::string spec_text) {
  SplitView split;
  split.live_base = json::object();
  for (std::string_view name : kLiveMembers) {
    auto it = view.find(name);
    if (it == view.end()) continue;
    if (!it->is_null()) split.live_base[std::string(name)] = std::move(*it);
    view.erase(it);
  }
  split.spec_text = spec_text.empty() ? response_body(view["spec"]) : std::move(spec_text);
  view.erase("spec");
  split.fixed_members = members_text(view);
  return split;
}

json live_members(const SplitView& split) {
  json live = json::object();
  for (std::string_view name : kLiveMembers) live[std::string(name)] = nullptr;
  for (const auto& [name, value] : split.live_base.items()) live[name] = value;
  return live;
}

std::string splice_view(const SplitView& split, const json& live, bool with_spec) {
  std::string text;
  text.reserve(split.fixed_members.size() + split.spec_text.size() + 512);
  text += '{';
  text += split.fixed_members;
  auto separate = [&text] {
    if (text.size() > 1) text += ',';
  };
  if (with_spec) {
    separate();
    text += "\"spec\":";
    text += split.spec_text;
  }
  const std::string members = members_text(live);
  if (!members.empty()) {
    separate();
    text += members;
  }
  text += '}';
  return text;
}

json progress_view(const executor::Progress& p,
                   std::optional<std::chrono::duration<double>> elapsed) {
  json progress = {{"step", p.step},
                   {"total_steps", p.total_steps},
                   {"epoch", p.epoch},
                   {"max_epochs", p.max_epochs},
                   {"samples_per_sec", p.samples_per_sec}};
  if (elapsed && p.total_steps > 0 && p.step > 0) {
    progress["percent"] = 100.0 * static_cast<double>(p.step) / static_cast<double>(p.total_steps);
    progress["eta_seconds"] = elapsed->count() / static_cast<double>(p.step) *
                              static_cast<double>(p.total_steps - p.step);
  }
  return progress;
}

}  // namespace tpujobs::service::views
