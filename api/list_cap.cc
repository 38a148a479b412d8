#include "api/list_cap.h"

#include <algorithm>

namespace tpujobs::api {
namespace {

// How many of the page's first jobs fit in max_bytes with the page around
// them (at least one); every job when the whole page fits.
std::size_t jobs_that_fit(const nlohmann::json& page, std::size_t max_bytes) {
  const nlohmann::json& jobs = page["jobs"];
  nlohmann::json empty = page;
  empty["jobs"] = nlohmann::json::array();
  std::size_t bytes = empty.dump().size();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    bytes += jobs[i].dump().size() + (i > 0 ? 1 : 0);  // a comma between jobs
    if (bytes > max_bytes) return std::max<std::size_t>(i, 1);
  }
  return jobs.size();
}

}  // namespace

base::Result<nlohmann::json> cap_job_list(base::Result<nlohmann::json> listed, JobQuery query,
                                          JobService& service, std::size_t max_bytes) {
  for (int round = 0; round < 3; ++round) {
    if (!listed.ok() || !listed->is_object() || !listed->contains("jobs") ||
        !(*listed)["jobs"].is_array()) {
      return listed;
    }
    const std::size_t fit = jobs_that_fit(*listed, max_bytes);
    if (fit == (*listed)["jobs"].size()) return listed;
    query.limit = static_cast<int>(fit);
    listed = service.list_jobs(query);
  }
  return listed;
}

}  // namespace tpujobs::api
