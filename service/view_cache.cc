#include "service/view_cache.h"

#include <atomic>
#include <utility>

#include "base/thread_priority.h"
#include "service/job_views.h"

namespace tpujobs::service {
namespace {

constexpr std::size_t kSlots = views::kPendingMembers.size();
constexpr std::size_t kBasesKept = 4;

// A queued view's members other than the pending ones, each followed by
// ',', and where each pending member goes among them (the view's members
// are in name order, as nlohmann::json writes them).
struct FixedMembers {
  std::string text;
  std::array<std::uint16_t, kSlots> slots{};
};

bool is_pending_member(std::string_view name) {
  for (std::string_view pending : views::kPendingMembers)
    if (name == pending) return true;
  return false;
}

// Splits a view's text at its top-level members. Nullopt when it is not
// one JSON object or is too long for 16-bit slots.
std::optional<FixedMembers> fixed_members(std::string_view body) {
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') return std::nullopt;
  FixedMembers out;
  out.text.reserve(body.size());
  std::size_t next_slot = 0;
  auto member = [&](std::string_view m) {
    const std::size_t close = m.size() > 1 && m[0] == '"' ? m.find('"', 1) : std::string_view::npos;
    if (close == std::string_view::npos) return false;
    const std::string_view name = m.substr(1, close - 1);  // a view's names have no escapes
    if (is_pending_member(name)) return true;
    while (next_slot < kSlots && views::kPendingMembers[next_slot] < name)
      out.slots[next_slot++] = static_cast<std::uint16_t>(out.text.size());
    out.text += m;
    out.text += ',';
    return true;
  };
  int depth = 0;
  bool in_string = false;
  std::size_t begin = 1;
  const std::size_t end = body.size() - 1;  // the closing brace
  for (std::size_t i = 1; i < end; ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (!member(body.substr(begin, i - begin))) return std::nullopt;
      begin = i + 1;
    }
  }
  if (in_string || depth != 0) return std::nullopt;
  if (begin < end && !member(body.substr(begin, end - begin))) return std::nullopt;
  if (out.text.size() > 0xffff) return std::nullopt;
  while (next_slot < kSlots) out.slots[next_slot++] = static_cast<std::uint16_t>(out.text.size());
  return out;
}

// The pending members views::render_row gives `pending`, each as
// `"name":value,`, and their lengths (0: absent).
std::pair<std::string, std::array<std::uint16_t, kSlots>> pending_texts(
    int priority, const std::optional<std::string>& pending) {
  const nlohmann::json members = views::pending_members(priority, pending);
  std::pair<std::string, std::array<std::uint16_t, kSlots>> out;
  for (std::size_t k = 0; k < kSlots; ++k) {
    auto it = members.find(views::kPendingMembers[k]);
    if (it == members.end()) continue;
    const std::size_t before = out.first.size();
    out.first += '"';
    out.first += views::kPendingMembers[k];
    out.first += "\":";
    out.first += views::response_body(*it);
    out.first += ',';
    out.second[k] = static_cast<std::uint16_t>(out.first.size() - before);
  }
  return out;
}

}  // namespace

std::size_t ViewCache::cost(const Node& n) {
  return sizeof(Node) + n.tenant.size() + n.body.size() + (n.queued ? n.queued->live.size() : 0);
}

ViewCache::Encoded ViewCache::encode(const Bases& bases, std::string_view text) {
  for (const std::shared_ptr<const DeltaBase>& base : bases) {
    std::string delta = delta_encode(*base, text);
    if (delta.size() * 4 <= text.size()) return {base->text(), std::move(delta), nullptr};
  }
  auto base = std::make_shared<const DeltaBase>(std::make_shared<const std::string>(text));
  std::string delta = delta_encode(*base, text);
  return {base->text(), std::move(delta), std::move(base)};
}

void ViewCache::add_base(Bases& recent, std::shared_ptr<const DeltaBase> base) {
  if (!base) return;
  recent.push_front(std::move(base));
  if (recent.size() > kBasesKept) recent.pop_back();
}

