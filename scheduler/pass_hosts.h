// The hosts of one pass as placement searches them (scheduler/pass.h states
// the policy): free cores as bitmasks, runs, aligned blocks, places spanning
// agents, and when each core frees up. Internal to plan_pass.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "scheduler/pass.h"

namespace tpujobs::scheduler::pass_internal {

inline constexpr PassTime kNever = PassTime::max();

struct Choice {
  std::vector<int> hosts;
  std::vector<CoreRef> cores;
  std::vector<std::pair<int, int>> parts;  // (agent, hosts) when it spans agents
  PassTime ready{};                        // find_earliest only: when every core is free
};

// When each core becomes free (kNever: unknown), with per-host summaries kept
// current so a search costs O(hosts), not O(cores).
class CoreTimes {
 public:
  CoreTimes(const std::vector<PassHost>& hosts, PassTime now);
  PassTime at(int host, int core) const { return times_[first_core_[host] + core]; }
  // Sets a core without updating its host's summary; call refresh(host) after.
  void put(int host, int core, PassTime time) { times_[first_core_[host] + core] = time; }
  void refresh(int host);
  PassTime latest(int host) const { return latest_[host]; }  // the whole host free
  PassTime earliest(int host) const { return earliest_[host]; }
  int earliest_core(int host) const { return earliest_core_[host]; }
  int busy(int host) const { return busy_[host]; }  // cores not free at now

 private:
  PassTime now_;
  std::vector<int> first_core_;
  std::vector<int> devices_;
  std::vector<PassTime> times_;
  std::vector<PassTime> latest_;
  std::vector<PassTime> earliest_;
  std::vector<int> earliest_core_;
  std::vector<int> busy_;
};

class PassHosts {
 public:
  explicit PassHosts(const std::vector<PassHost>& hosts);

  int count() const { return static_cast<int>(hosts_.size()); }
  int devices(int host) const { return static_cast<int>(hosts_[host].cores.size()); }
  const PassHost& host(int h) const { return hosts_[h]; }
  JobId holder(int host, int core) const { return hosts_[host].cores[core]; }
  bool matches(const ResourceRequest& shape, int host) const;
  // Takes new work (for a job requeued at `heard_after`, when given).
  bool takes_work(int host, const std::optional<PassTime>& heard_after = {}) const;
  int free_takers() const { return free_takers_; }  // free cores on hosts taking work

  // Where `shape` fits now, avoiding the cores set in `avoid` (per host
  // masks; empty: avoid nothing).
  std::optional<Choice> find_free(const ResourceRequest& shape,
                                  const std::vector<std::uint32_t>& avoid,
                                  const std::optional<PassTime>& heard_after) const;
  // Where `shape` can start earliest given when each core frees up.
  std::optional<Choice> find_earliest(const ResourceRequest& shape, const CoreTimes& times) const;
  // Fits the hosts taking work (or, with taking_work_only false, every
  // host) were they idle.
  bool fits_idle(const ResourceRequest& shape, bool taking_work_only) const;
  // Every place of `shape` on one run's usable hosts, busy or not.
  std::vector<std::vector<CoreRef>> places(const ResourceRequest& shape) const;

  void take(const Choice& choice, JobId job);

 private:
  struct Run {
    int first_host;
    int host_count;
  };
  template <class Visit>
  void for_each_block(const ResourceRequest& shape, Visit visit) const;
  std::vector<int> spanning_topology(const ResourceRequest& shape) const;
  // The block of n hosts of `topology` from `start` belongs to two or more agents.
  bool spans_agents(const std::vector<int>& topology, std::size_t start, int n) const;
  std::optional<Choice> find_free_core(const ResourceRequest& shape,
                                       const std::vector<std::uint32_t>& avoid,
                                       const std::optional<PassTime>& heard_after) const;
  std::optional<Choice> find_spanning(const ResourceRequest& shape,
                                      const std::vector<std::uint32_t>& avoid,
                                      const std::optional<PassTime>& heard_after) const;
  std::vector<int> free_host_prefix() const;
  int largest_free_block(int begin, int end, const std::vector<int>& free_prefix) const;
  Choice whole_hosts(int first, int n) const;

  std::vector<PassHost> hosts_;
  std::vector<std::uint32_t> free_mask_;
  std::vector<int> free_count_;
  std::vector<int> run_of_;
  std::vector<Run> runs_;
  int free_takers_ = 0;
};

}  // namespace tpujobs::scheduler::pass_internal
