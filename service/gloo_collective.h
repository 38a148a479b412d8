// The collective of a pod slice spanning agents (DESIGN §9): Gloo over TCP,
// its rendezvous through a key-value store every process of the slice can
// reach (the database: db::ClusterRepository's rendezvous keys). A peer
// that cannot be reached, or the deadline passing, is torch_xla's
// `UNAVAILABLE: failed to connect to all addresses`.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"
#include "executor/slice_collective.h"

namespace gloo {
class Context;
}

namespace tpujobs::service {

// The rendezvous' keys, shared by the processes of one placement.
class RendezvousKeys {
 public:
  virtual ~RendezvousKeys() = default;
  // Stores `value` under `key` (replacing); an error when the store could
  // not be reached.
  virtual base::Status set(const std::string& key, const std::string& value) = 0;
  // The value, nullopt while the key is absent; an error when the store
  // could not be reached.
  virtual base::Result<std::optional<std::string>> get(const std::string& key) = 0;
};

// Keys in this process's memory: for a slice whose ranks are threads of one
// process (tests, benchmarks). Thread-safe.
class InProcessRendezvousKeys final : public RendezvousKeys {
 public:
  base::Status set(const std::string& key, const std::string& value) override;
  base::Result<std::optional<std::string>> get(const std::string& key) override;

 private:
  base::Mutex mutex_;
  std::map<std::string, std::string> values_ GUARDED_BY(mutex_);
};

struct GlooOptions {
  // The address this process's Gloo device binds and advertises; empty:
  // Gloo's default (the machine's host name).
  std::string host;
  // Bounds the rendezvous and every collective: no call waits longer.
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds poll_interval{20};  // of the rendezvous keys
  base::Clock* clock =
      &base::real_clock();  // the rendezvous' deadline; must outlive the collective
};

// The executor's hint for the error every failure here becomes.
base::Error unreachable_peer_error(std::chrono::milliseconds timeout);

class GlooCollective final : public executor::SliceCollective {
 public:
  // Joins the `size` processes of the slice as `rank`: every process
  // publishes its address under `keys` and connects to every other. Returns
  // UNAVAILABLE when a peer does not join within options.timeout or cannot
  // be connected to. `keys` is used only during connect().
  static base::Result<std::unique_ptr<GlooCollective>> connect(RendezvousKeys& keys, int rank,
                                                               int size,
                                                               const GlooOptions& options);
  ~GlooCollective() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  base::Status all_gather(const float* mine, float* all,
                          const std::vector<std::size_t>& counts) override;
  // Gloo's own words for the last failure ("" if none): for the logs.
  const std::string& last_failure() const { return last_failure_; }

 private:
  GlooCollective(std::shared_ptr<gloo::Context> context, int rank, int size,
                 std::chrono::milliseconds timeout);

  std::shared_ptr<gloo::Context> context_;
  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_;
  std::uint32_t next_tag_ = 0;
  bool broken_ = false;
  std::string last_failure_;
};

}  // namespace tpujobs::service