std::string ViewCache::body_of(const Node& node) {
  const Queued& q = *node.queued;
  std::string fixed;
  delta_decode(*q.fixed_base, node.body, fixed);
  std::string live;
  if (q.live_base) delta_decode(*q.live_base, q.live, live);
  std::string out;
  out.reserve(fixed.size() + live.size() + 2);
  out += '{';
  std::size_t at = 0;
  std::size_t live_at = 0;
  for (std::size_t k = 0; k < kSlots; ++k) {
    const std::size_t slot = std::min<std::size_t>(q.slots[k], fixed.size());
    out.append(fixed, at, slot - at);
    at = slot;
    out.append(live, live_at, q.live_lengths[k]);
    live_at += q.live_lengths[k];
  }
  out.append(fixed, at);
  if (out.back() == ',') out.pop_back();
  out += '}';
  return out;
}

bool ViewCache::render_pending(std::int64_t id) {
  std::optional<std::string> pending;
  std::int32_t priority = 0;
  Bases bases;
  {
    base::ReaderLock lock(mutex_);  // a look only: reads go on beside it
    const auto& index = index_;
    auto it = index.find(id);
    if (it == index.end() || !it->second->queued) return false;
    const Queued& q = *it->second->queued;
    if (q.rendered) return true;
    if (q.has_pending) pending = q.live;
    priority = q.priority;
    bases = live_bases_;
  }
  auto [text, lengths] = pending_texts(priority, pending);
  Encoded encoded = encode(bases, text);
  base::WriterLock lock(mutex_);
  add_base(live_bases_, std::move(encoded.new_base));
  auto it = index_.find(id);
  if (it == index_.end() || !it->second->queued) return false;
  Queued& q = *it->second->queued;
  // Another reason may have come in meanwhile: it is rendered at the next
  // find, or ahead of it.
  if (q.rendered || q.has_pending != pending.has_value() || (pending && q.live != *pending)) {
    if (!q.rendered) note_unrendered_locked(id);
    return true;
  }
  bytes_ -= cost(*it->second);
  q.live_base = std::move(encoded.base);
  q.live = std::move(encoded.delta);
  q.live_lengths = lengths;
  q.rendered = true;
  bytes_ += cost(*it->second);
  return true;
}

std::optional<ViewCache::Entry> ViewCache::find(std::int64_t id) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    {
      // Beside other readers: two threads reading views decode them at once.
      base::ReaderLock lock(mutex_);
      const auto& index = index_;
      auto it = index.find(id);
      if (it == index.end()) return std::nullopt;
      Node& node = *it->second;
      // Marked by readers together, so atomically; written only when it
      // changes, so that reads of one view do not bounce its cache line.
      if (std::atomic_ref<bool> read(node.read); !read.load(std::memory_order_relaxed))
        read.store(true, std::memory_order_relaxed);
      if (!node.queued) return Entry{node.tenant, node.body};
      if (node.queued->rendered) return Entry{node.tenant, body_of(node)};
    }
    if (!render_pending(id)) return std::nullopt;
  }
  return std::nullopt;  // its reason keeps changing: the caller reads the row
}

void ViewCache::put(std::int64_t id, std::string tenant, std::string body) {
  Node node{id, std::move(tenant), std::move(body), std::nullopt};
  if (cost(node) > max_bytes_) return;
  base::WriterLock lock(mutex_);
  put_locked(std::move(node));
}

std::uint64_t ViewCache::generation() const {
  base::ReaderLock lock(mutex_);
  return generation_;
}

bool ViewCache::put_if_current(std::uint64_t seen, std::int64_t id, std::string tenant,
                               std::string_view body, int priority,
                               std::optional<std::string> pending) {
  return put_queued(seen, id, std::move(tenant), body, priority, std::move(pending), false);
}

bool ViewCache::put_submitted(std::uint64_t seen, std::int64_t id, std::string tenant,
                              std::string_view body, int priority,
                              std::optional<std::string> pending) {
  return put_queued(seen, id, std::move(tenant), body, priority, std::move(pending), true);
}

