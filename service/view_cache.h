// The rendered GET /v1/jobs/{id} bodies of finished jobs. A terminal state
// never changes, so a finished job's view is served from memory instead of a
// database read per poll; the least recently used views go first once the
// cache holds more than its byte budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"

namespace tpujobs::service {

class FinishedViewCache {
 public:
  explicit FinishedViewCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // The view of job `id`, when cached. The tenant is returned with it so
  // the caller can answer another tenant with 404.
  struct Entry {
    std::string tenant;
    std::string body;
  };
  std::optional<Entry> find(std::int64_t id);

  // Adds or replaces the view of a finished job. A view larger than the
  // whole budget is not kept.
  void put(std::int64_t id, std::string tenant, std::string body);

  std::size_t bytes() const;
  std::size_t size() const;

 private:
  struct Node {
    std::int64_t id;
    Entry entry;
  };
  static std::size_t cost(const Entry& e) { return e.tenant.size() + e.body.size() + sizeof(Node); }
  void evict_locked() REQUIRES(mutex_);

  const std::size_t max_bytes_;
  mutable base::Mutex mutex_;
  std::list<Node> order_ GUARDED_BY(mutex_);  // most recently used first
  std::unordered_map<std::int64_t, std::list<Node>::iterator> index_ GUARDED_BY(mutex_);
  std::size_t bytes_ GUARDED_BY(mutex_) = 0;
};

}  // namespace tpujobs::service
