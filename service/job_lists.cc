#include "service/job_lists.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "service/job_views.h"

namespace tpujobs::service {
namespace {

// Rows read in one statement: a page of small views reads its rows at once,
// a page of large ones reads at most this many past the cap (and renders
// none past it).
constexpr std::size_t kRowsPerRead = 100;

db::JobFilter filter_of(const api::JobQuery& query) {
  db::JobFilter filter;
  filter.tenant = query.tenant;
  for (const std::string& name : query.states) {
    if (std::optional<base::JobState> state = db::parse_job_state(name)) {
      filter.states.push_back(*state);
    }
  }
  filter.labels = query.labels;
  filter.name = query.name;
  filter.limit = query.limit;
  filter.cursor = query.cursor.value_or("");
  filter.array_id = query.array_id;
  return filter;
}

}  // namespace

JobLists::JobLists(db::JobRepository& jobs, std::size_t view_bytes)
    : jobs_(jobs), finished_(view_bytes) {}

base::Result<api::JobListPage> JobLists::list(const api::JobQuery& query) {
  const db::JobFilter filter = filter_of(query);
  base::Result<db::JobPage> page = jobs_.list_jobs(filter);
  if (!page.ok()) return page.error();
  const std::vector<db::ListedJob>& keys = page->jobs;
  std::vector<std::optional<std::string>> views(keys.size());
  std::vector<std::optional<db::JobRow>> rows(keys.size());
  std::vector<bool> asked(keys.size(), false);  // its view at hand, or its row asked for
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!db::is_terminal(keys[i].state)) continue;
    if (std::optional<ViewCache::Entry> hit = finished_.find(keys[i].id)) {
      views[i] = std::move(hit->body);
      asked[i] = true;
    }
  }
  api::JobListPage listed;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!asked[i]) {
      // The rows of the next jobs whose views are not at hand, read
      // together; each is rendered only when the page reaches it.
      std::unordered_map<std::int64_t, std::size_t> at;
      std::vector<std::int64_t> ids;
      for (std::size_t j = i; j < keys.size() && ids.size() < kRowsPerRead; ++j) {
        if (asked[j]) continue;
        asked[j] = true;
        at.emplace(keys[j].id, j);
        ids.push_back(keys[j].id);
      }
      base::Result<std::vector<db::JobRow>> read = jobs_.listed_rows(ids);
      if (!read.ok()) return read.error();
      for (db::JobRow& row : *read) rows[at.at(row.id)] = std::move(row);
    }
    if (!views[i] && rows[i]) {
      const db::JobRow& row = *rows[i];
      if (!filter.states.empty() &&
          std::find(filter.states.begin(), filter.states.end(), row.state) == filter.states.end()) {
        continue;  // left the states asked for since the keys were read
      }
      nlohmann::json view = views::render_row(row);
      view.erase("spec");
      views[i] = views::response_body(view);
      if (db::is_terminal(row.state)) finished_.put(row.id, row.tenant, *views[i]);
    }
    if (!views[i]) continue;  // gone since
    bytes += views[i]->size();
    listed.jobs.push_back({std::move(*views[i]), keys[i].cursor});
    if (bytes > query.max_bytes && i + 1 < keys.size()) {
      listed.next_cursor = keys[i].cursor;  // no answer holds the rest
      return listed;
    }
  }
  listed.next_cursor = page->next_cursor;
  return listed;
}

}  // namespace tpujobs::service
