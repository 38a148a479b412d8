// The agent in the scheduler leader's own process (DESIGN §9: a standalone
// serve is a one-member cluster). The leader places a job there already
// started, when the agent promises to start it: one statement commits the
// placement and the job's RUNNING (db::JobRepository::transition_with_work),
// and answers the row and resume point, which the leader hands to the agent
// so that it trains the job without reading its work first. A client
// waiting for RUNNING waits on two round trips to the database fewer than
// when the agent reads its work and writes RUNNING itself.
#pragma once

#include <cstdint>
#include <string>

#include "db/job_repository.h"

namespace tpujobs::service {

class LocalAgent {
 public:
  virtual ~LocalAgent() = default;
  virtual const std::string& name() const = 0;
  // Before the leader places `job`, whole (not a slice spanning agents), on
  // this agent under `epoch`: whether the agent promises to start it as the
  // placement commits. Then the leader commits the placement started
  // (QUEUED -> STARTING -> RUNNING in one statement, both events recorded:
  // lifecycle::place_started) and hands it over with take_placed(), or calls
  // forgo(job) when it did not apply or may not have; until one of them the
  // agent's stop waits. False (the agent is stopping or rejoining, `epoch`
  // is not its own, a copy of the job still runs): the leader places the job
  // STARTING, as on any agent, and wakes this one, whose next look decides.
  // Neither blocks.
  virtual bool promise_start(std::int64_t job, std::int64_t epoch) = 0;
  virtual void forgo(std::int64_t job) = 0;
  // The promised placement, committed RUNNING, with the row and resume
  // point its statement answered: the agent trains it without reading its
  // work first. False when it cannot (not promised, or no longer under its
  // epoch): the leader wakes it, and its next look starts the job.
  virtual bool take_placed(db::PlacedWork work) = 0;
};

}  // namespace tpujobs::service
