// Which running jobs a waiting job preempts (DESIGN §5, issue 17), as a pure
// choice over places the caller enumerates (plan_pass, over the agents'
// hosts).
//
// Rules:
//  - Only a job of strictly higher (base) priority preempts: never one of
//    equal or lower priority, and never a job that is not preemptible
//    (spec "preemptible": false). Fair share orders the queue but never
//    preempts (scheduler/fair_share.h), so two tenants of one priority never
//    make each other checkpoint.
//  - A place qualifies when each of its cores is free, held by a job already
//    being preempted (it frees its cores at its next step), or held by a
//    job the preemptor may preempt.
//  - When some place frees by itself (every core free or already being
//    preempted) nothing more is preempted: the preemptor waits for it.
//  - A place the preemptor could not start on now (the caller's
//    PlaceStart::kWaitOnly: a host whose agent heartbeats late) gets no new
//    victims: they would lose their work for a wait of their own. It still
//    counts when it frees by itself (its victims, marked earlier, still
//    stop).
//  - Else the place whose new victims cost least wins, judged in this order:
//    the highest victim priority (lower is better), the number of victims,
//    the cores they hold, and the earliest start among them (later is
//    better: the most recently started lose the least work); ties go to the
//    first place.
//  - When that place is one the preemptor may start on soon but not yet
//    (PlaceStart::kSoon: a host not heard from since the preemptor's own
//    failure, which its next heartbeat settles), nothing is preempted now:
//    choosing a dearer place would make its victims lose their work so that
//    the preemptor starts a heartbeat earlier.
// Which waiting job may preempt, and when, is the caller's rule (plan_pass's:
// only the head of the queue, and only when its reservation does not start
// soon; see pass.h).
//
// Pure functions: no clocks, no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace tpujobs::scheduler {

// A running job as preemption sees it.
struct RunningJobInfo {
  std::int64_t id = 0;
  int priority = 0;
  bool preemptible = true;
  bool preempting = false;   // already asked to stop: its cores count as freeing
  std::int64_t started = 0;  // any monotonic measure of its start (later = larger)
  int cores = 0;             // cores it holds in all
};

// Whether the preemptor could start on a place once it frees.
enum class PlaceStart {
  kNow,       // every host of it takes work
  kSoon,      // a host not heard from since the preemptor's own failure
  kWaitOnly,  // a host that takes no work now (its agent heartbeats late)
};

struct VictimChoice {
  std::size_t place = 0;              // index into the places given
  std::vector<std::int64_t> victims;  // ascending; empty: the place frees by itself
};

// `places`: per candidate place, the holder of each of its cores (nullopt:
// free). `running(id)`: the job holding cores (nullopt: unknown, never a
// victim). `starts`: per place, whether the preemptor could start there
// (empty: every place kNow). nullopt when no place qualifies, or when the
// cheapest is kSoon.
std::optional<VictimChoice> choose_victims(
    int preemptor_priority, const std::vector<std::vector<std::optional<std::int64_t>>>& places,
    const std::function<std::optional<RunningJobInfo>(std::int64_t)>& running,
    const std::vector<PlaceStart>& starts = {});

}  // namespace tpujobs::scheduler
