// Bounds on the requests that hold a connection open for long: log followers
// (Server-Sent Events), long-poll waiters (GET /v1/jobs/{id}/wait), and wide
// requests waiting for or running in their lane (api/fair_lane.h). Each
// kind has its own slots, per tenant and in total; a request that finds none
// free is refused at once (429 when its tenant holds its share, 503 when the
// process is full) rather than holding a descriptor and memory the others
// need. A slot is held by a writer wrapper and given back when the answer is
// sent, the stream ends, or the last reference to the writer goes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "api/http.h"
#include "base/mutex.h"

namespace tpujobs::api {

struct StreamLimits {
  int per_tenant = 0;  // 0: no bound
  int total = 0;       // 0: no bound
};

class StreamSlots : public std::enable_shared_from_this<StreamSlots> {
 public:
  // `kind` names the slots in answers and metrics ("log followers").
  // `metric` is the Prometheus name stem ("tpujobs_log_followers"). `hint`
  // is the refusal's hint.
  static std::shared_ptr<StreamSlots> create(
      std::string kind, std::string metric, StreamLimits limits,
      std::string hint = "end an open one (or wait for one to end), then retry");

  // A writer that holds one of `tenant`'s slots until it answers, ends its
  // stream or is destroyed; nullopt after answering `writer` with the
  // refusal (429 or 503 problem+json with Retry-After, naming the limit,
  // its value and the current count).
  std::optional<ResponseWriterPtr> admit(const std::string& tenant, ResponseWriterPtr writer);

  int held(const std::string& tenant) const;
  int held_total() const;
  // Gauges of the slots held and counters of the refusals.
  std::string prometheus() const;

 private:
  StreamSlots(std::string kind, std::string metric, StreamLimits limits, std::string hint);
  friend class SlotWriter;
  void release(const std::string& tenant);

  const std::string kind_;
  const std::string metric_;
  const StreamLimits limits_;
  const std::string hint_;
  mutable base::Mutex mutex_;
  std::map<std::string, int> held_ GUARDED_BY(mutex_);
  int total_ GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_tenant_ GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_total_ GUARDED_BY(mutex_) = 0;
};

}  // namespace tpujobs::api
