// Rendered GET /v1/jobs/{id} bodies, served from memory instead of a
// database read per poll. Once the cache holds more than its byte budget the
// oldest views go first, but a view read since it was last passed over
// gets a second chance (CLOCK): a read only marks its view, so reading a
// queue of 100,000 touches no other view's memory. Reads share the lock
// (base::SharedMutex): the HTTP threads decode views side by side, and
// only changes take it alone.
//
// A finished job's view never changes. A STARTING or RUNNING job's changes
// when it starts, stores progress or a checkpoint, is cancelled, preempted
// or moved: whoever changes it (this process's scheduler leader, its agent
// and the agent's telemetry, a cancel or an admin here) forgets it here; the
// agent hands over the view its RUNNING transition answered (put_written). A queued job's view
// changes when it is placed or cancelled (whoever changes it forgets it here: forget) or when the
// scheduler leader writes its pending reason (the leader hands the reason over: set_pending, and
// the view is re-rendered from it without a database read). On a replica both come from the
// database's NOTIFY (db/migrations/038), and a lost LISTEN connection drops every queued view
// (forget_queued). A view read from the database is kept
// only when its job did not change between the read and the put (put_if_current): a read that raced
// a change is not kept. The view of a job this process just inserted takes the reasons stored
// between the insert and the put (put_submitted).
//
// A queued view is kept small, so that a queue of 100,000 fits: its
// members other than the pending ones (views::kPendingMembers) as the
// differences from another queued view's (service/text_delta.h), and its
// pending reason as stored; the pending members are rendered at the first
// read after a change and kept the same way. find() answers the very text
// views::render_row would.
#pragma once

