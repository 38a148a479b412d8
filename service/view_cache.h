// Rendered GET /v1/jobs/{id} bodies, served from memory instead of a
// database read per poll; the least recently used views go first once the
// cache holds more than its byte budget.
//
// A finished job's view never changes. A waiting job's view changes when it
// is placed, cancelled or given another pending reason; whoever changes it
// forgets it here (forget), and a view read from the database is kept only
// when nothing was forgotten between the read and the put (put_if_current):
// a read that raced a change is not kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::service {

class ViewCache {
 public:
  explicit ViewCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

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

  // Counts the forgets: read it before reading a view that may change.
  std::uint64_t generation() const;
  // Adds the view of a job that may still change, read after generation()
  // answered `seen`; not kept when a forget came in between. Returns
  // whether it was kept.
  bool put_if_current(std::uint64_t seen, std::int64_t id, std::string tenant, std::string body);
  // Drops the views of jobs that changed.
  void forget(const std::vector<std::int64_t>& ids);

  std::size_t bytes() const;
  std::size_t size() const;

 private:
  struct Node {
    std::int64_t id;
    Entry entry;
  };
  static std::size_t cost(const Entry& e) { return e.tenant.size() + e.body.size() + sizeof(Node); }
  void put_locked(std::int64_t id, Entry entry) REQUIRES(mutex_);
  void erase_locked(std::int64_t id) REQUIRES(mutex_);
  void evict_locked() REQUIRES(mutex_);

  const std::size_t max_bytes_;
  mutable base::Mutex mutex_;
  std::list<Node> order_ GUARDED_BY(mutex_);  // most recently used first
  std::unordered_map<std::int64_t, std::list<Node>::iterator> index_ GUARDED_BY(mutex_);
  std::size_t bytes_ GUARDED_BY(mutex_) = 0;
  std::uint64_t generation_ GUARDED_BY(mutex_) = 0;
};

}  // namespace tpujobs::service