bool ViewCache::put_queued(std::uint64_t seen, std::int64_t id, std::string tenant,
                           std::string_view body, int priority, std::optional<std::string> pending,
                           bool take_newer_reason) {
  std::optional<FixedMembers> fixed = fixed_members(body);
  if (!fixed) return false;
  Bases bases;
  {
    base::ReaderLock lock(mutex_);  // a look only: reads go on beside it
    if (changed_since_locked(seen, id) &&
        (!take_newer_reason || early_reason_locked(seen, id) == nullptr)) {
      return false;
    }
    bases = fixed_bases_;
  }
  Encoded encoded = encode(bases, fixed->text);
  Queued q;
  q.fixed_base = std::move(encoded.base);
  q.slots = fixed->slots;
  q.priority = priority;
  Node node{id, std::move(tenant), std::move(encoded.delta), std::move(q)};
  base::WriterLock lock(mutex_);
  add_base(fixed_bases_, std::move(encoded.new_base));
  if (changed_since_locked(seen, id)) {
    const EarlyReason* early = take_newer_reason ? early_reason_locked(seen, id) : nullptr;
    if (early == nullptr) return false;
    pending = early->pending;  // newer than the row's
  }
  node.queued->has_pending = pending.has_value();
  if (pending) node.queued->live = std::move(*pending);
  if (cost(node) > max_bytes_) return false;
  put_locked(std::move(node));
  note_unrendered_locked(id);
  return true;
}

bool ViewCache::put_read_if_current(std::uint64_t seen, std::int64_t id, std::string tenant,
                                    std::string body) {
  Node node{id, std::move(tenant), std::move(body), std::nullopt};
  if (cost(node) > max_bytes_) return false;
  base::WriterLock lock(mutex_);
  if (changed_since_locked(seen, id)) return false;
  put_locked(std::move(node));
  return true;
}

bool ViewCache::put_written(std::uint64_t seen, std::int64_t id, std::string tenant,
                            std::string body) {
  Node node{id, std::move(tenant), std::move(body), std::nullopt};
  base::WriterLock lock(mutex_);
  const bool current = !changed_since_locked(seen, id);
  ++generation_;
  early_reasons_.erase(id);
  note_changed_locked(id);
  erase_locked(id);
  if (!current || cost(node) > max_bytes_) return false;
  put_locked(std::move(node));
  return true;
}

void ViewCache::forget(const std::vector<std::int64_t>& ids) {
  base::WriterLock lock(mutex_);
  ++generation_;
  for (std::int64_t id : ids) {
    early_reasons_.erase(id);
    note_changed_locked(id);
    erase_locked(id);
  }
}

void ViewCache::forget_queued() {
  base::WriterLock lock(mutex_);
  ++generation_;
  changes_forgotten_ = generation_;  // a view read before now may be stale
  early_reasons_.clear();
  early_order_.clear();
  for (auto it = order_.begin(); it != order_.end();) {
    if (!it->queued) {
      ++it;
      continue;
    }
    bytes_ -= cost(*it);
    index_.erase(it->id);
    it = order_.erase(it);
  }
}

void ViewCache::set_pending(std::vector<PendingChange> changes) {
  base::WriterLock lock(mutex_);
  ++generation_;
  for (auto& [id, pending] : changes) {
    auto it = index_.find(id);
    const bool kept = it != index_.end() && it->second->queued;
    // Not kept: perhaps a job just inserted whose view is being rendered,
    // whose put_submitted takes this reason (noted before the change, which
    // it reads as the one before the reasons).
    if (!kept) note_early_reason_locked(id, std::move(pending));
    note_changed_locked(id);
    if (!kept) {
      if (it != index_.end()) erase_locked(id);
      continue;
    }
    Node& node = *it->second;
    bytes_ -= cost(node);
    Queued& q = *node.queued;
    if (q.rendered) note_unrendered_locked(id);  // else it is listed already
    q.has_pending = pending.has_value();
    q.live = pending ? std::move(*pending) : std::string();
    q.rendered = false;
    q.live_base.reset();
    q.live_lengths = {};
    bytes_ += cost(node);
  }
  evict_locked();
}

void ViewCache::note_unrendered_locked(std::int64_t id) {
  // Past the bound (ids of views gone since, a renderer that gets no CPU),
  // the first reads render what is not listed.
  if (unrendered_.size() < kUnrenderedKept) unrendered_.push_back(id);
}

std::size_t ViewCache::render_ahead(std::size_t most) {
  for (std::size_t n = 0; n < most; ++n) {
    std::int64_t id = 0;
    {
      base::WriterLock lock(mutex_);
      if (unrendered_.empty()) return 0;
      id = unrendered_.front();
      unrendered_.pop_front();
    }
    render_pending(id);  // nothing for a view gone or rendered since
  }
  base::WriterLock lock(mutex_);
  return unrendered_.size();
}

