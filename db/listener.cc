#include "db/listener.h"

namespace tpujobs::db {

Listener::Listener(std::string conninfo, std::string channel)
    : Listener(std::move(conninfo), std::vector<std::string>{std::move(channel)}) {}

Listener::Listener(std::string conninfo, std::vector<std::string> channels)
    : conninfo_(std::move(conninfo)), channels_(std::move(channels)) {}

base::Result<std::vector<Notification>> Listener::wait(std::chrono::milliseconds timeout) {
  if (!connection_ || connection_->is_broken()) {
    connection_.reset();
    auto opened = Connection::open(conninfo_);
    if (!opened.ok()) return opened.error();
    // The channels are the program's own names, never user text.
    std::string script;
    for (const std::string& channel : channels_)
      script += (script.empty() ? "LISTEN " : "; LISTEN ") + channel;
    if (base::Status listening = (*opened)->execute_script(script); !listening.ok())
      return listening.error();
    connection_ = std::move(*opened);
    ++sessions_;
  }
  return connection_->wait_notifications(timeout);
}

}  // namespace tpujobs::db
