#include "api/list_cap.h"

#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::api {

base::Result<std::string> cap_job_list(base::Result<JobListPage> listed, std::size_t max_bytes) {
  if (!listed.ok()) return listed.error();
  const std::vector<ListedView>& jobs = listed->jobs;
  constexpr std::string_view kHead = "{\"jobs\":[", kMiddle = "],\"next_cursor\":";
  std::size_t bytes = kHead.size() + kMiddle.size() + 1;  // and the closing brace
  std::size_t fit = 0;
  for (; fit < jobs.size(); ++fit) {
    // The cursor of a page that would end here, quoted (hex, nothing to escape).
    const std::size_t cursor = jobs[fit].cursor.size() + 2;
    const std::size_t with = bytes + (fit > 0 ? 1 : 0) + jobs[fit].view.size();
    if (fit > 0 && with + cursor > max_bytes) break;
    bytes = with;
  }
  const std::string& cursor = fit < jobs.size() ? jobs[fit - 1].cursor : listed->next_cursor;
  std::string out;
  out.reserve(bytes + cursor.size() + 2);
  out += kHead;
  for (std::size_t i = 0; i < fit; ++i) {
    if (i > 0) out += ',';
    out += jobs[i].view;
  }
  out += kMiddle;
  out += cursor.empty() ? "null" : nlohmann::json(cursor).dump();
  out += '}';
  return out;
}

}  // namespace tpujobs::api
