#include "service/view_cache.h"

#include <utility>

namespace tpujobs::service {

std::optional<ViewCache::Entry> ViewCache::find(std::int64_t id) {
  base::MutexLock lock(mutex_);
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->entry;
}

void ViewCache::put(std::int64_t id, std::string tenant, std::string body) {
  Entry entry{std::move(tenant), std::move(body)};
  if (cost(entry) > max_bytes_) return;
  base::MutexLock lock(mutex_);
  put_locked(id, std::move(entry));
}

std::uint64_t ViewCache::generation() const {
  base::MutexLock lock(mutex_);
  return generation_;
}

bool ViewCache::put_if_current(std::uint64_t seen, std::int64_t id, std::string tenant,
                               std::string body) {
  Entry entry{std::move(tenant), std::move(body)};
  if (cost(entry) > max_bytes_) return false;
  base::MutexLock lock(mutex_);
  if (generation_ != seen) return false;
  put_locked(id, std::move(entry));
  return true;
}

void ViewCache::forget(const std::vector<std::int64_t>& ids) {
  base::MutexLock lock(mutex_);
  ++generation_;
  for (std::int64_t id : ids) erase_locked(id);
}

void ViewCache::put_locked(std::int64_t id, Entry entry) {
  erase_locked(id);
  bytes_ += cost(entry);
  order_.push_front(Node{id, std::move(entry)});
  index_[id] = order_.begin();
  evict_locked();
}

void ViewCache::erase_locked(std::int64_t id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  bytes_ -= cost(it->second->entry);
  order_.erase(it->second);
  index_.erase(it);
}

void ViewCache::evict_locked() {
  while (bytes_ > max_bytes_ && !order_.empty()) {
    bytes_ -= cost(order_.back().entry);
    index_.erase(order_.back().id);
    order_.pop_back();
  }
}

std::size_t ViewCache::bytes() const {
  base::MutexLock lock(mutex_);
  return bytes_;
}

std::size_t ViewCache::size() const {
  base::MutexLock lock(mutex_);
  return index_.size();
}

}  // namespace tpujobs::service
