// The emulated TPU pool: which hosts exist, their generation and health, and
// which job holds each core. Placement policy lives in scheduler/pass.h;
// this file only records facts.
//
// Hosts are numbered 0..N-1 in layout order. A *host run* is a maximal range
// of consecutive hosts of one generation; pod slices are carved from runs
// (see scheduler/pass.h for the alignment rule).
//
// Not thread-safe: the service serialises every call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "scheduler/generation.h"

namespace tpujobs::scheduler {

using JobId = std::int64_t;

enum class HostHealth {
  kHealthy,   // takes new work
  kDraining,  // running jobs keep their cores; no new work
  kFailed,    // nothing runs here; the scheduler evicts what ran
};

// "healthy", "draining", "failed".
std::string_view host_health_name(HostHealth health);

struct HostLayout {
  std::string name;  // unique within the pool, e.g. "v3-32-h0"
  Generation generation;
};

struct PoolLayout {
  std::vector<HostLayout> hosts;
};

// The pool `tpujobs serve` uses without --pool.
inline constexpr std::string_view kDefaultPool = "v3-32";

// Parses a --pool value: an accelerator type ("v3-32" = 4 hosts x 8 cores) or
// a comma-separated list of them ("v3-8,v3-8,v4-16"; spaces around commas are
// allowed). Host names are "<type>-h<i>" ("v3-32-h0".."v3-32-h3"); a type
// that appears more than once gets an ordinal ("v3-8.1-h0", "v3-8.2-h0").
// On failure: kInvalid, with a message naming the bad part. `@file.json` is
// not handled here: the service reads the file and builds a PoolLayout
// itself (then calls validate_pool).
base::Result<PoolLayout> parse_pool(std::string_view text);

// Checks a layout built by hand (from --pool @file.json): at least one host,
// every name non-empty and unique. kInvalid naming the first problem.
base::Status validate_pool(const PoolLayout& layout);

// A maximal range of consecutive hosts of one generation.
struct HostRun {
  Generation generation;
  int first_host;
  int host_count;
};

// The runs of `layout`, in host order.
std::vector<HostRun> host_runs(const PoolLayout& layout);

// Occupancy and health of every core. Cores are numbered 0..devices-1 within
// a host (devices = facts(generation).devices_per_host, at most 32).
class Pool {
 public:
  explicit Pool(PoolLayout layout);

  int host_count() const { return static_cast<int>(hosts_.size()); }
  const HostLayout& layout(int host) const { return layout_.hosts[host]; }
  Generation generation(int host) const { return layout_.hosts[host].generation; }
  int devices(int host) const { return hosts_[host].devices; }
  HostHealth health(int host) const { return hosts_[host].health; }
  // Only healthy hosts take new work.
  bool schedulable(int host) const { return hosts_[host].health == HostHealth::kHealthy; }
  const std::vector<HostRun>& runs() const { return runs_; }
  // Index in runs() of the run holding `host`.
  int run_of(int host) const { return hosts_[host].run; }

  // Index of the host called `name`, or nullopt.
  std::optional<int> find_host(std::string_view name) const;

  // The job holding `core` of `host`, or nullopt when the core is free.
  std::optional<JobId> holder(int host, int core) const;
  // Bit c is set when core c of `host` is free.
  std::uint32_t free_mask(int host) const { return hosts_[host].free_mask; }
  int free_cores(int host) const { return hosts_[host].free_count; }
  bool fully_free(int host) const { return free_cores(host) == devices(host); }

  // Precondition: the core is free. The caller keeps per-job bookkeeping.
  void assign(int host, int core, JobId job);
  // Frees the core; a no-op when it is already free.
  void release(int host, int core);
  void set_health(int host, HostHealth health);

  int total_cores() const { return total_cores_; }
  int used_cores() const { return used_cores_; }
  // Cores on kHealthy hosts, busy or not.
  int healthy_cores() const { return healthy_cores_; }
  // Free cores on kHealthy hosts: what new work could use.
  int schedulable_free_cores() const { return schedulable_free_cores_; }
  // Index of core `core` of `host` in a flat array of every core in the pool.
  int flat_index(int host, int core) const { return hosts_[host].first_core + core; }

 private:
  struct HostState {
    int devices = 0;
    int first_core = 0;  // flat index of core 0
    int run = 0;         // index in runs_
    HostHealth health = HostHealth::kHealthy;
    std::uint32_t free_mask = 0;
    int free_count = 0;  // set bits in free_mask
  };

  PoolLayout layout_;
  std::vector<HostRun> runs_;
  std::vector<HostState> hosts_;
  std::vector<std::optional<JobId>> holders_;  // by flat core index
  std::unordered_map<std::string, int> host_by_name_;
  int total_cores_ = 0;
  int used_cores_ = 0;
  int healthy_cores_ = 0;
  int schedulable_free_cores_ = 0;
};

}  // namespace tpujobs::scheduler
