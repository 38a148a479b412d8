// The job views: GET /v1/jobs/{id} and the lists, as JSON (DESIGN §6).
// Pure functions of a stored row and of what a live job holds in memory,
// shared by the API service (rows, and the live views of the jobs its
// process's agent runs), the agent (the views its transitions answer) and
// the view cache.
//
// A live job's view is kept as two pieces of text: the members that do
// not change while it waits or runs (name, spec, labels, ...), serialised
// once at submit, and the live members (kLiveMembers), rendered at each
// read and spliced in. A queued job is then mostly one string, and reading
// it serialises only the few members that move.
#pragma once

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "db/job_repository.h"
#include "executor/executor.h"

namespace tpujobs::service::views {

// Times in views are RFC 3339 in UTC with milliseconds, as /v1/usage writes them.
std::string iso_time(std::chrono::system_clock::time_point t);
nlohmann::json time_or_null(const std::optional<std::chrono::system_clock::time_point>& t);
// A JSON column's value; null when absent, empty or not JSON.
nlohmann::json parse_or_null(const std::optional<std::string>& text);
// A view as the response body (invalid UTF-8 from user text replaced).
std::string response_body(const nlohmann::json& view);

// The view of a stored row. The JSON columns are given parsed (a new
// job's come straight from the request) or parsed from the row.
nlohmann::json render_row(const db::JobRow& row, nlohmann::json spec, nlohmann::json resolved,
                          nlohmann::json labels, nlohmann::json warnings);
nlohmann::json render_row(const db::JobRow& row);
// What a submit holds as JSON text already (as nlohmann's dump writes it):
// the spec, labels and warnings it stores, and the two members of the
// resolution it stores (jobs.resolved).
struct SubmittedText {
  std::string_view spec;
  std::string_view labels;
  std::string_view warnings;
  std::string_view resolved_request;
  std::string_view estimate;
};
// The view of a job its submit just stored: response_body(render_row(row,
// spec, resolved, labels, warnings)), byte for byte, with the members given
// as text put in as they are instead of built and serialised again: they
// are most of a submit's view, and building and serialising them again
// cost 10.5 us of the service's some 185 us of CPU per submit
// (bench/service/submit_view_bench; bench/RESULTS.md, session 67).
std::string submitted_body(const db::JobRow& row, const nlohmann::json& spec,
                           const SubmittedText& text);
// GET /v1/jobs/{id}'s body (response_body) of the job as read, or as a write
// answered it: render_row, and for an unfinished job that started, where a
// resume would begin (last_checkpoint).
std::string job_body(const db::JobWithCheckpoint& job);
// The members of a queued job's view that the leader's stored pending
// reason (`pending_json`, a job_pending value) gives, in the view's order
// (kPendingMembers): estimated_start, pending_reason, priority_parts and
// queue_position, null without a reason; pending_detail and preempted_by
// only when the reason has them. render_row's own, so that a view kept in
// memory (view_cache.h) can take a new reason without its row.
inline constexpr std::array<std::string_view, 6> kPendingMembers = {
    "estimated_start", "pending_detail", "pending_reason",
    "preempted_by",    "priority_parts", "queue_position"};
nlohmann::json pending_members(int priority, const std::optional<std::string>& pending_json);
// {"base": priority, "fair_share": F, "effective": priority + F}: how a
// waiting or running job is ordered (scheduler/fair_share.h).
nlohmann::json priority_parts(int priority, double fair_share);
// Puts a job's result into its view: without the XLA report (it has its
// own route); its final metrics, when it has them, are the view's metrics.
void put_result(nlohmann::json& view, nlohmann::json result);

// The members of a live job's view that change while it is queued or runs.
inline constexpr std::array<std::string_view, 11> kLiveMembers = {
    "allocation",     "attempt",  "estimated_start", "last_checkpoint", "metrics", "pending_reason",
    "priority_parts", "progress", "queue_position",  "started_at",      "state"};

// A view split for splicing: the fixed members as text (no braces), the
// spec as text (lists leave it out), and the non-null values the live
// members had when it was rendered (a resumed job's progress, say).
struct SplitView {
  std::string fixed_members;
  std::string spec_text;
  nlohmann::json live_base;
};
// `spec_text`, when given, is the view's spec already serialised.
SplitView split_view(nlohmann::json view, std::string spec_text = {});
// The whole view as text: the fixed members, the spec when asked, and
// `live` (an object of the live members, each null unless set).
std::string splice_view(const SplitView& split, const nlohmann::json& live, bool with_spec);
// An object of the live members, all null, then the base values.
nlohmann::json live_members(const SplitView& split);

// A running job's progress; with `elapsed` since its run started, its
// percent and an ETA too.
nlohmann::json progress_view(const executor::Progress& progress,
                             std::optional<std::chrono::duration<double>> elapsed = std::nullopt);

}  // namespace tpujobs::service::views
