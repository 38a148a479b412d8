#include "scheduler/preemption.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace tpujobs::scheduler {

std::optional<VictimChoice> choose_victims(
    int preemptor_priority, const std::vector<std::vector<std::optional<std::int64_t>>>& places,
    const std::function<std::optional<RunningJobInfo>(std::int64_t)>& running,
    const std::vector<PlaceStart>& starts) {
  // (highest victim priority, victims, cores, -earliest start): lower wins.
  using Cost = std::tuple<int, std::size_t, int, std::int64_t>;
  std::optional<std::pair<Cost, VictimChoice>> best;
  bool best_soon = false;
  for (std::size_t p = 0; p < places.size(); ++p) {
    std::vector<std::int64_t> victims;
    bool qualifies = true;
    for (const std::optional<std::int64_t>& holder : places[p]) {
      if (!holder) continue;
      if (std::find(victims.begin(), victims.end(), *holder) != victims.end()) continue;
      const std::optional<RunningJobInfo> job = running(*holder);
      if (!job) {
        qualifies = false;
        break;
      }
      if (job->preempting) continue;
      if (!job->preemptible || job->priority >= preemptor_priority) {
        qualifies = false;
        break;
      }
      victims.push_back(*holder);
    }
    if (!qualifies) continue;
    if (victims.empty()) return VictimChoice{p, {}};  // frees by itself: wait for it
    const PlaceStart start = p < starts.size() ? starts[p] : PlaceStart::kNow;
    if (start == PlaceStart::kWaitOnly) continue;
    int highest = std::numeric_limits<int>::min();
    int cores = 0;
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t id : victims) {
      const RunningJobInfo job = *running(id);
      highest = std::max(highest, job.priority);
      cores += job.cores;
      earliest = std::min(earliest, job.started);
    }
    const Cost cost{highest, victims.size(), cores, -earliest};
    if (!best || cost < best->first) {
      std::sort(victims.begin(), victims.end());
      best = {cost, VictimChoice{p, std::move(victims)}};
      best_soon = start == PlaceStart::kSoon;
    }
  }
  if (!best || best_soon) return std::nullopt;
  return std::move(best->second);
}

}  // namespace tpujobs::scheduler
