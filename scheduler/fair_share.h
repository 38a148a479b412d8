// Fair share (issue 17): each tenant's effective priority decays with its
// recent use, as Slurm's classic fair-share factor does.
//
//   usage U_t   core-seconds of tenant t, each second weighted by
//               2^(-age / half_life) (Slurm's PriorityDecayHalfLife); a span
//               of c cores held from a to b (ages) counts
//               c * half_life / ln 2 * (2^(-b/half_life) - 2^(-a/half_life)).
//   share S_t   1 / N among the N tenants considered (equal shares).
//   factor F_t  2^(-(U_t / sum U) / S_t), in (0, 1]: 1 for a tenant with no
//               recent use, 0.5 for one that used exactly its share, toward 0
//               the more it used beyond it.
//   effective   priority + F_t.
//
// The queue is ordered by priority, then F_t (higher first), then submit
// order: since F_t is in (0, 1] and priorities are integers, that is the
// order of the effective priority, with the base priority always first.
// Only the base priority preempts (scheduler/preemption.h).
//
// Pure functions: time and usage are passed in; no clocks, no I/O.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace tpujobs::scheduler {

// The decayed core-seconds of `cores` held for the span that began `began_ago`
// and ended `ended_ago` before now (ended_ago <= began_ago; 0: still held).
double decayed_core_seconds(int cores, std::chrono::duration<double> began_ago,
                            std::chrono::duration<double> ended_ago,
                            std::chrono::duration<double> half_life);

// F_t for every tenant of `usage` (U_t; a tenant with waiting work and no use
// is given with 0), with equal shares among them.
std::map<std::string, double> fair_share_factors(const std::map<std::string, double>& usage);

}  // namespace tpujobs::scheduler