void ViewCache::note_changed_locked(std::int64_t id) {
  changed_at_[id] = generation_;
  changes_.emplace_back(generation_, id);
  while (changes_.size() > kChangesKept) {
    const auto [generation, job] = changes_.front();
    changes_.pop_front();
    if (auto it = changed_at_.find(job); it != changed_at_.end() && it->second == generation)
      changed_at_.erase(it);
    changes_forgotten_ = generation;
  }
}

void ViewCache::note_early_reason_locked(std::int64_t id, std::optional<std::string> pending) {
  // Before the change is noted: `prior` is the job's change before this run
  // of reasons.
  auto [it, added] = early_reasons_.try_emplace(id);
  it->second.pending = std::move(pending);
  if (!added) return;
  const auto prior = changed_at_.find(id);
  it->second.first_at = generation_;
  it->second.prior = prior == changed_at_.end() ? 0 : prior->second;
  early_order_.emplace_back(generation_, id);
  while (early_order_.size() > kEarlyReasonsKept) {
    const auto [first_at, job] = early_order_.front();
    early_order_.pop_front();
    if (auto old = early_reasons_.find(job);
        old != early_reasons_.end() && old->second.first_at == first_at) {
      early_reasons_.erase(old);
    }
  }
}

const ViewCache::EarlyReason* ViewCache::early_reason_locked(std::uint64_t seen,
                                                             std::int64_t id) const {
  // A change not remembered may have been another kind; one before the
  // reasons in a row, after the read, was.
  if (seen < changes_forgotten_) return nullptr;
  auto it = early_reasons_.find(id);
  if (it == early_reasons_.end() || it->second.prior > seen) return nullptr;
  return &it->second;
}

bool ViewCache::changed_since_locked(std::uint64_t seen, std::int64_t id) const {
  if (seen == generation_) return false;
  if (seen < changes_forgotten_) return true;  // its change may be among those let go
  auto it = changed_at_.find(id);
  return it != changed_at_.end() && it->second > seen;
}

void ViewCache::put_locked(Node node) {
  erase_locked(node.id);
  early_reasons_.erase(node.id);  // the view takes the job's next reasons
  bytes_ += cost(node);
  const std::int64_t id = node.id;
  order_.push_front(std::move(node));
  index_[id] = order_.begin();
  evict_locked();
}

void ViewCache::erase_locked(std::int64_t id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  bytes_ -= cost(*it->second);
  order_.erase(it->second);
  index_.erase(it);
}

void ViewCache::evict_locked() {
  while (bytes_ > max_bytes_ && !order_.empty()) {
    if (Node& oldest = order_.back(); oldest.read) {  // a second chance
      oldest.read = false;
      order_.splice(order_.begin(), order_, std::prev(order_.end()));
      continue;
    }
    bytes_ -= cost(order_.back());
    index_.erase(order_.back().id);
    order_.pop_back();
  }
}

std::size_t ViewCache::bytes() const {
  base::ReaderLock lock(mutex_);
  return bytes_;
}

std::size_t ViewCache::size() const {
  base::ReaderLock lock(mutex_);
  return index_.size();
}

ViewRenderer::ViewRenderer(ViewCache& views) : views_(views), thread_([this] { loop(); }) {}

ViewRenderer::~ViewRenderer() { stop(); }

void ViewRenderer::wake() {
  {
    base::MutexLock lock(mutex_);
    woken_ = true;
  }
  wake_.notify_one();
}

void ViewRenderer::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ViewRenderer::loop() {
  // Only CPU no one else wants: a request that renders its own view is no
  // slower than before.
  (void)base::set_this_thread_nice(19);
  constexpr std::size_t kBatch = 64;  // the lock is taken per view
  base::MutexLock lock(mutex_);
  for (;;) {
    lock.wait(wake_, [&]() REQUIRES(mutex_) { return woken_ || stopping_; });
    if (stopping_) return;
    woken_ = false;
    bool left = true;
    while (left && !stopping_) {
      lock.unlock();
      left = views_.render_ahead(kBatch) > 0;
      lock.lock();
    }
  }
}

}  // namespace tpujobs::service
