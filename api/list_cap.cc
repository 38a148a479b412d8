#include "api/list_cap.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace tpujobs::api {
namespace {

std::string text_of(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The page's JSON text, as json_response would write it, built from each
// job's text written once; nullopt when it passes max_bytes, and then `fit`
// is how many of the first jobs fit with the page around them (at least
// one).
std::optional<std::string> page_text(const nlohmann::json& page, std::size_t max_bytes,
                                     std::size_t& fit) {
  const nlohmann::json& jobs = page["jobs"];
  // The members other than "jobs", each as written in the object (names in
  // order, as nlohmann::json writes them).
  std::vector<std::pair<std::string, std::string>> others;
  std::size_t bytes = 2 + 9;  // {} and "jobs":[] (and the commas, counted below)
  for (const auto& [name, value] : page.items()) {
    if (name == "jobs") continue;
    others.emplace_back(name, text_of(nlohmann::json(name)) + ":" + text_of(value));
    bytes += 1 + others.back().second.size();
  }
  std::vector<std::string> texts;
  texts.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    texts.push_back(text_of(jobs[i]));
    bytes += texts.back().size() + (i > 0 ? 1 : 0);  // a comma between jobs
    if (bytes > max_bytes) {
      fit = std::max<std::size_t>(i, 1);
      return std::nullopt;
    }
  }
  std::string out;
  out.reserve(bytes);
  out += '{';
  bool first = true;
  auto member = [&](const std::string& text) {
    if (!first) out += ',';
    first = false;
    out += text;
  };
  bool jobs_written = false;
  auto write_jobs = [&] {
    std::string list = "\"jobs\":[";
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) list += ',';
      list += texts[i];
    }
    list += ']';
    member(list);
    jobs_written = true;
  };
  for (const auto& [name, text] : others) {
    if (!jobs_written && std::string("jobs") < name) write_jobs();
    member(text);
  }
  if (!jobs_written) write_jobs();
  out += '}';
  return out;
}

}  // namespace

base::Result<std::string> cap_job_list(base::Result<nlohmann::json> listed, JobQuery query,
                                       JobService& service, std::size_t max_bytes) {
  for (int round = 0;; ++round) {
    if (!listed.ok()) return listed.error();
    if (!listed->is_object() || !listed->contains("jobs") || !(*listed)["jobs"].is_array() ||
        round == 3) {
      return text_of(*listed);  // three tries, then what it has
    }
    std::size_t fit = 0;
    std::optional<std::string> text = page_text(*listed, max_bytes, fit);
    if (text) return std::move(*text);
    query.limit = static_cast<int>(fit);
    listed = service.list_jobs(query);
  }
}

}  // namespace tpujobs::api
