// A LISTEN on one channel (DESIGN §9 wake-ups), on a connection of its own
// that is opened on first use and again after it is lost. The scheduler
// leader, the agents, the log followers and the notifier each keep one;
// every one of them also polls, so a notification lost while the
// connection was down delays work but never loses it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/connection.h"

namespace tpujobs::db {

class Listener {
 public:
  Listener(std::string conninfo, std::string channel);

  // Waits up to `timeout` for notifications on the channel and returns them
  // (empty when none came). kUnavailable at once when the connection cannot
  // be opened or is lost: the caller waits its poll interval its own way,
  // and the next call opens the connection again.
  base::Result<std::vector<Notification>> wait(std::chrono::milliseconds timeout);

 private:
  const std::string conninfo_;
  const std::string channel_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace tpujobs::db
