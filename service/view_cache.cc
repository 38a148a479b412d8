#include "service/view_cache.h"

#include <utility>

namespace tpujobs::service {

std::optional<FinishedViewCache::Entry> FinishedViewCache::find(std::int64_t id) {
  base::MutexLock lock(mutex_);
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->entry;
}

void FinishedViewCache::put(std::int64_t id, std::string tenant, std::string body) {
  Entry entry{std::move(tenant), std::move(body)};
  if (cost(entry) > max_bytes_) return;
  base::MutexLock lock(mutex_);
  auto it = index_.find(id);
  if (it != index_.end()) {
    bytes_ -= cost(it->second->entry);
    order_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += cost(entry);
  order_.push_front(Node{id, std::move(entry)});
  index_[id] = order_.begin();
  evict_locked();
}

void FinishedViewCache::evict_locked() {
  while (bytes_ > max_bytes_ && !order_.empty()) {
    bytes_ -= cost(order_.back().entry);
    index_.erase(order_.back().id);
    order_.pop_back();
  }
}

std::size_t FinishedViewCache::bytes() const {
  base::MutexLock lock(mutex_);
  return bytes_;
}

std::size_t FinishedViewCache::size() const {
  base::MutexLock lock(mutex_);
  return index_.size();
}

}  // namespace tpujobs::service