#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/shared_mutex.h"
#include "service/text_delta.h"

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

  // Counts the changes (forget, set_pending): read it before reading a
  // view that may change.
  std::uint64_t generation() const;
  // Adds the view `body` (views::response_body of views::render_row) of a
  // queued job with `priority` whose stored pending reason is `pending`,
  // read after generation() answered `seen`; not kept when that job
  // changed in between (or when so many jobs changed since that this one
  // cannot be told apart), nor when `body` is not a JSON object. Returns
  // whether it was kept.
  bool put_if_current(std::uint64_t seen, std::int64_t id, std::string tenant,
                      std::string_view body, int priority, std::optional<std::string> pending);
  // As put_if_current, for the view of a job this process has just
  // inserted, whose row's reason is `pending` (generation() answered `seen`
  // before the insert). A reason the leader stored since is newer than the
  // row's (it came after the insert): the view takes the latest such reason
  // instead of being refused, as long as the job changed in no other way.
  // The leader may read the new rows and store their reasons while their
  // views are still being rendered (sessions 48 and 59, bench/RESULTS.md).
  bool put_submitted(std::uint64_t seen, std::int64_t id, std::string tenant, std::string_view body,
                     int priority, std::optional<std::string> pending);
  // Adds the view `body` of a STARTING, RUNNING or finished job, read after
  // generation() answered `seen`; not kept when that job changed in between
  // (a finished job's row still takes the progress its agent could not
  // store before the end, during a database outage). Returns whether it was
  // kept.
  bool put_read_if_current(std::uint64_t seen, std::int64_t id, std::string tenant,
                           std::string body);
  // This process wrote job `id` and the write answered its view `body`
  // (generation() answered `seen` before the write): the view replaces the
  // job's, and a view read before the write is no longer kept. When the job
  // changed in between, its view is dropped instead. Returns whether `body`
  // was kept.
  bool put_written(std::uint64_t seen, std::int64_t id, std::string tenant, std::string body);
  // Drops the views of jobs that changed.
  void forget(const std::vector<std::int64_t>& ids);
  // Drops every queued view, and keeps none read before this call: the
  // changes of queued jobs may have gone unheard (a replica's LISTEN
  // connection was lost).
  void forget_queued();
  // The leader stored these pending reasons (nullopt: none): the queued
  // views kept take them; any other view of those jobs is dropped.
  using PendingChange = std::pair<std::int64_t, std::optional<std::string>>;
  void set_pending(std::vector<PendingChange> changes);

  // Renders, ahead of their first read, the pending members of up to
  // `most` queued views that took a reason since they were last read (for a
  // thread of low priority: a first read then costs what any other does).
  // Returns how many may remain.
  std::size_t render_ahead(std::size_t most) EXCLUDES(mutex_);

  std::size_t bytes() const;
  std::size_t size() const;

  // How many changed jobs are remembered for put_if_current.
  static constexpr std::size_t kChangesKept = 1u << 15;
  // How many reasons of jobs without a kept view are remembered for
  // put_submitted: more than the jobs of the batches being rendered at once
  // (SubmitCommitterOptions::batch rows each, a sweep whole).
  static constexpr std::size_t kEarlyReasonsKept = 1u << 13;

 private:
  // A queued view: its fixed members (each followed by ',') as a delta
  // from `fixed_base` (kept in Node::body), where the pending members go
  // among them (slots, in kPendingMembers' order), and in `live` either
  // the stored pending reason (not rendered yet; none unless has_pending)
  // or the rendered pending members as a delta from `live_base`, with the
  // length of each.
  struct Queued {
    std::shared_ptr<const std::string> fixed_base;
    std::shared_ptr<const std::string> live_base;
    std::string live;
    std::array<std::uint16_t, 6> slots{};
    std::array<std::uint16_t, 6> live_lengths{};
    std::int32_t priority = 0;
    bool has_pending = false;
    bool rendered = false;
  };
  struct Node {
    std::int64_t id;
    std::string tenant;
    std::string body;              // a finished view, or a queued one's fixed delta
    std::optional<Queued> queued;  // a queued view
    bool read = false;  // read since eviction last passed it over (std::atomic_ref in find)
  };
  using Bases = std::deque<std::shared_ptr<const DeltaBase>>;
  static std::size_t cost(const Node& n);
  void put_locked(Node node) REQUIRES(mutex_);
  void erase_locked(std::int64_t id) REQUIRES(mutex_);
  void evict_locked() REQUIRES(mutex_);
  void note_changed_locked(std::int64_t id) REQUIRES(mutex_);
  bool changed_since_locked(std::uint64_t seen, std::int64_t id) const REQUIRES_SHARED(mutex_);
  // put_if_current, or with `take_newer_reason` put_submitted.
  bool put_queued(std::uint64_t seen, std::int64_t id, std::string tenant, std::string_view body,
                  int priority, std::optional<std::string> pending, bool take_newer_reason)
      EXCLUDES(mutex_);
  // Reasons stored for `id` while its view was not kept, every change of it
  // after `seen` being one (put_submitted): the latest; nullptr otherwise.
  struct EarlyReason {
    std::uint64_t first_at;  // the first of the reasons in a row
    std::uint64_t prior;     // the job's change before it (0: none remembered)
    std::optional<std::string> pending;
  };
  const EarlyReason* early_reason_locked(std::uint64_t seen, std::int64_t id) const
      REQUIRES_SHARED(mutex_);
  void note_early_reason_locked(std::int64_t id, std::optional<std::string> pending)
      REQUIRES(mutex_);
  // `text` as a delta from the first of `bases` (a copy of the recent
  // ones) that is close, or from itself as a new base (to add to them).
  struct Encoded {
    std::shared_ptr<const std::string> base;
    std::string delta;
    std::shared_ptr<const DeltaBase> new_base;
  };
  static Encoded encode(const Bases& bases, std::string_view text);
  static void add_base(Bases& recent, std::shared_ptr<const DeltaBase> base);
  // Renders the stored pending reason of the queued view of `id` and keeps
  // the result when that reason is still the one stored. False when the
  // view is gone.
  bool render_pending(std::int64_t id) EXCLUDES(mutex_);
  static std::string body_of(const Node& node);

  const std::size_t max_bytes_;
  mutable base::SharedMutex mutex_;
  std::list<Node> order_ GUARDED_BY(mutex_);  // newest (or given a second chance) first
  // Open addressing: a lookup reads one group of slots, not a chain of nodes.
  boost::unordered_flat_map<std::int64_t, std::list<Node>::iterator> index_ GUARDED_BY(mutex_);
  std::size_t bytes_ GUARDED_BY(mutex_) = 0;
  std::uint64_t generation_ GUARDED_BY(mutex_) = 0;
  // The last kChangesKept changes: job -> generation of its last change.
  std::unordered_map<std::int64_t, std::uint64_t> changed_at_ GUARDED_BY(mutex_);
  std::deque<std::pair<std::uint64_t, std::int64_t>> changes_ GUARDED_BY(mutex_);
  std::uint64_t changes_forgotten_ GUARDED_BY(mutex_) = 0;  // changes up to it may be lost
  // Jobs whose reasons changed while their views were not kept and that
  // have not changed otherwise since (at most kEarlyReasonsKept, oldest
  // first in early_order_: first_at and job).
  boost::unordered_flat_map<std::int64_t, EarlyReason> early_reasons_ GUARDED_BY(mutex_);
  std::deque<std::pair<std::uint64_t, std::int64_t>> early_order_ GUARDED_BY(mutex_);
  // Queued views whose pending members are not rendered, for render_ahead
  // (each at most once while so; some may be gone since), oldest first.
  void note_unrendered_locked(std::int64_t id) REQUIRES(mutex_);
  std::deque<std::int64_t> unrendered_ GUARDED_BY(mutex_);
  static constexpr std::size_t kUnrenderedKept = 1u << 20;
  // Recent bases of the fixed and of the pending members, newest first.
  Bases fixed_bases_ GUARDED_BY(mutex_);
  Bases live_bases_ GUARDED_BY(mutex_);
};

// A thread at the lowest priority (nice 19) that renders a ViewCache's
// queued views ahead of their first read (ViewCache::render_ahead) each time
// it is woken, until none is left: with 100,000 queued jobs whose reasons the
// leader just wrote, the first read of each would otherwise render it.
class ViewRenderer {
 public:
  explicit ViewRenderer(ViewCache& views);
  ~ViewRenderer();  // stop()
  ViewRenderer(const ViewRenderer&) = delete;
  ViewRenderer& operator=(const ViewRenderer&) = delete;

  void wake() EXCLUDES(mutex_);
  // Joins the thread; wake() does nothing after. Idempotent.
  void stop() EXCLUDES(mutex_);

 private:
  void loop() EXCLUDES(mutex_);

  ViewCache& views_;
  base::Mutex mutex_;
  bool woken_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace tpujobs::service
