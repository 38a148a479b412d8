// A LISTEN on one or more channels (DESIGN §9 wake-ups), on a connection of
// its own that is opened on first use and again after it is lost. The
// scheduler leader, the agents, the log followers and the notifier each keep
// one; every one of them also polls, so a notification lost while the
// connection was down delays work but never loses it. A replica's cache of
// queued views, which cannot poll, drops what it keeps when sessions()
// changes: the notifications sent while no session listened are lost.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection.h"

namespace tpujobs::db {

class Listener {
 public:
  Listener(std::string conninfo, std::string channel);
  Listener(std::string conninfo, std::vector<std::string> channels);

  // Waits up to `timeout` for notifications on the channel and returns them
  // (empty when none came). kUnavailable at once when the connection cannot
  // be opened or is lost: the caller waits its poll interval its own way,
  // and the next call opens the connection again.
  base::Result<std::vector<Notification>> wait(std::chrono::milliseconds timeout);

  // How many connections have listened so far: every notification since
  // the current one's LISTEN reached wait(), none sent before it.
  std::uint64_t sessions() const { return sessions_; }

 private:
  const std::string conninfo_;
  const std::vector<std::string> channels_;
  std::unique_ptr<Connection> connection_;
  std::uint64_t sessions_ = 0;
};

}  // namespace tpujobs::db
