// Wake-ups inside one process (DESIGN §9: a standalone serve is a
// one-member cluster whose API service, scheduler leader and agent are woken
// by a direct call, not a NOTIFY round trip through PostgreSQL). Channels
// and payloads are those of db/listener.h's NOTIFY: a subscriber is woken by
// every publish on its channel and reads the tables itself.
//
// Thread-safe. Handlers run on the publishing thread and must not block.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::service {

class WakeBus {
 public:
  using Handler = std::function<void(const std::string& payload)>;

  void subscribe(const std::string& channel, Handler handler) {
    base::MutexLock lock(mutex_);
    handlers_[channel].push_back(std::move(handler));
  }
  void publish(const std::string& channel, const std::string& payload) {
    std::vector<Handler> handlers;
    {
      base::MutexLock lock(mutex_);
      handlers = handlers_[channel];
    }
    for (const Handler& handler : handlers) handler(payload);
  }

 private:
  base::Mutex mutex_;
  std::map<std::string, std::vector<Handler>> handlers_ GUARDED_BY(mutex_);
};

}  // namespace tpujobs::service
