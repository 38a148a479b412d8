// The agent in the scheduler leader's own process (DESIGN §9: a standalone
// serve is a one-member cluster). The leader hands it each placement it
// commits there, with the row and resume point that the placement's own
// statement answered (db::JobRepository::transition_with_work), so that the
// job starts without the agent reading its work first: a client waiting for
// RUNNING waits on one round trip to the database less.
#pragma once

#include <string>

#include "db/job_repository.h"

namespace tpujobs::service {

class LocalAgent {
 public:
  virtual ~LocalAgent() = default;
  virtual const std::string& name() const = 0;
  // A committed placement of one job on this agent, whole (not a slice
  // spanning agents). True when the agent starts it now; false when it
  // leaves it to its next look at its work (it is stopping or rejoining,
  // or the placement is not under its epoch): the leader then wakes it as
  // it wakes any agent. Must not block.
  virtual bool take_placed(db::PlacedWork work) = 0;
};

}  // namespace tpujobs::service
