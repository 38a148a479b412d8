#include "db/listener.h"

namespace tpujobs::db {

Listener::Listener(std::string conninfo, std::string channel)
    : conninfo_(std::move(conninfo)), channel_(std::move(channel)) {}

base::Result<std::vector<Notification>> Listener::wait(std::chrono::milliseconds timeout) {
  if (!connection_ || connection_->is_broken()) {
    connection_.reset();
    auto opened = Connection::open(conninfo_);
    if (!opened.ok()) return opened.error();
    // The channel is one of the program's own names, never user text.
    if (base::Status listening = (*opened)->execute_script("LISTEN " + channel_); !listening.ok())
      return listening.error();
    connection_ = std::move(*opened);
  }
  return connection_->wait_notifications(timeout);
}

}  // namespace tpujobs::db
